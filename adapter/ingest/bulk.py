"""One bulk sender: a thread that sends queued action batches through the port's bulk while the
main thread embeds, splits a request refused as a whole down to the bad row, and sends rows failed
with a 5xx once more after a pause."""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from adapter import aio
from adapter.engines import BulkCounts, BulkOptions, Cluster, responses
from adapter.ingest.failures import FailureLog, failure
from adapter.observability import metrics, telemetry, tracing

DONE = object()  # the end mark a sender stops at


@dataclass(frozen=True)
class BulkTarget:
    """Where one ingest's bulk requests go and what every sender of it shares: the index, the request
    size and 429 retries, the failures file, and the input line of each entry until it is answered."""

    cluster: Cluster
    index: str
    batch_size: int  # bulk actions per request
    max_retries: int
    failures: FailureLog
    sources: dict[str, int | None]  # entry id -> input line, until its request is answered


class Indexer(threading.Thread):
    """Sends queued action batches through the port's bulk while the main thread embeds.

    Batches waiting in the queue are merged up to ``batch_size`` actions per request. The actions
    of a request are kept until it finishes so that items the cluster failed with a 5xx can be
    sent once more after a pause.
    """

    def __init__(
        self,
        target: BulkTarget,
        *,
        retry_pause: float = 2.0,
        work: queue.Queue[Any] | None = None,
        counts: BulkCounts | None = None,
        stop: threading.Event | None = None,
        name: str = "hybrid-bulk",
    ) -> None:
        super().__init__(daemon=True, name=name)
        # The creator's context (its X-Opaque-Id, its span), which a thread does not inherit.
        self.context = contextvars.copy_context()
        self.cluster = target.cluster
        self.index = target.index
        self.action = f"bulk indexing into {target.index}"
        self.counts = counts or BulkCounts()  # 429s the helper retried without saying
        self.batch_size = target.batch_size
        self.max_retries = target.max_retries
        self.retry_pause = retry_pause
        self.queue: queue.Queue[Any] = work if work is not None else queue.Queue(maxsize=8)
        self.stop = stop or threading.Event()  # set by any sender of a pool that failed or lost the cluster
        self.failures = target.failures
        self.sources = target.sources
        self.waiting = 0.0
        self.busy = 0.0
        self.error: BaseException | None = None
        self.lost = False  # a request got no answer: the cluster is gone, stop sending
        self.unsent: list[str] = []  # ids of entries never sent (or not confirmed) because of that
        self.retried_5xx = 0
        self.splits = 0
        self.answered = 0  # entries whose request was answered (written, or failed into the failures file)

    def _send(self, actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        options = BulkOptions(
            batch_size=self.batch_size, max_retries=self.max_retries, initial_backoff=1, max_backoff=30
        )
        return list(self.cluster.bulk(actions, options, counts=self.counts, action=self.action))

    def _send_splitting(self, actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send ``actions``; a request the server refused as a whole (a 4xx for the request, such as
        one id over the length limit) is split in halves and sent again, down to single rows, so
        one bad row fails alone and every good row around it lands."""
        failed = self._send(actions)
        # 401/403 refuse every request alike: splitting would only repeat it (the port's error, raised)
        for f in failed:
            if responses.bulk_request_refused(f) and responses.bulk_status(f) in (401, 403):
                raise next(iter(f.values()))["exception"]
        refused = {responses.bulk_item(f)[0] for f in failed if responses.bulk_request_refused(f)}
        if not refused or len(actions) == 1:
            return failed
        out = [f for f in failed if responses.bulk_item(f)[0] not in refused]
        again = [a for a in actions if a["_id"] in refused]
        if len(again) == 1:
            return out + self._send(again)
        self.splits += 1
        telemetry.INGEST.warning(
            "%s: a request of %d rows was refused as a whole; sending it again in halves to find the bad row",
            self.action,
            len(again),
        )
        half = len(again) // 2
        return out + self._send_splitting(again[:half]) + self._send_splitting(again[half:])

    def _send_with_5xx_retry(self, actions: list[dict[str, Any]]) -> None:
        before = (self.counts.rejected_429, self.retried_5xx)
        with (
            tracing.span("hybrid.ingest.batch", {"hybrid.index": self.index, "hybrid.rows": len(actions)}) as span,
            metrics.ingest_batch(),
        ):
            failed = self._send_failing(actions)
            tracing.annotate(
                span,
                {
                    "hybrid.failed": len(failed),
                    "hybrid.retries": self.counts.rejected_429 + self.retried_5xx - sum(before),
                },
            )
        for f in failed:
            self.failures.add(failure(f, self.sources))
        if any(responses.bulk_unanswered(f) for f in failed):
            self.lost = True

    def _send_failing(self, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send ``actions``, the rows failed with a 5xx once more after a pause: the rows that failed."""
        failed = self._send_splitting(actions)
        server_errors = {responses.bulk_item(f)[0] for f in failed if (responses.bulk_status(f) or 0) >= 500}
        if server_errors:
            telemetry.INGEST.warning(
                "%s: %d rows failed with a server error (5xx); sending them once more in %.1f s",
                self.action,
                len(server_errors),
                self.retry_pause,
            )
            aio.pause(self.retry_pause)
            self.retried_5xx += len(server_errors)
            failed = [f for f in failed if responses.bulk_item(f)[0] not in server_errors]
            failed += self._send_splitting([a for a in actions if a["_id"] in server_errors])
        return failed

    def run(self) -> None:
        self.context.run(self._run)

    def _run(self) -> None:
        done = False
        while not done:
            started = time.perf_counter()
            item = self.queue.get()
            self.waiting += time.perf_counter() - started
            if item is DONE:
                break
            actions = list(item)
            while len(actions) < self.batch_size:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is DONE:
                    done = True
                    break
                actions += more
            if self.error is not None or self.lost or self.stop.is_set():
                self.unsent += [a["_id"] for a in actions]  # drain the queue so the producer never blocks
                continue
            t0 = time.perf_counter()
            try:
                self._send_with_5xx_retry(actions)
            except BaseException as exc:  # surfaced by the main thread
                self.error = exc
                self.unsent += [a["_id"] for a in actions]  # not confirmed written: listed in the failures file
            else:
                for a in actions:  # answered: the line is no longer needed (memory stays flat)
                    self.sources.pop(a["_id"], None)
                self.answered += len(actions)
            if self.error is not None or self.lost:
                self.stop.set()
            self.busy += time.perf_counter() - t0
