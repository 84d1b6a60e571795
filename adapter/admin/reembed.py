"""Entries of one index as another index's documents: the stored fields kept, the vector computed by
the target's model (through the embedding cache) or, where the model did not change, copied."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from adapter.index import scan
from adapter.index.documents import EMBEDDED_BY_FIELD, DocumentLayout, embedding_text, hit_text, hit_title
from adapter.models.cache import EmbeddingCache, embed_documents
from adapter.models.embedders import Embedder, check_vectors


@dataclass
class Counts:
    embedded: int = 0
    from_cache: int = 0
    reused: int = 0


def target_documents(
    entries: Sequence[scan.Entry],
    *,
    source_vector: str,
    layout: DocumentLayout,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    reuse: bool,
    counts: Counts,
    stamp_reused: bool = True,
    target_stamps: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """The target's version of ``entries``: their stored fields, the vector under the target's
    field, computed by ``embedder`` (or, with ``reuse``, the source's where it has one), and
    ``embedded_by``: the model's key on a vector computed now; a reused vector keeps the source's
    stamp (or its absence: `hybrid check` reports it), unless ``stamp_reused`` (the source index
    predates stamps, and its vectors are taken as its model's, as before). A target without the
    field (a rollback to a version that predates it) gets none."""
    vectors: list[Any] = [None] * len(entries)
    if reuse:
        for i, e in enumerate(entries):
            v = e.source.get(source_vector)
            if isinstance(v, list) and len(v) == embedder.dimension:
                vectors[i] = v
                counts.reused += 1
    todo = [i for i, v in enumerate(vectors) if v is None]
    if todo:
        texts = [
            embedding_text(hit_title(layout, entries[i].source), hit_text(layout, entries[i].source)) for i in todo
        ]
        got = embed_documents(embedder, texts, cache)
        check_vectors(got.vectors, embedder.fingerprint, what=f"vectors from {embedder.fingerprint.model}")
        counts.embedded += got.embedded
        counts.from_cache += got.from_cache
        for i, v in zip(todo, got.vectors):
            vectors[i] = v
    out = []
    computed = set(todo)
    for i, (e, v) in enumerate(zip(entries, vectors)):
        doc = {k: val for k, val in e.source.items() if k != source_vector}
        if not target_stamps:
            doc.pop(EMBEDDED_BY_FIELD, None)
        elif i in computed or stamp_reused:
            doc[EMBEDDED_BY_FIELD] = embedder.fingerprint.key
        doc[layout.vector_field] = [float(x) for x in np.asarray(v, dtype=np.float32)]
        out.append((e.id, doc))
    return out
