"""The record of a partitioned ingest round in the index's ``_meta`` (I/O; the rules are
:class:`adapter.ingest.partition.Ledger`'s).

A run of partition I/N reads the record before it writes a row (a run with another count while a round
is unfinished is refused), and marks I done once every row of its partition is written or listed. An
ingest of the whole input without ``--partition`` ends the round (``hybrid ingest``: every row was
written or listed). Writers of ``_meta`` send it whole (a put_mapping replaces it), so each write reads
it just before and checks it after: a partition's mark lost to a concurrent writer is written again, and
a record changed by a run with another count is noticed, never overwritten with a stale one.
"""

from __future__ import annotations

from typing import Any

from adapter.engines import Cluster
from adapter.index.catalog import index_meta
from adapter.ingest.partition import LEDGER_KEY, Ledger, Partition, admit

TRIES = 5  # writes of a mark before giving up on it (it is only lost to writers racing that often)


def read(cluster: Cluster, index: str) -> Ledger | None:
    return Ledger.from_meta(index_meta(cluster, index))


def _write(cluster: Cluster, index: str, ledger: Ledger | None, action: str) -> None:
    meta: dict[str, Any] = index_meta(cluster, index)  # every other key, as it is now
    meta.pop(LEDGER_KEY, None)
    if ledger is not None:
        meta[LEDGER_KEY] = ledger.to_meta()
    cluster.put_mapping(index, {"_meta": meta}, action=action)


def begin(cluster: Cluster, index: str, partition: Partition) -> Ledger:
    """The record this run starts under, written when new; :class:`InputError` when the index records a round
    of another count that is unfinished (checked again after writing: two first runs of different counts)."""
    now = read(cluster, index)
    ledger = admit(now, partition)
    if ledger != now:
        _write(cluster, index, ledger, f"recording partitioned round of {ledger.count} in {index}")
        ledger = admit(read(cluster, index), partition)
    return ledger


def finish(cluster: Cluster, index: str, partition: Partition) -> Ledger | None:
    """Mark ``partition`` done; the record after it, or None when the record now is of another round."""
    for _ in range(TRIES):
        now = read(cluster, index)
        if now is None or now.count != partition.count or now.other_input(partition):
            return None
        if partition.number in now.done:
            return now
        _write(cluster, index, now.finished(partition), f"recording partition {partition.label} as done in {index}")
    return read(cluster, index)


def end(cluster: Cluster, index: str) -> None:
    """The whole input was ingested: a partitioned round on record is over."""
    if read(cluster, index) is not None:
        _write(cluster, index, None, f"ending the partitioned round recorded in {index}")
