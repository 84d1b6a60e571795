"""What the cluster answered to a search's first stage, as values the other stages read. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from adapter.engines.responses import Facet, RawHit

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Answer:
    """A first stage's answer: raw hits in the server's order, facets, and what it cost."""

    hits: tuple[RawHit, ...]
    facets: Mapping[str, Facet]
    took: float
    requests: int


@dataclass(frozen=True)
class Legs:
    """Both legs run on their own (ids and scores), and the answers of the bodies sent with them."""

    runs: tuple[tuple[RawHit, ...], ...]
    took: float
    extra: tuple[Json, ...] = ()

    def pairs(self) -> list[list[tuple[str, float]]]:
        return [[(d.id, d.score) for d in run] for run in self.runs]
