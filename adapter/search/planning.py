"""The plan stage: what one search will send, decided before anything is sent.

Where the fusion runs (as the engine's placement puts it: a stored pipeline, one sent with the
request, the request itself on Elasticsearch; or the client, with a notice, when the cluster
cannot: :mod:`adapter.engines.placement`), the adaptive weights for
this query, where MMR and each part of the page run, and the first stage's sizes. Pure but for
the questions it asks the cluster through :class:`Lookups` (a stored pipeline's fusion, the
query's BM25 match quality, and, where a search's probe left them out and this search depends on
them, the cluster settings that switch server MMR and in-query fusion), answered by the retrieve stage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Protocol

import numpy as np

from adapter.engines.dsl import SentRequest
from adapter.engines.placement import FusionAsk, FusionPlacement, FusionPlan, StoredFusions
from adapter.engines.registry import engine_named
from adapter.errors import PipelineNotFoundError
from adapter.fusion import LEGS, RRF, Fusion
from adapter.fusion.base import FusedBy
from adapter.fusion.choice.learned import LearnedFusion
from adapter.fusion.choice.policy import AdaptivePolicy, QuerySignals
from adapter.fusion.choice.values import FusionChoice
from adapter.fusion.relevance import leg_map_name
from adapter.search.fast_path import FastPath
from adapter.search.page import SERVER_MMR_MIN_LAMBDA, MMRPlace, PagePlan, SearchOptions, plan_page
from adapter.search.request import SearchRequest, Shape
from adapter.search.results import Technique
from adapter.search.state import IndexState


@dataclass(frozen=True)
class FirstStage:
    """The first-stage request(s): what to ask for and which page of it."""

    query: str
    vector: np.ndarray | None
    filters: Mapping[str, Any] | None
    depth: int  # candidates per leg
    from_: int
    size: int
    with_vectors: bool  # keep stored vectors in the sources (for MMR)
    page: PagePlan = PagePlan(SearchOptions())  # highlight, facets, collapse, sort, min_score: where each runs
    # a server-fused hybrid page asks each hit's raw score per leg (the legs' relevance: carries_legs)
    leg_scores: bool = False

    @property
    def whole(self) -> bool:
        """The client collapses or sorts: fetch the whole fused list, cut the page after."""
        return self.page.needs_whole_list


@dataclass(frozen=True)
class Signals:
    """What the adaptive choice cost: the server's took, requests, and the requests themselves."""

    took: float = 0.0
    requests: int = 0
    sent: tuple[SentRequest, ...] = ()


@dataclass(frozen=True)
class SearchPlan:
    technique: Technique  # what runs (hybrid becomes client when the client fuses)
    fusion: FusionPlan | None  # None: a single leg
    stage: FirstStage
    server_mmr: bool
    choice: FusionChoice | None = None
    notices: tuple[str, ...] = ()
    signals: Signals = Signals()


class Lookups(StoredFusions, Protocol):
    """The cluster facts planning needs (the retrieve stage answers them): a stored pipeline's
    fusion (:class:`~adapter.engines.placement.StoredFusions`) and the query's match quality."""

    def match_quality(self, query: str, filters: Mapping[str, Any] | None) -> tuple[float | None, Signals]:
        """BM25's match quality for ``query`` and what asking cost."""
        ...

    def switched(self) -> IndexState:
        """The state with the cluster settings that switch features read (``caps.switches_read``), once per state."""
        ...


def fusion_ask(
    state: IndexState,
    fusion: Fusion | None,
    pipeline: str | None,
    *,
    allow_fallback: bool = True,
    refused: str | None = None,
) -> FusionAsk:
    """What a hybrid search on ``state`` asks of the engine's placement."""
    return FusionAsk(
        state.caps,
        state.alias,
        fusion,
        pipeline,
        state.fusion,
        state.pipeline,
        state.info.default_pipeline,
        allow_fallback,
        refused,
    )


def placement(state: IndexState) -> FusionPlacement:
    """The placement of the state's engine (:mod:`adapter.engines.placement`)."""
    return engine_named(state.caps.engine).placement


def plan_fusion(
    state: IndexState,
    lookups: Lookups,
    fusion: Fusion | None = None,
    pipeline: str | None = None,
    *,
    allow_fallback: bool = True,
    refused: str | None = None,
) -> FusionPlan:
    """Decide where ``fusion`` runs, as the engine places it: a stored pipeline, a temporary one, the
    request itself (Elasticsearch), or the client. ``refused``: why the cluster refused it when asked (the notice)."""
    ask = fusion_ask(state, fusion, pipeline, allow_fallback=allow_fallback, refused=refused)
    return placement(state).plan(ask, lookups)


def client_plan(state: IndexState, lookups: Lookups, fusion: Fusion | None, pipeline: str | None) -> FusionPlan:
    """Technique ``client``: the fusion given, else the named (or the index's default) pipeline's
    fusion, else the searcher's; fused here."""
    name = placement(state).client_pipeline(fusion_ask(state, fusion, pipeline))
    if fusion is None and name:
        fusion = lookups.stored_fusion(name)
        if fusion is None:
            raise PipelineNotFoundError(name, f"create it with `hybrid init --index {state.alias}`")
    return FusionPlan(fusion or state.fusion, FusedBy.CLIENT)


def fast_path(plan: FusionPlan, state: IndexState, request: SearchRequest, shape: Shape) -> FusionPlan:
    """The server-fused ``plan`` run on the fast path where the index's check applies to it
    (:mod:`adapter.search.fast_path`): the same fusion in the client, with a notice saying why."""
    if request.fast_path is FastPath.OFF or request.explain or not plan.fused_by.server:
        return plan
    if request.fast_path is FastPath.ON:
        return FusionPlan(
            plan.fusion,
            FusedBy.CLIENT,
            notice=f"fast path (asked for): both legs in one _msearch, fused here by {plan.fusion.name}",
        )
    check = state.fast_path
    if check is None or not check.applies(plan.fusion.name, shape.depth, state.caps.version, state.info.shards):
        return plan
    return FusionPlan(plan.fusion, FusedBy.CLIENT, notice=check.notice())


def adaptive_policy(state: IndexState, request: SearchRequest) -> AdaptivePolicy | None:
    """The adaptive policy this hybrid search runs, if any (an explicit pipeline or fusion wins)."""
    if request.policy is not None:
        return request.policy
    return state.adaptive if request.fusion is None and request.pipeline is None else None


def choose(
    policy: AdaptivePolicy, state: IndexState, lookups: Lookups, request: SearchRequest
) -> tuple[FusionChoice, Signals]:
    """The policy's weights for this query, and what its signals cost (nothing without leg signals)."""
    z_score = state.caps.z_score  # the policy's base normalisation where the cluster runs it
    if not policy.uses_legs:
        return policy.choose(QuerySignals.of(request.query), state.calibration, z_score=z_score), Signals()
    quality, cost = lookups.match_quality(request.query, request.filters)
    return policy.choose(QuerySignals.of(request.query, quality), state.calibration, z_score=z_score), cost


def mmr_place(state: IndexState, technique: Technique, request: SearchRequest) -> tuple[bool, str | None]:
    """Whether MMR runs on the server (the k-NN plugin's ``ext.mmr``), and a notice when it was
    asked for there and cannot. The server runs it for dense alone, without rerank (which comes
    first), collapse or sort, where the cluster setting turns its processors on; ``auto`` asks
    for it from :data:`~adapter.search.page.SERVER_MMR_MIN_LAMBDA` up, where it was measured as good."""
    options, caps = request.options, state.caps
    if request.mmr_lambda is None or options.mmr is MMRPlace.CLIENT:
        return False, None
    if options.mmr is MMRPlace.AUTO and request.mmr_lambda < SERVER_MMR_MIN_LAMBDA:
        return False, None  # the server's formula diversifies more at one lambda: measured worse below
    why = None
    if technique is not Technique.DENSE:
        why = f"the server's MMR (ext.mmr) runs on a knn query alone, not {technique.value}"
    elif request.rerank_top is not None or options.collapse is not None or options.sort:
        why = "the server's MMR (ext.mmr) cannot follow rerank, collapse or a sort"
    elif not caps.server_mmr:
        why = f"the server's MMR (ext.mmr) needs the k-NN plugin 3.3+, the cluster runs {caps.version}"
    elif not caps.server_mmr_enabled:
        why = (
            'the server\'s MMR is off on this cluster: enable it with PUT _cluster/settings {"persistent": '
            '{"cluster.search.enabled_system_generated_factories": ["mmr_over_sample_factory", "mmr_rerank_factory"]}} '
            "(or `hybrid init --server-mmr`)"
        )
    if why is None:
        return True, None
    return False, (f"{why}: MMR ran in the client" if options.mmr is MMRPlace.SERVER else None)


def model_fit(fusion: Fusion | None, state: IndexState, shape: Shape) -> tuple[str, ...]:
    """A learned fusion checked against the index, embedder and depth it was trained on (refused on another
    embedder; notices for the rest)."""
    if not isinstance(fusion, LearnedFusion):
        return ()
    return fusion.fit_for(index=state.info.alias, embedder=state.info.fingerprint.key, depth=shape.depth)


def switched(state: IndexState, lookups: Lookups) -> IndexState:
    """``state`` where its capabilities know the switching cluster settings (read through ``lookups`` only if not
    yet)."""
    return state if state.caps.switches_read else lookups.switched()


def carries_legs(state: IndexState, request: SearchRequest) -> bool:
    """Whether this search's server-fused hybrid page asks each hit's raw score per leg, so that its
    relevance comes from the legs as a client-fused page's does (docs/INTEROP.md, Scores): where the search
    asks for it (``SearchOptions.leg_relevance``: it costs the request a quarter of its time), the cluster
    answers them (``caps.hybrid_leg_scores``), the index keeps both legs' maps, and the page is the fusion's
    (no rerank or MMR, whose pages take no legs' relevance)."""
    return (
        request.options.leg_relevance
        and request.technique is Technique.HYBRID
        and not request.post
        and state.caps.hybrid_leg_scores
        and all(leg_map_name(leg) in state.relevance for leg in LEGS)
    )


def plan_search(
    request: SearchRequest,
    shape: Shape,
    state: IndexState,
    lookups: Lookups,
    vector: np.ndarray | None,
    *,
    allow_fallback: bool = True,
    refused: str | None = None,
) -> SearchPlan:
    """The whole plan of one search (``vector``: the query's, where it needs one)."""
    technique, fixed, pipeline = request.technique, request.fusion, request.pipeline
    plan: FusionPlan | None = None
    choice, signals = None, Signals()
    if technique in (Technique.HYBRID, Technique.CLIENT):
        policy = adaptive_policy(state, request)
        if policy is not None:
            choice, signals = choose(policy, state, lookups, request)
            fixed = policy.fusion(choice)
        if technique is Technique.HYBRID:
            plan = plan_fusion(state, lookups, fixed, pipeline, allow_fallback=allow_fallback, refused=refused)
            plan = fast_path(plan, state, request, shape)
        else:
            plan = client_plan(state, lookups, fixed, pipeline)
        if plan.fused_by is FusedBy.CLIENT:
            technique = Technique.CLIENT
        elif (
            plan.fused_by is FusedBy.SERVER_INLINE
            and not request.explain
            and switched(state, lookups).caps.in_query_fusion
        ):
            # A cluster with in-query fusion needs no pipeline in the request (the explanation
            # response processor still does).
            plan = replace(plan, fused_by=FusedBy.SERVER_QUERY, inline=None)
    elif technique is Technique.CLIENT_RRF:
        plan = FusionPlan(fixed or RRF(), FusedBy.CLIENT)
    if request.mmr_lambda is not None and technique is Technique.DENSE and request.options.mmr is not MMRPlace.CLIENT:
        state = switched(state, lookups)  # whether the cluster setting turns the server's MMR on
    server_mmr, mmr_notice = mmr_place(state, technique, request)
    page = plan_page(request.options, state.caps, technique.value, post=request.post)
    stage = FirstStage(
        request.query,
        vector,
        request.filters,
        shape.depth,
        shape.page_from,
        shape.page_size,
        with_vectors=request.mmr_lambda is not None and not server_mmr,
        page=page,
        leg_scores=carries_legs(state, request),
    )
    fit = model_fit(plan.fusion if plan else None, state, shape)
    notices = tuple(n for n in (plan.notice if plan else None, mmr_notice, *page.notices, *fit) if n)
    return SearchPlan(technique, plan, stage, server_mmr, choice, notices, signals)
