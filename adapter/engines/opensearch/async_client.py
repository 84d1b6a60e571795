"""Connecting to OpenSearch with opensearch-py's asyncio client (``AsyncOpenSearch``, the ``async``
extra: aiohttp), from the same :class:`~adapter.engines.connection.ConnectionSettings` as the sync
client, with the same request log, X-Opaque-Id, User-Agent and retries.

SigV4: the async connection hands its signer every header of the request (``connection:
keep-alive``, ``content-type``, the request id...), and opensearch-py 3.2.0's
``AWSV4SignerAsyncAuth`` signs what botocore lets it: botocore since boto/botocore#3643 (2026)
leaves hop-by-hop headers out, older ones within the ``aws`` extra's range sign ``connection``, which
AWS's front end drops before checking (opensearch-py #1044). :class:`HostDateHashSigner` signs what
the sync signer signs, ``host``, ``x-amz-date`` and ``x-amz-content-sha256``, whatever botocore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapter._optional import require
from adapter.engines.connection import ConnectionOptions, ConnectionSettings, resolve_settings
from adapter.engines.opensearch.client import RequestIdHeader, RequestLog, aws_credentials, client_kwargs

if TYPE_CHECKING:
    from opensearchpy import AsyncOpenSearch
    from typing_extensions import Unpack


def connect_async(
    url: str | None = None, *, timeout: float = 60.0, pool_maxsize: int = 10, **options: Unpack[ConnectionOptions]
) -> AsyncOpenSearch:
    """An ``opensearchpy.AsyncOpenSearch`` client; settings as :func:`adapter.engines.opensearch.client.connect`
    reads them. Close it with ``await client.close()``."""
    return async_client_for(resolve_settings(url, **options), timeout=timeout, pool_maxsize=pool_maxsize)


def async_client_for(settings: ConnectionSettings, *, timeout: float = 60.0, pool_maxsize: int = 10) -> AsyncOpenSearch:
    """The asyncio opensearch-py client for ``settings``."""
    require("aiohttp", "the asyncio client (AsyncSearcher)")
    from opensearchpy import AsyncOpenSearch

    kwargs = client_kwargs(settings, pool_maxsize=pool_maxsize)
    kwargs.update(timeout=timeout, connection_class=observed_async_connection())
    if settings.aws_region:
        kwargs["http_auth"] = HostDateHashSigner(settings)
    client = AsyncOpenSearch(**kwargs)
    setattr(client, "_hybrid_auth", settings.auth_description())  # how it authenticates, for 401/403 messages
    return client


class HostDateHashSigner:
    """SigV4 for the async connection, over opensearch-py's ``AWSV4Signer``: the headers the connection
    passes are not signed (see the module docstring)."""

    def __init__(self, settings: ConnectionSettings) -> None:
        from opensearchpy.helpers.signer import AWSV4Signer

        if settings.aws_region is None:
            raise ValueError("SigV4 needs a region (adapter.engines.connection resolves it)")
        self.signer = AWSV4Signer(aws_credentials(settings), settings.aws_region, settings.aws_service)
        self.service = settings.aws_service  # read as opensearch-py's signers' (is_serverless, LangChain)

    def __call__(self, method: str, url: str, body: Any = None, headers: Any = None) -> dict[str, str]:
        signed: dict[str, str] = self.signer.sign(method, url, body)
        return signed


_OBSERVED: Any = None


def observed_async_connection() -> Any:
    """opensearch-py's aiohttp connection (the one that takes a signer), sending the current request
    id (X-Opaque-Id) and logging each request (:class:`~adapter.engines.opensearch.client.RequestLog`)."""
    global _OBSERVED
    if _OBSERVED is None:
        from opensearchpy import AsyncHttpConnection

        class ObservedAsyncConnection(RequestIdHeader, RequestLog, AsyncHttpConnection):
            pass

        _OBSERVED = ObservedAsyncConnection
    return _OBSERVED
