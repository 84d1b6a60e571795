"""The entries an ingest writes: a row read from a source becomes one entry, or one per chunk of its
text (the document contract's ids ``<id>`` / ``<id>#<n>``); rows come in batches, and a vector a row
carries is checked before it stands for the index's model. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from adapter.index.documents import DocumentLayout
from adapter.ingest.sources import Chunking, RowError, SourceDoc, chunk_id


@dataclass(frozen=True)
class Entry:
    id: str
    parent_id: str
    chunk_index: int
    title: str
    text: str
    extra: dict[str, str]
    metadata: dict[str, Any]
    vector: tuple[float, ...] | None = None  # carried by the row (its model checked before it is used)
    embedded_by: str | None = None


def entries(doc: SourceDoc, chunking: Chunking | None, layout: DocumentLayout) -> list[Entry]:
    # A source field named like one of the index's extra text fields is text, not metadata.
    extra = {**{f: str(doc.metadata[f]) for f in layout.extra_fields if f in doc.metadata}, **doc.extra}
    metadata = {k: v for k, v in doc.metadata.items() if k not in extra}
    if as_written(doc):  # a chunk a framework made, or a row with its vector: one entry, never split again
        return [
            Entry(
                doc.id,
                doc.parent_id or doc.id,
                doc.chunk_index or 0,
                doc.title,
                doc.text,
                extra,
                metadata,
                doc.vector,
                doc.embedded_by,
            )
        ]
    if chunking is None:
        return [Entry(doc.id, doc.id, 0, doc.title, doc.text, extra, metadata)]
    pieces = chunking.split(doc.text) or [""]  # a title-only document is one entry: its title
    return [Entry(chunk_id(doc.id, i), doc.id, i, doc.title, piece, extra, metadata) for i, piece in enumerate(pieces)]


def as_written(doc: SourceDoc) -> bool:
    return doc.parent_id is not None or doc.chunk_index is not None or doc.vector is not None


def carried_problem(entry: Entry, key: str, dimension: int) -> str | None:
    """Why a carried vector cannot be used (another model's, or none named, or the wrong size), or None."""
    if entry.vector is None:
        return None
    if entry.embedded_by != key:
        said = f"embedded_by {entry.embedded_by!r}" if entry.embedded_by else "no embedded_by"
        return (
            f"the row carries its own vector with {said}, but the index's model has the fingerprint key {key!r}: a "
            "vector from another model would silently ruin dense and hybrid search. Drop the vector (the index's model "
            "embeds the text) or compute it with the index's model and give its key as embedded_by"
        )
    if len(entry.vector) != dimension:
        return f"the row's vector has {len(entry.vector)} numbers, the index's model gives {dimension}"
    return vector_values_problem(entry.vector)


FLOAT32_MAX = 3.4028234663852886e38  # the largest float32: the servers store vectors as float32


def vector_values_problem(vector: Sequence[float]) -> str | None:
    """Why a carried vector's values cannot be stored or scored (checked in the client, as query vectors are), or None:
    a value that is not a number or past float32's range (it arrives as Infinity), a squared norm that overflows
    float32 (every similarity NaN), or all zeros (no direction: cosine is undefined for it)."""
    import numpy as np

    try:
        wide = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        return "the row's vector holds values that are not numbers"
    bad = np.flatnonzero(~np.isfinite(wide) | (np.abs(wide) > FLOAT32_MAX))
    if bad.size:
        return (
            f"the row's vector has {bad.size} values that are not finite 32-bit floats, as the server stores them "
            f"(first at position {int(bad[0])}: {float(wide[bad[0]]):g})"
        )
    if not wide.any():
        return "the row's vector is all zeros: it has no direction, so no similarity can be computed from it"
    if float(np.dot(wide, wide)) > FLOAT32_MAX:
        return (
            "the row's vector's values are too large: its squared norm overflows 32-bit floats, "
            "in which the server scores"
        )
    return None


def with_carried(entries: Sequence[Entry], fresh: Any) -> list[Any]:
    """One vector per entry, in order: its carried one, else the next freshly computed one."""
    computed = iter(fresh)
    return [e.vector if e.vector is not None else next(computed) for e in entries]


def batches(rows: Iterable[SourceDoc | RowError], size: int) -> Iterator[list[SourceDoc | RowError]]:
    batch: list[SourceDoc | RowError] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# Tries of a row its bulk request got a 429 for (a full write queue), with backoff 1, 2, 4 ... 30 s:
