"""A hit's relevance in [0, 1] with one meaning under every fusion. Pure.

Each fusion scores on its own scale (RRF's ``1/(k + rank)`` sums, min_max's [0, 1], z_score's
unbounded z), so a threshold on the fused score, or on a per-fusion formula of it
(:meth:`adapter.fusion.Fusion.relevance`), keeps a different share of the hits under each: on one
query the top hit's formula relevance was 0.797 under min_max, 0.992 under RRF and 0.461 under
z_score.

What a threshold should preserve is the share of the *relevant* hits it keeps. Mapping each fusion's
scores through the distribution of the scores it gives relevant hits (the probability integral
transform, ``P(S <= s | relevant)``) does exactly that: a threshold ``t`` then keeps ``1 - t`` of them
under every fusion. Judgments are not at hand when an index is calibrated, so the reference is the
closest label-free stand-in: the hits every fusion agrees on (:func:`consensus`: the documents in the
top k of every fusion for a sample of the index's queries). They are the same (query, document)
pairs under every fusion, so the maps differ by each fusion's scale alone, not by which hits it
happened to rank (a map fitted on each fusion's own top hits, ``reference="top"``, mixes both).

A :class:`RelevanceMap` holds that reference distribution's quantiles (fitted by :func:`fit`), and a
hit's relevance is the share of the reference scores its score reaches, ``P(S <= s)``, interpolated
between the quantiles. The map is monotone, so the order within a fusion never changes; tied scores
(RRF's rank pairs, min_max's 1 where both legs agree) get one relevance, so a share can step at a
threshold where a continuous score would slide. ``scripts/measure_relevance.py`` measures how close
the shares come on labelled sets (docs/INTEROP.md, Scores).

A fusion without a fitted map falls back to its formula (:meth:`Fusion.relevance`).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from adapter.errors import InputError

KNOTS = 21  # quantiles kept per fusion: every 5 %
MIN_SCORES = 20  # fewer reference scores than this fit nothing


@dataclass(frozen=True)
class RelevanceMap:
    """One fusion's reference distribution: ``scores[i]`` is the ``i / (len - 1)`` quantile of its
    fused scores over the top hits of a sample of the index's queries (non-decreasing)."""

    fusion: str  # the fusion's name (Fusion.name): the map applies to its scores only
    scores: tuple[float, ...]
    sample: int = 0  # how many reference scores it was fitted on
    # which hits: "consensus" (in every fusion's top k, :func:`consensus`) or "top" (the fusion's own)
    reference: str = "top"

    def __post_init__(self) -> None:
        values = tuple(float(s) for s in self.scores)
        object.__setattr__(self, "scores", values)
        if len(values) < 2 or not all(math.isfinite(v) for v in values):
            raise InputError(f"a relevance map needs at least two finite quantiles, got {list(values)}")
        if any(b < a for a, b in zip(values, values[1:])):
            raise InputError(f"a relevance map's quantiles must not decrease, got {list(values)}")

    def relevance(self, score: float) -> float:
        """``P(S <= score)`` under the reference distribution: 0 below its smallest score, 1 from its
        largest, linear between two quantiles; monotone non-decreasing in ``score``."""
        if not math.isfinite(score):
            return 1.0 if score > 0 else 0.0
        knots, last = self.scores, len(self.scores) - 1
        above = bisect.bisect_right(knots, score)  # knots[above - 1] <= score < knots[above]
        if above == 0:
            return 0.0
        if above > last:
            return 1.0
        low, high = knots[above - 1], knots[above]
        return ((above - 1) + (score - low) / (high - low)) / last

    def as_json(self) -> dict[str, Any]:
        return {"fusion": self.fusion, "scores": list(self.scores), "sample": self.sample, "reference": self.reference}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RelevanceMap:
        try:
            return cls(
                str(data["fusion"]),
                tuple(data["scores"]),
                int(data.get("sample", 0)),
                str(data.get("reference", "top")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"a relevance map is {{'fusion': name, 'scores': [quantiles]}}, got {dict(data)!r}"
            ) from exc


def fit(fusion: str, scores: Iterable[float], *, knots: int = KNOTS, reference: str = "top") -> RelevanceMap:
    """The map of ``fusion`` from its fused ``scores`` of the reference hits (at least
    :data:`MIN_SCORES`, non-finite ones left out); ``reference`` names which hits they were."""
    values = np.asarray([s for s in scores if math.isfinite(s)], dtype=float)
    if len(values) < MIN_SCORES:
        raise InputError(
            f"{len(values)} scores to fit the relevance of {fusion!r}; give at least {MIN_SCORES} "
            "(more sample queries, or more hits per query)"
        )
    if knots < 2:
        raise InputError(f"knots must be at least 2, got {knots}")
    quantiles = np.quantile(values, np.linspace(0.0, 1.0, knots))
    return RelevanceMap(fusion, tuple(float(q) for q in np.maximum.accumulate(quantiles)), len(values), reference)


def consensus(ranked: Mapping[str, Sequence[Sequence[tuple[str, float]]]]) -> dict[str, list[float]]:
    """Each fusion's scores of the hits every fusion agrees on. ``ranked``: fusion name -> one
    ``(id, fused score)`` list per sample query (its top k, the queries in the same order under every
    fusion); for each query, the ids in every fusion's list, and each fusion's score of each of them."""
    names = list(ranked)
    if not names:
        return {}
    lengths = {len(ranked[n]) for n in names}
    if len(lengths) != 1:
        raise InputError(
            f"every fusion needs the same sample queries, got {dict((n, len(ranked[n])) for n in names)} lists"
        )
    out: dict[str, list[float]] = {n: [] for n in names}
    for q in range(lengths.pop()):
        scored = {n: dict(ranked[n][q]) for n in names}
        common = set.intersection(*(set(s) for s in scored.values()))
        for name in names:
            out[name].extend(scored[name][doc] for doc in sorted(common))
    return out


def maps_from_json(data: Any) -> dict[str, RelevanceMap]:
    """``{fusion name: RelevanceMap}`` from an index's ``_meta.relevance`` (a list of maps); anything
    else there is an :class:`InputError` naming it."""
    if data is None:
        return {}
    if not isinstance(data, list):
        raise InputError(f"_meta.relevance is a list of relevance maps, got {type(data).__name__}")
    out = {}
    for item in data:
        if not isinstance(item, Mapping):
            raise InputError(f"_meta.relevance holds maps, got {item!r}")
        found = RelevanceMap.from_json(item)
        out[found.fusion] = found
    return out
