"""Where the connection settings come from: URL, TLS, credentials, the config file. Neutral: no
engine's client is built here (each engine package builds its own from :class:`ConnectionSettings`:
:func:`adapter.engines.opensearch.client.connect`, :func:`adapter.engines.connect_cluster`).

:func:`resolve_settings` is the one place that reads the environment and the config file. Library
classes take a ready client. Secrets go to the client only: never into ``repr``, logs, error
messages or command lines (the CLI takes none as an option; a URL with a password in it is refused
there).

Where settings come from, first found wins: the arguments, the environment, the config file.

- ``OPENSEARCH_URL`` (default: the running local node of ``hybrid local up`` / ``make demo``, else
  ``http://localhost:9200``); TLS is verified unless
  ``OPENSEARCH_VERIFY_CERTS=false``; ``OPENSEARCH_CA_CERTS`` (a PEM file of the CA that signed the
  cluster's certificate), ``OPENSEARCH_CLIENT_CERT`` / ``OPENSEARCH_CLIENT_KEY`` (a client certificate).
- Basic auth: ``OPENSEARCH_USERNAME`` / ``OPENSEARCH_PASSWORD``. An API key
  (``OPENSEARCH_API_KEY``: ``Authorization: ApiKey``, OpenSearch 3.7+ and Elasticsearch) or a bearer
  token (``OPENSEARCH_BEARER_TOKEN``: a JWT for the security plugin's JWT domain, or an on-behalf-of
  token). SigV4 (the default AWS credential chain) for Amazon OpenSearch Service (``es``) and
  Serverless (``aoss``): ``OPENSEARCH_AWS_SERVICE`` and ``OPENSEARCH_AWS_REGION``; what is not given
  comes from the host (``*.aoss.amazonaws.com`` is always signed, for ``aoss``; ``*.es.amazonaws.com``
  names its region), then ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, then the AWS profile. A service
  with no region anywhere, a setting the host contradicts, or SigV4 beside another credential is
  refused (:class:`~adapter.errors.ConfigurationError`).
- The config file: ``HYBRID_CONFIG``, else ``~/.config/opensearch-hybrid/config.yaml`` when it
  exists (YAML or JSON) with the keys ``url``, ``username``, ``password``, ``password_file``,
  ``api_key``, ``bearer_token``, ``ca_certs``, ``client_cert``, ``client_key``, ``verify_certs``,
  ``aws_region``, ``aws_service``. A file holding a secret must be readable by its owner only.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypedDict
from urllib.parse import urlparse

from adapter.errors import ConfigurationError

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11; annotations only

DEFAULT_URL = "http://localhost:9200"
# The transport's retry policy of the clients the adapter builds (both engines): connection errors,
# timeouts and these statuses from a proxy or node, asked again this many times. A search asks again
# only what the transport does not (adapter.search.recovery): one policy per request.
RETRY_ON_STATUS = (502, 503, 504)
MAX_RETRIES = 3
CONFIG_ENV = "HYBRID_CONFIG"
CONFIG_KEYS = (
    "url",
    "username",
    "password",
    "password_file",
    "api_key",
    "bearer_token",
    "ca_certs",
    "client_cert",
    "client_key",
    "verify_certs",
    "aws_region",
    "aws_service",
)
SECRET_KEYS = ("password", "api_key", "bearer_token")
ENV = {
    "url": "OPENSEARCH_URL",
    "username": "OPENSEARCH_USERNAME",
    "password": "OPENSEARCH_PASSWORD",
    "api_key": "OPENSEARCH_API_KEY",
    "bearer_token": "OPENSEARCH_BEARER_TOKEN",
    "ca_certs": "OPENSEARCH_CA_CERTS",
    "client_cert": "OPENSEARCH_CLIENT_CERT",
    "client_key": "OPENSEARCH_CLIENT_KEY",
    "verify_certs": "OPENSEARCH_VERIFY_CERTS",
    "aws_region": "OPENSEARCH_AWS_REGION",
    "aws_service": "OPENSEARCH_AWS_SERVICE",
}


def default_config_path() -> Path:
    root = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(root) / "opensearch-hybrid" / "config.yaml"


def read_config(path: str | os.PathLike[str] | None = None) -> tuple[dict[str, Any], str | None]:
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
        # its text may hold secrets
        raise ConfigurationError(f"cannot read the config file {p}: {exc.__class__.__name__}") from None
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"the config file {p} must be a mapping of settings ({', '.join(CONFIG_KEYS)})")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigurationError(
            f"the config file {p} has unknown keys {', '.join(unknown)}; expected {', '.join(CONFIG_KEYS)}"
        )
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


@dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect, resolved (see the module docstring). ``origin`` says where each
    setting came from, for messages; secrets are left out of ``repr``."""

    url: str = DEFAULT_URL  # without credentials
    verify_certs: bool = True
    ca_certs: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    aws_region: str | None = None
    aws_service: str = "es"
    origin: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def hostname(self) -> str:
        return urlparse(self.url).hostname or ""

    @property
    def loopback(self) -> bool:
        return self.hostname in ("localhost", "127.0.0.1", "::1")

    def auth_description(self) -> str:
        """How the client authenticates, for 401/403 messages (never the secret)."""
        if self.aws_region:
            auth = f"SigV4 ({self.aws_service}, {self.aws_region})"
        elif self.api_key:
            auth = f"an API key (from {self.origin.get('api_key', 'the arguments')})"
        elif self.bearer_token:
            auth = f"a bearer token (from {self.origin.get('bearer_token', 'the arguments')})"
        elif self.username:
            auth = f"basic auth as {self.username!r} (from {self.origin.get('username', 'the arguments')})"
        else:
            auth = "no credentials"
        if self.client_cert:
            auth += f", client certificate {self.client_cert}"
        return auth


class ConnectionOptions(TypedDict, total=False):
    """The settings a caller may give (:func:`resolve_settings`, the engines' ``connect``): each
    overrides the environment and the config file; ``config`` names the config file."""

    username: str | None
    password: str | None
    aws_region: str | None
    aws_service: str | None
    verify_certs: bool | None
    ca_certs: str | None
    client_cert: str | None
    client_key: str | None
    api_key: str | None
    bearer_token: str | None
    config: str | os.PathLike[str] | None


def _refuse_unknown(options: Mapping[str, object]) -> None:
    unknown = sorted(set(options) - set(ConnectionOptions.__annotations__))
    if unknown:  # a misspelt option is refused, as a signature of named parameters refuses it
        raise TypeError(
            f"unknown connection options {', '.join(unknown)}; known: {', '.join(ConnectionOptions.__annotations__)}"
        )


def _first_found(
    given: Mapping[str, object], file: Mapping[str, Any], file_path: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each setting from the arguments, the environment or the config file, first found wins
    (the config file's password_file last), and where each came from."""
    settings: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, value in given.items():
        for source, found in (
            ("the arguments", value),
            (ENV.get(key, ""), os.environ.get(ENV.get(key, "")) if key in ENV else None),
            (f"the config file {file_path}", file.get(key)),
        ):
            if found not in (None, ""):
                settings[key], origin[key] = found, source
                break
    if "password" not in settings and file.get("password_file"):
        settings["password"] = _password_file(file["password_file"], f"the config file {file_path}")
        origin["password"] = f"the config file {file_path}"
    return settings, origin


def _checked_url(settings: dict[str, Any], origin: dict[str, str]) -> str:
    """The URL (the running local node's or the default when none is given), checked, its credentials
    moved into ``settings`` (where none was given) so no repr or message shows them."""
    url = str(settings.get("url") or local_node_url() or DEFAULT_URL)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"OpenSearch URL {redact_url(url)!r} is not an http(s) URL")
    if parsed.username is not None:  # credentials in the URL: moved out, so no repr or message shows them
        settings.setdefault("username", parsed.username)
        origin.setdefault("username", "the URL")
        if parsed.password is not None:
            settings.setdefault("password", parsed.password)
            origin.setdefault("password", "the URL")
        url = parsed._replace(netloc=parsed.netloc.rsplit("@", 1)[1]).geturl()
    return url


def _verify_certs(settings: Mapping[str, Any]) -> bool:
    verify = settings.get("verify_certs", True)
    if isinstance(verify, str):
        verify = verify.lower() not in ("0", "false", "no")
    return bool(verify)


def _cert_files(settings: Mapping[str, Any], origin: Mapping[str, str]) -> dict[str, str | None]:
    return {
        key: _file(settings.get(key), what, origin.get(key, ""))
        for key, what in (
            ("ca_certs", "CA certificates"),
            ("client_cert", "client certificate"),
            ("client_key", "client key"),
        )
    }


def _text_settings(settings: Mapping[str, Any]) -> dict[str, str | None]:
    return {
        k: str(settings[k]) if settings.get(k) not in (None, "") else None
        for k in ("username", "password", "api_key", "bearer_token", "aws_region", "aws_service")
    }


def resolve_settings(url: str | None = None, **options: Unpack[ConnectionOptions]) -> ConnectionSettings:
    """The settings the arguments, the environment and the config file give, first found wins;
    certificate files are checked to exist, credentials in the URL are moved out of it."""
    _refuse_unknown(options)
    file, file_path = read_config(options.get("config"))
    given: dict[str, object] = {key: url if key == "url" else options.get(key) for key in ENV}
    settings, origin = _first_found(given, file, file_path)
    url = _checked_url(settings, origin)
    verify = _verify_certs(settings)
    files = _cert_files(settings, origin)
    text = _text_settings(settings)
    region, service = _sigv4(
        text.pop("aws_region"),
        text.pop("aws_service"),
        urlparse(url).hostname or "",
        origin,
        other=_other_credential(text, origin),
    )
    return ConnectionSettings(
        url=url, verify_certs=verify, aws_region=region, aws_service=service, origin=origin, **files, **text
    )


# <id>.<region>.aoss.amazonaws.com (a Serverless collection), search-<domain>-<id>.<region>.es.amazonaws.com (a domain)
AWS_HOST = re.compile(r"^[^.]+\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.(?P<service>es|aoss)\.amazonaws\.com(?:\.cn)?$")
SIGV4_SERVICES = ("es", "aoss")


def _other_credential(text: Mapping[str, str | None], origin: Mapping[str, str]) -> str | None:
    """The credential besides SigV4 that the settings give, named with where it came from (None: none)."""
    for key, what in (("username", "basic auth"), ("api_key", "an API key"), ("bearer_token", "a bearer token")):
        if text.get(key):
            return f"{what} (from {origin.get(key, 'the arguments')})"
    return None


def _sigv4(
    region: str | None, service: str | None, hostname: str, origin: dict[str, str], *, other: str | None
) -> tuple[str | None, str]:
    """The SigV4 region and service (region None: not signed). Signed when a region or a service is
    given, or the host is a Serverless collection (which takes nothing else); the service and region
    the host names fill what was not given, then AWS_REGION / AWS_DEFAULT_REGION, then the AWS
    profile. Settings that contradict the host, a service without any region, and SigV4 beside
    another credential are refused: each would fail at the first request, or sign nothing, silently."""
    host = AWS_HOST.match(hostname.lower().removesuffix("."))  # a fully qualified name's root dot: the same host
    host_service, host_region = (host["service"], host["region"]) if host else (None, None)
    if not (region or service or host_service == "aoss"):
        return None, "es"
    why = (
        f"the service {service!r} from {origin.get('aws_service')}"
        if service
        else f"the region {region!r} from {origin.get('aws_region')}"
        if region
        else f"the Serverless host {hostname}"
    )
    if service is not None and service not in SIGV4_SERVICES:
        raise ConfigurationError(
            f"OPENSEARCH_AWS_SERVICE must be 'es' or 'aoss', got {service!r} (from {origin.get('aws_service')})"
        )
    for key, given, from_host in (("aws_service", service, host_service), ("aws_region", region, host_region)):
        if given and from_host and given != from_host:
            raise ConfigurationError(
                f"{key} is {given!r} (from {origin.get(key)}) but the host name says {from_host} ({hostname}): "
                "a request signed so is refused. Fix the setting or the URL, or leave the setting out"
            )
    if not service:
        service = host_service or "es"
        origin["aws_service"] = "the host name" if host_service else "the default"
    if not region:
        region, origin["aws_region"] = _found_region(host_region)
    if not region:
        raise ConfigurationError(
            f"SigV4 signing for {service} (asked by {why}) needs a region, and none was found: not in "
            "OPENSEARCH_AWS_REGION, the host name, AWS_REGION / AWS_DEFAULT_REGION or the AWS profile. Set "
            "OPENSEARCH_AWS_REGION (aws_region in the config file)"
        )
    if other:
        raise ConfigurationError(
            f"both SigV4 ({service}, {region}; asked by {why}) and {other} are configured, and a request "
            "carries one of them: unset the one you do not use"
        )
    return region, service


def _found_region(from_host: str | None) -> tuple[str | None, str]:
    """The region and where it came from: the host name, AWS_REGION, AWS_DEFAULT_REGION, the AWS profile."""
    if from_host:
        return from_host, "the host name"
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(name):
            return os.environ[name], name
    try:
        boto3: Any = importlib.import_module("boto3")
    except ImportError:  # the aws extra is missing: connecting says so
        return None, ""
    return boto3.Session().region_name, "the AWS profile"


def local_node_url() -> str | None:
    """The URL of the running local node (``hybrid local up``, ``make demo``): OpenSearch's default
    release, else Elasticsearch's, else the one other cluster that runs (``hybrid local up --version
    2.19.1``); None when none runs, or when several others do and nothing says which. What a URL
    given nowhere means, for the CLI and the library alike."""
    from adapter.errors import HybridError
    from adapter.local import LocalNode, NodeConfig

    quiet = lambda m: None  # noqa: E731
    try:
        url = LocalNode(log=quiet).url or LocalNode(NodeConfig(distribution="elasticsearch"), log=quiet).url
        if url:
            return url
        others = LocalNode.running_clusters(log=quiet)
        return others[0].url if len(others) == 1 else None
    except HybridError:  # an unusable OPENSEARCH_HOME and the like: no local node to find
        return None


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
