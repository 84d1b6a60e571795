"""Embedding one batch of entries: their texts through the embedding cache and the model (on a
thread of its own, so that Ctrl-C and SIGTERM are handled at once; on a worker thread under
asyncio), checked against the index's fingerprint; a vector a row carries is used as it is."""

from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from adapter import aio
from adapter.index.documents import embedding_text
from adapter.ingest.entries import Entry, with_carried
from adapter.models.cache import EmbeddingCache, embed_documents
from adapter.models.embedders import Embedder, check_vectors

T = TypeVar("T")


@dataclass(frozen=True)
class Embedded:
    """The vectors of one batch's entries, and where they came from."""

    vectors: Any
    embedded: int  # texts the model saw
    from_cache: int
    rejected: int  # cache entries that failed their integrity check (embedded again)
    seconds: float

    @classmethod
    def none(cls) -> Embedded:
        return cls((), 0, 0, 0, 0.0)


def interruptible(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own while this one waits in short steps: a signal's handler (Ctrl-C,
    SIGTERM) runs in the main thread between two steps, not after a model call that stays in C code for
    a minute (a whole long document through e5). Interrupted, the call is left to finish in its daemon thread."""
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals reach the main thread only: nothing to wait for
    done: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            done.append((True, context.run(work)))
        except BaseException as exc:  # handed to the waiting thread
            done.append((False, exc))

    thread = threading.Thread(target=run, daemon=True, name="hybrid-embed")
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    ok, value = done[0]
    if not ok:
        raise value
    result: T = value
    return result


def embed(embedder: Embedder, cache: EmbeddingCache | None, entries: Sequence[Entry]) -> Embedded:
    """The entries' vectors (through the cache), checked against the index's fingerprint; a carried
    vector (checked at admission) is used as it is."""
    fp = embedder.fingerprint
    t0 = time.perf_counter()
    texts = [embedding_text(e.title, e.text) for e in entries if e.vector is None]
    if aio.bridged():  # AsyncIngestor: on a worker thread, the loop's other tasks going on meanwhile
        found = aio.offload(embed_documents, embedder, texts, cache)
    else:  # on a thread of its own, so that Ctrl-C and SIGTERM are handled at once
        found = interruptible(lambda: embed_documents(embedder, texts, cache))
    seconds = time.perf_counter() - t0
    check_vectors(found.vectors, fp, what=f"vectors from {fp.model}")
    return Embedded(with_carried(entries, found.vectors), found.embedded, found.from_cache, found.rejected, seconds)
