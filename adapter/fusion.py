"""Rank fusion as small pure functions (runs in, fused run out). Never mutates its inputs.

:func:`rrf` is Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009) computed exactly
as OpenSearch's ``score-ranker-processor`` computes it (neural-search ``RRFNormalizationTechnique``
and ``RRFScoreCombinationTechnique``): per leg, rank starts at 1 and the leg's score is
``1 / (rank_constant + rank)`` rounded half-up to 10 decimals and stored as a 32-bit float; the
fused score is the float32 sum over legs (legs in request order). With weights (the server takes
them from 3.1) each leg's term is multiplied by its weight. A hit absent from a leg gets nothing
from it.

:func:`normalize` and :func:`combine` mirror ``normalization-processor`` (neural-search 2.19 /
3.0): min_max maps a leg's scores to [0, 1] over the candidates it returned (a score equal to the
minimum becomes 0.001, a lone score 1.0); l2 divides by the leg's L2 norm; z_score (3.0+) is
``(s - mean) / sample std`` floored at 0.001. Arithmetic mean counts a leg that missed the hit as 0
(its weight stays in the denominator); geometric and harmonic means skip such legs.
:func:`fuse_normalized` puts them together, so weights can be tuned offline on fetched legs and
the winner confirmed by the server. :func:`score_sum` is Elasticsearch's ``query`` + ``knn``
request: raw scores times weights (boosts), summed in float32, with no normalisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from decimal import ROUND_HALF_UP, Decimal
from typing import Sequence

import numpy as np

from .fusions import RRF, Combination, Fusion, Normalization, ScoreSum
from .types import LegScore

# A run: (doc_id, score) pairs, best first, as one leg returned them.
Run = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class FusedDoc:
    id: str
    score: float
    legs: tuple[LegScore, ...]


@lru_cache(maxsize=65_536)
def rrf_term(rank: int, rank_constant: int = 60) -> float:
    """``1 / (rank_constant + rank)`` as the server stores it (10 decimals, half-up, float32)."""
    if rank < 1:
        raise ValueError(f"ranks start at 1, got {rank}")
    exact = (Decimal(1) / Decimal(rank_constant + rank)).quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
    return float(np.float32(float(exact)))


def rrf(
    runs: Sequence[Run],
    *,
    rank_constant: int = 60,
    weights: Sequence[float] | None = None,
    leg_names: Sequence[str] | None = None,
) -> list[FusedDoc]:
    """Fuse ranked runs by RRF; returns every document of every run, best first.

    Ties are broken by the best rank the document reached in any leg, then by id, so the order is
    deterministic (the server's order among exactly equal scores is not specified).
    """
    names = list(leg_names or [f"leg{i}" for i in range(len(runs))])
    if len(names) != len(runs):
        raise ValueError(f"{len(names)} leg names for {len(runs)} runs")
    w = [1.0] * len(runs) if weights is None else [float(x) for x in weights]
    if len(w) != len(runs):
        raise ValueError(f"{len(w)} weights for {len(runs)} runs")
    positions: dict[str, dict[int, tuple[int, float]]] = {}
    for leg, run in enumerate(runs):
        for rank, (doc_id, raw) in enumerate(run, start=1):
            # A document repeated within one run counts at its first (best) rank only.
            positions.setdefault(doc_id, {}).setdefault(leg, (rank, raw))
    fused = []
    for doc_id, by_leg in positions.items():
        total = np.float32(0.0)
        legs = []
        for leg, name in enumerate(names):
            if leg in by_leg:
                rank, raw = by_leg[leg]
                term = np.float32(rrf_term(rank, rank_constant))
                part = np.float32(term * np.float32(w[leg])) if weights is not None else term
                total = np.float32(total + part)
                legs.append(LegScore(name, rank, float(raw), float(term), w[leg], float(part)))
            else:
                legs.append(LegScore(name, None, None, None, w[leg], 0.0))
        best_rank = min(r for r, _ in by_leg.values())
        fused.append((float(total), best_rank, doc_id, tuple(legs)))
    fused.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in fused]


def combine(scores: Sequence[float | None], weights: Sequence[float], combination: Combination) -> float:
    """One document's fused score from its per-leg normalised scores (None: the leg missed it)."""
    if len(scores) != len(weights):
        raise ValueError(f"{len(scores)} scores for {len(weights)} weights")
    if combination is Combination.ARITHMETIC_MEAN:
        total_w = sum(weights)
        return sum(w * (s or 0.0) for s, w in zip(scores, weights)) / total_w if total_w else 0.0
    present = [(s, w) for s, w in zip(scores, weights) if s is not None and s > 0]
    total_w = sum(w for _, w in present)
    if not present or total_w == 0:
        return 0.0
    if combination is Combination.GEOMETRIC_MEAN:
        return math.exp(sum(w * math.log(s) for s, w in present) / total_w)
    if combination is Combination.HARMONIC_MEAN:
        return total_w / sum(w / s for s, w in present)
    raise ValueError(f"unknown combination {combination!r}")


def contributions(
    scores: Sequence[float | None], weights: Sequence[float], combination: Combination, fused: float
) -> list[float]:
    """Each leg's share of ``fused``; the shares add up to ``fused``.

    Arithmetic mean: ``w_i * s_i / sum(w)`` exactly. Geometric and harmonic means are not sums, so
    the fused score is split by weight among the legs that returned the hit.
    """
    if combination is Combination.ARITHMETIC_MEAN:
        total_w = sum(weights)
        return [w * (s or 0.0) / total_w if total_w else 0.0 for s, w in zip(scores, weights)]
    present_w = sum(w for s, w in zip(scores, weights) if s is not None and s > 0)
    return [fused * w / present_w if (s is not None and s > 0 and present_w) else 0.0 for s, w in zip(scores, weights)]


def normalize(scores: Sequence[float], technique: Normalization) -> list[float]:
    """One leg's scores normalised as the server does (float32 arithmetic)."""
    x = np.asarray(scores, dtype=np.float32)
    if x.size == 0:
        return []
    if technique is Normalization.MIN_MAX:
        lo, hi = np.float32(x.min()), np.float32(x.max())
        if hi == lo:
            return [1.0] * len(x)
        out = (x - lo) / np.float32(hi - lo)
        return [0.001 if v == 0.0 else float(v) for v in out]
    if technique is Normalization.L2:
        norm = np.float32(np.sqrt(np.float32(np.sum(x * x, dtype=np.float32))))
        return [0.0] * len(x) if norm == 0 else [float(v) for v in x / norm]
    if technique is Normalization.Z_SCORE:
        mean = np.float32(x.mean(dtype=np.float64))
        std = np.float32(x.std(ddof=1, dtype=np.float64)) if x.size > 1 else np.float32(0.0)
        out = []
        for v in x:
            if v == mean:
                out.append(float(x.max()))
            elif std == 0:
                out.append(float(x.min()))
            else:
                z = (v - mean) / std
                out.append(0.001 if z <= 0 else float(z))
        return out
    raise ValueError(f"unknown normalization {technique!r}")


def fuse_normalized(
    runs: Sequence[Run],
    *,
    normalization: Normalization,
    combination: Combination,
    weights: Sequence[float],
    leg_names: Sequence[str] | None = None,
) -> list[FusedDoc]:
    """Score-normalisation fusion of ranked runs, as ``normalization-processor`` computes it."""
    names = list(leg_names or [f"leg{i}" for i in range(len(runs))])
    if not (len(names) == len(runs) == len(weights)):
        raise ValueError(f"{len(runs)} runs, {len(names)} leg names and {len(weights)} weights must match")
    per_leg: list[dict[str, tuple[int, float, float]]] = []
    for run in runs:
        firsts: dict[str, tuple[int, float]] = {}
        for rank, (doc_id, raw) in enumerate(run, start=1):
            firsts.setdefault(doc_id, (rank, raw))
        normed = normalize([raw for _, raw in firsts.values()], normalization)
        per_leg.append({d: (r, raw, n) for (d, (r, raw)), n in zip(firsts.items(), normed)})
    fused = []
    for doc_id in dict.fromkeys(d for leg in per_leg for d in leg):
        scores = [leg[doc_id][2] if doc_id in leg else None for leg in per_leg]
        score = float(np.float32(combine(scores, weights, combination)))
        parts = contributions(scores, weights, combination, score)
        legs = tuple(
            LegScore(name, *(leg[doc_id][:3] if doc_id in leg else (None, None, None)), float(w), part)
            for name, leg, w, part in zip(names, per_leg, weights, parts)
        )
        best = min(leg[doc_id][0] for leg in per_leg if doc_id in leg)
        fused.append((score, best, doc_id, legs))
    fused.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in fused]


def score_sum(runs: Sequence[Run], *, weights: Sequence[float], leg_names: Sequence[str] | None = None) -> list[FusedDoc]:
    """Each leg's raw score times its weight, summed; a leg that missed a document adds nothing
    (Elasticsearch's ``query`` + ``knn`` request, the weights sent as boosts)."""
    names = list(leg_names or [f"leg{i}" for i in range(len(runs))])
    if not (len(names) == len(runs) == len(weights)):
        raise ValueError(f"{len(runs)} runs, {len(names)} leg names and {len(weights)} weights must match")
    per_leg: list[dict[str, tuple[int, float]]] = []
    for run in runs:
        firsts: dict[str, tuple[int, float]] = {}
        for rank, (doc_id, raw) in enumerate(run, start=1):
            firsts.setdefault(doc_id, (rank, raw))
        per_leg.append(firsts)
    fused = []
    for doc_id in dict.fromkeys(d for leg in per_leg for d in leg):
        total, legs = np.float32(0.0), []
        for name, leg, w in zip(names, per_leg, weights):
            if doc_id in leg:
                rank, raw = leg[doc_id]
                part = np.float32(np.float32(raw) * np.float32(w))
                total = np.float32(total + part)
                legs.append(LegScore(name, rank, float(raw), float(raw), float(w), float(part)))
            else:
                legs.append(LegScore(name, None, None, None, float(w), 0.0))
        best = min(leg[doc_id][0] for leg in per_leg if doc_id in leg)
        fused.append((float(total), best, doc_id, tuple(legs)))
    fused.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in fused]


def fuse(runs: Sequence[Run], fusion: Fusion, *, leg_names: Sequence[str] | None = None) -> list[FusedDoc]:
    """Fuse ``runs`` as the server would run ``fusion`` (weights default as the server's do)."""
    if isinstance(fusion, ScoreSum):
        return score_sum(runs, weights=fusion.effective_weights, leg_names=leg_names)
    if isinstance(fusion, RRF):
        return rrf(runs, rank_constant=fusion.rank_constant, weights=fusion.weights, leg_names=leg_names)
    return fuse_normalized(runs, normalization=fusion.technique, combination=fusion.combination,
                           weights=fusion.effective_weights, leg_names=leg_names)


def same_ranking_up_to_ties(a: Run, b: Run, *, rel_tol: float = 1e-6) -> bool:
    """Whether two fused runs agree on every score and on the order of distinct scores.

    Documents with exactly equal fused scores (common with RRF: rank r in one leg only ties with
    rank r in the other leg only) may come in any order; the server does not specify its tie order.
    The last group of ties may be cut differently by the list length, so only its scores count.
    """
    if len(a) != len(b):
        return False
    if any(abs(x - y) > rel_tol * max(abs(x), abs(y), 1e-12) for (_, x), (_, y) in zip(a, b)):
        return False
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and abs(a[j + 1][1] - a[i][1]) <= rel_tol * max(abs(a[i][1]), 1e-12):
            j += 1
        if j + 1 < len(a) and {d for d, _ in a[i : j + 1]} != {d for d, _ in b[i : j + 1]}:
            return False
        i = j + 1
    return True
