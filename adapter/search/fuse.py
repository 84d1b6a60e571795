"""The fuse stage: the legs fused in the client, and the per-leg explanation of fused hits. Pure.

Client-side fusion is the fusion's own :meth:`~adapter.fusion.base.Fusion.fuse` (the server's
formula). A hit the server fused is explained from the legs run on their own: by the same formulas
when they reproduce every fused score the server returned (one shard: its legs are the server's
candidates), else from the server's own explanation (:func:`server_legs`).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from adapter.engines import Engine
from adapter.engines.responses import RawHit
from adapter.fusion import LEGS, FusedDoc, Fusion
from adapter.fusion.base import LegScore
from adapter.search.answers import Legs
from adapter.search.page import client_steps
from adapter.search.planning import FirstStage

MIRROR_TOLERANCE = 1e-5  # relative: the mirror computes in float32 as the server does
Group = tuple[FusedDoc, list[FusedDoc]]  # a hit and the rest of its collapse group
RawGroup = tuple[RawHit, list[RawHit]]
Explained = Mapping[str, tuple[LegScore, ...]]


def client_fused(legs: Legs, fusion: Fusion, stage: FirstStage) -> list[Group]:
    """The legs fused by ``fusion``, through the page's client-side steps (collapse, sort, score
    floor), cut to the stage's page."""
    fused = fusion.fuse(legs.pairs(), leg_names=LEGS)
    values = {r.id: r.fields for run in legs.runs for r in run if r.fields}
    groups = client_steps(fused, stage.page, score=lambda f: f.score, fields=lambda f: values.get(f.id, {}))
    return groups[stage.from_ : stage.from_ + stage.size]


def server_page(hits: Sequence[RawHit], stage: FirstStage) -> list[RawGroup]:
    """The server's fused hits through the page's client-side steps; cut to the page when the
    client needed the whole list (it collapses or sorts)."""
    groups = client_steps(list(hits), stage.page, score=lambda r: r.score, fields=lambda r: r.fields)
    return groups[stage.from_ : stage.from_ + stage.size] if stage.whole else groups


def mirrored_legs(raw: Sequence[RawHit], legs: Legs, fusion: Fusion) -> dict[str, tuple[LegScore, ...]] | None:
    """Per-leg explanations computed here from the legs, or None unless they reproduce the server's
    fused score of every returned hit. On several shards each shard contributes its own top
    ``depth`` per leg (and RRF ranks are per shard before 3.5), so the check usually fails there."""
    fused = {f.id: f for f in fusion.fuse(legs.pairs(), leg_names=LEGS)}
    out = {}
    for r in raw:
        mirror = fused.get(r.id)
        if mirror is None or not math.isclose(mirror.score, r.score, rel_tol=MIRROR_TOLERANCE, abs_tol=1e-9):
            return None
        out[r.id] = mirror.legs
    return out


def server_legs(raw: Sequence[RawHit], legs: Legs, fusion: Fusion, engine: Engine) -> dict[str, tuple[LegScore, ...]]:
    """Per-leg explanations: normalised scores from the server's explanation, ranks and raw scores
    from the legs run on their own. With ``explain=true`` neural-search 2.19 reports a ``_score``
    that can differ from the combination of its own normalised details by ~1e-4; the contributions
    are computed from the details."""
    weights = list(fusion.effective_weights)
    positions = [{d.id: (i + 1, d.score) for i, d in enumerate(run)} for run in legs.runs]
    out = {}
    for r in raw:
        found = [positions[leg].get(r.id, (None, None)) for leg in range(len(LEGS))]
        scores = engine.explained_leg_scores(r, [raw_score for _, raw_score in found], weights=weights)
        parts = fusion.contributions(scores, r.score)
        out[r.id] = tuple(
            LegScore(leg, rank, raw_score, scores[i], weights[i], parts[i])
            for i, (leg, (rank, raw_score)) in enumerate(zip(LEGS, found))
        )
    return out


def explained(
    groups: list[RawGroup],
    legs: Legs,
    fusion: Fusion,
    engine: Engine,
    *,
    server_explained: bool,
    explain_again: Callable[[], list[RawGroup]],
) -> tuple[list[RawGroup], Explained]:
    """The hits and their per-leg explanations: the mirror where it reproduces the server, else the
    server's explanation (``explain_again`` asks for it: its Lucene explanations cost far more than
    the search, docs/BENCHMARKS.md; Elasticsearch explained in the first request already)."""
    mirror = None if server_explained else mirrored_legs([r for r, _ in groups], legs, fusion)
    if mirror is not None:
        return groups, mirror
    if not server_explained:
        groups = explain_again()
    return groups, server_legs([r for r, _ in groups], legs, fusion, engine)
