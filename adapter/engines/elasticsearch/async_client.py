"""Connecting to Elasticsearch with elasticsearch-py's asyncio client (``AsyncElasticsearch``, the
``async`` extra: aiohttp), with the settings, request log, X-Opaque-Id, User-Agent and retries of
:func:`adapter.engines.elasticsearch.client.connect_elasticsearch`, and answers as plain dicts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapter._optional import require
from adapter.engines.elasticsearch.client import (
    Answer,
    ElasticsearchOptions,
    client_kwargs,
    failures_logged,
    logged,
    with_request_id,
)

if TYPE_CHECKING:
    from elasticsearch import AsyncElasticsearch
    from typing_extensions import Unpack


def connect_elasticsearch_async(url: str | None = None, **options: Unpack[ElasticsearchOptions]) -> AsyncElasticsearch:
    """An ``elasticsearch.AsyncElasticsearch`` client (close it with ``await client.close()``); options as
    :func:`~adapter.engines.elasticsearch.client.connect_elasticsearch` takes them."""
    require("elasticsearch", "an Elasticsearch cluster")
    require("aiohttp", "the asyncio client (AsyncSearcher)")
    kwargs = client_kwargs(url, **options)
    client: AsyncElasticsearch = _async_classes()[0](node_class=_async_classes()[1], **kwargs)
    return client


_CLASSES: tuple[Any, Any] | None = None


def _async_classes() -> tuple[Any, Any]:
    """``AsyncElasticsearch`` whose JSON object answers are :class:`~adapter.engines.elasticsearch.client.Answer`
    dicts, and elastic-transport's aiohttp node sending the request id and logging each request."""
    global _CLASSES
    if _CLASSES is None:
        from elastic_transport import AiohttpHttpNode, ObjectApiResponse
        from elastic_transport.client_utils import DEFAULT
        from elasticsearch import AsyncElasticsearch

        class AsyncDictAnswers(AsyncElasticsearch):
            engine_name = "elasticsearch"

            async def perform_request(self, *args: Any, **kwargs: Any) -> Any:
                resp = await super().perform_request(*args, **kwargs)
                if isinstance(resp, ObjectApiResponse) and isinstance(resp.body, dict):
                    return Answer(resp.body, resp.meta)
                return resp

        class ObservedAsyncNode(AiohttpHttpNode):
            # elastic-transport types the aiohttp node's perform_request as the sync node's
            async def perform_request(  # type: ignore[override]
                self,
                method: str,
                target: str,
                body: bytes | None = None,
                headers: Any = None,
                request_timeout: Any = DEFAULT,
            ) -> Any:
                with failures_logged(method, target):
                    resp = await super().perform_request(
                        method, target, body, with_request_id(headers), request_timeout
                    )
                return logged(method, target, resp)

        _CLASSES = (AsyncDictAnswers, ObservedAsyncNode)
    return _CLASSES
