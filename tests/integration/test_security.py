"""A secured cluster for real: OpenSearch 2.19.1 with the security plugin, TLS on HTTP from a CA generated
by `hybrid local up --secure`, basic auth (admin, a read-only reader), client certificates and JWTs.

The node is started here, from a cache folder of its own, and stopped at the end. It runs in the
2.19 tier only (the plugin resolves from Maven Central for 2.19.1, not 3.6.0).
"""

from __future__ import annotations

import base64
import json
import re
import logging
import subprocess
import time
from pathlib import Path

import pytest

from adapter.engines import connect
from adapter.errors import AuthenticationError, PermissionDeniedError, TLSError
from tests.conftest import ROOT
from tests.support.nodes import own_cache_dir
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401  (fixture)

pytestmark = [pytest.mark.local_node, pytest.mark.max_version("2.99")]
SUPPORT_DOCS = ROOT / "adapter" / "data" / "support_es.jsonl"


def search_args(index):
    return ("search", "reembolso", "--index", index, "--embedder", "test:hashing")


def ingest_args(index, failures):
    return ("ingest", SUPPORT_DOCS, "--index", index, "--embedder", "test:hashing", "-q", "--failures", failures)


@pytest.fixture(scope="session")
def secure():
    """A running secured node and what a client needs: url, CA, users' passwords, client certificate, JWT key."""
    from adapter.local import LocalNode, NodeConfig

    # A cache folder of its own beside the session's; the home (with the plugin) is assembled once
    # among the shared artifacts (HYBRID_ARTIFACTS_DIR), next to the other releases' downloads.
    node = LocalNode(
        NodeConfig(version="2.19.1", secure=True, cache_dir=own_cache_dir("secure"), heap="512m", hunspell=False),
        log=lambda m: None,
    )
    started = node.url is None
    status = node.up()
    client_dir = node.node_dir / "client"
    creds = json.loads((client_dir / "credentials.json").read_text())
    yield {
        "url": status.url,
        "ca": str(client_dir / "ca.pem"),
        "cert": str(client_dir / "client.pem"),
        "key": str(client_dir / "client-key.pem"),
        "config": str(node.client_config),
        "node": node,
        **creds,
    }
    if started:
        node.down()


@pytest.fixture
def admin(secure):
    return connect(secure["url"], username="admin", password=secure["admin_password"], ca_certs=secure["ca"])


@pytest.fixture
def env(monkeypatch, secure):
    """A clean environment pointing at the secured node (no credentials yet)."""
    for name in (
        "OPENSEARCH_USERNAME",
        "OPENSEARCH_PASSWORD",
        "OPENSEARCH_API_KEY",
        "OPENSEARCH_BEARER_TOKEN",
        "OPENSEARCH_CA_CERTS",
        "OPENSEARCH_CLIENT_CERT",
        "OPENSEARCH_CLIENT_KEY",
        "OPENSEARCH_VERIFY_CERTS",
        "HYBRID_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENSEARCH_URL", secure["url"])
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent")  # no ~/.config file sneaks in
    return monkeypatch


@pytest.fixture
def hybrid_index(admin, secure):
    """An adapter index with the support documents, made by the admin."""
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import read_source

    name = f"sec-{int(time.time() * 1000) % 10**8}"
    init_index(admin, name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    Ingestor.open(admin, name, TEST_EMBEDDER, progress=False).ingest(read_source(SUPPORT_DOCS))
    yield name
    from tests.conftest import drop_hybrid_index

    drop_hybrid_index(admin, name)  # its templates and pipelines too (issue 20 item 16)


def _who(client) -> str:
    return client.transport.perform_request("GET", "/_plugins/_security/authinfo")["user_name"]


def _probe(client):
    """What every command does first (errors translated): read the cluster's version and plugins."""
    from adapter.engines.opensearch import OpenSearchEngine

    return OpenSearchEngine().probe(client)


def test_tls_is_verified_by_default_and_a_wrong_ca_fails_clearly(secure, tmp_path):
    with pytest.raises(TLSError, match=r"certificate verify failed.*--ca-certs"):
        _probe(connect(secure["url"], username="admin", password=secure["admin_password"]))
    from adapter.local.security import _pem_cert, make_ca

    other, _ = make_ca("some-other-ca")
    (tmp_path / "other.pem").write_bytes(_pem_cert(other))
    with pytest.raises(TLSError, match="certificate verify failed"):
        _probe(
            connect(
                secure["url"], username="admin", password=secure["admin_password"], ca_certs=str(tmp_path / "other.pem")
            )
        )
    with pytest.raises(Exception, match="CA certificates file .* does not exist"):
        connect(secure["url"], ca_certs=str(tmp_path / "missing.pem"))
    assert (
        _who(connect(secure["url"], username="admin", password=secure["admin_password"], ca_certs=secure["ca"]))
        == "admin"
    )


def test_anonymous_requests_are_refused(env, secure, cli, hybrid_index):
    """Issue 20, Prove: `hybrid local up --secure` (2.19) serves nobody without credentials: not the
    root, not the index, not a search through the adapter."""
    import ssl
    import urllib.error
    import urllib.request

    context = ssl.create_default_context(cafile=secure["ca"])
    for path in ("/", f"/{hybrid_index}/_search", "/_cat/indices"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{secure['url']}{path}", context=context, timeout=30)
        assert refused.value.code == 401, path
    env.setenv("OPENSEARCH_CA_CERTS", secure["ca"])
    code, out, err = cli(*search_args(hybrid_index))
    assert code == 2 and "did not accept the credentials (401" in err, err
    assert "reembolso" not in out


def test_basic_auth_from_the_environment_and_a_wrong_password(env, secure, cli, hybrid_index):
    env.setenv("OPENSEARCH_CA_CERTS", secure["ca"])
    env.setenv("OPENSEARCH_USERNAME", "reader")
    env.setenv("OPENSEARCH_PASSWORD", secure["reader_password"])
    code, out, err = cli(*search_args(hybrid_index))
    assert code == 0 and "reembolso" in out, err
    env.setenv("OPENSEARCH_PASSWORD", "not-the-password")
    code, out, err = cli(*search_args(hybrid_index))
    assert (
        code == 2
        and "did not accept the credentials (401" in err
        and "basic auth as 'reader' (from OPENSEARCH_USERNAME)" in err
    )
    assert "not-the-password" not in err + out


def test_the_read_only_role_gets_403s_naming_the_permission(env, secure, cli, hybrid_index, tmp_path):
    env.setenv("HYBRID_CONFIG", secure["config"])  # the reader's config file, written by `local up --secure`
    code, out, err = cli(*search_args(hybrid_index))
    assert code == 0, err
    code, _, err = cli(*ingest_args(hybrid_index, tmp_path / "failures.jsonl"))
    assert code == 2 and "permission denied (403): user 'reader' lacks the permission indices:data/write/bulk" in err
    failures = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert len(failures) == 12 and "indices:data/write/bulk" in failures[0]["reason"]  # nothing lost: every row listed
    code, _, err = cli("apply", "--index", hybrid_index, "--embedder", "test:hashing", "--analyzer", "spanish")
    # The first template read the plan makes names its permission (it reads the index templates first since issue 39)
    assert code == 2 and re.search(
        r"permission denied \(403\): user 'reader' lacks the permission "
        r"(cluster:admin/component_template/get|indices:admin/index_template/get)",
        err,
    ), err
    with pytest.raises(PermissionDeniedError) as denied:
        from adapter.admin.init import init_index
        from adapter.index.assets import IndexSpec

        init_index(connect(config=secure["config"]), f"{hybrid_index}-x", IndexSpec(TEST_EMBEDDER.fingerprint))
    assert denied.value.permission and denied.value.user == "reader" and denied.value.status == 403


def test_a_config_file_with_a_secret_must_be_private(env, secure, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        f"url: {secure['url']}\nca_certs: {secure['ca']}\nusername: reader\npassword: {secure['reader_password']}\n"
    )
    config.chmod(0o644)
    with pytest.raises(Exception, match=r"holds a secret but others can read it: chmod 600") as refused:
        connect(config=str(config))
    assert secure["reader_password"] not in str(refused.value)
    config.chmod(0o600)
    assert _who(connect(config=str(config))) == "reader"
    password_file = tmp_path / "password"
    password_file.write_text(secure["reader_password"] + "\n")
    password_file.chmod(0o600)
    config.write_text(
        f"url: {secure['url']}\nca_certs: {secure['ca']}\nusername: reader\npassword_file: {password_file}\n"
    )
    assert _who(connect(config=str(config))) == "reader"


def test_client_certificate(env, secure, cli, hybrid_index):
    client = connect(secure["url"], ca_certs=secure["ca"], client_cert=secure["cert"], client_key=secure["key"])
    assert _who(client) == "hybrid-client"  # the certificate's CN, mapped to the read-only role
    env.setenv("OPENSEARCH_CA_CERTS", secure["ca"])
    code, out, err = cli(
        "search",
        "reembolso",
        "--index",
        hybrid_index,
        "--embedder",
        "test:hashing",
        "--client-cert",
        secure["cert"],
        "--client-key",
        secure["key"],
    )
    assert code == 0 and "reembolso" in out, err


def test_bearer_tokens_and_api_keys(env, secure):
    import jwt

    key = base64.b64decode(secure["jwt_key"])
    token = jwt.encode({"sub": "admin", "roles": ["admin"], "exp": int(time.time()) + 300}, key, algorithm="HS256")
    env.setenv("OPENSEARCH_CA_CERTS", secure["ca"])
    env.setenv("OPENSEARCH_BEARER_TOKEN", token)
    assert _who(connect()) == "admin"
    expired = jwt.encode({"sub": "admin", "roles": ["admin"], "exp": int(time.time()) - 300}, key, algorithm="HS256")
    env.setenv("OPENSEARCH_BEARER_TOKEN", expired)
    with pytest.raises(AuthenticationError, match=r"a bearer token \(from OPENSEARCH_BEARER_TOKEN\)") as refused:
        _probe(connect())
    assert expired not in str(refused.value)
    # API keys (Authorization: ApiKey) arrived in OpenSearch 3.7: 2.19 refuses them, and the error says what was sent.
    env.delenv("OPENSEARCH_BEARER_TOKEN")
    env.setenv("OPENSEARCH_API_KEY", "os_not-a-real-key")
    with pytest.raises(AuthenticationError, match=r"an API key \(from OPENSEARCH_API_KEY\)") as refused:
        _probe(connect())
    assert "os_not-a-real-key" not in str(refused.value)


def test_no_secret_in_logs_argv_reprs_or_errors(env, secure, cli, hybrid_index, caplog, tmp_path):
    """Every path a secret could leak by: the client's repr and its connections', every log record at
    DEBUG (opensearch-py's trace logger included), error messages for 401/403/TLS, the CLI's output,
    the node's command lines, its log files and config files."""
    secrets = [secure["admin_password"], secure["reader_password"], secure["jwt_key"]]
    encoded = [
        base64.b64encode(f"{u}:{p}".encode()).decode()
        for u, p in (("admin", secure["admin_password"]), ("reader", secure["reader_password"]))
    ]
    texts = []
    caplog.set_level(logging.DEBUG)
    for name in ("opensearch", "opensearchpy.trace", "urllib3", "adapter"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    client = connect(secure["url"], username="admin", password=secure["admin_password"], ca_certs=secure["ca"])
    client.search(index=hybrid_index, body={"query": {"match_all": {}}})
    texts += [repr(client), repr(client.transport), repr(client.transport.connection_pool), str(client.transport.hosts)]
    texts += [repr(c) for c in client.transport.connection_pool.connections]
    url_client = connect(
        secure["url"].replace("https://", f"https://admin:{secure['admin_password']}@"), ca_certs=secure["ca"]
    )
    assert _who(url_client) == "admin"
    texts += [repr(url_client), str(url_client.transport.hosts)]
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec

    for attempt in (
        lambda: _probe(connect(secure["url"], username="admin", password=secure["admin_password"])),  # TLS
        # 401
        lambda: _probe(
            connect(secure["url"], username="reader", password=secure["admin_password"], ca_certs=secure["ca"])
        ),
        lambda: init_index(
            connect(secure["url"], username="reader", password=secure["reader_password"], ca_certs=secure["ca"]),
            "sec-not-allowed",
            IndexSpec(TEST_EMBEDDER.fingerprint),
        ),
    ):  # 403
        with pytest.raises(Exception) as failed:
            attempt()
        texts += [str(failed.value), repr(failed.value), str(failed.value.__cause__)]
    env.setenv("HYBRID_CONFIG", secure["config"])
    for args in (
        search_args(hybrid_index),
        ingest_args(hybrid_index, tmp_path / "f.jsonl"),
        ("diff", "--index", hybrid_index, "--embedder", "test:hashing"),
    ):
        texts += list(cli(*args)[1:])
    # every request logged
    texts += list(cli("-vv", *search_args(hybrid_index))[1:])
    import jwt

    token = jwt.encode(
        {"sub": "admin", "roles": ["admin"], "exp": int(time.time()) + 300},
        base64.b64decode(secure["jwt_key"]),
        algorithm="HS256",
    )
    secrets.append(token)
    from adapter.search import Searcher

    Searcher.open(
        connect(secure["url"], bearer_token=token, ca_certs=secure["ca"]), hybrid_index, TEST_EMBEDDER
    ).search("reembolso")
    texts += [(tmp_path / "f.jsonl").read_text()]
    code, _, err = cli(
        "search", "x", "--index", hybrid_index, "--url", secure["url"].replace("https://", "https://reader:pw-in-argv@")
    )
    assert code == 2 and "holds a password" in err and "pw-in-argv" not in err
    texts += [r.getMessage() for r in caplog.records]
    texts += _process_command_lines(secure["node"]) + _node_files(secure["node"])
    assert len(caplog.records) > 5 and texts
    logged = [r.getMessage() for r in caplog.records if r.name == "adapter.requests"]
    # the adapter's own request log was on
    assert any(f"/{hybrid_index}/_search" in m and " 200 took=" in m for m in logged)
    leaked = [s for s in secrets + encoded if any(s in t for t in texts)]
    assert leaked == [], "a secret appeared in a repr, log, message, command line or node file"


def _process_command_lines(node) -> list[str]:
    state = json.loads(node.state_file.read_text())
    out = []
    for n in state["nodes"]:
        out.append(Path(f"/proc/{n['pid']}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        out.append(Path(f"/proc/{n['pid']}/environ").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    out.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout)
    return out


def _node_files(node) -> list[str]:
    """The node's logs and its opensearch.yml (the users file holds bcrypt hashes only: checked here too)."""
    folder = node.node_dir / "node-1"
    files = [
        *sorted((folder / "logs").glob("*.log")),
        folder / "config" / "opensearch.yml",
        folder / "config" / "opensearch-security" / "internal_users.yml",
    ]
    return [p.read_text(errors="replace") for p in files if p.is_file()]


def test_the_secure_release_is_refused_where_maven_has_no_plugin(cli):
    from adapter.errors import ConfigurationError
    from adapter.local import LocalNode, NodeConfig

    with pytest.raises(ConfigurationError, match=r"not 3\.6\.0\.0.*--version 2"):
        LocalNode(NodeConfig(version="3.6.0", secure=True))
    code, _, err = cli("local", "up", "--secure")  # the default release is 3.6.0: refused before anything starts
    assert code == 2 and "--version 2" in err
