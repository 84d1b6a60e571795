"""The :class:`Searcher`: one index, searched by composing the stages per request."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter.observability import metrics, telemetry, tracing
from adapter.engines import ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.engines.dsl import TextLeg, clean_query, query_words
from adapter.errors import IndexMismatchError, InputError
from adapter.fusion import Fusion
from adapter.fusion.base import FusedBy
from adapter.fusion.choice.policy import AdaptivePolicy, Calibration
from adapter.index.assets import IndexNames
from adapter.index.catalog import IndexInfo, read_index_info
from adapter.models.embedders import Embedder
from adapter.search import assemble, post, recovery
from adapter.search.compose import BY_TECHNIQUE, FirstHits
from adapter.search.fast_path import FastPath
from adapter.search.page import SearchOptions, plan_excerpts
from adapter.engines.placement import FusionPlan
from adapter.search.planning import FirstStage, SearchPlan, plan_fusion, plan_search
from adapter.search.request import SearchRequest, Shape, TechniqueLike, VectorLike
from adapter.search.relevance import with_relevance
from adapter.search.rerank import Reranker
from adapter.search.results import Excerpts, Hit, SearchResult, Technique
from adapter.search.retrieve import Retriever, vector_of
from adapter.search.state import Given, HybridFusion, IndexState, split_fusion

CLAUSE_CHECK_FLOOR = 64  # below this many term clauses a query is not checked against the cluster's limit


@dataclass(frozen=True)
class Found:
    """What one attempt found: the plan it ran, the final hits and the notices about them."""

    plan: SearchPlan
    first: FirstHits
    hits: tuple[Hit, ...]
    notices: tuple[str, ...]


class Searcher:
    """Search one hybrid index. Use :meth:`open`; the constructor takes what it reads.

    ``embedder`` defaults to the one recorded in the index's fingerprint (loaded on first use, and
    only when its spec is in ``allowed_models``, see :func:`~adapter.models.embedders.load_index_embedder`);
    a given embedder must match that fingerprint. ``depth`` is the candidate depth per leg.
    ``fusion`` (or ``pipeline``, a stored search pipeline) is the default for hybrid searches; an
    :class:`~adapter.fusion.choice.policy.AdaptivePolicy` chooses the weights per query. Without either, the
    searcher follows the index: adaptive when ``hybrid init`` made it so, else its default pipeline.
    ``allow_partial_results=False``: every search raises :class:`~adapter.errors.PartialResultError` where
    shards failed (after one retry) or a collapsed page came back short, instead of a notice (one search:
    ``SearchOptions(allow_partial_results=False)``).

    One searcher is safe across threads: each search reads the current :class:`~.state.IndexState`
    once; what changes it (the alias moved, the cluster refused a fusion) publishes a new one.
    """

    def __init__(
        self,
        client: ClusterLike,
        info: IndexInfo,
        caps: Capabilities,
        embedder: Embedder | None = None,
        *,
        engine: Engine | None = None,
        reranker: Reranker | None = None,
        text_leg: TextLeg | None = None,
        fusion: HybridFusion | None = None,
        pipeline: str | None = None,
        depth: int = 100,
        allow_fallback: bool = True,
        allowed_models: Sequence[str] | None = None,
        allow_partial_results: bool = True,
    ) -> None:
        if depth < 1:
            raise InputError(f"depth must be at least 1, got {depth}")
        if not isinstance(allow_partial_results, bool):
            raise InputError(f"allow_partial_results must be True or False, got {allow_partial_results!r}")
        # the port, every request goes through it (a user's raw client: wrapped here)
        self.cluster = cluster_for(client, engine)
        self.engine = self.cluster.engine
        self.reranker = reranker
        self.depth = depth
        self.allow_fallback = allow_fallback
        self.allow_partial_results = allow_partial_results  # False: every search of this searcher is strict
        self._state = IndexState.of(info, caps, Given(embedder, text_leg, fusion, pipeline, allowed_models))
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        client: ClusterLike,
        alias: str,
        embedder: Embedder | None = None,
        *,
        engine: Engine | None = None,
        **options: Any,
    ) -> Searcher:
        """A searcher for the hybrid index behind ``alias``: reads the index and what a search needs of the cluster."""
        cluster = cluster_for(client, engine)
        info = read_index_info(cluster, alias)
        return cls(cluster, info, cluster.search_capabilities(), embedder, **options)

    # -- the current state, read-only ------------------------------------------------------------
    @property
    def state(self) -> IndexState:
        return self._state

    @property
    def info(self) -> IndexInfo:
        return self._state.info

    @property
    def caps(self) -> Capabilities:
        return self._state.caps

    @property
    def alias(self) -> str:
        return self._state.alias

    @property
    def names(self) -> IndexNames:
        return IndexNames(self.alias)

    @property
    def text_leg(self) -> TextLeg:
        return self._state.text_leg

    @property
    def fusion(self) -> HybridFusion:
        """The default of hybrid searches: an adaptive policy, or a fixed fusion."""
        return self._state.default

    @property
    def pipeline(self) -> str | None:
        return self._state.pipeline

    @property
    def policy(self) -> AdaptivePolicy:
        return self._state.policy

    @property
    def calibration(self) -> Calibration | None:
        return self._state.calibration

    @property
    def allowed_models(self) -> Sequence[str] | None:
        return self._state.given.allowed_models

    @property
    def embedder(self) -> Embedder:
        return self._state.embedder()

    def _publish(self, old: IndexState, new: IndexState) -> None:
        """``new`` replaces ``old`` for the searches after (unless another search replaced it first)."""
        with self._lock:
            if self._state is old:
                self._state = new

    # -- building blocks -------------------------------------------------------------------------
    def query_vector(self, query: str, vector: VectorLike | None = None) -> np.ndarray:
        return vector_of(self._state, query, vector)

    def plan_fusion(self, fusion: Fusion | None = None, pipeline: str | None = None) -> FusionPlan:
        """Where ``fusion`` (default: the searcher's) would run: a stored pipeline, a temporary one,
        the request itself (Elasticsearch), or the client."""
        state = self._state
        retriever = Retriever(self.cluster, self.engine, state, recovery.Attempt())
        return plan_fusion(state, retriever, fusion, pipeline, allow_fallback=self.allow_fallback)

    def legs(
        self,
        query: str,
        *,
        depth: int | None = None,
        filters: Mapping[str, Any] | None = None,
        query_vector: VectorLike | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Each leg's ranked ``(id, raw score)`` list to ``depth``, from one ``_msearch`` (for tuning
        fusion offline: :func:`adapter.fusion.fuse`)."""
        query = clean_query(query)

        def once(state: IndexState, attempt: recovery.Attempt) -> list[list[tuple[str, float]]]:
            vector = vector_of(state, query, query_vector)
            stage = FirstStage(query, vector, filters, depth or self.depth, 0, 0, with_vectors=False)
            return Retriever(self.cluster, self.engine, state, attempt).legs(stage).pairs()

        return self._run(once, query_vector is not None).value

    def query_match_quality(self, query: str, filters: Mapping[str, Any] | None = None) -> tuple[float | None, float]:
        """BM25's match quality for ``query`` (:func:`adapter.fusion.choice.policy.match_quality`) and the server's
        took."""
        quality, _, took = self.query_evidence(query, filters)
        return quality, took

    def query_evidence(
        self, query: str, filters: Mapping[str, Any] | None = None
    ) -> tuple[float | None, float | None, float]:
        """BM25's match quality, the query's term coverage (:func:`adapter.fusion.choice.signals.term_coverage`) and
        the server's took, from the same two requests (the best BM25 hit; the term statistics)."""
        query = clean_query(query)

        def once(state: IndexState, attempt: recovery.Attempt) -> tuple[float | None, float | None, float]:
            retriever = Retriever(self.cluster, self.engine, state, replace(attempt, accept_partial=True))
            quality, coverage, signals = retriever.evidence(query, filters)
            return quality, coverage, signals.took

        return self._run(once, False).value

    # -- the call --------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        technique: TechniqueLike = Technique.HYBRID,
        k: int = 10,
        from_: int = 0,
        filters: Mapping[str, Any] | None = None,
        fusion: HybridFusion | str | None = None,
        pipeline: str | None = None,
        depth: int | None = None,
        rerank_top: int | None = None,
        mmr_lambda: float | None = None,
        mmr_candidates: int | None = None,
        explain: bool = False,
        query_vector: VectorLike | None = None,
        options: SearchOptions | None = None,
        fast_path: FastPath = FastPath.AUTO,
    ) -> SearchResult:
        """Run one query. ``rerank_top`` reranks that many first-stage hits (needs a reranker);
        ``mmr_lambda`` diversifies the final list with MMR over ``mmr_candidates`` candidates.
        ``options`` (:class:`~adapter.search.page.SearchOptions`): highlights, facets, collapse, a field
        sort, a score floor, where MMR runs; a part the cluster cannot run for this technique is
        run by the client, and the result says so in ``notices``. ``fast_path``
        (:class:`~adapter.search.fast_path.FastPath`): a hybrid takes the parallel-legs fast path where the
        index's ``hybrid fast-path`` check earned it (``AUTO``), always (``ON``) or never (``OFF``). Raises
        :class:`~adapter.errors.InputError`
        for bad parameters, :class:`~adapter.errors.CapabilityError` where a fallback is needed and
        refused, :class:`~adapter.errors.BackendError` for the server's errors."""
        started = time.perf_counter()
        fixed, policy = split_fusion(self._fusion_named(fusion) if isinstance(fusion, str) else fusion)
        request = SearchRequest(
            query,
            Technique.parse(technique),
            k,
            from_,
            filters,
            fixed,
            policy,
            pipeline,
            depth,
            rerank_top,
            mmr_lambda,
            mmr_candidates,
            explain,
            query_vector,
            self._options(options),
            fast_path,
        )
        return self._observed(request, started)

    def _observed(self, request: SearchRequest, started: float) -> SearchResult:
        """``request`` run under its request id, trace span and metrics, then logged (what every search is wrapped
        in); ``started``: when the call began, for the result's total time."""
        with (
            telemetry.request_id() as rid,
            tracing.span("hybrid.search", _span_start(self.alias, request, rid)) as span,
            metrics.search(request.technique.value) as record,
        ):
            outcome = self._run(
                lambda state, attempt: self._attempt(request, state, attempt), request.query_vector is not None
            )
            result = _result(request, outcome, started)
            end = _span_end(result, outcome)
            tracing.annotate(span, end)
            record(end)
        _log(result, outcome.state.alias, rid)
        return result

    def _options(self, options: SearchOptions | None) -> SearchOptions:
        """The search's options; a searcher made with ``allow_partial_results=False`` makes each of its searches
        strict."""
        options = options or SearchOptions()
        return options if self.allow_partial_results else replace(options, allow_partial_results=False)

    def _fusion_named(self, name: str) -> HybridFusion:
        """``fusion="rrf"``, ``"min_max"``, ``"rrf-40"``, ... as the CLI reads them; ``"adaptive"``: the index's
        policy."""
        from adapter.fusion import parse_fusion
        from adapter.fusion.choice.values import ADAPTIVE

        return self.policy if name.strip() == ADAPTIVE else parse_fusion(name)

    def _run(
        self, once: Callable[[IndexState, recovery.Attempt], recovery.T], vector_given: bool
    ) -> recovery.Outcome[recovery.T]:
        old = self._state

        def follow(state: IndexState, moved: recovery.AliasMoved) -> IndexState:
            info = read_index_info(self.cluster, state.alias)
            try:
                return state.moved_to(info, query_vector_given=vector_given)
            except IndexMismatchError as exc:
                raise exc from moved.error

        with telemetry.request_id():  # every request of this search carries one X-Opaque-Id
            outcome = recovery.run(once, old, follow)
        if outcome.state is not old:
            self._publish(old, outcome.state)
        return outcome

    def _attempt(self, request: SearchRequest, state: IndexState, attempt: recovery.Attempt) -> Found:
        shape = Shape.of(
            request, default_depth=self.depth, max_window=state.info.max_window, has_reranker=self.reranker is not None
        )
        retriever = Retriever(self.cluster, self.engine, state, attempt)
        if request.technique is not Technique.DENSE:
            _check_clauses(request.query, state, retriever.max_clauses)
        vector = vector_of(state, request.query, request.query_vector) if request.needs_vector else None
        plan = plan_search(
            request, shape, state, retriever, vector, allow_fallback=self.allow_fallback, refused=attempt.refused
        )
        first = BY_TECHNIQUE[plan.technique](retriever, plan, request)
        hits = self._post(request, plan, first, state)
        notices = [
            *plan.notices,
            *first.notices,
            *retriever.notices,
            *assemble.past_the_end(hits, plan.technique, shape.page_from, shape.depth),
            *([state.relevance_problem] if state.relevance_problem else []),
        ]
        if assemble.unknown_fields_asked(hits, request.filters) and request.filters:
            notices += retriever.unknown_filter_fields(request.filters)
        return Found(plan, first, tuple(hits), tuple(notices))

    def _post(self, request: SearchRequest, plan: SearchPlan, first: FirstHits, state: IndexState) -> list[Hit]:
        """Rerank, MMR in the client, the page cut after either, the stored vectors stripped."""
        hits = list(first.hits)
        if request.rerank_top is not None and self.reranker is not None:
            with tracing.span("hybrid.rerank", {"hybrid.candidates": min(len(hits), request.rerank_top)}):
                hits = post.rerank(self.reranker, request.query, hits[: request.rerank_top])
        if request.mmr_lambda is not None and not plan.server_mmr and plan.stage.vector is not None:
            with tracing.span("hybrid.mmr", {"hybrid.candidates": len(hits), "hybrid.mmr_lambda": request.mmr_lambda}):
                hits = post.diversify(
                    plan.stage.vector, hits, field=state.info.vector_field, k=request.wanted, lambda_=request.mmr_lambda
                )
        if request.post:
            hits = post.page(hits, request.from_, request.k)
        return post.strip(hits, state.info.vector_field) if plan.stage.with_vectors else hits


def _result(request: SearchRequest, outcome: recovery.Outcome[Found], started: float) -> SearchResult:
    """The search's result from its last attempt (what it found, what every attempt cost)."""
    found, plan = outcome.value, outcome.value.plan
    fused = plan.fusion
    hits, relevance_by = with_relevance(
        found.hits,
        plan.technique,
        fused.fusion if fused else None,
        outcome.state.relevance,
        legs=_legs_alike(fused, outcome.state, named=plan.stage.leg_scores),
        raw_legs=found.first.leg_scores,
    )
    return SearchResult(
        query=request.query,
        technique=plan.technique,
        hits=hits,
        relevance_by=relevance_by,
        fused_by=fused.fused_by if fused else FusedBy.NONE,
        fusion=fused.fusion if fused else None,
        pipeline=fused.pipeline if fused else None,
        took_ms=float(found.first.took + plan.signals.took),
        total_ms=(time.perf_counter() - started) * 1000.0,
        notices=found.notices,
        requests=found.first.requests + plan.signals.requests + outcome.attempt.spent_requests,
        sent=outcome.sent + plan.signals.sent,  # the search's own requests first, then adaptive signals'
        choice=plan.choice,
        aggregations=found.first.facets,
        excerpts=_excerpts(request.options, outcome.state),
    )


SERVER_FUSES = "relevance:server-fuses"  # IndexState.facts: whether the cluster fuses any mapped fusion itself


def _legs_alike(fused: FusionPlan | None, state: IndexState, *, named: bool = False) -> bool:
    """Whether this page's relevance may come from its legs (docs/INTEROP.md, Scores): where every fusion's
    pages carry their legs alike. ``named``: the search asked the server's hybrid pages for their legs' scores
    (:func:`~adapter.search.planning.carries_legs`), so every page carries them, the server's by name and
    the client's by fusing; else a client-fused page, where the client fuses by choice (``technique="client"``,
    the fast path) or where the cluster fuses none of the fusions the index keeps maps for (Elasticsearch
    without its retrievers). A page that fell back to the client beside server-fused ones that carry no legs
    keeps the fusion's map: one kind of relevance across the fusions of one index. (A server's explained page
    carries legs too, but explain must not change a relevance.)"""
    if fused is None:
        return False
    if named:
        return True
    if fused.fused_by is not FusedBy.CLIENT:
        return False
    if fused.notice is None:
        return True
    return not state.facts.get(SERVER_FUSES, lambda: int(_server_fuses_any(state)))


def _server_fuses_any(state: IndexState) -> bool:
    from adapter.fusion import parse_fusion
    from adapter.fusion.relevance import LEG_PREFIX

    named = [parse_fusion(name) for name in state.relevance if not name.startswith(LEG_PREFIX)]
    return any(state.caps.supports(fusion)[0] for fusion in named)


def _span_start(alias: str, request: SearchRequest, rid: str) -> dict[str, tracing.AttributeValue | None]:
    return {"hybrid.index": alias, "hybrid.technique": request.technique.value, "hybrid.request_id": rid}


def _span_end(result: SearchResult, outcome: recovery.Outcome[Found]) -> dict[str, tracing.AttributeValue | None]:
    """The ``hybrid.search`` span's attributes once the search ran (adapter.observability.tracing lists them)."""
    fused = outcome.value.plan.fusion
    reason = (fused.notice if fused else None) or outcome.attempt.refused
    return {
        "hybrid.technique": result.technique.value,
        "hybrid.fusion": result.fusion.name if result.fusion else None,
        "hybrid.fused_by": result.fused_by_label,
        "hybrid.took_ms": result.took_ms,
        "hybrid.requests": result.requests,
        "hybrid.fallback": reason is not None,
        "hybrid.fallback_reason": reason,
        "hybrid.retries": len(outcome.attempt.met),
        "hybrid.hits": len(result.hits),
    }


def _log(result: SearchResult, alias: str, rid: str) -> None:
    """The search's summary at DEBUG, each notice (fallbacks among them) at INFO (``adapter.search``)."""
    log = telemetry.SEARCH
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "searched %s: technique=%s fusion=%s fused_by=%s took=%.0fms total=%.0fms requests=%d hits=%d id=%s",
            alias,
            result.technique.value,
            result.fusion.name if result.fusion else "-",
            result.fused_by_label,
            result.took_ms,
            result.total_ms,
            result.requests,
            len(result.hits),
            rid,
        )
    for notice in result.notices:
        log.info("search of %s (id=%s): %s", alias, rid, notice)


def _excerpts(options: SearchOptions, state: IndexState) -> Excerpts | None:
    bounded = plan_excerpts(options, state.info.text_fields, highlighted=False, request_highlights=True).bounded
    return Excerpts(bounded, options.max_text_chars) if bounded else None


def _check_clauses(query: str, state: IndexState, max_clauses: Callable[[], int]) -> None:
    """Refuse a query the server would refuse: one term clause per distinct word and text field,
    against the cluster's ``indices.query.bool.max_clause_count`` (read once, for long queries)."""
    words, fields = query_words(query), len(state.text_leg.fields)
    if words * fields <= CLAUSE_CHECK_FLOOR:
        return
    limit = max_clauses()
    if words * fields > limit:
        raise InputError(
            f"the query has {words} distinct words; over {fields} text fields that is {words * fields} clauses, more "
            f"than the cluster allows (indices.query.bool.max_clause_count = {limit}). Shorten the query "
            f"to at most {limit // fields} distinct words"
        )
