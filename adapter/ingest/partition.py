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
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from adapter.errors import InputError
from adapter.ingest.sources import RowError, SourceDoc

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def bucket(key: str, count: int) -> int:
    """The 0-based bucket of ``key`` among ``count``: BLAKE2b-64 of its UTF-8 bytes, modulo ``count``."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


@dataclass(frozen=True)
class Partition:
    """Partition ``number`` of ``count`` (1-based, as ``split -n K/N`` counts)."""

    number: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InputError(f"a partition count must be at least 1, got {self.count}")
        if not 1 <= self.number <= self.count:
            raise InputError(f"partition {self.number}/{self.count} does not exist: partitions are numbered 1 to {self.count}")

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
