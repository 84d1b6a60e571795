"""Score normalisation then weighted combination, as OpenSearch's ``normalization-processor``
computes it (neural-search 2.19 / 3.0). Pure.

min_max maps a leg's scores to [0, 1] over the candidates it returned (a score equal to the minimum
becomes 0.001, a lone score 1.0); l2 divides by the leg's L2 norm; z_score (3.0+) is
``(s - mean) / sample std`` floored at 0.001. Arithmetic mean counts a leg that missed the hit as 0
(its weight stays in the denominator); geometric and harmonic means skip such legs. Weights are in
[0, 1] and sum to 1; the fused score is stored as float32. Elasticsearch's ``linear`` retriever
runs min_max and l2 with the arithmetic mean (a weighted sum).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import ClassVar, Iterable, Sequence

import numpy as np

from adapter._enums import parse_enum
from adapter.errors import InputError
from adapter.fusion.base import (
    DEFAULT_WEIGHTS,
    LEGS,
    FusedDoc,
    Fusion,
    LegScore,
    Run,
    bounded,
    checked_weights,
    clamped,
    firsts,
    leg_names_for,
    no_rank_constant,
    ranked,
)


class Normalization(str, enum.Enum):
    """Score normalisation of ``normalization-processor`` (z_score needs OpenSearch 3.0+)."""

    MIN_MAX = "min_max"
    L2 = "l2"
    Z_SCORE = "z_score"


class Combination(str, enum.Enum):
    """Score combination of ``normalization-processor``."""

    ARITHMETIC_MEAN = "arithmetic_mean"
    GEOMETRIC_MEAN = "geometric_mean"
    HARMONIC_MEAN = "harmonic_mean"


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
        return _z_scores(x)
    raise ValueError(f"unknown normalization {technique!r}")


def _z_scores(x: np.ndarray) -> list[float]:
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


def fuse_normalized(
    runs: Sequence[Run],
    *,
    normalization: Normalization,
    combination: Combination,
    weights: Sequence[float],
    leg_names: Sequence[str] | None = None,
) -> list[FusedDoc]:
    """Score-normalisation fusion of ranked runs, as ``normalization-processor`` computes it."""
    names = leg_names_for(runs, leg_names or [f"leg{i}" for i in range(len(runs))], weights)
    per_leg: list[dict[str, tuple[int, float, float]]] = []
    for run in runs:
        first = firsts(run)
        normed = normalize([raw for _, raw in first.values()], normalization)
        per_leg.append({d: (r, raw, n) for (d, (r, raw)), n in zip(first.items(), normed)})
    rows = []
    for doc_id in dict.fromkeys(d for leg in per_leg for d in leg):
        scores = [leg[doc_id][2] if doc_id in leg else None for leg in per_leg]
        score = float(np.float32(combine(scores, weights, combination)))
        parts = contributions(scores, weights, combination, score)
        legs = tuple(_leg(name, leg.get(doc_id), w, part) for name, leg, w, part in zip(names, per_leg, weights, parts))
        best = min(leg[doc_id][0] for leg in per_leg if doc_id in leg)
        rows.append((score, best, doc_id, legs))
    return ranked(rows)


def _leg(name: str, found: tuple[int, float, float] | None, weight: float, part: float) -> LegScore:
    if found is None:
        return LegScore(name, None, None, None, float(weight), part)
    rank, raw, normalized = found
    return LegScore(name, rank, raw, normalized, float(weight), part)


@dataclass(frozen=True)
class ScoreNormalization(Fusion):
    """A normalisation ``technique`` (min_max, l2, z_score from 3.0) and a ``combination``
    (arithmetic, geometric, harmonic mean) with per-leg ``weights`` in [0, 1] that sum to 1
    (None: 0.5 / 0.5)."""

    technique: Normalization = Normalization.MIN_MAX
    combination: Combination = Combination.ARITHMETIC_MEAN
    weights: tuple[float, ...] | None = None

    kind: ClassVar[str] = "normalization"
    spellings: ClassVar[tuple[str, ...]] = tuple(f"{n.value}-<combination>" for n in Normalization)
    unweighted: ClassVar[tuple[float, ...]] = DEFAULT_WEIGHTS

    def __post_init__(self) -> None:
        object.__setattr__(self, "technique", parse_enum(Normalization, self.technique, "normalization technique"))
        object.__setattr__(self, "combination", parse_enum(Combination, self.combination, "combination technique"))
        object.__setattr__(self, "weights", checked_weights(self.weights, unit_sum=True))
        if self.technique is Normalization.Z_SCORE and self.combination is not Combination.ARITHMETIC_MEAN:
            raise InputError("z_score normalisation works only with arithmetic_mean combination on the server")

    def relevance(self, score: float) -> float:
        """min_max and l2 scores are in [0, 1] already (a mean of per-leg scores in [0, 1], weights
        summing to 1); z-scores (floored at 0.001) have no upper bound: ``s / (1 + s)``."""
        return bounded(score) if self.technique is Normalization.Z_SCORE else clamped(score)

    @property
    def name(self) -> str:
        """``<technique>-<combination>``."""
        return f"{self.technique.value}-{self.combination.value}"

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        return fuse_normalized(
            runs,
            normalization=self.technique,
            combination=self.combination,
            weights=self.effective_weights,
            leg_names=leg_names,
        )

    def contributions(self, scores: Sequence[float | None], fused: float) -> list[float]:
        return contributions(scores, self.effective_weights, self.combination, fused)

    def normalized(self, run: Run) -> dict[str, float | None]:
        first = firsts(run)
        return dict(zip(first, normalize([raw for _, raw in first.values()], self.technique)))

    @classmethod
    def parse(
        cls, name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
    ) -> ScoreNormalization | None:
        """``<technique>-<combination>`` (``min_max-harmonic_mean``) or a bare technique (arithmetic mean)."""
        technique, _, combination = name.partition("-")
        if technique not in {n.value for n in Normalization}:
            return None
        no_rank_constant(name, rank_constant)
        return cls(
            Normalization(technique),
            parse_enum(Combination, combination or Combination.ARITHMETIC_MEAN, "combination technique"),
            weights,
        )

    @classmethod
    def variants(cls, weights: tuple[float, ...] | None, rank_constants: Iterable[int]) -> list[ScoreNormalization]:
        """Every technique x combination the server accepts (z_score: the arithmetic mean only)."""
        return [
            cls(n, c, weights)
            for n in Normalization
            for c in Combination
            if n is not Normalization.Z_SCORE or c is Combination.ARITHMETIC_MEAN
        ]
