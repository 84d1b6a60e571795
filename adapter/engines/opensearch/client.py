"""Connecting to OpenSearch with opensearch-py, and reading its exceptions.

:func:`connect` builds the client from :class:`adapter.engines.connection.ConnectionSettings` (TLS, basic auth,
API key, bearer token, SigV4 for Amazon OpenSearch Service and Serverless); :func:`translate_errors`
turns opensearch-py's exceptions into the adapter's tree: TLS failures, 401 (who the client said
it was) and 403 (the permission the server names) each in its own words.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from adapter.observability import telemetry
from adapter._optional import require
from adapter.engines.connection import (
    MAX_RETRIES,
    RETRY_ON_STATUS,
    ConnectionOptions,
    ConnectionSettings,
    resolve_settings,
)
from adapter.engines.port import count_request
from adapter.engines.responses import error_reason
from adapter.errors import (
    AuthenticationError,
    BackendError,
    ClusterUnavailableError,
    ConfigurationError,
    HybridError,
    PermissionDeniedError,
    PipelineNotFoundError,
    TLSError,
)

if TYPE_CHECKING:
    from adapter.engines.opensearch.cluster import OpenSearchCluster
    from adapter.engines.port import ClusterCore
    from opensearchpy import OpenSearch
    from typing_extensions import Unpack

# `hybrid local up` installs a catch-all legacy template (hybrid-local-no-native-knn, see
# adapter/local) that every index template overlaps, and the server warns at each template put.
# Nothing to act on: keep it out of users' output.
warnings.filterwarnings("ignore", message=r".*hybrid-local-no-native-knn.*")


def connect(
    url: str | None = None,
    *,
    timeout: float = 60.0,
    connect_timeout: float = 5.0,
    pool_maxsize: int = 10,
    **options: Unpack[ConnectionOptions],
) -> OpenSearch:
    """An ``opensearchpy.OpenSearch`` client; arguments override the environment, which overrides
    the config file (:mod:`adapter.engines.connection`); ``options`` are
    :class:`~adapter.engines.connection.ConnectionOptions`.

    ``connect_timeout`` bounds opening a connection (a host that does not answer fails fast);
    ``timeout`` bounds waiting for an answer (a big bulk request or search may take a while).
    ``pool_maxsize``: connections kept open, at least the number of threads sharing the client.
    """
    return client_for(
        resolve_settings(url, **options), timeout=timeout, connect_timeout=connect_timeout, pool_maxsize=pool_maxsize
    )


def client_for(
    settings: ConnectionSettings, *, timeout: float = 60.0, connect_timeout: float = 5.0, pool_maxsize: int = 10
) -> OpenSearch:
    """The opensearch-py client for ``settings``."""
    import urllib3
    from opensearchpy import OpenSearch

    kwargs = client_kwargs(settings, pool_maxsize=pool_maxsize)
    kwargs.update(
        connection_class=observed_connection(),
        timeout=urllib3.Timeout(connect=min(connect_timeout, timeout), read=timeout),
    )
    if settings.aws_region:
        kwargs["http_auth"] = sigv4_signer(settings)
    client = OpenSearch(**kwargs)
    # how it authenticates, for 401/403 messages (never the secret)
    setattr(client, "_hybrid_auth", settings.auth_description())
    return client


def client_kwargs(settings: ConnectionSettings, *, pool_maxsize: int) -> dict[str, Any]:
    """What the sync and the asyncio client take alike: the host, TLS, retries, compression, the
    User-Agent and the credentials (SigV4's signer differs: each client adds its own)."""
    kwargs: dict[str, Any] = dict(
        hosts=[settings.url],
        headers={"user-agent": telemetry.user_agent(f"opensearch-py/{_client_version()}")},
        verify_certs=settings.verify_certs,
        ssl_show_warn=settings.verify_certs,
        maxsize=pool_maxsize,
        # Transport-level retries (connection errors, timeouts, 502/503/504): the one policy
        # (connection.RETRY_ON_STATUS).
        max_retries=MAX_RETRIES,
        retry_on_timeout=True,
        retry_on_status=RETRY_ON_STATUS,
        # gzip pays off across a network (AWS recommends it), not on loopback where it only costs CPU.
        http_compress=not settings.loopback,
        serializer=fast_serializer(),
    )
    for key in ("ca_certs", "client_cert", "client_key"):
        if getattr(settings, key):
            kwargs[key] = getattr(settings, key)
    if settings.aws_region:
        return kwargs  # signed by the client's own signer
    if settings.api_key:
        kwargs["headers"]["Authorization"] = f"ApiKey {settings.api_key}"
    elif settings.bearer_token:
        kwargs["headers"]["Authorization"] = f"Bearer {settings.bearer_token}"
    elif settings.username:
        kwargs["http_auth"] = (settings.username, settings.password or "")
    return kwargs


def fast_serializer() -> Any:
    """opensearch-py's JSON serializer with orjson underneath: the same documents both ways (its ``default``
    still turns dates, Decimals, UUIDs and numpy values into JSON), in a fraction of ``json``'s time; for
    a search the request's body and the answer's hits (issue 37: ~0.26 ms of a search's CPU in ``hybrid serve``)."""
    import orjson
    from opensearchpy.exceptions import SerializationError
    from opensearchpy.serializer import JSONSerializer

    class OrjsonSerializer(JSONSerializer):
        def dumps(self, data: Any) -> Any:
            if isinstance(data, (str, bytes)):
                return data
            try:  # a str, as opensearch-py's own: _bulk and _msearch join the lines as text
                return orjson.dumps(
                    data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
                ).decode()
            except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError is a TypeError
                raise SerializationError(data, exc) from exc

        def loads(self, s: str) -> Any:
            try:
                return orjson.loads(s)
            except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
                raise SerializationError(s, exc) from exc

    return OrjsonSerializer()


def aws_credentials(settings: ConnectionSettings) -> Any:
    """The default AWS credential chain's credentials (refreshed by boto3 as they expire)."""
    boto3 = require("boto3", "SigV4 signing for Amazon OpenSearch Service and Serverless")
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ConfigurationError(
            f"no AWS credentials found for SigV4 signing ({settings.aws_service}, {settings.aws_region}; "
            "checked the default credential chain: the environment, the shared files, the instance role)"
        )
    return credentials


def sigv4_signer(settings: ConnectionSettings) -> Any:
    """opensearch-py's ``Urllib3AWSV4SignerAuth``: its connection calls it with the method, URL and body
    alone, so it signs ``host``, ``x-amz-date`` and ``x-amz-content-sha256`` (and the session token).
    Serverless refuses a signature over ``content-length``, and AWS's front end drops hop-by-hop
    headers before checking; opensearch-py 3.2.0's ``RequestsAWSV4SignerAuth`` signs every header of
    the request, both included (opensearch-py #1047, #1044)."""
    from opensearchpy import Urllib3AWSV4SignerAuth

    return Urllib3AWSV4SignerAuth(aws_credentials(settings), settings.aws_region, settings.aws_service)


def sigv4_service(client: Any) -> str | None:
    """The service an opensearch-py client signs for with SigV4 (None: it does not sign)."""
    transport = getattr(client, "transport", None)
    auth = (getattr(transport, "kwargs", None) or {}).get("http_auth")
    service = getattr(auth, "service", None) or getattr(getattr(auth, "signer", None), "service", None)
    return str(service) if service else None


def _client_version() -> str:
    from opensearchpy import __versionstr__

    return str(__versionstr__)


class RequestLog:
    """opensearch-py's per-request log hooks (a connection calls them for each attempt), through
    :func:`adapter.observability.telemetry.log_request`: method, path, status, took; never a header or a body."""

    def log_request_success(
        self, method: str, full_url: str, path: str, body: Any, status_code: int, response: str, duration: float
    ) -> None:
        count_request()
        telemetry.log_request(method, path, status_code, duration, response)
        super().log_request_success(method, full_url, path, body, status_code, response, duration)  # type: ignore[misc]

    def log_request_fail(
        self,
        method: str,
        full_url: str,
        path: str,
        body: Any,
        duration: float,
        status_code: int | None = None,
        response: str | None = None,
        exception: Exception | None = None,
    ) -> None:
        count_request()
        telemetry.log_request(method, path, status_code, duration, response, exception)
        super().log_request_fail(method, full_url, path, body, duration, status_code, response, exception)  # type: ignore[misc]


class RequestIdHeader:
    """Sends the current request id as X-Opaque-Id. One override for the sync and the asyncio connection: it
    returns what the connection's own ``perform_request`` returns (the answer, or the aiohttp connection's
    coroutine of it, which its transport awaits)."""

    def perform_request(
        self,
        method: str,
        url: str,
        params: Any = None,
        body: Any = None,
        timeout: Any = None,
        ignore: Any = (),
        headers: Any = None,
    ) -> Any:
        rid = telemetry.current_request_id()
        if rid is not None:
            headers = {**(headers or {}), "x-opaque-id": rid}
        return super().perform_request(method, url, params, body, timeout, ignore, headers)  # type: ignore[misc]


_OBSERVED: Any = None


def observed_connection() -> Any:
    """opensearch-py's urllib3 connection, sending the current request id (X-Opaque-Id) and logging
    each request through :func:`adapter.observability.telemetry.log_request` (method, path, status, took; never a
    header or a body)."""
    global _OBSERVED
    if _OBSERVED is None:
        from opensearchpy import Urllib3HttpConnection

        class ObservedConnection(RequestIdHeader, RequestLog, Urllib3HttpConnection):
            pass

        _OBSERVED = ObservedConnection
    return _OBSERVED


def connect_cluster(url: str | None = None, **options: Any) -> OpenSearchCluster:
    """The port over :func:`connect`'s client (the registry's way to OpenSearch)."""
    from adapter.engines.opensearch import OPENSEARCH

    return OPENSEARCH.cluster(connect(url, **options))


def root_answer(cluster: ClusterCore) -> Mapping[str, Any] | None:
    """``GET /`` as the port's client gets it, to tell which engine runs at its URL (a 405 is an
    answer: Elasticsearch's integ-test node has no root endpoint). None: not asked (a client signing
    for Amazon's SigV4 services, which run OpenSearch) or not answered (the first real call says so)."""
    client = getattr(cluster, "client", None)
    if client is None or sigv4_service(client) is not None:
        return None
    try:
        with translate_errors("asking the cluster which engine it runs", client):
            answer: Mapping[str, Any] = client.info(ignore=405)  # ignored, not logged as a failed request
    except ClusterUnavailableError:
        return None
    seen = getattr(cluster, "seen_root", None)
    if seen is not None and "version" in answer:
        seen(answer)  # the port's probe reads it instead of asking GET / again
    return answer


def is_serverless(client: Any) -> bool:
    """Whether ``client`` speaks to Amazon OpenSearch Serverless: it signs for the ``aoss`` service
    (opensearch-py's SigV4 signers carry it), or its host is a ``*.aoss.amazonaws.com`` collection."""
    if sigv4_service(client) == "aoss":
        return True
    transport = getattr(client, "transport", None)
    hosts = getattr(transport, "hosts", None) or []
    return any(
        str(h.get("host", "")).lower().removesuffix(".").endswith(".aoss.amazonaws.com")
        for h in hosts
        if isinstance(h, dict)
    )


def describe(client: Any) -> str | None:
    """The address of an opensearch-py client's first host, without credentials (None: not one)."""
    try:
        host = client.transport.hosts[0]
        scheme = "https" if host.get("use_ssl") or host.get("scheme") == "https" else "http"
        return f"{scheme}://{host.get('host')}:{host.get('port')}"
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def _reason(exc: Any) -> str:
    info = getattr(exc, "info", None)
    if isinstance(info, dict):
        return error_reason(info)
    return str(getattr(exc, "error", None) or exc)


_NO_PERMISSION = re.compile(r"no permissions for \[([^\]]*)\](?: and User \[name=([^,\]]+))?")


def _auth_of(client: Any) -> str:
    return getattr(client, "_hybrid_auth", None) or "the credentials given"


def translate(exc: BaseException, action: str, client: Any = None) -> HybridError | None:
    """opensearch-py's exception as the adapter's (None: ``exc`` is not one of its exceptions)."""
    from opensearchpy.exceptions import (
        AuthenticationException,
        AuthorizationException,
        ConnectionTimeout,
        SSLError,
        TransportError,
    )
    from opensearchpy.exceptions import ConnectionError as OSConnectionError

    where = (describe(client) or "the cluster") if client is not None else "the cluster"
    if isinstance(exc, SSLError):
        return TLSError(
            f"{action}: the TLS handshake with {where} failed ({tls_reason(exc)}). Verification is on: give the CA "
            "that signed the cluster's certificate with --ca-certs (OPENSEARCH_CA_CERTS, or ca_certs in the config "
            "file); OPENSEARCH_VERIFY_CERTS=false turns the check off, for a test cluster only",
        )
    if isinstance(exc, (OSConnectionError, ConnectionTimeout)):
        hint = ""
        if where.startswith("http://") and any(
            m in str(exc) for m in ("RemoteDisconnected", "BadStatusLine", "Connection aborted")
        ):
            hint = " If the cluster uses TLS, the URL must start with https://."
        return ClusterUnavailableError(
            f"{action}: cannot reach OpenSearch at {where} ({exc.__class__.__name__}); is it running? "
            f"For a local node: `hybrid local up`.{hint}",
        )
    if isinstance(exc, AuthenticationException):
        return AuthenticationError(
            f"{action}: OpenSearch at {where} did not accept the credentials (401 Unauthorized); the client used "
            f"{_auth_of(client)}. Check the user and password, API key, token or client certificate",
            status=401,
            reason=_reason(exc),
        )
    if isinstance(exc, AuthorizationException):
        reason = _reason(exc)
        found = _NO_PERMISSION.search(reason)
        permission, user = (found.group(1), found.group(2)) if found else (None, None)
        who = f"user {user!r}" if user else _auth_of(client)
        lacks = f"lacks the permission {permission}" if permission else f"is not allowed to do this ({reason})"
        return PermissionDeniedError(
            f"{action}: permission denied (403): {who} {lacks}. A role that grants it is needed (docs/OPERATIONS.md "
            "lists what each command needs)",
            status=403,
            reason=reason,
            permission=permission,
            user=user,
        )
    if isinstance(exc, TransportError):
        status = exc.status_code if isinstance(exc.status_code, int) else None
        reason = _reason(exc)
        if "Pipeline" in reason and "is not defined" in reason:
            name = reason.split("Pipeline", 1)[1].split("is not defined")[0].strip()
            return PipelineNotFoundError(name, "create it with `hybrid init`")
        return BackendError(f"{action}: OpenSearch answered {status}: {reason}", status=status, reason=reason)
    return None


@contextlib.contextmanager
def translate_errors(action: str, client: Any = None) -> Iterator[None]:
    """Re-raise opensearch-py exceptions as :class:`BackendError` subclasses, chained."""
    try:
        yield
    except Exception as exc:
        translated = translate(exc, action, client)
        if translated is None:
            raise
        raise translated from exc


def tls_reason(exc: BaseException) -> str:
    """The certificate problem in an SSL error, without the request around it."""
    text = str(exc)
    for marker in (
        "certificate verify failed",
        "hostname mismatch",
        "wrong version number",
        "unknown ca",
        "bad certificate",
        "certificate required",
        "self-signed certificate",
        "self signed certificate",
    ):
        at = text.find(marker)
        if at >= 0:
            return text[at:].split("(_ssl", 1)[0].split("'", 1)[0].rstrip(" ,)")
    return exc.__class__.__name__
