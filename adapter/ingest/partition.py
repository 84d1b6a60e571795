"""Partitioned ingest: N processes (or machines) index one corpus with no coordination. Pure.

Each process reads the whole input and keeps the rows of its own partition, chosen by a stable
hash of the document id (BLAKE2b, the same on every machine and Python version, unlike
``hash()``): every id falls in exactly one partition, so the partitions never write the same
document twice, and a re-run of one partition replaces only its own documents. A row without an
id (a line that is not JSON) is kept by the partition its line number falls in, so each bad row is
reported in exactly one failures file.

    hybrid ingest docs.jsonl --index docs --partition 1/3   # on the first machine
    hybrid ingest docs.jsonl --index docs --partition 2/3   # ... and so on, at the same time
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from adapter.errors import InputError
from adapter.ingest.sources import InputFingerprint, RowError, SourceDoc

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def bucket(key: str, count: int) -> int:
    """The 0-based bucket of ``key`` among ``count``: BLAKE2b-64 of its UTF-8 bytes, modulo ``count``."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Partition:
    """Partition ``number`` of ``count`` (1-based, as ``split -n K/N`` counts). ``input``: the input it reads
    (:func:`adapter.ingest.sources.input_fingerprint`), recorded with the round; None: not checked."""

    number: int
    count: int
    input: InputFingerprint | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InputError(f"a partition count must be at least 1, got {self.count}")
        if not 1 <= self.number <= self.count:
            raise InputError(
                f"partition {self.number}/{self.count} does not exist: partitions are numbered 1 to {self.count}"
            )

    @classmethod
    def parse(cls, text: str) -> Partition:
        """``"2/3"`` -> ``Partition(2, 3)``; anything else is an :class:`InputError` that shows the form."""
        match = _SPEC.match(str(text))
        if match is None:
            raise InputError(f"a partition is written I/N (the I-th of N, from 1), e.g. 2/3; got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def label(self) -> str:
        return f"{self.number}/{self.count}"

    def owns(self, row: SourceDoc | RowError) -> bool:
        """Whether ``row`` belongs here: by its id; a row without one by its line number."""
        key = row.id if row.id is not None else f"line:{row.line}"
        return bucket(key, self.count) == self.number - 1

    def failures_path(self, path: str | Path) -> Path:
        """``failures.jsonl`` -> ``failures.part-2-of-3.jsonl``: one failures file per partition."""
        path = Path(path)
        return path.with_name(f"{path.stem}.part-{self.number}-of-{self.count}{path.suffix}")


@dataclass
class Selection:
    """The rows of one partition from a stream of rows, counting what it kept and what it left."""

    partition: Partition
    kept: int = 0
    others: int = 0  # rows that belong to the other partitions

    def __call__(self, rows: Iterable[SourceDoc | RowError]) -> Iterator[SourceDoc | RowError]:
        for row in rows:
            if self.partition.owns(row):
                self.kept += 1
                yield row
            else:
                self.others += 1


# -- the round's record in the index ------------------------------------------------------------------
LEDGER_KEY = "ingest_partitions"  # the index's _meta key


@dataclass(frozen=True)
class Ledger:
    """What an index records of a partitioned ingest: its partition count, the input its runs read and which
    partitions have run to their end (every row of theirs written, or listed in their failures file). Rows of a
    partition that never ran are nowhere, so the record is what tells a finished input from one that only looks
    finished: runs with another count are refused until the round is complete (1/2, then 2/3 and 3/3 left 4,996
    of 6,000 rows), and so are runs of another input (1/2 of one file, then 2/2 of another, left half of each)."""

    count: int
    done: frozenset[int] = frozenset()
    input: InputFingerprint | None = None

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> Ledger | None:
        """The record in an index's ``_meta`` (None: no partitioned round on record). One edited out of shape
        is an :class:`InputError` naming the key: guessing could lose rows."""
        value = meta.get(LEDGER_KEY)
        if value is None:
            return None
        try:
            count, done = int(value["count"]), frozenset(int(n) for n in value["done"])
            given = value.get("input")
            source = None if given is None else InputFingerprint(str(given["name"]), str(given["digest"]))
            return (
                cls(count, done, source)
                if count >= 1 and all(1 <= n <= count for n in done)
                else cls._unreadable(value)
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls._unreadable(value)

    @staticmethod
    def _unreadable(value: Any) -> Ledger:
        raise InputError(
            f"the index's _meta.{LEDGER_KEY} is unreadable ({str(value)[:80]!r}): run the ingest without "
            "--partition to write every row (which ends the partitioned round and its record)"
        )

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"count": self.count, "done": sorted(self.done)}
        if self.input is not None:
            meta["input"] = {"name": self.input.name, "digest": self.input.digest}
        return meta

    def other_input(self, partition: Partition) -> bool:
        """Whether ``partition`` reads another input than the round's (unknown on either side: not other)."""
        return self.input is not None and partition.input is not None and partition.input.digest != self.input.digest

    @property
    def complete(self) -> bool:
        return self.done == frozenset(range(1, self.count + 1))

    @property
    def left(self) -> tuple[int, ...]:
        return tuple(n for n in range(1, self.count + 1) if n not in self.done)

    def admit(self, partition: Partition) -> Ledger:
        """The record a run of ``partition`` starts under: this one (its count), or a new round once this one is
        complete. A run with another count or of another input while this round is unfinished is refused, naming
        the ways on; a round recorded without its input takes this run's."""
        if self.complete and (partition.count != self.count or self.other_input(partition)):
            return Ledger(partition.count, input=partition.input)
        recorded, given = self.input, partition.input
        if recorded is not None and given is not None and self.other_input(partition):
            raise InputError(
                f"this index is being ingested in {self.count} partitions of {recorded.label}, not of {given.label}: "
                "partitions of two inputs would leave the rows of each that the other's partitions hold unwritten. Run "
                f"the partitions left ({self._left_flags()}) on {recorded.name}, or the ingest without --partition to "
                "write every row (it ends the round)"
            )
        if partition.count == self.count:
            return self if self.input is not None or partition.input is None else replace(self, input=partition.input)
        done = ", ".join(f"{n}/{self.count}" for n in sorted(self.done)) or "none yet"
        left = self._left_flags()
        raise InputError(
            f"this index is being ingested in {self.count} partitions (finished: {done}), not {partition.count}: rows "
            f"hashed into {self.count} partitions and rows hashed into {partition.count} fall apart differently, so "
            f"mixing the counts would leave rows in no partition. Run the partitions left ({left}), or the ingest "
            "without --partition to write every row (it ends the round)"
        )

    def _left_flags(self) -> str:
        return " ".join(f"--partition {n}/{self.count}" for n in self.left)

    def finished(self, partition: Partition) -> Ledger:
        return replace(self, done=self.done | {partition.number})


def admit(ledger: Ledger | None, partition: Partition) -> Ledger:
    """The record a run of ``partition`` starts under (a first round when there is none)."""
    return Ledger(partition.count, input=partition.input) if ledger is None else ledger.admit(partition)


@dataclass(frozen=True)
class PartitionProgress:
    """What a partitioned run reports: its rows among the input's, and the round as recorded after it."""

    partition: Partition
    kept: int  # rows of this partition
    others: int  # rows of the other partitions
    ledger: Ledger | None  # None: another run changed the record meanwhile (this one's end is not on it)

    @property
    def summary(self) -> str:
        p, ledger = self.partition, self.ledger
        head = (
            f"partition {p.label}: {self.kept} rows of {self.kept + self.others} "
            "(the others belong to the other partitions)"
        )
        if ledger is None:
            return (
                f"{head}; the index's record of the round changed while this ran (another count started), so this "
                "partition's end is not on it"
            )
        if ledger.complete:
            return f"{head}; all {ledger.count} partitions have run to their end: the whole input is written"
        left = ", ".join(f"{n}/{ledger.count}" for n in ledger.left)
        return f"{head}; partitions still to run before the input is complete: {left}"
