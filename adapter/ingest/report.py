"""What an ingest reports: the rows that landed, those that did not and why. Pure values."""

from __future__ import annotations

from dataclasses import dataclass

from adapter._enums import TextEnum
from adapter.ingest.partition import PartitionProgress


class FailureSource(TextEnum):
    """Where a row failed, when not in the cluster's answer to indexing it (``ItemFailure.source`` None)."""

    INPUT = "input"  # the row itself: bad JSON, no id, no text
    NOT_SENT = "not-sent"  # never sent, or not confirmed written: the connection was lost
    DELETE_STALE = "delete-stale"  # deleting the chunks a shorter text left behind
    MAPPING = "mapping"  # the index's mapping cannot take the row's metadata keys (a limit, a name): never sent


@dataclass(frozen=True)
class ItemFailure:
    """A row or a document that did not make it into the index, and why."""

    id: str | None
    reason: str
    line: int | None = None
    status: int | None = None
    source: FailureSource | None = None  # None: the cluster refused to index it (status and reason are its)


@dataclass(frozen=True)
class IngestReport:
    documents: int  # input documents accepted
    chunks: int  # index entries written (== documents when not chunking)
    failures: tuple[ItemFailure, ...]  # the first 1,000 (all of them in the failures file, when one was asked for)
    embedded: int  # texts sent to the model
    cache_hits: int  # texts whose vectors came from the embedding cache
    seconds_total: float
    seconds_embedding: float
    seconds_indexing: float  # time the indexing thread spent in bulk calls (overlaps embedding)
    failures_file: str | None = None
    cache_rejected: int = 0  # cache entries that failed their integrity check and were embedded again
    retried_429: int = 0  # items the cluster refused with 429 (write queue full), retried with backoff
    retried_5xx: int = 0  # items that got a 5xx and were sent once more
    split_requests: int = 0  # requests refused as a whole, split in halves to isolate the bad rows
    failed: int = 0  # rows that did not land; ``failures`` holds the first 1,000 of them, a failures file all
    partition: PartitionProgress | None = None  # a partitioned run: its rows and the round as the index records it
    # Ctrl-C or SIGTERM stopped it (IngestInterrupted): the rows after rows_read were not read
    interrupted: bool = False
    rows_read: int | None = None  # input rows read (an interrupted run's)

    @property
    def complete(self) -> bool:
        """Every input row landed."""
        return not self.failures and not self.failed and not self.interrupted

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds_total if self.seconds_total else 0.0


class IngestInterrupted(KeyboardInterrupt):
    """An ingest stopped by Ctrl-C or SIGTERM (``__cause__``: the signal's exception), after listing every row it
    read and did not confirm written in its failures file. ``report`` says what landed. A KeyboardInterrupt, so
    code that stops on Ctrl-C still does; the rows that landed stay (ids are stable: the same ingest again
    completes the input without duplicates)."""

    def __init__(self, report: IngestReport) -> None:
        where = report.failures_file or "the report's failures"
        super().__init__(
            f"ingest interrupted after {report.rows_read} rows read: {report.chunks} entries landed, "
            f"{report.failed} listed in {where}"
        )
        self.report = report
