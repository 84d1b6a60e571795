"""Reciprocal Rank Fusion (Cormack, Clarke & Buettcher, SIGIR 2009), as OpenSearch's
``score-ranker-processor`` computes it (neural-search ``RRFNormalizationTechnique`` and
``RRFScoreCombinationTechnique``). Pure.

Per leg, rank starts at 1 and the leg's score is ``1 / (rank_constant + rank)`` rounded half-up to
10 decimals and stored as a 32-bit float; the fused score is the float32 sum over legs (legs in
request order). With weights (the server takes them from 3.1) each leg's term is multiplied by its
weight. A hit absent from a leg gets nothing from it. Elasticsearch's ``rrf`` retriever sums the
same terms without the rounding (the mirror's scores then agree to float32 precision).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from typing import ClassVar, Iterable, Sequence

import numpy as np

from adapter.errors import InputError
from adapter.fusion.base import LEGS, Firsts, FusedDoc, Fusion, Run, checked_weights, clamped, firsts, weighted_sum

DEFAULT_RANK_CONSTANT = 60
RANK_CONSTANT_RANGE = (1, 10_000)


@lru_cache(maxsize=65_536)
def rrf_term(rank: int, rank_constant: int = DEFAULT_RANK_CONSTANT) -> float:
    """``1 / (rank_constant + rank)`` as the server stores it (10 decimals, half-up, float32)."""
    if rank < 1:
        raise ValueError(f"ranks start at 1, got {rank}")
    exact = (Decimal(1) / Decimal(rank_constant + rank)).quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
    return float(np.float32(float(exact)))


def rrf(
    runs: Sequence[Run],
    *,
    rank_constant: int = DEFAULT_RANK_CONSTANT,
    weights: Sequence[float] | None = None,
    leg_names: Sequence[str] | None = None,
) -> list[FusedDoc]:
    """Fuse ranked runs by RRF; returns every document of every run, best first (ties: the best
    rank the document reached in any leg, then id)."""
    w = [1.0] * len(runs) if weights is None else [float(x) for x in weights]

    def terms(first: Firsts) -> list[float]:
        return [rrf_term(rank, rank_constant) for rank, _ in first.values()]

    return weighted_sum(runs, terms, w, leg_names or [f"leg{i}" for i in range(len(runs))])


@dataclass(frozen=True)
class RRF(Fusion):
    """Reciprocal Rank Fusion with a ``rank_constant`` (1..10000, default 60) and, from OpenSearch
    3.1 / Elasticsearch 9.3, per-leg ``weights`` in [0, 1] summing to 1 (None: every leg counts 1)."""

    rank_constant: int = DEFAULT_RANK_CONSTANT
    weights: tuple[float, ...] | None = None

    kind: ClassVar[str] = "rrf"
    spellings: ClassVar[tuple[str, ...]] = ("rrf", "rrf-<k>")

    def __post_init__(self) -> None:
        low, high = RANK_CONSTANT_RANGE
        if (
            isinstance(self.rank_constant, bool)
            or not isinstance(self.rank_constant, int)
            or not low <= self.rank_constant <= high
        ):
            raise InputError(f"rank_constant must be an integer between {low} and {high}, got {self.rank_constant!r}")
        # The server checks RRF weights as it checks normalisation weights: in [0, 1], summing to 1.
        object.__setattr__(self, "weights", checked_weights(self.weights, unit_sum=True))

    @property
    def name(self) -> str:
        """``rrf`` for the default rank constant, else ``rrf-<k>``."""
        return "rrf" if self.rank_constant == DEFAULT_RANK_CONSTANT else f"rrf-{self.rank_constant}"

    def relevance(self, score: float) -> float:
        """``score`` over the best an RRF score can be (first in every leg: ``sum(weights) / (k + 1)``)."""
        return clamped(score * (self.rank_constant + 1) / sum(self.effective_weights))

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        return rrf(runs, rank_constant=self.rank_constant, weights=self.weights, leg_names=leg_names)

    def normalized(self, run: Run) -> dict[str, float | None]:
        return {d: rrf_term(rank, self.rank_constant) for d, (rank, _) in firsts(run).items()}

    @classmethod
    def parse(
        cls, name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
    ) -> RRF | None:
        """``rrf`` or ``rrf-<rank constant>``; ``rank_constant`` (the CLI's flag) must agree with the name."""
        if name != "rrf" and not name.startswith("rrf-"):
            return None
        named = None
        if name != "rrf":
            try:
                named = int(name[4:])
            except ValueError:
                raise InputError(f"RRF is written rrf or rrf-<rank constant>, e.g. rrf-40; got {name!r}") from None
        if named is not None and rank_constant is not None and named != rank_constant:
            raise InputError(f"{name!r} and rank constant {rank_constant} disagree; give one of them")
        constant = rank_constant if rank_constant is not None else named
        return cls(DEFAULT_RANK_CONSTANT if constant is None else constant, weights)

    @classmethod
    def variants(cls, weights: tuple[float, ...] | None, rank_constants: Iterable[int]) -> list[RRF]:
        """One per rank constant; RRF is compared unweighted (weights need 3.1+ / 9.3+)."""
        return [cls(rc) for rc in rank_constants]
