"""The :class:`AsyncSearcher`: :class:`~adapter.search.searcher.Searcher` on an asyncio event loop,
over the engine's asyncio client (``AsyncOpenSearch``, ``AsyncElasticsearch``).

Each method is the sync searcher's, run through :mod:`adapter.aio`: the same stages, request
bodies, fusion and parsing, so the same results; only the requests are awaited, on the loop.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Concatenate, ParamSpec, TypeVar

from adapter import aio
from adapter.engines import AsyncRawClient, Engine, bridge
from adapter.index.catalog import IndexInfo
from adapter.models.embedders import Embedder
from adapter.search.searcher import Searcher

P = ParamSpec("P")
R = TypeVar("R")


def _awaited(method: Callable[Concatenate[Searcher, P], R]) -> Callable[Concatenate[AsyncSearcher, P], Awaitable[R]]:
    """``method`` of the sync searcher as a coroutine method of the async one."""

    async def call(self: AsyncSearcher, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await aio.run(method, self.searcher, *args, **kwargs)

    call.__name__, call.__qualname__, call.__doc__ = method.__name__, f"AsyncSearcher.{method.__name__}", method.__doc__
    return call


class AsyncSearcher:
    """Search one hybrid index from asyncio code::

        client = connect_async()  # AsyncOpenSearch (or connect_elasticsearch_async: AsyncElasticsearch)
        searcher = await AsyncSearcher.open(client, "docs")
        result = await searcher.search("error E-4012", technique="hybrid")

    Takes :meth:`Searcher.open`'s options and :meth:`Searcher.search`'s arguments; answers what they
    answer. Many searches may run at once on one loop. The query's embedding runs on a worker thread
    (``asyncio.to_thread``), so the loop goes on meanwhile. The client stays the caller's to close
    (``await client.close()``)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher  # over :class:`adapter.aio.Blocking`: its requests wait on the loop

    @classmethod
    async def open(
        cls,
        client: AsyncRawClient,
        alias: str,
        embedder: Embedder | None = None,
        *,
        engine: Engine | None = None,
        **options: Any,
    ) -> AsyncSearcher:
        """A searcher for the hybrid index behind ``alias``, over ``client`` (an asyncio client): reads
        the index and probes the cluster, as :meth:`Searcher.open` does."""
        searcher = await aio.run(Searcher.open, bridge(client), alias, embedder, engine=engine, **options)
        return cls(searcher)

    @property
    def client(self) -> AsyncRawClient:
        """The asyncio client."""
        client: AsyncRawClient = getattr(self.searcher.cluster, "client").async_client  # the port's: a Blocking bridge
        return client

    @property
    def alias(self) -> str:
        return self.searcher.alias

    @property
    def info(self) -> IndexInfo:
        return self.searcher.info

    search = _awaited(Searcher.search)
    legs = _awaited(Searcher.legs)
    query_evidence = _awaited(Searcher.query_evidence)
    query_match_quality = _awaited(Searcher.query_match_quality)
