"""The bulk senders of one ingest: ``threads`` :class:`~adapter.ingest.bulk.Indexer` threads on one
queue, read as one; or, for an asyncio client, one sender on the ingesting code's own thread."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from adapter.engines import BulkCounts
from adapter.ingest.bulk import DONE, BulkTarget, Indexer

# Tries of a row its bulk request got a 429 for (a full write queue), with backoff 1, 2, 4 ... 30 s:
# 8 give about two minutes of patience (5, 31 s, left rows failed under 8 ingests into one write
# thread; tests/reliability/test_backpressure.py). Rows still refused after them are failures, listed.
BULK_MAX_RETRIES = 8


class Senders:
    """``threads`` senders on one queue, so several bulk requests are in flight at once (a shard
    indexes one request on one write thread: a single sender leaves the other cores idle; measured
    in docs/BENCHMARKS.md, Scale). Reads like one :class:`~adapter.ingest.bulk.Indexer`: failures, counts, errors
    summed."""

    def __init__(self, target: BulkTarget, threads: int) -> None:
        work: queue.Queue[Any] = queue.Queue(maxsize=8 * threads)
        self.counts, stop = BulkCounts(), threading.Event()
        self.threads = [
            Indexer(target, work=work, counts=self.counts, stop=stop, name=f"hybrid-bulk-{i}") for i in range(threads)
        ]
        self.queue = work

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        """No more batches: each sender takes one end mark, sends what it holds and stops."""
        for _ in self.threads:
            self.queue.put(DONE)
        for t in self.threads:
            t.join()

    def abandon(self, wait: float) -> None:
        """Stop now (an interrupt): the batches queued are dropped (their rows stay unconfirmed), the requests in
        flight get up to ``wait`` seconds to be answered; a sender still waiting then is left behind (a daemon)."""
        self.threads[0].stop.set()
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        for _ in self.threads:
            self.queue.put_nowait(DONE)
        deadline = time.monotonic() + wait
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def written(self) -> int:
        """Entries answered by the cluster (each written, or listed as failed)."""
        return sum(t.answered for t in self.threads)

    @property
    def lost(self) -> bool:
        return any(t.lost for t in self.threads)

    @property
    def stopped(self) -> bool:
        """A sender lost the cluster or failed: nothing more is sent."""
        return self.lost or self.error is not None

    @property
    def error(self) -> BaseException | None:
        return next((t.error for t in self.threads if t.error is not None), None)

    @property
    def unsent(self) -> list[str]:
        return [doc_id for t in self.threads for doc_id in t.unsent]

    @property
    def busy(self) -> float:
        """Seconds the busiest sender spent in bulk calls."""
        return max(t.busy for t in self.threads)

    @property
    def retried_5xx(self) -> int:
        return sum(t.retried_5xx for t in self.threads)

    @property
    def splits(self) -> int:
        return sum(t.splits for t in self.threads)


class InlineSenders(Senders):
    """One sender on the ingesting code's own thread, for an asyncio client (:mod:`adapter.aio`: its
    requests wait on the event loop, which a sender thread cannot reach): the queued batches are sent
    once they fill a bulk request, and at the end; the other tasks of the loop run meanwhile."""

    def __init__(self, target: BulkTarget, threads: int = 1) -> None:
        super().__init__(target, threads=1)  # one sender, whatever ``threads`` asks
        self.batch_size, self.held = target.batch_size, 0
        self.queue = self  # type: ignore[assignment]  # put() is the queue's: the ingestor's steps stay the same

    def start(self) -> None:
        """Nothing to start: the batches are sent in :meth:`put` and :meth:`finish`."""

    def put(self, actions: list[dict[str, Any]]) -> None:
        self.threads[0].queue.put(actions)
        self.held += len(actions)
        if self.held >= self.batch_size:
            self.finish()

    def finish(self) -> None:
        """Send what is held: the sender's own loop, up to its end mark."""
        self.threads[0].queue.put(DONE)
        self.threads[0].run()
        self.held = 0
