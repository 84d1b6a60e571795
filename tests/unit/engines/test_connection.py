"""Where connect() takes its settings from, and that secrets stay out of reprs and messages (no cluster)."""

from __future__ import annotations

import pytest

from adapter.engines import connect
from adapter.errors import ConfigurationError
from tests.support.environment import clean_connection_env

SECRET = "s3cret-Value_123"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    clean_connection_env(monkeypatch, tmp_path)


def _conn(client):
    return client.transport.connection_pool.connections[0]


def _config(tmp_path, text, mode=0o600):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_arguments_beat_the_environment_which_beats_the_config_file(tmp_path, monkeypatch):
    path = _config(tmp_path, f"url: http://from-file:9200\nusername: file-user\npassword: {SECRET}\n")
    monkeypatch.setenv("HYBRID_CONFIG", str(path))
    client = connect()
    assert client.transport.hosts[0]["host"] == "from-file" and "file-user" in client._hybrid_auth
    assert "the config file" in client._hybrid_auth
    monkeypatch.setenv("OPENSEARCH_USERNAME", "env-user")
    assert "'env-user' (from OPENSEARCH_USERNAME)" in connect()._hybrid_auth
    assert "'arg-user' (from the arguments)" in connect(username="arg-user", password="x")._hybrid_auth


def test_api_keys_and_bearer_tokens_go_in_the_authorization_header_only(monkeypatch):
    monkeypatch.setenv("OPENSEARCH_API_KEY", SECRET)
    client = connect("https://127.0.0.1:9200")
    assert _conn(client).headers["authorization"] == f"ApiKey {SECRET}"
    assert SECRET not in repr(client) + repr(_conn(client)) + client._hybrid_auth
    monkeypatch.delenv("OPENSEARCH_API_KEY")
    monkeypatch.setenv("OPENSEARCH_BEARER_TOKEN", SECRET)
    assert _conn(connect("https://127.0.0.1:9200")).headers["authorization"] == f"Bearer {SECRET}"


def test_credentials_in_the_url_leave_the_url():
    client = connect(f"https://admin:{SECRET}@127.0.0.1:9200")
    assert SECRET not in repr(client) + str(client.transport.hosts) + repr(_conn(client))
    assert "'admin' (from the URL)" in client._hybrid_auth


def test_a_readable_config_file_with_a_secret_is_refused_without_showing_it(tmp_path):
    path = _config(tmp_path, f"password: {SECRET}\n", mode=0o644)
    with pytest.raises(ConfigurationError, match="chmod 600") as refused:
        connect(config=path)
    assert SECRET not in str(refused.value)
    _config(tmp_path, "url: http://x:9200\n", mode=0o644)  # no secret: fine
    assert connect(config=path).transport.hosts[0]["host"] == "x"


def test_config_file_mistakes_are_named(tmp_path):
    with pytest.raises(ConfigurationError, match="unknown keys passwd"):
        connect(config=_config(tmp_path, "passwd: x\n"))
    with pytest.raises(ConfigurationError, match="does not exist"):
        connect(config=tmp_path / "nope.yaml")
    with pytest.raises(ConfigurationError, match="CA certificates file .*missing.pem .*does not exist"):
        connect("https://127.0.0.1:9200", ca_certs=str(tmp_path / "missing.pem"))
    bad = _config(tmp_path, f"password: [{SECRET}\n")
    with pytest.raises(ConfigurationError, match="cannot read the config file") as refused:
        connect(config=bad)
    assert SECRET not in str(refused.value)


def test_tls_is_verified_unless_turned_off(monkeypatch, tmp_path):
    assert _conn(connect("https://127.0.0.1:9200")).pool.cert_reqs == "CERT_REQUIRED"
    monkeypatch.setenv("OPENSEARCH_VERIFY_CERTS", "false")
    assert _conn(connect("https://127.0.0.1:9200")).pool.cert_reqs == "CERT_NONE"


def test_the_cli_refuses_a_password_on_its_command_line(capsys):
    from adapter.cli import main

    code = main(["search", "q", "--index", "docs", "--url", f"https://u:{SECRET}@127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "holds a password" in err and "u:***@" in err and SECRET not in err


def test_generated_credentials_do_not_show_in_their_repr(tmp_path):
    from adapter.local.security import Credentials

    creds = Credentials.load_or_create(tmp_path / "credentials.json")
    assert creds.admin_password not in repr(creds) and creds.jwt_key not in repr(creds)
    assert (tmp_path / "credentials.json").stat().st_mode & 0o777 == 0o600
    assert Credentials.load_or_create(tmp_path / "credentials.json") == creds


def test_a_misspelt_connection_option_is_refused_not_ignored():
    """connect() takes its settings as one set of options (adapter.engines.connection.ConnectionOptions): a name
    outside it is an error, as a named parameter's misspelling was, never a setting quietly dropped."""
    with pytest.raises(TypeError, match="unknown connection options verify_cert; known: username, .*verify_certs"):
        connect("https://127.0.0.1:9200", verify_cert=False)
    assert _conn(connect("https://127.0.0.1:9200", verify_certs=False)).pool.cert_reqs == "CERT_NONE"


# -- 7. smaller clear-error gaps ------------------------------------------------------------------
def test_a_password_in_a_bad_url_is_not_printed():
    with pytest.raises(ConfigurationError) as err:
        connect("ftp://admin:s3cret@example.com:9200")
    assert "s3cret" not in str(err.value) and "ftp://admin:***@example.com:9200" in str(err.value)


@pytest.mark.parametrize(
    ("default_os", "default_es", "others", "found"),
    [
        ("http://127.0.0.1:9200", "http://127.0.0.1:9201", [], "http://127.0.0.1:9200"),  # the default release first
        (None, "http://127.0.0.1:9201", [], "http://127.0.0.1:9201"),  # then Elasticsearch's
        (None, None, ["http://127.0.0.1:9210"], "http://127.0.0.1:9210"),  # then the one other (2.19.1, say)
        (None, None, ["http://127.0.0.1:9210", "http://127.0.0.1:9211"], None),  # several: nothing says which
        (None, None, [], None),
    ],
)
def test_a_url_given_nowhere_means_the_running_local_node(monkeypatch, default_os, default_es, others, found):
    """Before: only the default releases' nodes were looked for, so after `hybrid local up --version 2.19.1`
    connect() without a URL tried localhost:9200 (the README's example failed on the 2.19.1 target in CI)."""
    from types import SimpleNamespace

    from adapter.engines.connection import local_node_url
    from adapter.local import LocalNode

    urls = {"opensearch": default_os, "elasticsearch": default_es}
    monkeypatch.setattr(LocalNode, "url", property(lambda node: urls[node.distribution.name]))
    monkeypatch.setattr(
        LocalNode, "running_clusters", classmethod(lambda cls, *a, **k: [SimpleNamespace(url=u) for u in others])
    )
    assert local_node_url() == found


def test_resolved_settings_and_their_origins_are_pinned(tmp_path, monkeypatch):
    from adapter.engines.connection import ConnectionSettings, resolve_settings

    secret = tmp_path / "pw"
    secret.write_text(f"{SECRET}\n")
    secret.chmod(0o600)
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    path = _config(tmp_path, f"url: http://from-file:9200\nusername: file-user\npassword_file: {secret}\n")
    monkeypatch.setenv("OPENSEARCH_VERIFY_CERTS", "No")
    monkeypatch.setenv("OPENSEARCH_CA_CERTS", str(ca))
    where = f"the config file {path}"
    assert resolve_settings(config=path) == ConnectionSettings(
        url="http://from-file:9200",
        verify_certs=False,
        ca_certs=str(ca),
        username="file-user",
        password=SECRET,
        origin={
            "url": where,
            "username": where,
            "ca_certs": "OPENSEARCH_CA_CERTS",
            "verify_certs": "OPENSEARCH_VERIFY_CERTS",
            "password": where,
        },
    )
    monkeypatch.delenv("OPENSEARCH_CA_CERTS")
    settings = resolve_settings(f"https://admin:{SECRET}@127.0.0.1:9200/p", username="arg-user", config=path)
    assert (settings.url, settings.username, settings.password) == ("https://127.0.0.1:9200/p", "arg-user", SECRET)
    assert settings.origin == {
        "url": "the arguments",
        "username": "the arguments",
        "verify_certs": "OPENSEARCH_VERIFY_CERTS",
        "password": where,
    }
    settings = resolve_settings(f"https://admin:{SECRET}@127.0.0.1:9200")
    assert (settings.username, settings.password, settings.origin["password"]) == ("admin", SECRET, "the URL")
    with pytest.raises(ConfigurationError, match=r"^OpenSearch URL 'ftp://x' is not an http\(s\) URL$"):
        resolve_settings("ftp://x")
    with pytest.raises(
        TypeError, match="^unknown connection options pasword, usr; known: username, password, aws_region, "
    ):
        resolve_settings("http://x:9200", usr="a", pasword="b")  # type: ignore[call-arg]
