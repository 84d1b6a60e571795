"""The assemble stage: hits from the server's raw hits, the notices a result carries, the result. Pure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from adapter.engines.render import renderer
from adapter.engines.responses import RawHit
from adapter.fusion.base import FusedBy, LegScore
from adapter.index.documents import DocumentLayout, hit_text, hit_title
from adapter.search.page import CHUNKS
from adapter.engines.placement import FusionPlan
from adapter.search.results import Hit, Technique
from adapter.search.state import IndexState


def hit(
    layout: DocumentLayout, raw: RawHit, rank: int, legs: tuple[LegScore, ...] = (), others: Sequence[RawHit] = ()
) -> Hit:
    """A hit; ``others``: the rest of its collapse group (by the client), else the server's inner hits."""
    if not others and CHUNKS in raw.inner_hits:
        others = [i for i in raw.inner_hits[CHUNKS] if i.id != raw.id]
    chunks = tuple(hit(layout, o, 0) for o in others)
    return Hit(
        raw.id,
        raw.score,
        raw.source,
        rank,
        legs,
        title=hit_title(layout, raw.source),
        text=hit_text(layout, raw.source),
        highlight=raw.highlight,
        chunks=chunks,
    )


def hybrid_notices(state: IndexState, plan: FusionPlan) -> list[str]:
    """What a hybrid result must say about how this cluster fused it."""
    caps, notices = state.caps, []
    if caps.serverless and not caps.pagination_depth:
        notices.append(
            "this Serverless collection rejects the hybrid query's pagination_depth: sent without it, so scores and "
            "pages can differ from a managed cluster's (each leg's candidates are limited by the page size, not the "
            "depth)"
        )
    server = renderer(caps.engine, plan.fusion) if plan.fused_by is not FusedBy.CLIENT else None
    caveat = server.caveat(caps, state.info.shards) if server is not None else None
    if caveat:
        notices.append(caveat)
    return notices


def past_the_end(hits: Sequence[Hit], technique: Technique, page_from: int, depth: int) -> list[str]:
    """A fused page past the end of the fused list: the server refuses it (400, pagination_depth),
    the client finds it empty; both say why."""
    if hits or page_from == 0 or not (technique is Technique.HYBRID or technique.fused_by_client):
        return []
    return [
        f"no hits: the page starting at {page_from} is past the end of the fused results (each leg gives at most "
        f"{depth} candidates: the depth, which is the hybrid query's pagination_depth); raise the depth (--depth) to "
        "page further"
    ]


def short_collapse(page: int, *, asked: int, from_: int, matched: int | None, field: str, depth: int) -> str | None:
    """The notice of a collapsed page holding fewer groups (``page``) than ``asked`` while the query
    matched more groups (``matched``: the values of ``field`` among its matches; None: not counted) than
    the pages up to this one show. The hybrid query collapses its candidates (each leg's best ``depth``),
    so a group owning many of them leaves the page short (3.6.0, tests/integration/test_partial_results);
    neural-search #1947 reports such pages on 3.8 at any depth."""
    if matched is None or page >= asked or from_ + page >= matched:
        return None
    return (
        f"short collapsed page: {page} of the {asked} hits asked for (one per {field}), though the query matched "
        f"{matched} values of {field}: the hybrid query collapses only its candidates (each leg's best {depth}, the "
        "depth), and documents with many of them crowd the rest out (some versions return fewer groups than asked at "
        "any depth: neural-search #1947); a higher depth (--depth) reaches further"
    )


def unknown_fields_asked(hits: Sequence[Hit], filters: Mapping[str, Any] | None) -> bool:
    """Whether to ask the mapping which filter fields it lacks (only when a filtered search is empty)."""
    return not hits and bool(filters)
