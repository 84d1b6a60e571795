"""The post-process stage: what reorders or trims the first stage's hits in the client. Pure but for
the reranker it is given (a cross-encoder, injected).

Rerank (a cross-encoder over the top N), MMR (Carbonell & Goldstein 1998, over the stored vectors,
:func:`adapter.search.mmr.mmr`), the page cut after either, and the stored vectors stripped from what MMR
read. Each keeps the first stage's score in ``Hit.first_stage_score``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from adapter.errors import IndexMismatchError
from adapter.index.documents import embedding_text
from adapter.search.mmr import mmr as mmr_select
from adapter.search.rerank import Reranker
from adapter.search.results import Hit


def _first_stage(hit: Hit) -> float:
    return hit.first_stage_score if hit.first_stage_score is not None else hit.score


def rerank(reranker: Reranker, query: str, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` in the reranker's order (ties keep the first stage's), scored by it."""
    scores = reranker.score(query, [embedding_text(h.title, h.text) for h in hits])
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return [
        replace(hits[i], score=float(scores[i]), rerank_score=float(scores[i]), first_stage_score=_first_stage(hits[i]))
        for i in order
    ]


def diversify(vector: np.ndarray, hits: Sequence[Hit], *, field: str, k: int, lambda_: float) -> list[Hit]:
    """The ``k`` hits MMR picks from ``hits`` by their stored vectors in ``field``, scored by MMR."""
    if not hits:
        return []
    missing = [h.id for h in hits if field not in h.source]
    if missing:
        raise IndexMismatchError(
            f"hits {missing[:3]} have no stored vector in {field!r}; MMR needs the index's vectors"
        )
    vectors = np.asarray([h.source[field] for h in hits], dtype=np.float32)
    picked = mmr_select(vector, vectors, k=k, lambda_=lambda_, relevance=[h.score for h in hits])
    return [replace(hits[i], score=s, mmr_score=s, first_stage_score=_first_stage(hits[i])) for i, s in picked]


def page(hits: Sequence[Hit], from_: int, k: int) -> list[Hit]:
    """The page ``from_ .. from_ + k`` of reordered hits, ranked again from ``from_ + 1``."""
    return [replace(h, rank=from_ + i + 1) for i, h in enumerate(hits[from_ : from_ + k])]


def strip(hits: Sequence[Hit], field: str) -> list[Hit]:
    """``hits`` (and their collapse groups) without the stored vector ``field`` in their sources."""

    def one(h: Hit) -> Hit:
        return replace(
            h, source={key: v for key, v in h.source.items() if key != field}, chunks=tuple(one(c) for c in h.chunks)
        )

    return [one(h) for h in hits]
