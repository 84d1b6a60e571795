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

**From the legs** (:class:`LegRelevance`, docs/INTEROP.md, Scores). A map of the fused score cannot split
ties, and the fusions tie different hits. Each leg's raw score (BM25's, the k-NN score) is the same number
under every fusion, so each leg keeps a map too (fitted on its raw scores of the same consensus hits,
stored as the map of the pseudo-fusion ``leg:<leg>``), and a hit's base relevance is the mean of the two
legs' ``P(S_leg <= s)`` (a leg that did not return the hit counts 0): one value per (query, document)
under every fusion, ties included. :func:`non_increasing` then raises each hit to the largest base at or
below it in the fusion's list (a hit is at least as relevant as any the fusion ranks below it), so a
relevance never reorders the fusion's hits.
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
LEG_PREFIX = "leg:"  # a leg's map is kept as the map of the pseudo-fusion "leg:<leg>" (an older reader skips it)


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
    out: dict[str, list[float]] = {n: [] for n in ranked}
    for q, common in enumerate(consensus_ids(ranked)):
        for name, runs in ranked.items():
            scored = dict(runs[q])
            out[name].extend(scored[doc] for doc in common)
    return out


def consensus_ids(ranked: Mapping[str, Sequence[Sequence[tuple[str, float]]]]) -> list[list[str]]:
    """For each sample query, the ids in every fusion's list (sorted); ``ranked`` as :func:`consensus` takes it."""
    names = list(ranked)
    if not names:
        return []
    lengths = {len(ranked[n]) for n in names}
    if len(lengths) != 1:
        raise InputError(
            f"every fusion needs the same sample queries, got {dict((n, len(ranked[n])) for n in names)} lists"
        )
    return [
        sorted(set.intersection(*(set(doc for doc, _ in ranked[n][q]) for n in names))) for q in range(lengths.pop())
    ]


def leg_scores(
    ids: Sequence[Sequence[str]], legs: Sequence[Sequence[Sequence[tuple[str, float]]]]
) -> list[list[float]]:
    """Each leg's raw scores of the given hits: ``ids[q]`` the hits of sample query ``q``, ``legs[q]`` its legs'
    ranked ``(id, raw score)`` runs (:meth:`adapter.search.Searcher.legs`); a hit a leg did not return gives
    that leg nothing (its relevance counts 0 there, :meth:`LegRelevance.base`)."""
    if len(ids) != len(legs):
        raise InputError(f"one list of legs per sample query, got {len(legs)} for {len(ids)} queries")
    out: list[list[float]] = []
    for hits, runs in zip(ids, legs):
        for leg, run in enumerate(runs):
            while len(out) <= leg:
                out.append([])
            first: dict[str, float] = {}
            for doc, score in run:
                first.setdefault(doc, score)
            out[leg].extend(first[doc] for doc in hits if doc in first)
    return out


@dataclass(frozen=True)
class LegRelevance:
    """A hit's relevance from its legs' raw scores: one :class:`RelevanceMap` per leg (fitted on the leg's raw
    scores of the consensus hits, kept as ``leg:<leg>``), the same under every fusion."""

    maps: tuple[RelevanceMap, ...]  # one per leg, in the legs' order (adapter.fusion.LEGS)

    def base(self, raw_scores: Sequence[float | None]) -> float:
        """The mean over the legs of ``P(S_leg <= raw score)``; a leg that did not return the hit (None) counts 0."""
        if len(raw_scores) != len(self.maps):
            raise InputError(f"one raw score per leg ({len(self.maps)}), got {list(raw_scores)}")
        total = 0.0
        for relevance_map, score in zip(self.maps, raw_scores):  # a loop, not sum() of a generator: on every page
            if score is not None:
                total += relevance_map.relevance(score)
        return total / len(self.maps)

    @classmethod
    def of(cls, maps: Mapping[str, RelevanceMap], legs: Sequence[str]) -> LegRelevance | None:
        """The index's leg maps (``maps`` as :func:`maps_from_json` reads them), or None unless every leg has one."""
        found = [maps.get(leg_map_name(leg)) for leg in legs]
        return cls(tuple(m for m in found if m is not None)) if all(m is not None for m in found) else None


def leg_map_name(leg: str) -> str:
    """The name a leg's map is kept under in ``_meta.relevance``."""
    return f"{LEG_PREFIX}{leg}"


def fit_legs(legs: Sequence[str], scores: Sequence[Iterable[float]], *, knots: int = KNOTS) -> list[RelevanceMap]:
    """Each leg's map from its raw scores of the consensus hits (:func:`leg_scores`)."""
    if len(legs) != len(scores):
        raise InputError(f"one list of raw scores per leg ({list(legs)}), got {len(scores)}")
    return [fit(leg_map_name(leg), values, knots=knots, reference="consensus") for leg, values in zip(legs, scores)]


def non_increasing(values: Sequence[float]) -> list[float]:
    """``values`` (in a fusion's order) each raised to the largest value at or after it: non-increasing, so a
    relevance never reorders the fusion's hits, and a hit is at least as relevant as any it is ranked above.
    Depends on the list given: a longer page can raise a hit's value (never lower it)."""
    out = list(values)
    for i in range(len(out) - 2, -1, -1):
        out[i] = max(out[i], out[i + 1])
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
