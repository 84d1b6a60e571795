"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998) as a pure function.

Greedy selection: at each step pick the candidate maximising
``lambda_ * relevance(d) - (1 - lambda_) * max_{s in selected} cos(d, s)``.
``lambda_ = 1`` keeps the relevance order, ``lambda_ = 0`` picks for diversity alone.

Relevance defaults to the cosine between the query and each candidate (the seeds' formulation).
Passing the first-stage scores instead keeps MMR faithful to any technique (BM25, hybrid): they are
min-max scaled to [0, 1] over the candidates so they sit on the same scale as cosine similarity.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def mmr(
    query_vector: Sequence[float] | np.ndarray,
    candidate_vectors: Sequence[Sequence[float]] | np.ndarray,
    *,
    k: int,
    lambda_: float = 0.5,
    relevance: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """Select up to ``k`` candidates; returns ``(candidate_index, mmr_score)`` in selection order."""
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    cands = np.asarray(candidate_vectors, dtype=np.float64)
    if cands.size == 0 or k <= 0:
        return []
    if cands.ndim != 2:
        raise ValueError("candidate_vectors must be a 2-D array (one row per candidate)")
    unit = _unit_rows(cands)
    if relevance is None:
        query = np.asarray(query_vector, dtype=np.float64)
        if query.shape != (cands.shape[1],):
            raise ValueError(f"query vector has shape {query.shape}, candidates have dimension {cands.shape[1]}")
        rel = unit @ _unit_rows(query[None, :])[0]
    else:
        rel = np.asarray(relevance, dtype=np.float64)
        if rel.shape != (len(cands),):
            raise ValueError(f"{rel.shape[0] if rel.ndim else 0} relevance scores for {len(cands)} candidates")
        spread = rel.max() - rel.min()
        rel = (rel - rel.min()) / spread if spread > 0 else np.ones_like(rel)
    sims = unit @ unit.T
    selected: list[tuple[int, float]] = []
    max_sim = np.full(len(cands), -np.inf)
    remaining = np.ones(len(cands), dtype=bool)
    for _ in range(min(k, len(cands))):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        scores = lambda_ * rel - (1.0 - lambda_) * redundancy
        scores = np.where(remaining, scores, -np.inf)
        best = int(np.argmax(scores))  # first index wins ties: the earlier (better-ranked) candidate
        selected.append((best, float(scores[best])))
        remaining[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return selected


def knn_similarity(space_type: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The similarity the k-NN plugin scores with for ``space_type`` (Lucene's
    ``VectorSimilarityFunction.compare``): cosinesimil ``(1 + cos) / 2``, innerproduct the scaled
    maximum inner product (``dot + 1``, or ``1 / (1 - dot)`` below 0), l2 ``1 / (1 + d²)``."""

    def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.maximum((1.0 + _unit_rows(a) @ _unit_rows(b).T) / 2.0, 0.0))

    def inner(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dot = a @ b.T
        return np.asarray(np.where(dot < 0, 1.0 / (1.0 - np.minimum(dot, 0.0)), dot + 1.0))

    def l2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
        return np.asarray(1.0 / (1.0 + np.maximum(d2, 0.0)))

    try:
        return {"cosinesimil": cosine, "innerproduct": inner, "l2": l2}[space_type]
    except KeyError:
        raise ValueError(f"unknown space_type {space_type!r}") from None


def knn_mmr(
    scores: Sequence[float],
    candidate_vectors: Sequence[Sequence[float]] | np.ndarray,
    *,
    k: int,
    diversity: float = 0.5,
    space_type: str = "cosinesimil",
) -> list[tuple[int, float]]:
    """The k-NN plugin's MMR (``ext.mmr``, 3.3+; ``MMRRerankProcessor``) as a pure function, to
    compare with :func:`mmr` on the same candidates: relevance is each candidate's own k-NN score
    (not rescaled), redundancy its largest similarity to a picked one in the space's own score
    (0 before the first pick), and ``diversity`` weighs redundancy:
    ``(1 - diversity) * score - diversity * max_sim``. Returns ``(index, mmr score)`` in order."""
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be in [0, 1], got {diversity}")
    rel = np.asarray(scores, dtype=np.float64)
    cands = np.asarray(candidate_vectors, dtype=np.float64)
    if rel.size == 0 or k <= 0:
        return []
    sims = knn_similarity(space_type)(cands, cands)
    max_sim = np.zeros(len(rel))
    remaining = np.ones(len(rel), dtype=bool)
    picked: list[tuple[int, float]] = []
    for _ in range(min(k, len(rel))):
        values = np.where(remaining, (1.0 - diversity) * rel - diversity * max_sim, -np.inf)
        best = int(np.argmax(values))  # the server keeps the first of equal scores too
        picked.append((best, float(values[best])))
        remaining[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return picked
