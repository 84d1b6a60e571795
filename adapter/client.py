"""Connecting to OpenSearch (or Elasticsearch: :func:`connect_cluster`), and translating the
clients' exceptions into the adapter's tree.

:func:`connect` is the one place that reads the environment and the config file. Library classes
take a ready client. Secrets go to the client only: never into ``repr``, logs, error messages or
command lines (the CLI takes none as an option; a URL with a password in it is refused there).

Where settings come from, first found wins: the arguments, the environment, the config file.

- ``OPENSEARCH_URL`` (default ``http://localhost:9200``); TLS is verified unless
  ``OPENSEARCH_VERIFY_CERTS=false``; ``OPENSEARCH_CA_CERTS`` (a PEM file of the CA that signed the
  cluster's certificate), ``OPENSEARCH_CLIENT_CERT`` / ``OPENSEARCH_CLIENT_KEY`` (a client certificate).
- Basic auth: ``OPENSEARCH_USERNAME`` / ``OPENSEARCH_PASSWORD``. An API key
  (``OPENSEARCH_API_KEY``: ``Authorization: ApiKey``, OpenSearch 3.7+ and Elasticsearch) or a bearer
  token (``OPENSEARCH_BEARER_TOKEN``: a JWT for the security plugin's JWT domain, or an on-behalf-of
  token). ``OPENSEARCH_AWS_REGION`` + ``OPENSEARCH_AWS_SERVICE`` (``es``, ``aoss``): SigV4 with the
  default AWS credential chain.
- The config file: ``HYBRID_CONFIG``, else ``~/.config/opensearch-hybrid/config.yaml`` when it
  exists (YAML or JSON) with the keys ``url``, ``username``, ``password``, ``password_file``,
  ``api_key``, ``bearer_token``, ``ca_certs``, ``client_cert``, ``client_key``, ``verify_certs``,
  ``aws_region``, ``aws_service``. A file holding a secret must be readable by its owner only.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterator, Mapping
from urllib.parse import urlparse

from ._optional import require
from .errors import (
    AuthenticationError,
    BackendError,
    ClusterUnavailableError,
    ConfigurationError,
    PermissionDeniedError,
    PipelineNotFoundError,
    TLSError,
)
from .responses import error_reason

DEFAULT_URL = "http://localhost:9200"
CONFIG_ENV = "HYBRID_CONFIG"
CONFIG_KEYS = ("url", "username", "password", "password_file", "api_key", "bearer_token", "ca_certs", "client_cert", "client_key",
               "verify_certs", "aws_region", "aws_service")
SECRET_KEYS = ("password", "api_key", "bearer_token")
ENV = {"url": "OPENSEARCH_URL", "username": "OPENSEARCH_USERNAME", "password": "OPENSEARCH_PASSWORD", "api_key": "OPENSEARCH_API_KEY",
       "bearer_token": "OPENSEARCH_BEARER_TOKEN", "ca_certs": "OPENSEARCH_CA_CERTS", "client_cert": "OPENSEARCH_CLIENT_CERT",
       "client_key": "OPENSEARCH_CLIENT_KEY", "verify_certs": "OPENSEARCH_VERIFY_CERTS", "aws_region": "OPENSEARCH_AWS_REGION",
       "aws_service": "OPENSEARCH_AWS_SERVICE"}

# `hybrid local up` installs a catch-all legacy template (hybrid-local-no-native-knn, see
# adapter/local) that every index template overlaps, and the server warns at each template put.
# Nothing to act on: keep it out of users' output.
warnings.filterwarnings("ignore", message=r".*hybrid-local-no-native-knn.*")


def default_config_path() -> Path:
    root = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(root) / "opensearch-hybrid" / "config.yaml"


def read_config(path: str | os.PathLike | None = None) -> tuple[dict[str, Any], str | None]:
    """The config file's settings and where they came from (``{}`` when there is none)."""
    explicit = path or os.environ.get(CONFIG_ENV)
    p = Path(explicit) if explicit else default_config_path()
    if not p.exists():
        if explicit:
            raise ConfigurationError(f"the config file {p} does not exist (from {'--config' if path else CONFIG_ENV})")
        return {}, None
    import yaml

    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"cannot read the config file {p}: {exc.__class__.__name__}") from None  # its text may hold secrets
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"the config file {p} must be a mapping of settings ({', '.join(CONFIG_KEYS)})")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigurationError(f"the config file {p} has unknown keys {', '.join(unknown)}; expected {', '.join(CONFIG_KEYS)}")
    if any(data.get(k) for k in SECRET_KEYS) and p.stat().st_mode & 0o077:
        raise ConfigurationError(f"the config file {p} holds a secret but others can read it: chmod 600 {p}")
    return dict(data), str(p)


def _password_file(path: str, where: str) -> str:
    p = Path(path).expanduser()
    try:
        if p.stat().st_mode & 0o077:
            raise ConfigurationError(f"the password file {p} (from {where}) is readable by others: chmod 600 it")
        return p.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the password file {p} (from {where}): {exc.strerror}") from None


def _file(path: str | None, what: str, where: str) -> str | None:
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigurationError(f"the {what} file {p} (from {where}) does not exist")
    return str(p)


def connect(
    url: str | None = None,
    *,
    username: str | None = None,
    password: str | None = None,
    aws_region: str | None = None,
    aws_service: str | None = None,
    verify_certs: bool | None = None,
    ca_certs: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    api_key: str | None = None,
    bearer_token: str | None = None,
    config: str | os.PathLike | None = None,
    timeout: float = 60.0,
    connect_timeout: float = 5.0,
    pool_maxsize: int = 10,
):
    """An ``opensearchpy.OpenSearch`` client; arguments override the environment, which overrides
    the config file (see the module docstring).

    ``connect_timeout`` bounds opening a connection (a host that does not answer fails fast);
    ``timeout`` bounds waiting for an answer (a big bulk request or search may take a while).
    ``pool_maxsize``: connections kept open, at least the number of threads sharing the client.
    """
    import urllib3
    from opensearchpy import OpenSearch, RequestsHttpConnection

    file, file_path = read_config(config)
    given = {"url": url, "username": username, "password": password, "aws_region": aws_region, "aws_service": aws_service,
             "verify_certs": verify_certs, "ca_certs": ca_certs, "client_cert": client_cert, "client_key": client_key,
             "api_key": api_key, "bearer_token": bearer_token}
    settings: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, value in given.items():
        for source, found in (("the arguments", value), (ENV.get(key, ""), os.environ.get(ENV.get(key, "")) if key in ENV else None),
                              (f"the config file {file_path}", file.get(key))):
            if found not in (None, ""):
                settings[key], origin[key] = found, source
                break
    if "password" not in settings and file.get("password_file"):
        settings["password"] = _password_file(file["password_file"], f"the config file {file_path}")
        origin["password"] = f"the config file {file_path}"
    url = str(settings.get("url") or DEFAULT_URL)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"OpenSearch URL {redact_url(url)!r} is not an http(s) URL")
    if parsed.username is not None:  # credentials in the URL: moved to http_auth, so no repr or message shows them
        settings.setdefault("username", parsed.username)
        origin.setdefault("username", "the URL")
        if parsed.password is not None:
            settings.setdefault("password", parsed.password)
            origin.setdefault("password", "the URL")
        url = parsed._replace(netloc=parsed.netloc.rsplit("@", 1)[1]).geturl()
    verify = settings.get("verify_certs", True)
    if isinstance(verify, str):
        verify = verify.lower() not in ("0", "false", "no")
    kwargs: dict[str, Any] = dict(
        hosts=[url],
        verify_certs=bool(verify),
        ssl_show_warn=bool(verify),
        timeout=urllib3.Timeout(connect=min(connect_timeout, timeout), read=timeout),
        maxsize=pool_maxsize,
        # Transport-level retries: connection errors, timeouts and 502/503/504 from a proxy or node.
        max_retries=3,
        retry_on_timeout=True,
        retry_on_status=(502, 503, 504),
        # gzip pays off across a network (AWS recommends it), not on loopback where it only costs CPU.
        http_compress=parsed.hostname not in ("localhost", "127.0.0.1", "::1"),
    )
    for key, what in (("ca_certs", "CA certificates"), ("client_cert", "client certificate"), ("client_key", "client key")):
        path = _file(settings.get(key), what, origin.get(key, ""))
        if path:
            kwargs[key] = path
    auth = "no credentials"
    service = str(settings.get("aws_service") or "es")
    if settings.get("aws_region"):
        if service not in ("es", "aoss"):
            raise ConfigurationError(f"OPENSEARCH_AWS_SERVICE must be 'es' or 'aoss', got {service!r}")
        boto3 = require("boto3", "SigV4 signing for Amazon OpenSearch Service")
        from opensearchpy import RequestsAWSV4SignerAuth

        credentials = boto3.Session().get_credentials()
        if credentials is None:
            raise ConfigurationError("no AWS credentials found for SigV4 signing (checked the default credential chain)")
        kwargs.update(http_auth=RequestsAWSV4SignerAuth(credentials, settings["aws_region"], service), connection_class=RequestsHttpConnection)
        auth = f"SigV4 ({service}, {settings['aws_region']})"
    elif settings.get("api_key"):
        kwargs["headers"] = {"Authorization": f"ApiKey {settings['api_key']}"}
        auth = f"an API key (from {origin['api_key']})"
    elif settings.get("bearer_token"):
        kwargs["headers"] = {"Authorization": f"Bearer {settings['bearer_token']}"}
        auth = f"a bearer token (from {origin['bearer_token']})"
    elif settings.get("username"):
        kwargs["http_auth"] = (str(settings["username"]), str(settings.get("password") or ""))
        auth = f"basic auth as {settings['username']!r} (from {origin['username']})"
    if "client_cert" in kwargs:
        auth += f", client certificate {kwargs['client_cert']}"
    client = OpenSearch(**kwargs)
    client._hybrid_auth = auth  # how it authenticates, for 401/403 messages (never the secret)
    return client


def is_serverless(client) -> bool:
    """Whether ``client`` speaks to Amazon OpenSearch Serverless: it signs for the ``aoss`` service
    (opensearch-py's SigV4 signers carry it), or its host is a ``*.aoss.amazonaws.com`` collection."""
    transport = getattr(client, "transport", None)
    auth = (getattr(transport, "kwargs", None) or {}).get("http_auth")
    service = getattr(auth, "service", None) or getattr(getattr(auth, "signer", None), "service", None)
    if service == "aoss":
        return True
    hosts = getattr(transport, "hosts", None) or []
    return any(str(h.get("host", "")).endswith(".aoss.amazonaws.com") for h in hosts if isinstance(h, dict))


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``, for messages."""
    try:
        parsed = urlparse(url)
        if parsed.password is None:
            return url
        host = parsed.netloc.rsplit("@", 1)[1]
        return parsed._replace(netloc=f"{parsed.username}:***@{host}").geturl()
    except ValueError:  # an unparsable port and the like: say nothing of what it holds
        return "<the URL given>"


def describe_url(client) -> str:
    """The cluster's address without credentials, for messages."""
    try:
        host = client.transport.hosts[0]
        scheme = "https" if host.get("use_ssl") or host.get("scheme") == "https" else "http"
        return f"{scheme}://{host.get('host')}:{host.get('port')}"
    except (AttributeError, IndexError, KeyError):
        from .engines.elasticsearch.client import describe

        return describe(client) or "the cluster"


def _reason(exc) -> str:
    info = getattr(exc, "info", None)
    if isinstance(info, dict):
        return error_reason(info)
    return str(getattr(exc, "error", None) or exc)


_NO_PERMISSION = re.compile(r"no permissions for \[([^\]]*)\](?: and User \[name=([^,\]]+))?")


def _auth_of(client) -> str:
    return getattr(client, "_hybrid_auth", None) or "the credentials given"


@contextlib.contextmanager
def translate_errors(action: str, client=None) -> Iterator[None]:
    """Re-raise opensearch-py exceptions as :class:`BackendError` subclasses, chained: TLS failures,
    401 (who the client said it was) and 403 (the permission the server names) each in its own words."""
    from opensearchpy.exceptions import AuthenticationException, AuthorizationException
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import ConnectionTimeout, SSLError, TransportError

    try:
        yield
    except SSLError as exc:
        where = describe_url(client) if client is not None else "the cluster"
        raise TLSError(
            f"{action}: the TLS handshake with {where} failed ({tls_reason(exc)}). Verification is on: give the CA that "
            "signed the cluster's certificate with --ca-certs (OPENSEARCH_CA_CERTS, or ca_certs in the config file); "
            "OPENSEARCH_VERIFY_CERTS=false turns the check off, for a test cluster only",
        ) from exc
    except (OSConnectionError, ConnectionTimeout) as exc:
        where = describe_url(client) if client is not None else "the cluster"
        hint = ""
        if where.startswith("http://") and any(m in str(exc) for m in ("RemoteDisconnected", "BadStatusLine", "Connection aborted")):
            hint = " If the cluster uses TLS, the URL must start with https://."
        raise ClusterUnavailableError(
            f"{action}: cannot reach OpenSearch at {where} ({exc.__class__.__name__}); is it running? "
            f"For a local node: `hybrid local up`.{hint}",
        ) from exc
    except AuthenticationException as exc:
        where = describe_url(client) if client is not None else "the cluster"
        raise AuthenticationError(
            f"{action}: OpenSearch at {where} did not accept the credentials (401 Unauthorized); the client used "
            f"{_auth_of(client)}. Check the user and password, API key, token or client certificate",
            status=401, reason=_reason(exc),
        ) from exc
    except AuthorizationException as exc:
        reason = _reason(exc)
        found = _NO_PERMISSION.search(reason)
        permission, user = (found.group(1), found.group(2)) if found else (None, None)
        who = f"user {user!r}" if user else _auth_of(client)
        lacks = f"lacks the permission {permission}" if permission else f"is not allowed to do this ({reason})"
        raise PermissionDeniedError(
            f"{action}: permission denied (403): {who} {lacks}. A role that grants it is needed (docs/OPERATIONS.md lists "
            "what each command needs)", status=403, reason=reason, permission=permission, user=user,
        ) from exc
    except TransportError as exc:
        status = exc.status_code if isinstance(exc.status_code, int) else None
        reason = _reason(exc)
        if "Pipeline" in reason and "is not defined" in reason:
            name = reason.split("Pipeline", 1)[1].split("is not defined")[0].strip()
            raise PipelineNotFoundError(name, "create it with `hybrid init`") from exc
        raise BackendError(f"{action}: OpenSearch answered {status}: {reason}", status=status, reason=reason) from exc
    except Exception as exc:
        from .engines.elasticsearch.client import translate

        translated = translate(exc, action, describe_url(client) if client is not None else "the cluster")
        if translated is None:  # not elasticsearch-py's: not ours to translate
            raise
        raise translated from exc


# -- either engine -------------------------------------------------------------------------------


def connect_cluster(url: str | None = None, *, engine: str | None = None, **options):
    """A client for the engine at ``url``: opensearch-py for OpenSearch (:func:`connect`),
    elasticsearch-py for Elasticsearch (:func:`~adapter.engines.elasticsearch.client.connect_elasticsearch`,
    the ``elasticsearch`` extra). ``engine`` (or ``HYBRID_ENGINE``) names it; otherwise one
    ``GET /`` decides. Amazon's SigV4 services are OpenSearch and are not asked."""
    engine = engine or os.environ.get("HYBRID_ENGINE")
    if engine not in (None, "opensearch", "elasticsearch"):
        raise ConfigurationError(f"engine must be opensearch or elasticsearch, got {engine!r}")
    if engine == "elasticsearch":
        from .engines.elasticsearch.client import connect_elasticsearch

        return connect_elasticsearch(url, **_shared(options))
    client = connect(url, **options)
    if engine is None and not (options.get("aws_region") or os.environ.get("OPENSEARCH_AWS_REGION")):
        from .engines.elasticsearch.client import speaks_elasticsearch

        try:
            with translate_errors("asking the cluster which engine it runs", client):
                elastic = speaks_elasticsearch(client)
        except ClusterUnavailableError:
            return client  # the first real call says so, as before
        if elastic:
            from .engines.elasticsearch.client import connect_elasticsearch

            return connect_elasticsearch(url, **_shared(options))
    return client


def _shared(options: dict) -> dict:
    """The options of :func:`connect` that the Elasticsearch client takes too."""
    aws = [k for k in ("aws_region", "aws_service") if options.get(k)]
    if aws:
        raise ConfigurationError(f"{', '.join(aws)}: SigV4 signing is for Amazon OpenSearch Service, not Elasticsearch")
    keep = ("username", "password", "verify_certs", "timeout", "pool_maxsize")
    return {k: v for k, v in options.items() if k in keep and v is not None}


def tls_reason(exc) -> str:
    """The certificate problem in an SSL error, without the request around it."""
    text = str(exc)
    for marker in ("certificate verify failed", "hostname mismatch", "wrong version number", "unknown ca", "bad certificate",
                   "certificate required", "self-signed certificate", "self signed certificate"):
        at = text.find(marker)
        if at >= 0:
            return text[at:].split("(_ssl", 1)[0].split("'", 1)[0].rstrip(" ,)")
    return exc.__class__.__name__
