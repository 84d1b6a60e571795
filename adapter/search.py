"""The searcher: the seeds' five techniques, fused by the server where it can.

- ``bm25``: a ``match``-type query over the text fields.
- ``dense``: a k-NN query; the query vector is computed in Python by the index's embedder.
- ``hybrid``: one hybrid request (text leg + vector leg) fused by the server — on OpenSearch a
  ``hybrid`` query with a search pipeline, named or temporary; never without one (the server
  would return unfused results); on Elasticsearch an ``rrf``/``linear`` retriever, or ``query`` +
  ``knn`` with the scores summed (the engine builds it: :mod:`adapter.engines`).
- ``client-rrf``: both legs in one ``_msearch``, fused here with the server's RRF formula;
  ``client``: the same with any fusion (:mod:`adapter.fusion`: DBSF, a normalisation, the sum).
- rerank (cross-encoder over the top N) and MMR (over stored vectors) can follow any of them.

When the cluster cannot run the requested fusion, the searcher fuses the legs in the client by that
same fusion (the server's formula) and says so in ``SearchResult.notices`` (or
raises :class:`CapabilityError` if fallback is off); so does a fusion the cluster refuses when
asked (Elasticsearch: a retriever it lacks, a licence that does not cover it).

Construction does no I/O: :meth:`Searcher.open` reads the index (:mod:`adapter.catalog`) and the
cluster's capabilities once and hands them in.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import functools
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from . import responses
from .adaptive import ADAPTIVE, AdaptivePolicy, QuerySignals, match_quality, stored_policy
from .assets import IndexNames
from .capabilities import Capabilities
from .catalog import IndexInfo, alias_indices, mapped_fields, max_clause_count, read_index_info, read_pipeline
from .documents import embedding_text, hit_text, hit_title
from .embedders import Embedder, check_fingerprint, load_index_embedder
from .engines import Engine, cluster_for
from .engines.port import forget_last, recording
from .errors import BackendError, CapabilityError, IndexMismatchError, InputError, PipelineNotFoundError
from .fusion import DEFAULT_FUSION, LEGS, RRF, Fusion, parse_fusion
from .fusion.render import renderer
from .mmr import mmr as mmr_select
from .page import (CHUNKS, SERVER_MMR_MIN_LAMBDA, MMRPlace, PagePlan, SearchOptions, client_steps, facets_body, highlight_clause,
                   page_clauses, plan_page)
from .queries import (TextLeg, clean_query, field_boosts, filter_clauses, filter_field, query_words, search_body,
                      termvectors_body, text_query)
from .rerank import Reranker
from .signals import term_coverage
from .responses import RawHit
from .types import Facet, FusedBy, FusionChoice, Hit, LegScore, SearchResult, SentRequest, Technique

KNN_MAX_K = 10_000
MIRROR_TOLERANCE = 1e-5  # relative: the mirror computes in float32 as the server does
CLAUSE_CHECK_FLOOR = 64  # below this many term clauses a query is not checked against the cluster's limit
# Notices about partial answers (shards that failed even when asked again) in this search() call.
_PARTIAL: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("partial", default=None)
PARTIAL_RETRY_PAUSE_S = 0.2  # a node leaving or joining: its shards' other copies answer a moment later


def _note_partial(resp: Mapping[str, Any]) -> None:
    failed, total, reasons = responses.shard_failures(resp)
    notices = _PARTIAL.get()
    if failed and notices is not None:
        notices.append(f"partial result: {failed} of {total} shards failed even when asked again ({'; '.join(reasons) or 'no reason given'}); "
                       "their hits are missing")


@contextlib.contextmanager
def _collecting(var: contextvars.ContextVar) -> Iterator[list]:
    """A fresh list in ``var`` for this block: what the block's calls append to it."""
    items: list = []
    token = var.set(items)
    try:
        yield items
    finally:
        var.reset(token)


def _partial_notices():
    return _collecting(_PARTIAL)


def _recording():
    """Collect the search requests the port sends in this block (a reference to each body: no copies)."""
    return recording()


class _AliasMoved(IndexMismatchError):
    """The alias answered from an index the searcher did not open (a migration swapped it)."""

    def __init__(self, alias: str, old: str, new: Sequence[str]) -> None:
        self.old = old
        super().__init__(f"the alias {alias} no longer points to {old} (hits came from {', '.join(new)})")


def _following_the_alias(method):
    """When the alias moved to another index since the searcher read it, follow it (the new index's
    embedder, fields and default pipeline, unless they were given) and run the query again: a
    result never mixes one model's query vector with another model's documents."""

    @functools.wraps(method)
    def search(self, query, **options):
        try:
            return method(self, query, **options)
        except _AliasMoved as moved:
            self._follow(moved, options.get("query_vector") is not None)
        return method(self, query, **options)

    return search


@dataclass(frozen=True)
class FusionPlan:
    """How one hybrid request will be fused, decided before it is sent."""

    fusion: Fusion
    fused_by: FusedBy
    pipeline: str | None = None  # the stored pipeline (SERVER_PIPELINE)
    inline: dict[str, Any] | None = None  # the pipeline sent with the request (SERVER_INLINE)
    # SERVER_RETRIEVER / SERVER_SUM (Elasticsearch): the fusion itself is the request's body
    notice: str | None = None  # why the plan differs from what was asked (a fallback)


@dataclass(frozen=True)
class _Stage:
    """One first-stage request: what to ask for and which page of it."""

    query: str
    vector: np.ndarray | None
    filters: Mapping[str, Any] | None
    depth: int  # candidates per leg
    from_: int
    size: int
    with_vectors: bool  # keep stored vectors in the sources (for MMR)
    page: PagePlan = PagePlan(SearchOptions())  # highlight, facets, collapse, sort, min_score: where each runs

    @property
    def whole(self) -> bool:
        """The client collapses or sorts: fetch the whole fused list, cut the page after."""
        return self.page.needs_whole_list


class Searcher:
    """Search one hybrid index. Use :meth:`open`; the constructor takes what it reads.

    ``embedder`` defaults to the one recorded in the index's fingerprint (loaded on first use, and
    only when its spec is in ``allowed_models``, see :func:`~adapter.embedders.load_index_embedder`);
    a given embedder must match that fingerprint. ``depth`` is the candidate depth per leg.
    ``fusion`` (or ``pipeline``, a stored search pipeline) is the default for hybrid searches; an
    :class:`~adapter.adaptive.AdaptivePolicy` chooses the weights per query. Without either, the
    searcher follows the index: adaptive when ``hybrid init`` made it so, else its default pipeline.
    """

    def __init__(
        self,
        client,
        info: IndexInfo,
        caps: Capabilities,
        embedder: Embedder | None = None,
        *,
        engine: Engine | None = None,
        reranker: Reranker | None = None,
        text_leg: TextLeg | None = None,
        fusion: Fusion | AdaptivePolicy | None = None,
        pipeline: str | None = None,
        depth: int = 100,
        allow_fallback: bool = True,
        allowed_models: Sequence[str] | None = None,
    ) -> None:
        if depth < 1:
            raise InputError(f"depth must be at least 1, got {depth}")
        if embedder is not None:
            check_fingerprint(info.alias, info.fingerprint, embedder)
        self.client = client
        self.cluster = cluster_for(client, engine)  # the port: every request goes through it
        self.info = info
        self.caps = caps
        self.engine = self.cluster.engine
        self.names = IndexNames(info.alias)
        self.text_leg = text_leg or TextLeg(info.query_fields)
        self.reranker = reranker
        # The index's own policy (a learned one stored by `hybrid calibrate --policy`, else the
        # default) and its calibration (adapter.adaptive).
        self.policy, self.calibration = stored_policy(info.adaptive)
        if fusion is None and pipeline is None and info.default_fusion == ADAPTIVE:
            fusion = self.policy
        # Without a fusion of its own: the index's (Elasticsearch records it in _meta), else the product's.
        recorded = parse_fusion(info.default_fusion) if info.default_fusion and info.default_fusion != ADAPTIVE else None
        self.fusion = fusion or recorded or DEFAULT_FUSION
        # Without a fusion or pipeline of its own, the searcher follows the index's default pipeline.
        self.pipeline = pipeline or (info.default_pipeline if fusion is None else None)
        self.depth = depth
        self.allow_fallback = allow_fallback
        self._embedder = embedder
        # What follows the index when its alias moves to a new version (adapter.migrate) unless given.
        self._given = {"embedder": embedder is not None, "text_leg": text_leg is not None, "pipeline": pipeline is not None or fusion is not None}
        self._serving = {info.index}  # indices whose hits this searcher accepts: the alias's at open
        self.allowed_models = allowed_models  # None: adapter.embedders.allowed_models()
        self._pipelines: dict[str, Fusion | None] = {}  # stored pipeline -> its fusion (None: absent)
        self._max_clauses: int | None = None  # the cluster's indices.query.bool.max_clause_count, read when needed

    @classmethod
    def open(cls, client, alias: str, embedder: Embedder | None = None, **options) -> Searcher:
        """A searcher for the hybrid index behind ``alias``: reads the index and probes the cluster."""
        cluster = cluster_for(client, options.pop("engine", None))
        info = read_index_info(cluster, alias)
        return cls(client, info, cluster.probe(), embedder, engine=cluster.engine, **options)

    @property
    def alias(self) -> str:
        return self.info.alias

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_index_embedder(self.info.fingerprint.spec, allowed=self.allowed_models, index=self.alias)
            check_fingerprint(self.alias, self.info.fingerprint, self._embedder)
        return self._embedder

    # -- building blocks -------------------------------------------------------------------------
    def query_vector(self, query: str, vector: Sequence[float] | None = None) -> np.ndarray:
        if vector is not None:
            arr = np.asarray(vector, dtype=np.float32)
            if arr.shape != (self.info.fingerprint.dimension,):
                raise IndexMismatchError(f"the query vector has shape {arr.shape}; index {self.alias!r} expects ({self.info.fingerprint.dimension},)")
            return arr
        return self.embedder.embed_query(query)

    def _stored_fusion(self, name: str) -> Fusion | None:
        """The fusion of a stored pipeline, looked up once per searcher (None: no such pipeline).

        A pipeline deleted later still fails loudly: the server rejects the request naming it.
        """
        if name not in self._pipelines:
            body = read_pipeline(self.cluster, name)
            if body is None:
                return None
            fusion = self.engine.pipeline_fusion(body)
            if fusion is None:
                raise InputError(f"search pipeline {name!r} does not fuse hybrid results (no normalization or score-ranker processor)")
            self._pipelines[name] = fusion
        return self._pipelines[name]

    def plan_fusion(self, fusion: Fusion | None = None, pipeline: str | None = None) -> FusionPlan:
        """Decide where ``fusion`` runs: a stored pipeline, a temporary one, the request itself
        (Elasticsearch), or client RRF."""
        if not self.caps.search_pipelines:  # Elasticsearch: the fusion is part of the request
            if pipeline:
                raise CapabilityError(f"{self.caps.engine} has no search pipelines ({pipeline!r}); choose a fusion instead")
            wanted = fusion or self.fusion
            ok, why = self.caps.supports(wanted)
            return FusionPlan(wanted, _in_request(wanted, self.caps)) if ok else self._fallback(wanted, why)
        pipeline = pipeline or (None if fusion is not None else self.pipeline)
        if pipeline:
            stored = self._stored_fusion(pipeline)
            if stored is None:
                raise PipelineNotFoundError(pipeline, f"create it with `hybrid init --index {self.alias}`")
            return self._checked(FusionPlan(stored, FusedBy.SERVER_PIPELINE, pipeline=pipeline))
        wanted = fusion or self.fusion
        if not self.caps.supports(wanted)[0]:
            return self._checked(FusionPlan(wanted, FusedBy.SERVER_INLINE))
        named = self.names.pipeline(wanted)
        stored = self._stored_fusion(named)
        if stored is not None and (wanted.weights is None or stored == wanted):
            return FusionPlan(stored, FusedBy.SERVER_PIPELINE, pipeline=named)
        # The index's default pipeline may run exactly these weights (an adaptive index's
        # <alias>-adaptive holds its corpus weights): stored beats inline (docs/BENCHMARKS.md).
        default = self.info.default_pipeline
        if default and default != named and wanted.weights is not None and self._runs_exactly(default, wanted):
            return FusionPlan(wanted, FusedBy.SERVER_PIPELINE, pipeline=default)
        if fusion is None and wanted == DEFAULT_FUSION:
            raise PipelineNotFoundError(named, f"create it with `hybrid init --index {self.alias}`")
        # Parameters no stored pipeline has: send the pipeline with the request (server-side still).
        return FusionPlan(wanted, FusedBy.SERVER_INLINE, inline=self.engine.render_pipeline(wanted, self.caps))

    def _client_plan(self, fusion: Fusion | None, pipeline: str | None) -> FusionPlan:
        """Technique ``client``: the fusion given, else the named (or the index's default) pipeline's
        fusion, else the searcher's; fused here."""
        name = pipeline or (self.pipeline if fusion is None and self.caps.search_pipelines else None)
        if fusion is None and name:
            fusion = self._stored_fusion(name)
            if fusion is None:
                raise PipelineNotFoundError(name, f"create it with `hybrid init --index {self.alias}`")
        return FusionPlan(fusion or self.fusion, FusedBy.CLIENT)

    def _runs_exactly(self, name: str, fusion: Fusion) -> bool:
        try:
            return self._stored_fusion(name) == fusion
        except InputError:  # a default pipeline that does not fuse: not one to reuse
            return False

    def _checked(self, plan: FusionPlan) -> FusionPlan:
        ok, why = self.caps.supports(plan.fusion)
        if ok:
            return plan
        return self._fallback(plan.fusion, why)

    def _fallback(self, fusion: Fusion, why: str) -> FusionPlan:
        """The plan for a fusion this cluster cannot run (``why``): the same fusion computed in the
        client (every fusion has the server's formula there); a notice says so and why."""
        if not self.allow_fallback:
            raise CapabilityError(f"{why}; fallback to client-side fusion is disabled")
        return FusionPlan(fusion, FusedBy.CLIENT, notice=(f"{why}: fell back to client-side {fusion.name} (both legs in one "
                                                          "_msearch, fused in Python with the server's formula)"))

    def _hit(self, raw: RawHit, rank: int, legs: tuple[LegScore, ...] = (), others: Sequence[RawHit] = ()) -> Hit:
        """A hit; ``others``: the rest of its collapse group (by the client), else the server's inner hits."""
        layout = self.info.layout
        if not others and CHUNKS in raw.inner_hits:
            others = [i for i in raw.inner_hits[CHUNKS] if i.id != raw.id]
        chunks = tuple(self._hit(o, 0) for o in others)
        return Hit(raw.id, raw.score, raw.source, rank, legs, title=hit_title(layout, raw.source), text=hit_text(layout, raw.source),
                   highlight=raw.highlight, chunks=chunks)

    def _leg_bodies(self, query: str, vector: np.ndarray, depth: int, filters, fields: Sequence[str] = ()) -> list[dict]:
        """Both legs to ``depth``, ids and scores only (and the values of ``fields``, for a sort or
        collapse by the client): sources are fetched for the final page."""
        knn = self.engine.knn_query(vector, field=self.info.vector_field, k=depth, filters=filters)
        values = {"docvalue_fields": list(fields)} if fields else {}
        return [
            {**search_body(text_query(query, self.text_leg, filters), size=depth), "_source": False, **values},
            {**search_body(knn, size=depth), "_source": False, **values},
        ]

    def _sources(self, ids: Sequence[str], *, with_vectors: bool) -> dict[str, Mapping[str, Any]]:
        if not ids:
            return {}
        docs = self.cluster.mget(self.info.index, ids, exclude=() if with_vectors else (self.info.vector_field,),
                                 action=f"fetching documents from {self.alias}")
        return {d["_id"]: d.get("_source", {}) for d in docs if d.get("found")}

    def _msearch(self, bodies: Sequence[dict]) -> tuple[float, list[Mapping[str, Any]]]:
        """(the server's ``took`` for the whole request, one response per body); asked once more
        when a shard failed in any answer (see :meth:`_search`)."""
        took, out = self._msearch_once(bodies)
        if any(responses.shard_failures(r)[0] for r in out):
            time.sleep(PARTIAL_RETRY_PAUSE_S)
            took, out = self._msearch_once(bodies)
            for answer in out:
                _note_partial(answer)
        return took, out

    def _msearch_once(self, bodies: Sequence[dict]) -> tuple[float, list[Mapping[str, Any]]]:
        action = f"searching {self.alias}"
        with self._refused_by_another_index():
            resp = self.cluster.msearch(self.alias, bodies, action=action)
            out = responses.msearch_responses(resp, action)
        for answer in out:
            self._check_served(answer)
        # The legs run in parallel on the server: the request's took, not the sum of the legs'.
        return float(resp.get("took", max((responses.took(r) for r in out), default=0))), out

    def _search(self, body: dict, pipeline: str | None = None) -> Mapping[str, Any]:
        """One search. An answer in which a shard failed (a 200 holding only the other shards' hits:
        a node stopping loses its search contexts) is asked for once more, when the shards' other
        copies answer; still partial, it is used with a notice, never silently."""
        resp = self._search_once(body, pipeline)
        if responses.shard_failures(resp)[0]:
            time.sleep(PARTIAL_RETRY_PAUSE_S)
            resp = self._search_once(body, pipeline)
            _note_partial(resp)
        return resp

    def _search_once(self, body: dict, pipeline: str | None) -> Mapping[str, Any]:
        with self._refused_by_another_index():
            resp = self.cluster.search(self.alias, body, pipeline=pipeline, action=f"searching {self.alias}")
        self._check_served(resp)
        return resp

    # -- the alias moved (a migration swapped it): follow, never mix models --------------------------
    def _check_served(self, resp: Mapping[str, Any]) -> None:
        """Hits from an index this searcher did not open are fine when the alias still includes its
        own (an alias over several indices); else the alias moved and the answer may come from
        another model's vectors: :class:`_AliasMoved` makes :meth:`search` follow and ask again."""
        served = {h.get("_index") for h in (resp.get("hits") or {}).get("hits", [])} - {None}
        if served <= self._serving:
            return
        now = alias_indices(self.cluster, self.alias)
        if self.info.index in now:
            self._serving.update(now)
            return
        raise _AliasMoved(self.alias, self.info.index, sorted(served - self._serving))

    @contextlib.contextmanager
    def _refused_by_another_index(self) -> Iterator[None]:
        """A request the server refused because the alias moved to an index of another vector
        dimension (a 400 naming the dimension) is followed like hits from another index."""
        try:
            yield
        except BackendError as exc:
            if exc.status != 400 or "dimension" not in (exc.reason or "").lower():
                raise
            now = alias_indices(self.cluster, self.alias)
            if now and self.info.index not in now:
                raise _AliasMoved(self.alias, self.info.index, now) from exc
            raise

    def _follow(self, moved: _AliasMoved, query_vector_given: bool) -> None:
        info = read_index_info(self.cluster, self.alias)
        changed = bool(info.fingerprint.differences(self.info.fingerprint))
        if changed and (self._given["embedder"] or query_vector_given):
            whose = "the query vector given" if query_vector_given else f"this searcher's embedder ({self.embedder.fingerprint.model})"
            raise IndexMismatchError(
                f"the alias {self.alias} moved from {moved.old} to {info.index}, built with {info.fingerprint.model}; {whose} "
                f"belongs to the old index. Open a new searcher with the new model (Searcher.open(client, {self.alias!r}, embedder))"
            ) from moved
        self.info = info
        self._serving = {info.index}
        self._pipelines.clear()
        if changed:
            self._embedder = None  # loaded again from the new fingerprint (allow-list)
        if not self._given["text_leg"]:
            self.text_leg = TextLeg(info.query_fields)
        if not self._given["pipeline"]:
            self.pipeline = info.default_pipeline

    # -- the call --------------------------------------------------------------------------------
    @_following_the_alias
    def search(
        self,
        query: str,
        *,
        technique: str | Technique = Technique.HYBRID,
        k: int = 10,
        from_: int = 0,
        filters: Mapping[str, Any] | None = None,
        fusion: Fusion | AdaptivePolicy | None = None,
        pipeline: str | None = None,
        depth: int | None = None,
        rerank_top: int | None = None,
        mmr_lambda: float | None = None,
        mmr_candidates: int | None = None,
        explain: bool = False,
        query_vector: Sequence[float] | None = None,
        options: SearchOptions | None = None,
    ) -> SearchResult:
        """Run one query. ``rerank_top`` reranks that many first-stage hits (needs a reranker);
        ``mmr_lambda`` diversifies the final list with MMR over ``mmr_candidates`` candidates.
        ``options`` (:class:`~adapter.page.SearchOptions`): highlights, facets, collapse, a field
        sort, a score floor, where MMR runs; a part the cluster cannot run for this technique is
        run by the client, and the result says so in ``notices``."""
        started = time.perf_counter()
        query = clean_query(query)
        technique = Technique.parse(technique)
        if not isinstance(k, int) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        if from_ < 0:
            raise InputError(f"from must be >= 0, got {from_}")
        limit = min(self.info.max_window, KNN_MAX_K)
        if from_ + k > limit:
            raise InputError(f"from + k = {from_ + k} exceeds the cluster's limit of {limit} (index.max_result_window / k-NN k)")
        if rerank_top is not None:
            if self.reranker is None:
                raise InputError("rerank was asked for but the searcher has no reranker")
            if rerank_top < from_ + k:
                raise InputError(f"rerank_top ({rerank_top}) must cover from + k ({from_ + k})")
        if mmr_lambda is not None and not 0.0 <= mmr_lambda <= 1.0:
            raise InputError(f"MMR lambda must be between 0 and 1, got {mmr_lambda}")
        if technique is Technique.CLIENT_RRF and isinstance(fusion, Fusion) and fusion.kind != RRF.kind:
            raise InputError(f"client-rrf fuses by RRF only; pass RRF(rank_constant, weights), or technique client to fuse "
                             f"{fusion.name} in the client")
        post = rerank_top is not None or mmr_lambda is not None
        wanted = from_ + k
        first_stage = max(wanted, rerank_top or 0, (mmr_candidates or 3 * wanted) if mmr_lambda is not None else 0)
        depth = max(depth or self.depth, first_stage)
        if depth > KNN_MAX_K:
            raise InputError(f"candidate depth {depth} exceeds the k-NN limit of {KNN_MAX_K}")
        page_from, page_size = (0, first_stage) if post else (from_, k)
        if technique is not Technique.DENSE:
            self._check_clauses(query)
        options = options or SearchOptions()

        plan: FusionPlan | None = None
        choice: FusionChoice | None = None
        asked = (0.0, 0)  # server time and requests spent before the first stage (adaptive signals)
        signals: list[SentRequest] = []
        if technique in (Technique.HYBRID, Technique.CLIENT):
            policy = self._adaptive(fusion, pipeline)
            if policy is not None:
                with _recording() as signals:
                    choice, asked = self._choose(policy, query, filters)
                fusion = policy.fusion(choice)
            plan = self.plan_fusion(fusion, pipeline) if technique is Technique.HYBRID else self._client_plan(fusion, pipeline)
            if plan.fused_by is FusedBy.CLIENT:
                technique = Technique.CLIENT
            elif plan.fused_by is FusedBy.SERVER_INLINE and self.caps.in_query_fusion and not explain:
                # A cluster with in-query fusion needs no pipeline in the request (the explanation
                # response processor still does).
                plan = replace(plan, fused_by=FusedBy.SERVER_QUERY, inline=None)
        elif technique is Technique.CLIENT_RRF:
            plan = FusionPlan(fusion or RRF(), FusedBy.CLIENT)
        server_mmr, mmr_notice = self._mmr_place(technique, options, mmr_lambda, rerank_top)
        page = plan_page(options, self.caps, technique.value, post=post)

        needs_vector = technique is not Technique.BM25 or mmr_lambda is not None
        vector = self.query_vector(query, query_vector) if needs_vector else None
        stage = _Stage(query, vector, filters, depth, page_from, page_size, with_vectors=mmr_lambda is not None and not server_mmr,
                       page=page)
        requests, notices = 1, [n for n in (plan.notice if plan else None, mmr_notice, *page.notices) if n]
        with _recording() as sent, _partial_notices() as partial:
            if technique is Technique.BM25:
                hits, took, requests, facets = self._single_leg(stage, text_query(query, self.text_leg, filters))
            elif technique is Technique.DENSE:
                k_dense = max(depth, page_from + page_size)
                if server_mmr:
                    k_dense = mmr_candidates or 3 * wanted
                knn = self.engine.knn_query(vector, field=self.info.vector_field, k=k_dense, filters=filters)
                mmr = (1.0 - mmr_lambda, k_dense) if server_mmr else None
                hits, took, requests, facets = self._single_leg(stage if not server_mmr else replace(stage, from_=0, size=wanted), knn, mmr)
            elif technique is Technique.HYBRID:
                try:
                    hits, took, requests, facets = self._server_hybrid(stage, plan, explain)
                except BackendError as exc:
                    plan = self._refused(plan, exc)
                    notices.append(plan.notice)
                    if plan.fused_by is FusedBy.CLIENT:
                        technique = Technique.CLIENT
                        hits, took, requests, facets = self._client_fused(stage, plan.fusion)
                    else:
                        hits, took, requests, facets = self._server_hybrid(stage, plan, explain)
                    requests += 1
                notices += self._hybrid_notices(plan)
            else:
                hits, took, requests, facets = self._client_fused(stage, plan.fusion)
        took, requests = took + asked[0], requests + asked[1]
        notices += partial

        if rerank_top is not None:
            hits = self._rerank(query, hits[:rerank_top])
        if mmr_lambda is not None and not server_mmr:
            hits = self._mmr(vector, hits, wanted, mmr_lambda)
        if post:
            hits = [replace(h, rank=from_ + i + 1) for i, h in enumerate(hits[from_:wanted])]
        if stage.with_vectors:
            def strip(h: Hit) -> Hit:
                return replace(h, source={key: v for key, v in h.source.items() if key != self.info.vector_field},
                               chunks=tuple(strip(c) for c in h.chunks))

            hits = [strip(h) for h in hits]
        return SearchResult(
            query=query,
            technique=technique,
            hits=tuple(hits),
            fused_by=plan.fused_by if plan else FusedBy.NONE,
            fusion=plan.fusion if plan else None,
            pipeline=plan.pipeline if plan else None,
            took_ms=float(took),
            total_ms=(time.perf_counter() - started) * 1000.0,
            notices=tuple(self._notices(notices, hits, technique, page_from, depth, filters)),
            requests=requests,
            sent=tuple(sent) + tuple(signals),  # the search's own requests first, then adaptive signals'
            choice=choice,
            aggregations=facets,
        )

    def _mmr_place(self, technique: Technique, options: SearchOptions, mmr_lambda: float | None,
                   rerank_top: int | None) -> tuple[bool, str | None]:
        """Whether MMR runs on the server (the k-NN plugin's ``ext.mmr``), and a notice when it was
        asked for there and cannot. The server runs it for dense alone, without rerank (which comes
        first), collapse or sort, where the cluster setting turns its processors on; ``auto`` asks
        for it from :data:`~adapter.page.SERVER_MMR_MIN_LAMBDA` up, where it was measured as good."""
        if mmr_lambda is None or options.mmr is MMRPlace.CLIENT:
            return False, None
        if options.mmr is MMRPlace.AUTO and mmr_lambda < SERVER_MMR_MIN_LAMBDA:
            return False, None  # the server's formula diversifies more at one lambda: measured worse below
        why = None
        if technique is not Technique.DENSE:
            why = f"the server's MMR (ext.mmr) runs on a knn query alone, not {technique.value}"
        elif rerank_top is not None or options.collapse is not None or options.sort:
            why = "the server's MMR (ext.mmr) cannot follow rerank, collapse or a sort"
        elif not self.caps.server_mmr:
            why = f"the server's MMR (ext.mmr) needs the k-NN plugin 3.3+, the cluster runs {self.caps.version}"
        elif not self.caps.server_mmr_enabled:
            why = ("the server's MMR is off on this cluster: enable it with PUT _cluster/settings {\"persistent\": "
                   "{\"cluster.search.enabled_system_generated_factories\": [\"mmr_over_sample_factory\", \"mmr_rerank_factory\"]}} "
                   "(or `hybrid init --server-mmr`)")
        if why is None:
            return True, None
        return False, (f"{why}: MMR ran in the client" if options.mmr is MMRPlace.SERVER else None)

    def _notices(self, notices: list[str], hits: Sequence[Hit], technique: Technique, page_from: int, depth: int,
                 filters: Mapping[str, Any] | None) -> list[str]:
        notices = list(notices)
        if not hits and page_from > 0 and (technique is Technique.HYBRID or technique.fused_by_client):
            # The server refuses such a page (400, pagination_depth); client-rrf finds it empty: both say why.
            notices.append(f"no hits: the page starting at {page_from} is past the end of the fused results (each leg "
                           f"gives at most {depth} candidates: the depth, which is the hybrid query's pagination_depth); "
                           "raise the depth (--depth) to page further")
        if not hits and filters:
            notices += self._unknown_filter_fields(filters)
        return notices

    def _unknown_filter_fields(self, filters: Mapping[str, Any]) -> list[str]:
        """Filters on a field the index does not map match nothing; say so (read when a filtered search is empty)."""
        fields = mapped_fields(self.cluster, self.info.index)
        metadata = sorted(f.split(".", 1)[1] for f in fields if f.startswith("metadata.") and f.count(".") == 1)
        return [
            f"filter field {key!r} ({filter_field(key)}) is not in the mapping of {self.info.index}: no document has it, so "
            f"the filter matches nothing (metadata fields: {', '.join(metadata) or 'none'})"
            for key in filters if filter_field(key) not in fields
        ]

    def _check_clauses(self, query: str) -> None:
        """Refuse a query the server would refuse: one term clause per distinct word and text field,
        against the cluster's ``indices.query.bool.max_clause_count`` (read once, for long queries)."""
        words = query_words(query)
        fields = len(self.text_leg.fields)
        if words * fields <= CLAUSE_CHECK_FLOOR:
            return
        if self._max_clauses is None:
            self._max_clauses = max_clause_count(self.cluster)
        if words * fields > self._max_clauses:
            raise InputError(
                f"the query has {words} distinct words; over {fields} text fields that is {words * fields} clauses, more "
                f"than the cluster allows (indices.query.bool.max_clause_count = {self._max_clauses}). Shorten the query "
                f"to at most {self._max_clauses // fields} distinct words"
            )

    # -- adaptive fusion ---------------------------------------------------------------------------
    def _adaptive(self, fusion, pipeline: str | None) -> AdaptivePolicy | None:
        """The adaptive policy this hybrid search runs, if any (an explicit pipeline or fusion wins)."""
        if isinstance(fusion, AdaptivePolicy):
            return fusion
        if fusion is None and pipeline is None and isinstance(self.fusion, AdaptivePolicy):
            return self.fusion
        return None

    def _choose(self, policy: AdaptivePolicy, query: str, filters) -> tuple[FusionChoice, tuple[float, int]]:
        """The policy's weights for ``query``; (server took, requests) spent on its signals."""
        if not policy.uses_legs:
            return policy.choose(QuerySignals.of(query), self.calibration, z_score=self.caps.z_score), (0.0, 0)
        quality, took = self.query_match_quality(query, filters)
        return policy.choose(QuerySignals.of(query, quality), self.calibration, z_score=self.caps.z_score), (took, 2)

    def query_match_quality(self, query: str, filters=None) -> tuple[float | None, float]:
        """BM25's match quality for ``query`` (:func:`adapter.adaptive.match_quality`) and the server's
        took: the BM25 leg's best hit (one hit, no source) and the query's term statistics."""
        quality, _, took = self.query_evidence(query, filters)
        return quality, took

    def query_evidence(self, query: str, filters=None) -> tuple[float | None, float | None, float]:
        """BM25's match quality, the query's term coverage (:func:`adapter.signals.term_coverage`) and
        the server's took, from the same two requests (the best BM25 hit; the term statistics)."""
        body = {**search_body(text_query(query, self.text_leg, filters), size=1), "_source": False}
        resp = self._search(body)
        top = responses.hits(resp)
        tv = self.cluster.termvectors(self.info.index, termvectors_body(query, self.text_leg),
                                      action=f"reading term statistics of {self.alias}")
        fields = responses.term_statistics(tv, field_boosts(self.text_leg.fields))
        quality = match_quality(top[0].score if top else 0.0, fields, legacy_bm25=self.caps.legacy_bm25)
        return quality, term_coverage(fields), responses.took(resp) + float(tv.get("took", 0) or 0)

    # -- first stages ------------------------------------------------------------------------------
    def _exclude(self, stage: _Stage) -> tuple[str, ...]:
        return () if stage.with_vectors else (self.info.vector_field,)

    def _page_clauses(self, stage: _Stage) -> dict[str, Any]:
        return page_clauses(stage.page, text_fields=self.info.text_fields, text_query=self.text_leg.body(stage.query),
                            exclude_source=(self.info.vector_field,))  # inner hits: MMR reads the hits' vectors alone

    def _single_leg(self, stage: _Stage, query: dict, mmr: tuple[float, int] | None = None
                    ) -> tuple[list[Hit], float, int, dict[str, Facet]]:
        """One leg; ``mmr``: (diversity, candidates) for the server's MMR."""
        body = {**search_body(query, size=stage.size, from_=stage.from_, exclude_source=self._exclude(stage)), **self._page_clauses(stage)}
        if mmr is not None:
            body = self.engine.server_mmr(body, field=self.info.vector_field, diversity=mmr[0], candidates=mmr[1])
        resp = self._search(body)
        hits = [self._hit(r, stage.from_ + i + 1) for i, r in enumerate(responses.hits(resp))]
        return hits, responses.took(resp), 1, responses.facets(resp, stage.page.options.facets)

    def _refused(self, plan: FusionPlan, exc: BackendError) -> FusionPlan:
        """The cluster refused a fusion it was thought to run (Elasticsearch: 400 unknown retriever, 403
        licence): forget it for this searcher and plan the fallback; any other error is raised."""
        why = self.engine.refused_fusion(exc)
        if why is None:
            raise exc
        self.caps = self.caps.without(plan.fusion)
        try:
            fallback = self._fallback(plan.fusion, why)
        except CapabilityError as refusal:
            raise refusal from exc
        forget_last()  # the refused request: SearchResult.sent lists what the result came from
        return fallback

    def _server_hybrid(self, stage: _Stage, plan: FusionPlan, explain: bool) -> tuple[list[Hit], float, int, dict[str, Facet]]:
        # 3.0+: the filter once, in hybrid.filter (the server pushes it into both legs, into the knn
        # clause as its pre-filter); before, inside each leg.
        pushed = bool(stage.filters) and self.caps.hybrid_filter
        leg_filters = None if pushed else stage.filters
        text = text_query(stage.query, self.text_leg, leg_filters)
        knn = self.engine.knn_query(stage.vector, field=self.info.vector_field, k=stage.depth, filters=leg_filters)
        from_, size = (0, min(len(LEGS) * stage.depth, self.info.max_window)) if stage.whole else (stage.from_, stage.size)
        in_query = plan.fused_by is FusedBy.SERVER_QUERY
        extra: dict[str, Any] = {}  # only what this cluster has: an engine without them need not know the names
        if pushed:
            extra["filter"] = {"bool": {"filter": filter_clauses(stage.filters)}}
        if in_query or not self.caps.search_pipelines:  # fused by the request itself (Elasticsearch, in-query fusion)
            extra["fusion"] = plan.fusion

        def body(server_explain: bool) -> dict:
            out = self.engine.hybrid_body(text, knn, caps=self.caps, depth=stage.depth, size=size, from_=from_,
                                          exclude=self._exclude(stage), explain=server_explain, inline_pipeline=plan.inline, **extra)
            out.update(self._page_clauses(stage))
            return out

        def page_of(resp) -> list:
            groups = client_steps(responses.hits(resp), stage.page, score=lambda r: r.score, fields=lambda r: r.fields)
            return groups[stage.from_ : stage.from_ + stage.size] if stage.whole else groups

        # Elasticsearch explains in the request itself (its fused explanations carry the legs); OpenSearch
        # only when the mirror below cannot reproduce the fused scores.
        server_explains = explain and not self.caps.search_pipelines
        try:
            resp = self._hybrid_search(body(server_explains), plan.pipeline)
        except BackendError as exc:
            if exc.status == 400 and "increase pagination_depth" in (exc.reason or ""):
                return [], 0.0, 1, {}  # past the end of the fused list: search() says so, as client-rrf does
            raise
        took, requests = responses.took(resp), 1
        facets = responses.facets(resp, stage.page.options.facets)
        if stage.page.facets_apart:
            apart = self._search(self._facets_body(stage))
            facets, took, requests = responses.facets(apart, stage.page.options.facets), took + responses.took(apart), requests + 1
        groups = page_of(resp)
        legs_by_id: dict[str, tuple[LegScore, ...]] | None = {}
        if explain:
            # The legs give ranks and raw scores; the fusion mirror gives the rest when it reproduces
            # every returned fused score. Else (several shards, a fusion the mirror does not know) the
            # server explains: its Lucene explanations cost far more than the search (docs/BENCHMARKS.md).
            runs, leg_took = self._runs(stage.query, stage.vector, stage.depth, stage.filters)
            took += leg_took
            requests += 1
            legs_by_id = None if server_explains else self._mirrored_legs([r for r, _ in groups], runs, plan.fusion)
            if legs_by_id is None:
                if not server_explains:
                    resp = self._hybrid_search(body(True), plan.pipeline)
                    took += responses.took(resp)
                    requests += 1
                    groups = page_of(resp)
                legs_by_id = self._server_legs([r for r, _ in groups], runs, plan.fusion)
        hits = [self._hit(r, stage.from_ + i + 1, legs_by_id.get(r.id, ()), others) for i, (r, others) in enumerate(groups)]
        return hits, took, requests, facets

    def _hybrid_search(self, body: dict, pipeline: str | None) -> Mapping[str, Any]:
        """The hybrid request; a Serverless collection that rejects ``pagination_depth`` gets it
        again without (remembered, and said in every result: pages and scores may differ)."""
        try:
            return self._search(body, pipeline=pipeline)
        except BackendError as exc:
            hybrid = (body.get("query") or {}).get("hybrid") or {}
            if not (self.caps.serverless and exc.status == 400 and "pagination_depth" in (exc.reason or "") and "pagination_depth" in hybrid):
                raise
        self.caps = replace(self.caps, pagination_depth=False)
        forget_last()  # the rejected form: SearchResult.sent lists what the result came from
        body = {**body, "query": {"hybrid": {k: v for k, v in hybrid.items() if k != "pagination_depth"}}}
        return self._search(body, pipeline=pipeline)

    def _hybrid_notices(self, plan: FusionPlan) -> list[str]:
        notices = []
        if self.caps.serverless and not self.caps.pagination_depth:
            notices.append("this Serverless collection rejects the hybrid query's pagination_depth: sent without it, so scores and "
                           "pages can differ from a managed cluster's (each leg's candidates are limited by the page size, not the depth)")
        server = renderer(self.caps.engine, plan.fusion) if plan.fused_by is not FusedBy.CLIENT else None
        caveat = server.caveat(self.caps, self.info.shards) if server is not None else None
        if caveat:
            notices.append(caveat)
        return notices

    def _client_fused(self, stage: _Stage, fusion: Fusion) -> tuple[list[Hit], float, int, dict[str, Facet]]:
        """Both legs (and the facets, over what either leg matches) in one ``_msearch``; fused
        here; the page's sources (with highlights) fetched after."""
        options = stage.page.options
        extra = [self._facets_body(stage)] if stage.page.facets_apart else []
        runs, took, answers = self._runs_with(stage.query, stage.vector, stage.depth, stage.filters,
                                              fields=stage.page.field_values, extra=extra)
        facets = responses.facets(answers[0], options.facets) if answers else {}
        fused = fusion.fuse([[(d.id, d.score) for d in run] for run in runs], leg_names=LEGS)
        values = {r.id: r.fields for run in runs for r in run if r.fields}
        groups = client_steps(fused, stage.page, score=lambda f: f.score, fields=lambda f: values.get(f.id, {}))
        groups = groups[stage.from_ : stage.from_ + stage.size]
        ids = [f.id for f, others in groups for f in (f, *others)]
        if stage.page.highlight:
            found = self._fetch_highlighted(ids, stage)
        else:
            found = {i: RawHit(i, 0.0, src) for i, src in self._sources(ids, with_vectors=stage.with_vectors).items()}

        def raw(f) -> RawHit:
            got = found.get(f.id)
            return RawHit(f.id, f.score, got.source if got else {}, highlight=got.highlight if got else {})

        hits = [self._hit(raw(f), stage.from_ + i + 1, f.legs, [raw(o) for o in others]) for i, (f, others) in enumerate(groups)]
        return hits, took, 2, facets

    def _facets_body(self, stage: _Stage) -> dict[str, Any]:
        """The facets over what either leg matches, in a request of their own (what hybrid aggregates over)."""
        knn = self.engine.knn_query(stage.vector, field=self.info.vector_field, k=stage.depth, filters=stage.filters)
        return facets_body([text_query(stage.query, self.text_leg, stage.filters), knn], stage.page.options)

    def _fetch_highlighted(self, ids: Sequence[str], stage: _Stage) -> dict[str, RawHit]:
        """The sources and highlights of ``ids``: one search for exactly those documents, with the
        query's words to highlight."""
        if not ids:
            return {}
        body = search_body({"ids": {"values": list(ids)}}, size=len(ids), exclude_source=self._exclude(stage))
        body["highlight"] = highlight_clause(stage.page.options, self.info.text_fields, self.text_leg.body(stage.query))
        resp = self.cluster.search(self.info.index, body, action=f"fetching documents from {self.alias}")
        return {r.id: r for r in responses.hits(resp)}

    def legs(self, query: str, *, depth: int | None = None, filters=None, query_vector: Sequence[float] | None = None) -> list[list[tuple[str, float]]]:
        """Each leg's ranked ``(id, raw score)`` list to ``depth``, from one ``_msearch`` (for tuning
        fusion offline: :func:`adapter.fusion.fuse_normalized` and :func:`adapter.fusion.rrf`)."""
        query = clean_query(query)
        vector = self.query_vector(query, query_vector)
        runs, _ = self._runs(query, vector, depth or self.depth, filters)
        return [[(d.id, d.score) for d in run] for run in runs]

    def _runs(self, query: str, vector: np.ndarray, depth: int, filters) -> tuple[list[list[RawHit]], float]:
        """Both legs, each to ``depth``, in one ``_msearch`` (ids and scores)."""
        runs, took, _ = self._runs_with(query, vector, depth, filters)
        return runs, took

    def _runs_with(self, query: str, vector: np.ndarray, depth: int, filters, *, fields: Sequence[str] = (),
                   extra: Sequence[dict] = ()) -> tuple[list[list[RawHit]], float, list[Mapping[str, Any]]]:
        """:meth:`_runs`, with the values of ``fields`` on each hit, and ``extra`` bodies in the same
        ``_msearch`` (their answers come third)."""
        took, answers = self._msearch(self._leg_bodies(query, vector, depth, filters, fields) + list(extra))
        return [responses.hits(r) for r in answers[: len(LEGS)]], took, list(answers[len(LEGS):])

    @staticmethod
    def _mirrored_legs(raw: list[RawHit], runs: list[list[RawHit]], fusion: Fusion) -> dict[str, tuple[LegScore, ...]] | None:
        """Per-leg explanations computed here from the legs (:func:`adapter.fusion.fuse`, the server's
        formulas), or None unless they reproduce the server's fused score of every returned hit. On one
        shard the legs are the server's candidates; on several, each shard contributes its own top
        ``depth`` per leg (and RRF ranks are per shard before 3.5), so the check usually fails there."""
        fused = {f.id: f for f in fusion.fuse([[(d.id, d.score) for d in run] for run in runs], leg_names=LEGS)}
        out = {}
        for r in raw:
            mirror = fused.get(r.id)
            if mirror is None or not math.isclose(mirror.score, r.score, rel_tol=MIRROR_TOLERANCE, abs_tol=1e-9):
                return None
            out[r.id] = mirror.legs
        return out

    def _server_legs(self, raw: list[RawHit], runs: list[list[RawHit]], fusion: Fusion) -> dict[str, tuple[LegScore, ...]]:
        """Per-leg explanations: normalised scores from the server's explanation, ranks and raw
        scores from the legs run separately. With ``explain=true`` neural-search 2.19 reports a
        ``_score`` that can differ from the combination of its own normalised details by ~1e-4;
        the contributions are computed from the details."""
        weights = list(fusion.effective_weights)
        positions = [{d.id: (i + 1, d.score) for i, d in enumerate(run)} for run in runs]
        out = {}
        for r in raw:
            found = [positions[leg].get(r.id, (None, None)) for leg in range(len(LEGS))]
            scores = self.engine.explained_leg_scores(r, [raw_score for _, raw_score in found], weights=weights)
            parts = fusion.contributions(scores, r.score)
            out[r.id] = tuple(
                LegScore(leg, rank, raw_score, scores[i], weights[i], parts[i])
                for i, (leg, (rank, raw_score)) in enumerate(zip(LEGS, found))
            )
        return out

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        scores = self.reranker.score(query, [embedding_text(h.title, h.text) for h in hits])
        order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
        return [replace(hits[i], score=float(scores[i]), rerank_score=float(scores[i]),
                        first_stage_score=hits[i].first_stage_score if hits[i].first_stage_score is not None else hits[i].score)
                for i in order]

    def _mmr(self, vector: np.ndarray, hits: list[Hit], k: int, lambda_: float) -> list[Hit]:
        if not hits:
            return hits
        field = self.info.vector_field
        missing = [h.id for h in hits if field not in h.source]
        if missing:
            raise IndexMismatchError(f"hits {missing[:3]} have no stored vector in {field!r}; MMR needs the index's vectors")
        vectors = np.asarray([h.source[field] for h in hits], dtype=np.float32)
        picked = mmr_select(vector, vectors, k=k, lambda_=lambda_, relevance=[h.score for h in hits])
        return [replace(hits[i], score=s, mmr_score=s,
                        first_stage_score=hits[i].first_stage_score if hits[i].first_stage_score is not None else hits[i].score)
                for i, s in picked]


def _in_request(fusion: Fusion, caps: Capabilities) -> FusedBy:
    """Who fuses a fusion sent inside the request (Elasticsearch): a retriever, or the sum."""
    server = renderer(caps.engine, fusion)
    if server is None:
        raise CapabilityError(f"{caps.engine} has no request that fuses {fusion.name}")
    return server.fused_by
