"""The request bodies of a search, built by pure functions from the plan (sent by :mod:`.retrieve`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from adapter.index.floats import compact_floats
from adapter.engines import Engine, HybridRequest
from adapter.engines.dsl import filter_clauses, search_body, termvectors_body, text_query
from adapter.fusion import LEGS
from adapter.fusion.base import FusedBy
from adapter.search.page import (
    COLLAPSE_GROUPS,
    TEXT_MATCHES,
    Excerpts,
    excerpt_highlight,
    facets_body,
    highlight_clause,
    merge_highlight,
    page_clauses,
    plan_excerpts,
)
from adapter.engines.placement import FusionPlan
from adapter.search.planning import FirstStage
from adapter.search.state import IndexState

Body = dict[str, Any]


def _vector(stage: FirstStage) -> np.ndarray:
    if stage.vector is None:
        raise ValueError("this request needs the query vector, which the plan did not compute")
    return stage.vector


def excerpts(state: IndexState, stage: FirstStage, *, request_highlights: bool = True) -> Excerpts:
    """The text fields this search bounds, and which of them the request returning the hits excerpts
    (``request_highlights``: it can carry a ``highlight`` clause; the hybrid query where the cluster
    highlights it)."""
    return plan_excerpts(
        stage.page.options,
        state.info.text_fields,
        highlighted=stage.page.highlight,
        request_highlights=request_highlights,
    )


# OpenSearch's hybrid query, fused by a pipeline (stored or inline) or by its own ``fusion``.
HYBRID_QUERY_FUSIONS = frozenset({FusedBy.SERVER_PIPELINE, FusedBy.SERVER_INLINE, FusedBy.SERVER_QUERY})


def asks_leg_scores(stage: FirstStage, plan: FusionPlan) -> bool:
    """Whether the hybrid request names its legs and asks their scores per hit (``include_named_queries_score``):
    where the search's pages carry their legs (``stage.leg_scores``) and a pipeline fuses OpenSearch's hybrid
    query (its in-query fusion drops ``matched_queries``: neural-search #1967)."""
    return stage.leg_scores and plan.fused_by in (FusedBy.SERVER_PIPELINE, FusedBy.SERVER_INLINE)


def hybrid_highlights(state: IndexState, plan: FusionPlan, *, empty_shard: bool) -> bool:
    """Whether the hybrid request carries the excerpts' ``highlight`` clause: where its fetch phase
    sees the page alone. Elasticsearch's query + knn sum (a plain search); OpenSearch's hybrid query
    over several shards, or over one searched beside the engine's empty shard (the server fuses, then
    fetches). Not OpenSearch's hybrid over one shard alone: its fetch phase runs over every candidate
    of both legs before the pipeline trims to the page, so excerpts there cost ~5x a search for the
    page's ids (docs/BENCHMARKS.md, Scale); nor Elasticsearch's retrievers (no highlight)."""
    if plan.fused_by is FusedBy.SERVER_SUM:
        return True
    return plan.fused_by in HYBRID_QUERY_FUSIONS and (empty_shard or state.info.shards > 1)


def exclude(state: IndexState, stage: FirstStage) -> tuple[str, ...]:
    """The stored vectors stay out of the sources unless MMR reads them; the bounded text fields
    always (their excerpts come from a highlight)."""
    return (*(() if stage.with_vectors else (state.info.vector_field,)), *excerpts(state, stage).bounded)


def excerpt_clause(engine: Engine, state: IndexState, stage: FirstStage, fields: Sequence[str]) -> Body | None:
    if not fields:
        return None
    return excerpt_highlight(fields, stage.page.options, offset_option=engine.highlight_offset_option)


def _page(engine: Engine, state: IndexState, stage: FirstStage, *, request_highlights: bool = True) -> Body:
    bounded = excerpts(state, stage, request_highlights=request_highlights)
    return page_clauses(
        stage.page,
        text_fields=state.info.text_fields,
        text_query=state.text_leg.body(stage.query),
        # inner hits: MMR reads the hits' vectors alone
        exclude_source=(state.info.vector_field, *bounded.bounded),
        excerpts=excerpt_clause(engine, state, stage, bounded.in_request),
    )


def knn(engine: Engine, state: IndexState, vector: Sequence[float] | np.ndarray, k: int, filters: Any) -> Body:
    # The vector in float32's shortest decimals: what the server reads, in ~60 % of the bytes (adapter.index.floats).
    return engine.knn_query(compact_floats(vector), field=state.info.vector_field, k=k, filters=filters)


def single_leg(
    engine: Engine, state: IndexState, stage: FirstStage, query: Body, mmr: tuple[float, int] | None = None
) -> Body:
    """One leg's request; ``mmr``: (diversity, candidates) for the server's MMR."""
    body = {
        **search_body(query, size=stage.size, from_=stage.from_, exclude_source=exclude(state, stage)),
        **_page(engine, state, stage),
    }
    if mmr is not None:
        body = engine.server_mmr(body, field=state.info.vector_field, diversity=mmr[0], candidates=mmr[1])
    return body


def leg_bodies(
    engine: Engine,
    state: IndexState,
    query: str,
    vector: Sequence[float] | np.ndarray,
    depth: int,
    filters: Any,
    fields: Sequence[str] = (),
) -> list[Body]:
    """Both legs to ``depth``, ids and scores only (and the values of ``fields``, for a sort or
    collapse by the client): sources are fetched for the final page."""
    values = {"docvalue_fields": list(fields)} if fields else {}
    return [
        {**search_body(text_query(query, state.text_leg, filters), size=depth), "_source": False, **values},
        {**search_body(knn(engine, state, vector, depth, filters), size=depth), "_source": False, **values},
    ]


def hybrid(
    engine: Engine, state: IndexState, stage: FirstStage, plan: FusionPlan, *, explain: bool, empty_shard: bool = False
) -> Body:
    """The one request that runs both legs and fuses them on the server. From 3.0 the filter goes
    once into ``hybrid.filter`` (the server pushes it into both legs, into the knn clause as its
    pre-filter); before, inside each leg. ``empty_shard``: sent to the index and the engine's empty
    shard (:meth:`.retrieve.Retriever.empty_shard`), so it carries the excerpts itself."""
    caps = state.caps
    pushed = bool(stage.filters) and caps.hybrid_filter
    leg_filters = None if pushed else stage.filters
    text = text_query(stage.query, state.text_leg, leg_filters)
    vector_leg = knn(engine, state, _vector(stage), stage.depth, leg_filters)
    from_, size = (0, min(len(LEGS) * stage.depth, state.info.max_window)) if stage.whole else (stage.from_, stage.size)
    body = engine.hybrid_body(
        HybridRequest(
            text,
            vector_leg,
            caps=caps,
            depth=stage.depth,
            size=size,
            from_=from_,
            exclude=exclude(state, stage),
            explain=explain,
            inline_pipeline=plan.inline,
            filter={"bool": {"filter": filter_clauses(stage.filters)}} if pushed else None,
            fusion=plan.fusion if plan.fused_by.in_request else None,  # in_request: Elasticsearch, in-query fusion
            empty_shard=empty_shard,
            leg_scores=asks_leg_scores(stage, plan),
        )
    )
    body.update(_page(engine, state, stage, request_highlights=hybrid_highlights(state, plan, empty_shard=empty_shard)))
    if counts_text_matches(state, stage, plan):  # over what the hybrid matched: how much of it the text leg matched
        body["aggs"] = {**body.get("aggs", {}), TEXT_MATCHES: {"filter": text}}
    collapse = stage.page.options.collapse
    if collapse is not None and counts_groups(state, stage, plan):
        body["aggs"] = {**body.get("aggs", {}), COLLAPSE_GROUPS: {"cardinality": {"field": collapse.field}}}
    return body


def counts_groups(state: IndexState, stage: FirstStage, plan: FusionPlan) -> bool:
    """Whether the hybrid request counts the groups its query matched, beside a collapsed page (server or
    client collapse): a cardinality aggregation of the collapse field (exact up to 3,000 groups), where
    OpenSearch's hybrid query takes aggregations; not under a score floor, which shortens pages on purpose."""
    options = stage.page.options
    return (
        options.collapse is not None
        and options.min_score is None
        and state.caps.hybrid_aggregations
        and plan.fused_by in HYBRID_QUERY_FUSIONS
    )


def counts_text_matches(state: IndexState, stage: FirstStage, plan: FusionPlan) -> bool:
    """Whether the hybrid request counts its text leg's matches (``SearchOptions.text_matches``): a
    filter aggregation of that leg's query, where OpenSearch's hybrid query takes aggregations."""
    return stage.page.options.text_matches and state.caps.hybrid_aggregations and plan.fused_by in HYBRID_QUERY_FUSIONS


def facets(engine: Engine, state: IndexState, stage: FirstStage) -> Body:
    """The facets over what either leg matches, in a request of their own (what hybrid aggregates over)."""
    legs = [
        text_query(stage.query, state.text_leg, stage.filters),
        knn(engine, state, _vector(stage), stage.depth, stage.filters),
    ]
    return facets_body(legs, stage.page.options)


def groups(engine: Engine, state: IndexState, stage: FirstStage) -> Body:
    """A size-0 request counting the groups (values of the collapse field) either leg matches, sent with the legs
    where the client collapses their fused list: its page is short when the query matched more groups than it shows."""
    collapse = stage.page.options.collapse
    if collapse is None:
        raise ValueError("counting groups needs a collapse")
    legs = [
        text_query(stage.query, state.text_leg, stage.filters),
        knn(engine, state, _vector(stage), stage.depth, stage.filters),
    ]
    return {
        "size": 0,
        "query": {"bool": {"should": legs, "minimum_should_match": 1}},
        "aggs": {COLLAPSE_GROUPS: {"cardinality": {"field": collapse.field}}},
    }


def documents(
    engine: Engine, state: IndexState, stage: FirstStage, ids: Sequence[str], fields: Sequence[str] = ()
) -> Body:
    """Exactly the documents ``ids``: with the query's words highlighted where the page asks for
    snippets, and ``fields`` as excerpts."""
    body = search_body({"ids": {"values": list(ids)}}, size=len(ids), exclude_source=exclude(state, stage))
    snippets = (
        highlight_clause(stage.page.options, state.info.text_fields, state.text_leg.body(stage.query))
        if stage.page.highlight
        else None
    )
    highlight = merge_highlight(snippets, excerpt_clause(engine, state, stage, fields))
    if highlight:
        body["highlight"] = highlight
    return body


def texts(engine: Engine, state: IndexState, stage: FirstStage, ids: Sequence[str], fields: Sequence[str]) -> Body:
    """The excerpts of ``fields`` of the documents ``ids``, nothing else."""
    body = search_body({"ids": {"values": list(ids)}}, size=len(ids))
    body["_source"] = False
    body["highlight"] = excerpt_clause(engine, state, stage, fields)
    return body


def top_bm25(state: IndexState, query: str, filters: Any) -> Body:
    """The BM25 leg's best hit, no source (adaptive fusion's match quality)."""
    return {**search_body(text_query(query, state.text_leg, filters), size=1), "_source": False}


def term_statistics(state: IndexState, query: str) -> Body:
    return termvectors_body(query, state.text_leg)
