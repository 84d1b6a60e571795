"""Each leg's raw score times its weight, summed: Elasticsearch's ``query`` + ``knn`` request
(``_score = w_bm25 * bm25 + w_dense * similarity``, the weights sent as boosts). Pure.

No normalisation: BM25 scores are unbounded while cosine scores lie in [0, 1], so the weights must
make up for the scales. A leg that missed a document adds nothing; the sum is float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from adapter.fusion.base import LEGS, BoostWeighted, Firsts, FusedDoc, Run, firsts, weighted_sum


def score_sum(
    runs: Sequence[Run], *, weights: Sequence[float], leg_names: Sequence[str] | None = None
) -> list[FusedDoc]:
    """Each leg's raw score times its weight, summed in float32."""

    def raw(first: Firsts) -> list[float]:
        return [score for _, score in first.values()]

    return weighted_sum(runs, raw, weights, leg_names or [f"leg{i}" for i in range(len(runs))])


@dataclass(frozen=True)
class ScoreSum(BoostWeighted):
    """The weighted sum of the legs' raw scores; ``weights`` are boosts: any non-negative numbers,
    at least one positive (None: 1 / 1, the plain sum)."""

    kind: ClassVar[str] = "sum"
    spellings: ClassVar[tuple[str, ...]] = ("sum",)

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        return score_sum(runs, weights=self.effective_weights, leg_names=leg_names)

    def normalized(self, run: Run) -> dict[str, float | None]:
        return {d: score for d, (_, score) in firsts(run).items()}  # a sum does not normalise: the raw score
