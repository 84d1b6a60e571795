"""Query vectors for concurrent requests: an LRU cache, and the model's calls batched across requests.

The model runs on one thread of its own (it is not shared by concurrent calls: a Hugging Face
tokenizer refuses to be). While it embeds, the queries that arrive wait together and are embedded
in the next round: one request alone pays no wait. A round's queries go shortest first, ``max_batch``
(8) a model call: a call pads every query to its longest, and on a CPU a query's cost is its tokens,
so a large batch saves little (MiniLM in ONNX Runtime, SciFact queries, ms of CPU a query: 8.6
alone, 7.6 by 4, 8.0 by 8, 10.1 by 32 as they came; 6.7 by 8 in length order). A query
already being embedded is not embedded twice; a request that gives up (its deadline) does not
cancel the batch its query is in, whose vector is cached for the next asker.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Callable, Sequence

import numpy as np

from adapter.models.embedders import Embedder
from adapter.serve.admission import DaemonPool

EmbedBatch = Callable[[Sequence[str]], np.ndarray]


def batch_embedder(embedder: Embedder) -> EmbedBatch:
    """``embedder``'s batch query encoder (``embed_queries``) where it has one, else one call per query."""
    many = getattr(embedder, "embed_queries", None)
    if callable(many):
        return lambda texts: np.asarray(many(list(texts)), dtype=np.float32)
    return lambda texts: np.stack([np.asarray(embedder.embed_query(t), dtype=np.float32) for t in texts])


class QueryVectors:
    """``await vectors.get(text)``: the query's vector. ``cache_size`` 0 keeps none; ``max_batch``
    bounds one model call. ``on_batch(size)`` and ``on_vector(source)`` report to the metrics."""

    def __init__(
        self,
        embed: EmbedBatch,
        *,
        cache_size: int = 10_000,
        max_batch: int = 8,
        on_batch: Callable[[int], None] = lambda n: None,
        on_vector: Callable[[str], None] = lambda source: None,
    ) -> None:
        if cache_size < 0 or max_batch < 1:
            raise ValueError(f"cache_size must be >= 0 and max_batch >= 1, got {cache_size}, {max_batch}")
        self._embed = embed
        self.cache_size = cache_size
        self.max_batch = max_batch
        self._on_batch = on_batch
        self._on_vector = on_vector
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        self._queue: list[str] = []
        self._draining = False
        self._thread = DaemonPool(1, "hybrid-serve-embed")

    def __len__(self) -> int:
        return len(self._cache)

    async def get(self, text: str) -> np.ndarray:
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            self._on_vector("cache")
            return cached
        future = self._pending.get(text)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieved)
            self._pending[text] = future
            self._queue.append(text)
            if not self._draining:
                self._draining = True
                asyncio.get_running_loop().create_task(self._drain())
        self._on_vector("model")
        return await asyncio.shield(future)  # one waiter giving up leaves the others theirs

    async def _drain(self) -> None:
        try:
            while self._queue:
                # A round: what is queued now, shortest first, ``max_batch`` a model call (those arriving
                # meanwhile wait for the next round: none waits behind ever-shorter newcomers).
                round_, self._queue = sorted(self._queue, key=len), []
                for start in range(0, len(round_), self.max_batch):
                    await self._embed_batch(round_[start : start + self.max_batch])
        finally:
            self._draining = False

    async def _embed_batch(self, batch: list[str]) -> None:
        self._on_batch(len(batch))
        try:
            vectors = await self._thread.submit(lambda: self._embed(batch))
        except Exception as exc:  # every waiter of this batch learns why
            for text in batch:
                self._settle(text, error=exc)
            return
        for text, vector in zip(batch, vectors):
            self._remember(text, vector)
            self._settle(text, vector=vector)

    def _remember(self, text: str, vector: np.ndarray) -> None:
        if self.cache_size == 0:
            return
        self._cache[text] = vector
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _settle(self, text: str, *, vector: np.ndarray | None = None, error: BaseException | None = None) -> None:
        future = self._pending.pop(text, None)
        if future is None or future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(vector)  # type: ignore[arg-type]

    def close(self) -> None:
        self._thread.close()


def _retrieved(future: asyncio.Future[np.ndarray]) -> None:
    """Marks an error as seen: asyncio logs one nobody awaited (every waiter gave up) otherwise."""
    if not future.cancelled():
        future.exception()
