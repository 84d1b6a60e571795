"""How the stages compose for each technique: retrieve, then fuse (where the client fuses), then the
hits assembled. One function per way of running a first stage; what it used though partial (a failed
shard, a short collapsed page) becomes notices, or an error where the search allows no partial results."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from adapter.observability import metrics, tracing
from adapter.engines import responses
from adapter.engines.dsl import text_query
from adapter.engines.responses import Bucket, Facet
from adapter.fusion import LEGS, FusedDoc
from adapter.search import assemble, bodies, fuse
from adapter.search.answers import Answer
from adapter.engines.placement import FusionPlan
from adapter.errors import PartialResultError
from adapter.search.page import COLLAPSE_GROUPS, TEXT_MATCHES
from adapter.search.planning import FirstStage, SearchPlan
from adapter.search.request import SearchRequest
from adapter.search.results import Hit, Technique
from adapter.search.retrieve import Partial, Retriever


@dataclass(frozen=True)
class FirstHits:
    """The first stage's hits, ranked, and what they cost."""

    hits: tuple[Hit, ...]
    took: float
    requests: int
    facets: Mapping[str, Facet] = field(default_factory=dict)
    notices: tuple[str, ...] = ()
    # a server-fused page that asked them (bodies.asks_leg_scores): hit id -> its raw score per leg (None: the
    # leg did not match it), what the legs' relevance reads where the hits carry no explanation
    leg_scores: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)


def _ranked(r: Retriever, answer: Answer, stage: FirstStage) -> FirstHits:
    layout = r.state.info.layout
    raws = r.bounded(answer.hits, stage, bodies.excerpts(r.state, stage))
    hits = tuple(assemble.hit(layout, raw, stage.from_ + i + 1) for i, raw in enumerate(raws))
    return FirstHits(hits, answer.took + sum(r.fetched), answer.requests + len(r.fetched), answer.facets)


def bm25(r: Retriever, plan: SearchPlan, request: SearchRequest) -> FirstHits:
    stage = plan.stage
    return _ranked(r, r.single_leg(stage, text_query(stage.query, r.state.text_leg, stage.filters), leg="bm25"), stage)


def dense(r: Retriever, plan: SearchPlan, request: SearchRequest) -> FirstHits:
    """The knn leg; with the server's MMR it oversamples the candidates and returns the page."""
    stage, vector = plan.stage, plan.stage.vector
    if vector is None:
        raise ValueError("dense search needs the query vector")
    k = max(stage.depth, stage.from_ + stage.size)
    mmr = None
    if plan.server_mmr and request.mmr_lambda is not None:
        k = request.mmr_candidates or 3 * request.wanted
        mmr = (1.0 - request.mmr_lambda, k)
        stage = replace(stage, from_=0, size=request.wanted)
    query = bodies.knn(r.engine, r.state, vector, k, stage.filters)
    return _ranked(r, r.single_leg(stage, query, mmr, leg="dense"), stage)


def server_hybrid(r: Retriever, plan: SearchPlan, request: SearchRequest) -> FirstHits:
    """One hybrid request, fused by the server; explained from the legs when asked."""
    fusion, stage = _fusion(plan), plan.stage
    # A request that fuses in its own body (Elasticsearch's retrievers and sum) explains itself: its fused
    # explanations carry the legs; a pipeline's fusion is explained only when the mirror cannot
    # reproduce the fused scores (fuse.explained). (OpenSearch's in-query fusion is never planned with explain.)
    server_explains = request.explain and fusion.fused_by.in_request
    shard = r.empty_shard(stage, fusion)  # then the request carries the page's excerpts itself
    resp = r.hybrid(stage, fusion, explain=server_explains, empty_shard=shard)
    if resp is None:
        return FirstHits((), 0.0, 1)  # past the end of the fused list: the result says so, as client fusion does
    took, requests = responses.took(resp), 1
    facets = responses.facets(resp, stage.page.options.facets)
    if stage.page.options.text_matches:
        facets = {**facets, **_text_matches(resp)}
    if stage.page.facets_apart:
        apart = r.facets_apart(stage)
        facets, took, requests = (
            responses.facets(apart, stage.page.options.facets),
            took + responses.took(apart),
            requests + 1,
        )
    excerpts = bodies.excerpts(
        r.state, stage, request_highlights=bodies.hybrid_highlights(r.state, fusion, empty_shard=shard is not None)
    )
    groups = fuse.server_page(r.bounded(responses.hits(resp), stage, excerpts), stage)
    explained: fuse.Explained = {}
    if request.explain:
        legs = r.legs(stage)
        took, requests = took + legs.took, requests + 1
        spent: list[float] = []

        def again() -> list[fuse.RawGroup]:
            answer = r.hybrid(stage, fusion, explain=True, empty_shard=shard) or {}
            spent.append(responses.took(answer))
            return fuse.server_page(r.bounded(responses.hits(answer), stage, excerpts), stage)

        groups, explained = fuse.explained(
            groups, legs, fusion.fusion, r.engine, server_explained=server_explains, explain_again=again
        )
        took, requests = took + sum(spent), requests + len(spent)
    layout = r.state.info.layout
    hits = tuple(
        assemble.hit(layout, raw, stage.from_ + i + 1, explained.get(raw.id, ()), others)
        for i, (raw, others) in enumerate(groups)
    )
    _short_collapse(r, stage, len(groups), resp)
    return FirstHits(
        hits,
        took + sum(r.fetched),
        requests + len(r.fetched),
        facets,
        tuple(assemble.hybrid_notices(r.state, fusion)),
        _leg_scores(groups) if bodies.asks_leg_scores(stage, fusion) else {},
    )


def _leg_scores(groups: Sequence[fuse.RawGroup]) -> dict[str, tuple[float | None, ...]]:
    """Each hit's (and its group's) raw score per leg, as the server named them; a hit the answer gave no
    scores (a server that ignored the parameter) is left out, so the page keeps the fusion's map."""
    return {
        raw.id: tuple(raw.named_scores.get(leg) for leg in LEGS)
        for first, others in groups
        for raw in (first, *others)
        if raw.named_scores
    }


def _short_collapse(r: Retriever, stage: FirstStage, page: int, resp: Mapping[str, Any]) -> None:
    """A collapsed page short of the groups the query matched (counted in the request: ``bodies.counts_groups``) is
    partial."""
    collapse, agg = stage.page.options.collapse, (resp.get("aggregations") or {}).get(COLLAPSE_GROUPS)
    if collapse is None or not isinstance(agg, Mapping):
        return
    notice = assemble.short_collapse(
        page,
        asked=stage.size,
        from_=stage.from_,
        matched=int(agg.get("value") or 0),
        field=collapse.field,
        depth=stage.depth,
    )
    if notice:
        r.partial.append(Partial("collapse", notice))
        r.notices.append(notice)


def client_fused(r: Retriever, plan: SearchPlan, request: SearchRequest) -> FirstHits:
    """Both legs (and the facets, over what either leg matches) in one ``_msearch``; fused here; the
    page's documents (with highlights) fetched after."""
    fusion, stage = _fusion(plan).fusion, plan.stage
    extra = {"facets": bodies.facets(r.engine, r.state, stage)} if stage.page.facets_apart else {}
    if (
        stage.page.collapse_by_client and stage.page.options.min_score is None
    ):  # a score floor shortens pages on purpose
        extra["groups"] = bodies.groups(r.engine, r.state, stage)
    legs = r.legs(stage, fields=stage.page.field_values, extra=list(extra.values()), each=list(extra))
    answers = dict(zip(extra, legs.extra))
    facets = responses.facets(answers["facets"], stage.page.options.facets) if "facets" in answers else {}
    if stage.page.options.text_matches:
        facets = {**facets, **text_matches(len(legs.runs[0]))}
    with tracing.span(
        "hybrid.fuse", {"hybrid.fusion": fusion.name, "hybrid.candidates": sum(len(run) for run in legs.runs)}
    ):
        groups = fuse.client_fused(legs, fusion, stage)
    found = r.documents([f.id for g, others in groups for f in (g, *others)], stage)

    def raw(f: FusedDoc) -> responses.RawHit:
        got = found.get(f.id)
        return responses.RawHit(f.id, f.score, got.source if got else {}, highlight=got.highlight if got else {})

    layout = r.state.info.layout
    hits = tuple(
        assemble.hit(layout, raw(f), stage.from_ + i + 1, f.legs, [raw(o) for o in others])
        for i, (f, others) in enumerate(groups)
    )
    if "groups" in answers:
        _short_collapse(r, stage, len(groups), answers["groups"])
    return FirstHits(hits, legs.took + sum(r.fetched), 2 + len(r.fetched), facets)


def text_matches(count: int) -> dict[str, Facet]:
    """``SearchOptions.text_matches``' answer: how many documents BM25 matched (0: none)."""
    return {TEXT_MATCHES: Facet(TEXT_MATCHES, (Bucket("bm25", count),))}


def _text_matches(resp: Mapping[str, Any]) -> dict[str, Facet]:
    """The hybrid answer's count of its text leg's matches, where the request asked for it."""
    agg = (resp.get("aggregations") or {}).get(TEXT_MATCHES)
    return text_matches(int(agg.get("doc_count", 0))) if isinstance(agg, Mapping) else {}


def _fusion(plan: SearchPlan) -> FusionPlan:
    if plan.fusion is None:
        raise ValueError(f"{plan.technique.value} needs a fusion plan")
    return plan.fusion


def partial_results(r: Retriever, request: SearchRequest) -> None:
    """What the attempt used though partial (``r.partial``): notices, counted; or, where the search allows
    no partial results (``SearchOptions.allow_partial_results``), a :class:`~adapter.errors.PartialResultError`
    naming the first."""
    allowed = request.options.allow_partial_results
    for partial in r.partial:
        metrics.partial_result(partial.kind, "notice" if allowed else "error")
    if r.partial and not allowed:
        first = r.partial[0]
        more = f" (and {len(r.partial) - 1} more)" if len(r.partial) > 1 else ""
        raise PartialResultError(
            f"{first.notice}{more}; this search allows no partial results (allow_partial_results=False)",
            kind=first.kind,
        )


FirstStageRunner = Callable[[Retriever, SearchPlan, SearchRequest], FirstHits]


def _settled(runner: FirstStageRunner) -> FirstStageRunner:
    """``runner``, then its attempt's partial answers settled (:func:`partial_results`)."""

    def run(r: Retriever, plan: SearchPlan, request: SearchRequest) -> FirstHits:
        first = runner(r, plan, request)
        partial_results(r, request)
        return first

    run.__name__ = run.__qualname__ = runner.__name__
    run.__doc__ = runner.__doc__
    return run


BY_TECHNIQUE: Mapping[Technique, FirstStageRunner] = {
    Technique.BM25: _settled(bm25),
    Technique.DENSE: _settled(dense),
    Technique.HYBRID: _settled(server_hybrid),
    Technique.CLIENT_RRF: _settled(client_fused),
    Technique.CLIENT: _settled(client_fused),
}
