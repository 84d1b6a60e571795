"""The secured local release without starting it: naming, artifacts and pins, certificates, the plugin's files."""

from __future__ import annotations

import pytest
import yaml

from adapter.errors import ConfigurationError
from adapter.local.artifacts import PINS
from adapter.local.distribution import distribution_artifacts
from adapter.local.releases import release_by_name, resolve_release, secured
from tests.support.extras import requires_extra


def test_the_secure_release_is_its_own_folder_and_pins_its_plugin():
    release = secured(resolve_release("opensearch", "2"))
    assert release.name == "opensearch-2.19.1-secure" and release_by_name("opensearch-2.19.1-secure") == release
    security = distribution_artifacts(release)["opensearch-security"]
    assert security.coordinates == "org.opensearch.plugin:opensearch-security:2.19.1.0:zip"
    assert len(PINS[security.coordinates]) == 64  # published without a checksum: the pin is the check
    with pytest.raises(ConfigurationError, match="not 3.6.0.0"):
        secured(resolve_release("opensearch", "3.6.0"))


@requires_extra("secure")
def test_certificates_chain_to_the_generated_ca(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import padding

    from adapter.local.security import ensure_pki

    pki = ensure_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    node = x509.load_pem_x509_certificate((pki.folder / "node.pem").read_bytes())
    client = x509.load_pem_x509_certificate(pki.client_cert.read_bytes())
    for cert in (node, client):
        ca.public_key().verify(
            cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm
        )
    sans = node.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    # PKCS#8, as the plugin reads it
    assert (pki.folder / "node-key.pem").read_text().startswith("-----BEGIN PRIVATE KEY-----")
    for secret in (pki.folder / "ca-key.pem", pki.client_key):
        assert secret.stat().st_mode & 0o777 == 0o600
    assert ensure_pki(tmp_path).ca.read_bytes() == pki.ca.read_bytes()  # made once


@requires_extra("secure")
def test_the_reader_role_reads_and_never_writes(tmp_path):
    from adapter.local.security import Credentials, security_files

    creds = Credentials.load_or_create(tmp_path / "c.json")
    files = {name: yaml.safe_load(text) for name, text in security_files(creds).items()}
    role = files["roles.yml"]["hybrid_reader"]
    granted = role["cluster_permissions"] + [a for p in role["index_permissions"] for a in p["allowed_actions"]]
    assert not [g for g in granted if "write" in g or g in ("all", "crud", "create_index", "manage")]
    users = files["internal_users.yml"]
    assert users["reader"]["hash"].startswith("$2") and creds.reader_password not in str(files)
    assert set(files["config.yml"]["config"]["dynamic"]["authc"]) == {
        "basic_internal_auth_domain",
        "clientcert_auth_domain",
        "jwt_auth_domain",
    }
