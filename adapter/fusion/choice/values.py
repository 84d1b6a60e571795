"""The values a fusion choice is made of: the ``adaptive`` mode's name and one query's choice. Pure.

Apart from :mod:`adapter.fusion.choice.policy` so that the measured default
(:mod:`adapter.fusion.choice.defaults`), which the policy reads, can name the mode too."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping


class FusionMode(str, enum.Enum):
    """A fusion named by what chooses its weights rather than by them: ``adaptive``, the weights an
    :class:`AdaptivePolicy` chooses per query. The CLI's ``--fusion``, ``IndexSpec.default_fusion``
    and the eval rows (``hybrid-adaptive``) use its value."""

    ADAPTIVE = "adaptive"

    def __str__(self) -> str:
        return self.value


ADAPTIVE = FusionMode.ADAPTIVE


@dataclass(frozen=True)
class FusionChoice:
    """The weights an adaptive fusion policy chose for one query, and why (adapter.fusion.choice.policy)."""

    weights: tuple[float, float]  # bm25, dense
    reasons: tuple[str, ...]  # for people: the corpus prior, the query's signals, the result
    policy: str  # the policy's name ("adaptive", or a learned one)
    features: Mapping[str, float] = field(default_factory=dict)  # the numbers behind the reasons
    kind: str = "natural"  # the query's class: "exact" or "natural"
    confidence: float = 0.0  # how far the evidence moved the weights from the baseline's, in [0, 1]
    normalization: str = "min_max"  # the base fusion's normalisation (min_max, or z_score where the cluster runs it)
    per_query: bool = False  # whether the weights depend on the query (else every query of the index gets them)
