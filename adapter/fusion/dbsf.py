"""Distribution-based score fusion (DBSF), as Qdrant defines it (``lib/segment/src/common/score_fusion.rs``,
Qdrant 1.11+; after Mazzeschi 2023). Pure; client-side only: neither OpenSearch nor Elasticsearch
runs it, so the searcher fetches both legs and fuses them here.

Per leg, over the candidates it returned: ``mean`` and the sample standard deviation ``std``
(n - 1), then ``(s - (mean - 3 std)) / (6 std)``: the leg's scores mapped so that mean ± 3 std
becomes [0, 1] (not clipped: a score beyond three deviations lands outside). A lone score, or a leg
whose scores are all equal, normalises to 0.5. The fused score is the sum over legs of ``weight *
normalised`` in float32 (weights default to 1); a leg that missed a document adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from adapter.fusion.base import LEGS, BoostWeighted, Firsts, FusedDoc, Run, clamped, firsts, weighted_sum

SIGMAS = 3.0
LONE = 0.5  # a single score, or no spread: the middle of [0, 1]


def distribution_normalize(scores: Sequence[float]) -> list[float]:
    """One leg's scores mapped from [mean - 3 std, mean + 3 std] to [0, 1], in float32."""
    x = np.asarray(scores, dtype=np.float32)
    if x.size < 2:
        return [LONE] * int(x.size)
    mean = np.float32(x.mean(dtype=np.float32))
    std = np.float32(np.sqrt(np.float32(np.sum((x - mean) ** 2, dtype=np.float32) / np.float32(x.size - 1))))
    low, high = np.float32(mean - np.float32(SIGMAS) * std), np.float32(mean + np.float32(SIGMAS) * std)
    if high == low:
        return [LONE] * int(x.size)
    return [float(v) for v in (x - low) / np.float32(high - low)]


def dbsf(
    runs: Sequence[Run], *, weights: Sequence[float] | None = None, leg_names: Sequence[str] | None = None
) -> list[FusedDoc]:
    """Fuse ranked runs by DBSF; every document of every run, best first."""

    def normalized(first: Firsts) -> list[float]:
        return distribution_normalize([score for _, score in first.values()])

    w = [1.0] * len(runs) if weights is None else [float(x) for x in weights]
    return weighted_sum(runs, normalized, w, leg_names or [f"leg{i}" for i in range(len(runs))])


@dataclass(frozen=True)
class DBSF(BoostWeighted):
    """Distribution-based score fusion; ``weights`` multiply each leg's normalised score (any
    non-negative numbers, at least one positive; None: 1 / 1, Qdrant's plain sum)."""

    kind: ClassVar[str] = "dbsf"
    spellings: ClassVar[tuple[str, ...]] = ("dbsf",)

    def relevance(self, score: float) -> float:
        """``score`` over the sum of the weights (each leg's normalised score is about [0, 1]), clamped."""
        return clamped(score / sum(self.effective_weights))

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        return dbsf(runs, weights=self.effective_weights, leg_names=leg_names)

    def normalized(self, run: Run) -> dict[str, float | None]:
        first = firsts(run)
        return dict(zip(first, distribution_normalize([score for _, score in first.values()])))
