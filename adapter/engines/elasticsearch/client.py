"""Connecting to Elasticsearch with the official client, and reading its exceptions.

elasticsearch-py is the optional extra ``elasticsearch`` and is pinned below 9: a client of major
N sends ``compatible-with=N`` headers, which a 9.x server accepts for N = 8 while an 8.x server
refuses N = 9 (400 ``media_type_header_exception``, elastic/elasticsearch-py#2923). So the 8.19
client talks to Elasticsearch 8.19 and 9.x alike.

The adapter calls the client with the subset of its API that opensearch-py shares (``body=``,
query parameters as keywords, no ``params=``/``ignore=``), so the searcher, the ingestor and
``init`` run unchanged on either client; what differs (bulk helpers, points in time, the probe, the
request that fuses) belongs to the port (:mod:`adapter.engines.elasticsearch.cluster`) and the
engine (:class:`adapter.engines.elasticsearch.ElasticsearchEngine`). One thing is
adapted, the answers: elasticsearch-py wraps JSON in ``ObjectApiResponse`` (no ``.get``, not a
``Mapping``), opensearch-py returns dicts, and :mod:`adapter.engines.responses` reads dicts. The client
:func:`connect_elasticsearch` returns gives answers that are dicts and keep ``.body``/``.meta``
for elasticsearch-py's own helpers.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any, Iterator, Mapping, TypedDict
from urllib.parse import urlparse

from adapter.observability import telemetry
from adapter._optional import require
from adapter.engines.connection import DEFAULT_URL, MAX_RETRIES, RETRY_ON_STATUS, redact_url
from adapter.engines.port import count_request
from adapter.engines.responses import error_reason
from adapter.errors import BackendError, ClusterUnavailableError, ConfigurationError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from typing_extensions import Unpack

    from adapter.engines.elasticsearch.cluster import ElasticsearchCluster

# Modules whose exceptions :func:`translate` reads.
CLIENT_MODULES = ("elasticsearch", "elastic_transport")


class ElasticsearchOptions(TypedDict, total=False):
    """What :func:`connect_elasticsearch` and its asyncio twin take, each overriding the environment (the
    defaults: a 60 s request timeout, 10 connections per node)."""

    username: str | None
    password: str | None
    api_key: str | None
    verify_certs: bool | None
    timeout: float
    pool_maxsize: int


def connect_elasticsearch(url: str | None = None, **options: Unpack[ElasticsearchOptions]) -> Elasticsearch:
    """An ``elasticsearch.Elasticsearch`` client; arguments override the environment, which is
    read as :func:`adapter.engines.opensearch.client.connect` reads it (``OPENSEARCH_URL``, ``OPENSEARCH_USERNAME`` /
    ``OPENSEARCH_PASSWORD``, ``OPENSEARCH_VERIFY_CERTS``) plus ``ELASTICSEARCH_API_KEY``."""
    require("elasticsearch", "an Elasticsearch cluster")
    client: Elasticsearch = _dict_answers_class()(node_class=_observed_node(), **client_kwargs(url, **options))
    return client


def client_kwargs(
    url: str | None,
    *,
    username: str | None = None,
    password: str | None = None,
    api_key: str | None = None,
    verify_certs: bool | None = None,
    timeout: float = 60.0,
    pool_maxsize: int = 10,
) -> dict[str, Any]:
    """What the sync and the asyncio client take alike (all but the node class), from the arguments and the
    environment."""
    url = url or os.environ.get("OPENSEARCH_URL") or DEFAULT_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"Elasticsearch URL {redact_url(url)!r} is not an http(s) URL")
    username = username or os.environ.get("OPENSEARCH_USERNAME")
    password = password or os.environ.get("OPENSEARCH_PASSWORD")
    api_key = api_key or os.environ.get("ELASTICSEARCH_API_KEY")
    if verify_certs is None:
        verify_certs = os.environ.get("OPENSEARCH_VERIFY_CERTS", "true").lower() not in ("0", "false", "no")
    kwargs: dict[str, Any] = dict(
        hosts=[url],
        request_timeout=timeout,
        connections_per_node=pool_maxsize,
        # As connect(): connection errors, timeouts and 502/503/504 are retried by the transport (not 429,
        # elasticsearch-py's default: the bulk helper and the search's breaker recovery handle those).
        max_retries=MAX_RETRIES,
        retry_on_timeout=True,
        retry_on_status=RETRY_ON_STATUS,
        http_compress=parsed.hostname not in ("localhost", "127.0.0.1", "::1"),
        headers={"user-agent": telemetry.user_agent(f"elasticsearch-py/{_client_version()}")},
    )
    if parsed.scheme == "https":
        kwargs.update(verify_certs=verify_certs, ssl_show_warn=verify_certs)
    if api_key:
        kwargs["api_key"] = api_key
    elif username:
        kwargs["basic_auth"] = (username, password or "")
    return kwargs


def _client_version() -> str:
    from elasticsearch._version import __versionstr__

    return str(__versionstr__)


_OBSERVED: Any = None


def _observed_node() -> Any:
    """elastic-transport's urllib3 node, sending the current request id (X-Opaque-Id) and logging each
    request through :func:`adapter.observability.telemetry.log_request` (method, target, status, took; never a
    header or a body)."""
    global _OBSERVED
    if _OBSERVED is None:
        from elastic_transport import HttpHeaders, Urllib3HttpNode
        from elastic_transport.client_utils import DEFAULT

        class ObservedNode(Urllib3HttpNode):
            def perform_request(
                self,
                method: str,
                target: str,
                body: bytes | None = None,
                headers: HttpHeaders | None = None,
                request_timeout: Any = DEFAULT,
            ) -> Any:
                count_request()
                with failures_logged(method, target):
                    resp = super().perform_request(method, target, body, with_request_id(headers), request_timeout)
                return logged(method, target, resp)

        _OBSERVED = ObservedNode
    return _OBSERVED


def with_request_id(headers: Any) -> Any:
    """``headers`` with the current request id (X-Opaque-Id), when there is one."""
    from elastic_transport import HttpHeaders

    rid = telemetry.current_request_id()
    if rid is None:
        return headers
    headers = HttpHeaders(headers or {})
    headers["x-opaque-id"] = rid
    return headers


@contextlib.contextmanager
def failures_logged(method: str, target: str) -> Iterator[None]:
    """A request that got no answer, logged (:func:`adapter.observability.telemetry.log_request`) and raised."""
    started = time.perf_counter()
    try:
        yield
    except Exception as exc:
        telemetry.log_request(method, target, None, time.perf_counter() - started, error=exc)
        raise


def logged(method: str, target: str, resp: Any) -> Any:
    """``resp`` (a node's answer), logged: status, took, duration."""
    telemetry.log_request(method, target, resp.meta.status, resp.meta.duration, resp.body)
    return resp


class Answer(dict[str, Any]):
    """A JSON object answer as a plain dict, with elasticsearch-py's ``.body`` and ``.meta``."""

    def __init__(self, body: dict[str, Any], meta: Any) -> None:
        super().__init__(body)
        self.meta = meta

    @property
    def body(self) -> dict[str, Any]:
        return self


_DICT_ANSWERS: Any = None


def _dict_answers_class() -> Any:
    """``Elasticsearch`` whose JSON object answers are :class:`Answer` dicts (``HEAD`` answers stay
    truthy/falsy ``HeadApiResponse``s). Its namespaces (``indices``, ``cluster``...) and the copies
    ``options()`` makes go through the same ``perform_request``."""
    global _DICT_ANSWERS
    if _DICT_ANSWERS is None:
        from elastic_transport import ObjectApiResponse
        from elasticsearch import Elasticsearch

        class DictAnswers(Elasticsearch):
            engine_name = "elasticsearch"

            def perform_request(self, *args: Any, **kwargs: Any) -> Any:
                resp = super().perform_request(*args, **kwargs)
                if isinstance(resp, ObjectApiResponse) and isinstance(resp.body, dict):
                    return Answer(resp.body, resp.meta)
                return resp

        _DICT_ANSWERS = DictAnswers
    return _DICT_ANSWERS


def connect_cluster(url: str | None = None, **options: Any) -> ElasticsearchCluster:
    """The port over :func:`connect_elasticsearch`'s client, from the options of
    :func:`adapter.engines.connect` that it takes too (the registry's way to Elasticsearch)."""
    from adapter.engines.elasticsearch import ELASTICSEARCH

    aws = [k for k in ("aws_region", "aws_service") if options.get(k)]
    if aws:
        raise ConfigurationError(f"{', '.join(aws)}: SigV4 signing is for Amazon OpenSearch Service, not Elasticsearch")
    keep = ("username", "password", "verify_certs", "timeout", "pool_maxsize")
    return ELASTICSEARCH.cluster(
        connect_elasticsearch(url, **{k: v for k, v in options.items() if k in keep and v is not None})
    )


def recognises(root: Mapping[str, Any]) -> bool:
    """Whether a ``GET /`` answer comes from Elasticsearch: Elasticsearch's tagline (``You Know, for
    Search``) and no OpenSearch distribution, or refused with 405 (Elasticsearch's integ-test
    distribution has no root endpoint; OpenSearch always has one)."""
    if root.get("status") == 405 and "error" in root:
        return True
    version = root.get("version") or {}
    # OpenSearch's tagline is its own, whatever compatibility.override_main_response_version does to the version.
    return bool(version.get("distribution") != "opensearch" and "You Know, for Search" in str(root.get("tagline", "")))


def is_client_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from elasticsearch-py or its transport (checked without importing them)."""
    return type(exc).__module__.split(".")[0] in CLIENT_MODULES


def describe(client: Any) -> str | None:
    """The address of an elasticsearch-py client's first node, without credentials (None: not one)."""
    try:
        node = client.transport.node_pool.all()[0]
        return f"{node.config.scheme}://{node.config.host}:{node.config.port}"
    except (AttributeError, IndexError):
        return None


@contextlib.contextmanager
def translate_errors(action: str, client: Any) -> Iterator[None]:
    """Re-raise elasticsearch-py's exceptions in this block as the adapter's, chained."""
    try:
        yield
    except Exception as exc:
        translated = translate(exc, action, describe(client) or "the cluster")
        if translated is None:
            raise
        raise translated from exc


def translate_raised(exc: BaseException, action: str, client: Any = None) -> BackendError | None:
    """:func:`translate`, for code holding a raw client (the registry's ``translates``)."""
    if not is_client_error(exc):
        return None
    return translate(exc, action, (describe(client) if client is not None else None) or "the cluster")


def translate(exc: BaseException, action: str, where: str) -> BackendError | None:
    """elasticsearch-py's exception as the adapter's (None: ``exc`` is not one of its exceptions).

    Connection errors and timeouts (``elastic_transport.ConnectionError``, ``ConnectionTimeout``)
    become :class:`ClusterUnavailableError`; every ``ApiError`` (400 ``BadRequestError``, 403
    ``AuthorizationException``, 404 ``NotFoundError``, and plain ``ApiError`` for 405, 429, 5xx)
    a :class:`BackendError` with the server's status and reason.
    """
    if not is_client_error(exc):
        return None
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout
    from elasticsearch import ApiError, UnsupportedProductError

    if isinstance(exc, (TransportConnectionError, ConnectionTimeout)):
        return ClusterUnavailableError(
            f"{action}: cannot reach Elasticsearch at {where} ({exc.__class__.__name__}); is it running? "
            "For a local node: `hybrid local up --distribution elasticsearch`"
        )
    if isinstance(exc, UnsupportedProductError):
        return BackendError(
            f"{action}: the server at {where} is not Elasticsearch ({exc.message}); for OpenSearch use adapter.connect",
            status=exc.status_code,
            reason=str(exc.message),
        )
    if isinstance(exc, ApiError):
        status = exc.status_code if isinstance(exc.status_code, int) else None
        body = exc.body
        reason = error_reason(body) if isinstance(body, (dict, str)) and body else str(exc.message)
        return BackendError(f"{action}: Elasticsearch answered {status}: {reason}", status=status, reason=reason)
    return BackendError(f"{action}: {exc.__class__.__name__}: {exc}")
