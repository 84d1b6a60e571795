"""Connecting to OpenSearch (or Elasticsearch: :func:`connect_cluster`), and translating the
clients' exceptions into the adapter's tree.

:func:`connect` is the one place that reads the environment. Library classes take a ready client.
Secrets are passed to the client only; they never appear in ``repr``, logs or command lines.

Environment: ``OPENSEARCH_URL`` (default ``http://localhost:9200``), ``OPENSEARCH_USERNAME`` /
``OPENSEARCH_PASSWORD`` (basic auth), ``OPENSEARCH_AWS_REGION`` + ``OPENSEARCH_AWS_SERVICE``
(``es`` for Amazon OpenSearch Service, ``aoss`` for Serverless) to sign requests with SigV4 using
the default AWS credential chain, ``OPENSEARCH_VERIFY_CERTS`` (``false`` to skip TLS checks).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Iterator
from urllib.parse import urlparse

from ._optional import require
from .errors import BackendError, ClusterUnavailableError, ConfigurationError, PipelineNotFoundError
from .responses import error_reason

DEFAULT_URL = "http://localhost:9200"

# `hybrid local up` installs a catch-all legacy template (hybrid-local-no-native-knn, see
# adapter/local) that every index template overlaps, and the server warns at each template put.
# Nothing to act on: keep it out of users' output.
warnings.filterwarnings("ignore", message=r".*hybrid-local-no-native-knn.*")


def connect(
    url: str | None = None,
    *,
    username: str | None = None,
    password: str | None = None,
    aws_region: str | None = None,
    aws_service: str | None = None,
    verify_certs: bool | None = None,
    timeout: float = 60.0,
    connect_timeout: float = 5.0,
    pool_maxsize: int = 10,
):
    """An ``opensearchpy.OpenSearch`` client; arguments override the environment.

    ``connect_timeout`` bounds opening a connection (a host that does not answer fails fast);
    ``timeout`` bounds waiting for an answer (a big bulk request or search may take a while).
    ``pool_maxsize``: connections kept open, at least the number of threads sharing the client.
    """
    import urllib3
    from opensearchpy import OpenSearch, RequestsHttpConnection

    url = url or os.environ.get("OPENSEARCH_URL") or DEFAULT_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"OpenSearch URL {redact_url(url)!r} is not an http(s) URL")
    username = username or os.environ.get("OPENSEARCH_USERNAME")
    password = password or os.environ.get("OPENSEARCH_PASSWORD")
    aws_region = aws_region or os.environ.get("OPENSEARCH_AWS_REGION")
    aws_service = aws_service or os.environ.get("OPENSEARCH_AWS_SERVICE", "es")
    if verify_certs is None:
        verify_certs = os.environ.get("OPENSEARCH_VERIFY_CERTS", "true").lower() not in ("0", "false", "no")
    kwargs = dict(
        hosts=[url],
        verify_certs=verify_certs,
        ssl_show_warn=verify_certs,
        timeout=urllib3.Timeout(connect=min(connect_timeout, timeout), read=timeout),
        maxsize=pool_maxsize,
        # Transport-level retries: connection errors, timeouts and 502/503/504 from a proxy or node.
        max_retries=3,
        retry_on_timeout=True,
        retry_on_status=(502, 503, 504),
        # gzip pays off across a network (AWS recommends it), not on loopback where it only costs CPU.
        http_compress=parsed.hostname not in ("localhost", "127.0.0.1", "::1"),
    )
    if aws_region:
        if aws_service not in ("es", "aoss"):
            raise ConfigurationError(f"OPENSEARCH_AWS_SERVICE must be 'es' or 'aoss', got {aws_service!r}")
        boto3 = require("boto3", "SigV4 signing for Amazon OpenSearch Service")
        from opensearchpy import RequestsAWSV4SignerAuth

        credentials = boto3.Session().get_credentials()
        if credentials is None:
            raise ConfigurationError("no AWS credentials found for SigV4 signing (checked the default credential chain)")
        kwargs.update(http_auth=RequestsAWSV4SignerAuth(credentials, aws_region, aws_service), connection_class=RequestsHttpConnection)
    elif username:
        kwargs["http_auth"] = (username, password or "")
    return OpenSearch(**kwargs)


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
        from .engines.elasticsearch_client import describe

        return describe(client) or "the cluster"


def _reason(exc) -> str:
    info = getattr(exc, "info", None)
    if isinstance(info, dict):
        return error_reason(info)
    return str(getattr(exc, "error", None) or exc)


@contextlib.contextmanager
def translate_errors(action: str, client=None) -> Iterator[None]:
    """Re-raise opensearch-py exceptions as :class:`BackendError` subclasses, chained."""
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import ConnectionTimeout, TransportError

    try:
        yield
    except (OSConnectionError, ConnectionTimeout) as exc:
        where = describe_url(client) if client is not None else "the cluster"
        raise ClusterUnavailableError(
            f"{action}: cannot reach OpenSearch at {where} ({exc.__class__.__name__}); is it running? "
            "For a local node: `hybrid local up`",
        ) from exc
    except TransportError as exc:
        status = exc.status_code if isinstance(exc.status_code, int) else None
        reason = _reason(exc)
        if "Pipeline" in reason and "is not defined" in reason:
            name = reason.split("Pipeline", 1)[1].split("is not defined")[0].strip()
            raise PipelineNotFoundError(name, "create it with `hybrid init`") from exc
        raise BackendError(f"{action}: OpenSearch answered {status}: {reason}", status=status, reason=reason) from exc
    except Exception as exc:
        from .engines.elasticsearch_client import translate

        translated = translate(exc, action, describe_url(client) if client is not None else "the cluster")
        if translated is None:  # not elasticsearch-py's: not ours to translate
            raise
        raise translated from exc


# -- either engine -------------------------------------------------------------------------------


def connect_cluster(url: str | None = None, *, engine: str | None = None, **options):
    """A client for the engine at ``url``: opensearch-py for OpenSearch (:func:`connect`),
    elasticsearch-py for Elasticsearch (:func:`~adapter.engines.elasticsearch_client.connect_elasticsearch`,
    the ``elasticsearch`` extra). ``engine`` (or ``HYBRID_ENGINE``) names it; otherwise one
    ``GET /`` decides. Amazon's SigV4 services are OpenSearch and are not asked."""
    engine = engine or os.environ.get("HYBRID_ENGINE")
    if engine not in (None, "opensearch", "elasticsearch"):
        raise ConfigurationError(f"engine must be opensearch or elasticsearch, got {engine!r}")
    if engine == "elasticsearch":
        from .engines.elasticsearch_client import connect_elasticsearch

        return connect_elasticsearch(url, **_shared(options))
    client = connect(url, **options)
    if engine is None and not (options.get("aws_region") or os.environ.get("OPENSEARCH_AWS_REGION")):
        from .engines.elasticsearch_client import speaks_elasticsearch

        try:
            with translate_errors("asking the cluster which engine it runs", client):
                elastic = speaks_elasticsearch(client)
        except ClusterUnavailableError:
            return client  # the first real call says so, as before
        if elastic:
            from .engines.elasticsearch_client import connect_elasticsearch

            return connect_elasticsearch(url, **_shared(options))
    return client


def _shared(options: dict) -> dict:
    """The options of :func:`connect` that the Elasticsearch client takes too."""
    aws = [k for k in ("aws_region", "aws_service") if options.get(k)]
    if aws:
        raise ConfigurationError(f"{', '.join(aws)}: SigV4 signing is for Amazon OpenSearch Service, not Elasticsearch")
    keep = ("username", "password", "verify_certs", "timeout", "pool_maxsize")
    return {k: v for k, v in options.items() if k in keep and v is not None}
