"""The secured node's security-plugin files pinned whole (issue 42: security_files split into named steps): every
file's text, byte for byte, with the two bcrypt hashes (salted, so new each call) checked against their passwords."""

from __future__ import annotations

import hashlib
import re

import pytest

from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit

# sha256 of the files' names and texts, each hash line replaced by "hash: <bcrypt>" (measured on the code before
# the split; a change to any file's text changes it).
PINNED = "d9d42bc6fdf70f434f8569aff04f9d0d7719be879a3467fcb22d5fa9bbdd8ff5"


@requires_extra("secure")
def test_the_security_files_are_pinned_byte_for_byte():
    import bcrypt

    from adapter.local.security import Credentials, security_files

    creds = Credentials(admin_password="admin-pw", reader_password="reader-pw", jwt_key="a2V5")
    files = security_files(creds)
    hashes = re.findall(r"hash: (\S+)", files["internal_users.yml"])
    assert len(hashes) == 2
    assert bcrypt.checkpw(b"admin-pw", hashes[0].encode()) and bcrypt.checkpw(b"reader-pw", hashes[1].encode())
    text = "".join(f"== {name}\n" + re.sub(r"hash: \S+", "hash: <bcrypt>", body) for name, body in files.items())
    assert "a2V5" in files["config.yml"]
    assert hashlib.sha256(text.encode()).hexdigest() == PINNED
