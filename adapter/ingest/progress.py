"""What one ingest has done and reports: the tally of its batches, the run's shell state (the
failures, the senders, the progress bar), how the senders' outcome is settled into failures or an
error, and the :class:`~adapter.ingest.report.IngestReport` made of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapter.errors import ClusterUnavailableError, WriteBlockedError
from adapter.ingest.admission import Admitted
from adapter.ingest.embedding import Embedded
from adapter.ingest.failures import FailureLog, unsent
from adapter.ingest.partition import PartitionProgress
from adapter.ingest.report import IngestReport
from adapter.ingest.senders import Senders

INTERRUPT_WAIT = 1.0  # seconds an interrupted ingest waits for its requests in flight (the issue: stopped within 2 s)


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM while streaming (``__cause__``), with the tally so far."""

    def __init__(self, tally: Tally) -> None:
        super().__init__("interrupted")
        self.tally = tally


@dataclass(frozen=True)
class Tally:
    """What an ingest has done so far; each batch makes a new one."""

    documents: int = 0
    chunks: int = 0  # entries handed to the senders
    embedded: int = 0
    from_cache: int = 0
    rejected: int = 0
    embed_seconds: float = 0.0

    def plus(self, admitted: Admitted, embedded: Embedded) -> Tally:
        return Tally(
            self.documents + admitted.documents,
            self.chunks + len(admitted.entries),
            self.embedded + embedded.embedded,
            self.from_cache + embedded.from_cache,
            self.rejected + embedded.rejected,
            self.embed_seconds + embedded.seconds,
        )


@dataclass
class Run:
    """The shell state of one ingest: the failures file, the senders and what they still need to know
    (each entry's input line until its request is answered), the progress bar."""

    failures: FailureLog
    sources: dict[str, int | None]
    senders: Senders
    bar: Any
    chunk_counts: dict[str, int]
    read: int = 0  # input rows read (an interrupted run's report says where it stopped)

    def record(self, admitted: Admitted) -> None:
        """The batch's failures into the file; its entries' lines for the senders (before they are queued)."""
        for failure in admitted.failures:
            self.failures.add(failure)
        self.sources.update(admitted.lines)
        self.chunk_counts.update(admitted.chunk_counts)


def report_of(
    tally: Tally, run: Run, failures_file: str | None, seconds: float, partition: PartitionProgress | None = None
) -> IngestReport:
    failures, senders = run.failures, run.senders
    return IngestReport(
        documents=tally.documents,
        chunks=tally.chunks - failures.index_failed,
        failures=tuple(failures.kept),
        embedded=tally.embedded,
        cache_hits=tally.from_cache,
        seconds_total=seconds,
        seconds_embedding=tally.embed_seconds,
        seconds_indexing=senders.busy,
        failures_file=failures_file,
        cache_rejected=tally.rejected,
        retried_429=senders.counts.rejected_429,
        retried_5xx=senders.retried_5xx,
        split_requests=senders.splits,
        failed=failures.count,
        partition=partition,
    )


def settle(run: Run, *, where: str, index: str) -> None:
    """List every row the senders did not confirm written, then raise what stopped them, if anything did
    (``where``: the cluster, as messages name it)."""
    senders, failures = run.senders, run.failures
    if isinstance(senders.error, WriteBlockedError):  # a flood-stage block: retrying would only wait
        raise write_blocked(senders.error, run, index) from senders.error
    if senders.error is not None:
        try:
            raise senders.error  # the port's error (it translated the client's)
        except BaseException as exc:
            for doc_id in senders.unsent:
                failures.add(unsent(doc_id, run.sources, f"not confirmed written: {exc}"))
            raise
    for doc_id in senders.unsent:
        failures.add(unsent(doc_id, run.sources))
    if failures.unconfirmed:
        # The bulk helper reports a request that got no answer as items with status "N/A".
        raise ClusterUnavailableError(
            f"lost the connection to {where} while indexing into {index}: "
            f"{failures.unconfirmed} rows were not confirmed written ({failures.where}, with every other "
            "failure). Run the same ingest again once the cluster answers: ids are stable, so it completes them "
            "without duplicates"
        )


def write_blocked(error: WriteBlockedError, run: Run, index: str) -> WriteBlockedError:
    """The flood-stage block named with how to lift it, after listing the rows it kept out."""
    for doc_id in run.senders.unsent:
        run.failures.add(unsent(doc_id, run.sources, f"not written: {error.reason}"))
    blocked = error.index or index
    return WriteBlockedError(
        f"{error}. Free disk space on the data nodes; the block is lifted once usage drops below the high "
        f'watermark (or: PUT {blocked}/_settings {{"index.blocks.read_only_allow_delete": null}}). Then run the same '
        f"ingest again: {run.failures.count} rows were not written ({run.failures.where})",
        index=blocked,
        status=error.status,
        reason=error.reason,
    )
