"""Admission: which rows of a batch become documents to embed and index, and which fail first, with
why (bad input, an id the server refuses, a text over the size policy, metadata the contract
refuses, a carried vector of another model): the rules and the values they make, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from adapter.errors import InputError
from adapter.index import metadata as metadata_mapping
from adapter.index.documents import DocumentLayout, id_problem
from adapter.ingest.by_id import stored_id
from adapter.ingest.entries import Entry, as_written, carried_problem, entries
from adapter.ingest.failures import NOT_SENT
from adapter.ingest.report import FailureSource, ItemFailure
from adapter.ingest.sources import Chunking, RowError, SourceDoc, oversize


@dataclass(frozen=True)
class Doc:
    """One admitted document: its entries (one, or its chunks) and the input line it came from."""

    id: str
    line: int | None
    entries: tuple[Entry, ...]
    trims: bool = True  # its older, longer self's chunks beyond these are deleted (not a chunk given as it is)


@dataclass(frozen=True)
class Admitted:
    """One batch of rows sorted before embedding: the documents to index, and the rows that failed."""

    docs: tuple[Doc, ...]
    failures: tuple[ItemFailure, ...]
    chunking: bool

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(e for d in self.docs for e in d.entries)

    @property
    def lines(self) -> tuple[tuple[str, int | None], ...]:
        """Entry id -> the input line it came from."""
        return tuple((e.id, d.line) for d in self.docs for e in d.entries)

    @property
    def chunk_counts(self) -> tuple[tuple[str, int], ...]:
        """Document id -> its entries now (chunking only: older chunks beyond them are deleted at the end)."""
        return tuple((d.id, len(d.entries)) for d in self.docs if d.trims) if self.chunking else ()

    @property
    def documents(self) -> int:
        return len(self.docs)

    def refusing(self, refused: Mapping[str, str], stage: FailureSource) -> Admitted:
        """These documents (id -> reason) out, each of their entries a failure at ``stage``."""
        failed = tuple(
            ItemFailure(e.id, refused[d.id], line=d.line, status=400, source=stage)
            for d in self.docs
            if d.id in refused
            for e in d.entries
        )
        return Admitted(tuple(d for d in self.docs if d.id not in refused), self.failures + failed, self.chunking)


@dataclass(frozen=True)
class Admission:
    """The rules one ingestor admits rows by: its chunking, the index's layout, its model's key and
    dimension (for carried vectors), and the size policy (``max_chars``; None: no limit)."""

    chunking: Chunking | None
    layout: DocumentLayout
    key: str
    dimension: int
    max_chars: int | None

    def admit(self, batch: Sequence[SourceDoc | RowError], *, stopped: bool) -> Admitted:
        """Sort one batch of rows: the entries to embed and index, and the rows that fail before embedding
        (bad input; or every row once the senders stopped, listed so that the failures file is complete)."""
        docs: list[Doc] = []
        failures: list[ItemFailure] = []
        for row in batch:
            if isinstance(row, RowError):
                failures.append(ItemFailure(row.id, row.reason, line=row.line, source=FailureSource.INPUT))
                continue
            if stopped:
                failures.append(ItemFailure(row.id, NOT_SENT, line=row.line, source=FailureSource.NOT_SENT))
                continue
            if isinstance(row.id, str) and row.id != stored_id(row.id):  # the readers' rule for every row, so that
                row = replace(row, id=stored_id(row.id))  # get, delete and update find it by the id as written
            doc_entries = entries(row, self.chunking, self.layout)
            problem = self.problem(doc_entries)
            if problem:
                failures.append(ItemFailure(row.id, problem, line=row.line, source=FailureSource.INPUT))
                continue
            docs.append(Doc(row.id, row.line, tuple(doc_entries), trims=not as_written(row)))
        return Admitted(tuple(docs), tuple(failures), self.chunking is not None)

    def strict(self, rows: Iterable[SourceDoc | RowError]) -> list[SourceDoc | RowError]:
        """``rows`` read whole, refused (InputError) when any row is bad, before anything is sent."""
        rows = list(rows)
        bad = [r for r in rows if isinstance(r, RowError)] + [
            RowError(r.line, problem, r.id)
            for r in rows
            if isinstance(r, SourceDoc)
            for problem in [self.too_big(entries(r, self.chunking, self.layout))]
            if problem
        ]
        if bad:
            listing = "; ".join(f"line {r.line}: {r.reason}" for r in bad[:20])
            raise InputError(f"{len(bad)} bad rows and --strict is set, so nothing was written: {listing}")
        return rows

    def problem(self, doc_entries: list[Entry]) -> str | None:
        """Why a document's entries cannot be written (checked before anything is embedded), or None."""
        if not doc_entries:
            return "no words left to index after chunking"
        return (
            next((p for p in map(id_problem, (e.id for e in doc_entries)) if p), None)
            or self.too_big(doc_entries)
            or metadata_mapping.metadata_problem(doc_entries[0].metadata)
            or next((p for e in doc_entries for p in [carried_problem(e, self.key, self.dimension)] if p), None)
        )

    def too_big(self, doc_entries: list[Entry]) -> str | None:
        if self.max_chars is None:
            return None
        for n, e in enumerate(doc_entries):
            size = len(e.title) + len(e.text) + sum(len(v) for v in e.extra.values())
            if size > self.max_chars:
                return oversize(
                    size, self.max_chars, f"chunk {n} of its text" if self.chunking is not None else "its text"
                )
        return None
