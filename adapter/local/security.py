"""A secured local node (``hybrid local up --version 2 --secure``): the OpenSearch security plugin
with TLS on HTTP and transport, from a certificate authority generated here.

What it sets up, once per cluster folder (``<cache>/nodes/opensearch-2.19.1-secure/``)::

    pki/ca.pem, pki/ca-key.pem          the CA (its key stays with the caller, mode 600)
    pki/node.pem, pki/node-key.pem      node-1: CN=node-1, SAN 127.0.0.1 and localhost (HTTP and transport)
    client/ca.pem                       what a client trusts (``--ca-certs``)
    client/client.pem, client-key.pem   a client certificate, CN=hybrid-client (read-only role)
    client/credentials.json             generated passwords of admin and reader, and the JWT signing key (600)
    client/client.yaml                  a client config file for the reader (``HYBRID_CONFIG``), 600

Users: ``admin`` (all_access) and ``reader`` (role ``hybrid_reader``: search and read the
adapter's indices, pipelines and cluster info; no writes). Authentication: basic auth (internal
users), client certificates (``clientcert_auth_domain``, the certificate's CN is the user) and
JWTs signed with the generated HMAC key (``jwt_auth_domain``; subject = user, ``roles`` claim =
backend roles). OpenSearch 2.19 has no API keys: they arrived in 3.7 (``Authorization: ApiKey``);
the client sends those too, for clusters that have them.

Certificates come from ``cryptography`` and password hashes (bcrypt, as the plugin reads them)
from ``bcrypt``: the ``secure`` extra. In process, nothing secret passes through a command line.
The plugin resolves from Maven Central for 2.19.1 only: ``opensearch-security`` 3.6.0.0 is not
published there (nor 3.5/3.3/3.2/3.1/3.0; 3.4.0.0 is, but a plugin must match its core exactly).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import os
import secrets
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapter._optional import require
from adapter.errors import ConfigurationError

if TYPE_CHECKING:  # cryptography is the `secure` extra: imported where it is used, named here for the types
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

# OpenSearch versions whose security plugin is on Maven Central (org.opensearch.plugin:opensearch-security:<v>.0:zip).
SECURITY_PLUGINS = ("2.19.1",)
PLUGIN = ("opensearch-security", "opensearch-security")
ORG = "O=opensearch-hybrid-adapter,OU=hybrid-local"
CLIENT_CN = "hybrid-client"
ADMIN_CN = "hybrid-admin"  # plugins.security.authcz.admin_dn: may change the security index itself
READER_ROLE = "hybrid_reader"


@dataclass(frozen=True)
class Credentials:
    """The generated secrets of one secured cluster. Never printed: ``repr`` shows the user names only."""

    admin_password: str = field(repr=False)
    reader_password: str = field(repr=False)
    jwt_key: str = field(repr=False)  # base64 HMAC-SHA256 key of jwt_auth_domain

    @classmethod
    def load_or_create(cls, path: Path) -> Credentials:
        if path.exists():
            st = path.stat()
            if st.st_uid != os.geteuid() or st.st_mode & 0o077:
                raise ConfigurationError(
                    f"{path} holds passwords but is readable by others or not yours: chmod 600 it, or delete it "
                    "and the cluster folder to start over"
                )
            return cls(**json.loads(path.read_text()))
        creds = cls(
            secrets.token_urlsafe(18), secrets.token_urlsafe(18), base64.b64encode(secrets.token_bytes(32)).decode()
        )
        _write_private(
            path,
            json.dumps(
                {
                    "admin_password": creds.admin_password,
                    "reader_password": creds.reader_password,
                    "jwt_key": creds.jwt_key,
                },
                indent=2,
            ),
        )
        return creds


def _write_private(path: Path, text: str | bytes) -> None:
    """Create ``path`` readable by its owner only (no moment where others could read it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(text.encode() if isinstance(text, str) else text)


# -- certificates ------------------------------------------------------------------------------------
def _name(cn: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    parts = [
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "hybrid-local"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "opensearch-hybrid-adapter"),
    ]
    return x509.Name(parts)


def dn(cn: str) -> str:
    """The DN as the security plugin writes it (RFC 2253, most specific first)."""
    return f"CN={cn},OU=hybrid-local,O=opensearch-hybrid-adapter"


def _key() -> RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    # PKCS#8, unencrypted: what the plugin's pemkey_filepath reads (PKCS#1 "RSA PRIVATE KEY" is refused).
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(cn: str, issuer: x509.Name, key: RSAPrivateKey, days: int, *, ca: bool) -> x509.CertificateBuilder:
    """What the CA and the certificates it issues share: the names, the key, a random serial, ``days`` from five
    minutes ago (a clock a little behind still accepts it), and the basic constraints and key usage of a CA (signs
    certificates and CRLs) or of a node or client (signs, and enciphers keys)."""
    from cryptography import x509

    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=ca,
                crl_sign=ca,
                key_encipherment=not ca,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def make_ca(cn: str = "hybrid-local-ca", days: int = 3650) -> tuple[x509.Certificate, RSAPrivateKey]:
    """A self-signed CA: (certificate, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _key()
    cert = (
        _builder(cn, _name(cn), key, days, ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def issue(
    ca_cert: x509.Certificate, ca_key: RSAPrivateKey, cn: str, *, server: bool, days: int = 825
) -> tuple[x509.Certificate, RSAPrivateKey]:
    """A certificate signed by the CA: for a node (server and client use, SAN 127.0.0.1/localhost) or a client."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = _key()
    usages = (
        [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        if server
        else [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    builder = (
        _builder(cn, ca_cert.subject, key, days, ca=False)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(ca_key, hashes.SHA256()), key


@dataclass(frozen=True)
class Pki:
    folder: Path  # <cluster>/pki
    client: Path  # <cluster>/client

    @property
    def ca(self) -> Path:
        return self.client / "ca.pem"

    @property
    def client_cert(self) -> Path:
        return self.client / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.client / "client-key.pem"

    @property
    def credentials_file(self) -> Path:
        return self.client / "credentials.json"

    @property
    def config_file(self) -> Path:
        return self.client / "client.yaml"


def ensure_pki(cluster_dir: Path) -> Pki:
    """The CA, node, admin and client certificates of a cluster folder (made once, then reused)."""
    pki = Pki(cluster_dir / "pki", cluster_dir / "client")
    if (pki.folder / "node.pem").exists() and pki.ca.exists():
        return pki
    require("cryptography", "the secured local node's certificates")
    ca_cert, ca_key = make_ca()
    node_cert, node_key = issue(ca_cert, ca_key, "node-1", server=True)
    admin_cert, admin_key = issue(ca_cert, ca_key, ADMIN_CN, server=False)
    client_cert, client_key = issue(ca_cert, ca_key, CLIENT_CN, server=False)
    pki.folder.mkdir(parents=True, exist_ok=True)
    pki.client.mkdir(parents=True, exist_ok=True)
    _write_private(pki.folder / "ca-key.pem", _pem_key(ca_key))
    _write_private(pki.folder / "admin-key.pem", _pem_key(admin_key))
    (pki.folder / "admin.pem").write_bytes(_pem_cert(admin_cert))
    (pki.folder / "ca.pem").write_bytes(_pem_cert(ca_cert))
    (pki.folder / "node.pem").write_bytes(_pem_cert(node_cert))
    # copied into the node's config (owned by the node user)
    _write_private(pki.folder / "node-key.pem", _pem_key(node_key))
    pki.ca.write_bytes(_pem_cert(ca_cert))
    pki.client_cert.write_bytes(_pem_cert(client_cert))
    _write_private(pki.client_key, _pem_key(client_key))
    return pki


# -- the plugin's configuration -----------------------------------------------------------------------------
def settings() -> list[str]:
    """opensearch.yml lines (PEM paths are relative to the node's config folder)."""
    lines = []
    for layer in ("transport", "http"):
        lines += [
            f"plugins.security.ssl.{layer}.pemcert_filepath: certs/node.pem",
            f"plugins.security.ssl.{layer}.pemkey_filepath: certs/node-key.pem",
            f"plugins.security.ssl.{layer}.pemtrustedcas_filepath: certs/ca.pem",
        ]
    return lines + [
        "plugins.security.ssl.transport.enforce_hostname_verification: false",
        "plugins.security.ssl.http.enabled: true",
        "plugins.security.ssl.http.clientauth_mode: OPTIONAL",  # client certificates are one way to log in
        # the security index from the files below, at first start
        "plugins.security.allow_default_init_securityindex: true",
        f'plugins.security.authcz.admin_dn: ["{dn(ADMIN_CN)}"]',
        f'plugins.security.nodes_dn: ["{dn("node-1")}"]',
        'plugins.security.restapi.roles_enabled: ["all_access"]',
        "plugins.security.system_indices.enabled: true",
        "plugins.security.audit.type: noop",
    ]


def _hash(password: str) -> str:
    require("bcrypt", "the secured local node's password hashes")  # names the extra when it is missing
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(12)).decode()


def _yaml(doc: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(doc, sort_keys=False)


def _meta(kind: str) -> dict[str, Any]:
    return {"_meta": {"type": kind, "config_version": 2}}


def security_files(creds: Credentials) -> dict[str, str]:
    """The files of ``config/opensearch-security/``: users, roles, mappings, authentication domains."""
    return {
        "config.yml": _yaml(
            {
                **_meta("config"),
                "config": {
                    "dynamic": {"http": {"anonymous_auth_enabled": False}, "authc": _auth_domains(creds), "authz": {}}
                },
            }
        ),
        "internal_users.yml": _yaml({**_meta("internalusers"), **_internal_users(creds)}),
        "roles.yml": _yaml({**_meta("roles"), READER_ROLE: _reader_role()}),
        "roles_mapping.yml": _yaml(
            {
                **_meta("rolesmapping"),
                "all_access": {"reserved": False, "backend_roles": ["admin"], "users": []},
                READER_ROLE: {"reserved": False, "users": ["reader", CLIENT_CN], "backend_roles": ["reader"]},
            }
        ),
        "action_groups.yml": _yaml(_meta("actiongroups")),
        "tenants.yml": _yaml(_meta("tenants")),
        "nodes_dn.yml": _yaml(_meta("nodesdn")),
        "allowlist.yml": _yaml({**_meta("allowlist"), "config": {"enabled": False}}),
        "audit.yml": _yaml({**_meta("audit"), "config": {"enabled": False}}),
    }


def _auth_domains(creds: Credentials) -> dict[str, Any]:
    """How a request proves who it is: a JWT signed with the generated key, a client certificate, or basic auth."""
    return {
        "basic_internal_auth_domain": {
            "description": "basic auth against the internal users",
            "http_enabled": True,
            "transport_enabled": True,
            "order": 2,
            "http_authenticator": {"type": "basic", "challenge": True},
            "authentication_backend": {"type": "intern"},
        },
        "clientcert_auth_domain": {
            "description": "TLS client certificates: the CN is the user",
            "http_enabled": True,
            "transport_enabled": False,
            "order": 1,
            "http_authenticator": {"type": "clientcert", "config": {"username_attribute": "cn"}, "challenge": False},
            "authentication_backend": {"type": "noop"},
        },
        "jwt_auth_domain": {
            "description": "JWTs signed with the generated HMAC key (Authorization: Bearer)",
            "http_enabled": True,
            "transport_enabled": False,
            "order": 0,
            "http_authenticator": {
                "type": "jwt",
                "challenge": False,
                "config": {
                    "signing_key": creds.jwt_key,
                    "jwt_header": "Authorization",
                    "roles_key": "roles",
                    "subject_key": "sub",
                },
            },
            "authentication_backend": {"type": "noop"},
        },
    }


def _reader_role() -> dict[str, Any]:
    """The reader role: search and read the hybrid indices, and the cluster calls a search makes; no writes."""
    return {
        "description": "search and read hybrid indices; no writes",
        "cluster_permissions": [
            "cluster:monitor/main",
            "cluster:monitor/nodes/info",
            "cluster:monitor/health",
            "cluster:admin/search/pipeline/get",
            "indices:data/read/msearch",
            "indices:data/read/mget",
            "indices:data/read/scroll*",
            "indices:data/read/point_in_time/*",
        ],
        "index_permissions": [
            {
                "index_patterns": ["*"],
                "allowed_actions": [
                    "read",
                    "indices:admin/get",
                    "indices:admin/aliases/get",
                    "indices:admin/aliases/exists",
                    "indices:admin/mappings/get",
                    "indices:monitor/settings/get",
                ],
            }
        ],
    }


def _internal_users(creds: Credentials) -> dict[str, Any]:
    """The two internal users, each with the bcrypt hash of its generated password: admin (all access) and reader."""
    return {
        "admin": {
            "hash": _hash(creds.admin_password),
            "reserved": True,
            "backend_roles": ["admin"],
            "description": "all_access",
        },
        "reader": {
            "hash": _hash(creds.reader_password),
            "reserved": False,
            "description": f"{READER_ROLE}: read only",
        },
    }


def install(conf: Path, pki: Pki, creds: Credentials) -> None:
    """Put certificates and the plugin's files into a node's config folder."""
    certs = conf / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    for name in ("node.pem", "node-key.pem", "ca.pem"):
        (certs / name).write_bytes((pki.folder / name).read_bytes())
    (certs / "node-key.pem").chmod(0o600)
    folder = conf / "opensearch-security"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in security_files(creds).items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o600)


def write_client_config(pki: Pki, url: str, creds: Credentials) -> Path:
    """A client config file for the reader (what ``HYBRID_CONFIG`` / ``--config`` read), mode 600."""
    _write_private(
        pki.config_file,
        _yaml({"url": url, "ca_certs": str(pki.ca), "username": "reader", "password": creds.reader_password}),
    )
    return pki.config_file


def http_options(pki: Pki, creds: Credentials) -> dict[str, Any]:
    """What the node's own health checks send (urllib): the CA to trust and the admin's basic auth."""
    context = ssl.create_default_context(cafile=str(pki.ca))
    token = base64.b64encode(f"admin:{creds.admin_password}".encode()).decode()
    return {"context": context, "headers": {"Authorization": f"Basic {token}"}}
