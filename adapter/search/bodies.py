"""The request bodies of a search, built by pure functions from the plan (sent by :mod:`.retrieve`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..engines import Engine
from ..fusion import LEGS
from ..page import facets_body, highlight_clause, page_clauses
from ..queries import filter_clauses, search_body, termvectors_body, text_query
from .planning import FirstStage, FusionPlan
from .state import IndexState

Body = dict[str, Any]


def _vector(stage: FirstStage) -> np.ndarray:
    if stage.vector is None:
        raise ValueError("this request needs the query vector, which the plan did not compute")
    return stage.vector


def exclude(state: IndexState, stage: FirstStage) -> tuple[str, ...]:
    """The stored vectors stay out of the sources unless MMR reads them."""
    return () if stage.with_vectors else (state.info.vector_field,)


def _page(state: IndexState, stage: FirstStage) -> Body:
    return page_clauses(stage.page, text_fields=state.info.text_fields, text_query=state.text_leg.body(stage.query),
                        exclude_source=(state.info.vector_field,))  # inner hits: MMR reads the hits' vectors alone


def knn(engine: Engine, state: IndexState, vector: Sequence[float] | np.ndarray, k: int,
        filters: Any) -> Body:
    return engine.knn_query([float(x) for x in vector], field=state.info.vector_field, k=k, filters=filters)


def single_leg(engine: Engine, state: IndexState, stage: FirstStage, query: Body, mmr: tuple[float, int] | None = None) -> Body:
    """One leg's request; ``mmr``: (diversity, candidates) for the server's MMR."""
    body = {**search_body(query, size=stage.size, from_=stage.from_, exclude_source=exclude(state, stage)), **_page(state, stage)}
    if mmr is not None:
        body = engine.server_mmr(body, field=state.info.vector_field, diversity=mmr[0], candidates=mmr[1])
    return body


def leg_bodies(engine: Engine, state: IndexState, query: str, vector: Sequence[float] | np.ndarray, depth: int, filters: Any,
               fields: Sequence[str] = ()) -> list[Body]:
    """Both legs to ``depth``, ids and scores only (and the values of ``fields``, for a sort or
    collapse by the client): sources are fetched for the final page."""
    values = {"docvalue_fields": list(fields)} if fields else {}
    return [
        {**search_body(text_query(query, state.text_leg, filters), size=depth), "_source": False, **values},
        {**search_body(knn(engine, state, vector, depth, filters), size=depth), "_source": False, **values},
    ]


def hybrid(engine: Engine, state: IndexState, stage: FirstStage, plan: FusionPlan, *, explain: bool) -> Body:
    """The one request that runs both legs and fuses them on the server. From 3.0 the filter goes
    once into ``hybrid.filter`` (the server pushes it into both legs, into the knn clause as its
    pre-filter); before, inside each leg."""
    caps = state.caps
    pushed = bool(stage.filters) and caps.hybrid_filter
    leg_filters = None if pushed else stage.filters
    text = text_query(stage.query, state.text_leg, leg_filters)
    vector_leg = knn(engine, state, _vector(stage), stage.depth, leg_filters)
    from_, size = (0, min(len(LEGS) * stage.depth, state.info.max_window)) if stage.whole else (stage.from_, stage.size)
    extra: dict[str, Any] = {}  # only what this cluster has: an engine without them need not know the names
    if pushed:
        extra["filter"] = {"bool": {"filter": filter_clauses(stage.filters)}}
    if plan.fused_by.in_request:  # fused by the request itself (Elasticsearch, in-query fusion)
        extra["fusion"] = plan.fusion
    body = engine.hybrid_body(text, vector_leg, caps=caps, depth=stage.depth, size=size, from_=from_, exclude=exclude(state, stage),
                              explain=explain, inline_pipeline=plan.inline, **extra)
    body.update(_page(state, stage))
    return body


def facets(engine: Engine, state: IndexState, stage: FirstStage) -> Body:
    """The facets over what either leg matches, in a request of their own (what hybrid aggregates over)."""
    legs = [text_query(stage.query, state.text_leg, stage.filters), knn(engine, state, _vector(stage), stage.depth, stage.filters)]
    return facets_body(legs, stage.page.options)


def highlighted(state: IndexState, stage: FirstStage, ids: Sequence[str]) -> Body:
    """Exactly the documents ``ids``, with the query's words to highlight."""
    body = search_body({"ids": {"values": list(ids)}}, size=len(ids), exclude_source=exclude(state, stage))
    body["highlight"] = highlight_clause(stage.page.options, state.info.text_fields, state.text_leg.body(stage.query))
    return body


def top_bm25(state: IndexState, query: str, filters: Any) -> Body:
    """The BM25 leg's best hit, no source (adaptive fusion's match quality)."""
    return {**search_body(text_query(query, state.text_leg, filters), size=1), "_source": False}


def term_statistics(state: IndexState, query: str) -> Body:
    return termvectors_body(query, state.text_leg)
