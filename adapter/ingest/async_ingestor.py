"""The :class:`AsyncIngestor`: :class:`~adapter.ingest.ingestor.Ingestor` on an asyncio event loop,
over the engine's asyncio client; the bulk requests go through the client library's
``async_streaming_bulk`` (its retry pauses are ``asyncio.sleep``), awaited on the loop."""

from __future__ import annotations

from typing import Any, Iterable

from adapter import aio
from adapter.engines import AsyncRawClient, bridge
from adapter.index.catalog import IndexInfo
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.report import IngestReport
from adapter.ingest.sources import RowError, SourceDoc
from adapter.models.embedders import Embedder


class AsyncIngestor:
    """Ingest documents into one hybrid index from asyncio code::

        ingestor = await AsyncIngestor.open(connect_async(), "docs", embedder)
        report = await ingestor.ingest(read_source("docs.jsonl"))

    Takes :meth:`Ingestor.open`'s options; the report, the failures file, the retries and the
    refusals are the sync ingestor's (the same steps run). Each batch is embedded on a worker thread
    (``asyncio.to_thread``), then sent; other tasks of the loop run while either waits."""

    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor  # over :class:`adapter.aio.Blocking`: its requests wait on the loop

    @classmethod
    async def open(
        cls, client: AsyncRawClient, alias: str, embedder: Embedder | None = None, **options: Any
    ) -> AsyncIngestor:
        """An ingestor for the hybrid index behind ``alias``, over ``client`` (an asyncio client)."""
        options.setdefault("progress", False)  # a progress bar is a terminal's, not a service's
        return cls(await aio.run(Ingestor.open, bridge(client), alias, embedder, **options))

    @property
    def alias(self) -> str:
        return self.ingestor.alias

    @property
    def info(self) -> IndexInfo:
        return self.ingestor.info

    async def ingest(self, rows: Iterable[SourceDoc | RowError], *, total: int | None = None) -> IngestReport:
        """Embed and index ``rows``, as :meth:`Ingestor.ingest` does."""
        return await aio.run(self.ingestor.ingest, rows, total=total)
