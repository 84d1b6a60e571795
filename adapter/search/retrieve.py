"""The retrieve stage: every request a search sends, through the engine's port, and what the answers
say about the index (hits from another index: the alias moved; a refused fusion; a partial answer),
raised as :mod:`.recovery` signals. One :class:`Retriever` serves one attempt of one search."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from adapter import aio
from adapter.observability import metrics, tracing
from adapter.engines import Engine, responses
from adapter.engines.dsl import Clause, field_boosts, filter_field
from adapter.engines.port import Cluster, recording
from adapter.engines.responses import RawHit
from adapter.errors import BackendError, IndexMismatchError, InputError, PartialResultError
from adapter.fusion import LEGS, Fusion
from adapter.fusion.choice.policy import FieldTerms, match_quality
from adapter.fusion.choice.signals import term_coverage
from adapter.models.query_cache import QUERY_VECTORS
from adapter.index.catalog import alias_indices, mapped_fields, max_clause_count
from adapter.search import bodies
from adapter.search.answers import Answer, Legs
from adapter.search.page import Excerpts, excerpts_of, hit_ids, with_excerpts, with_texts
from adapter.engines.placement import FusionPlan
from adapter.search.planning import FirstStage, Signals
from adapter.search.recovery import (
    AliasMoved,
    Attempt,
    EmptyShardRefused,
    FusionRefused,
    NodeLeft,
    Overloaded,
    PaginationDepthRejected,
    PartialAnswer,
    node_left,
    overloaded,
)
from adapter.search.request import VectorLike
from adapter.search.state import IndexState

Json = Mapping[str, Any]
EMPTY_SHARD_REFUSED = "empty_shard_refused"  # IndexState.facts: a search beside the empty shard was refused

# What a request's missing shards take from the result, by the leg that asked (the notice's last words).
MISSING = {
    "documents": "the page's hits from them come without their documents",
    "excerpts": "the page's hits from them come without their excerpts",
    "facets": "the facet counts leave out their documents",
    "signals": "adaptive fusion weighed the query without them",
    "groups": "the count of documents the collapsed page is checked against leaves out theirs",
}


@dataclass(frozen=True)
class Partial:
    """An answer the attempt used though it lacked part of the result: ``kind`` ``shards`` (a shard failed,
    or a document of the page could not be fetched) or ``collapse`` (a short collapsed page); ``notice``: what the
    result says."""

    kind: str
    notice: str


class Retriever:
    """Sends one attempt's requests for ``state``; its notices are about the answers (partial ones,
    also listed in ``partial``: :func:`adapter.search.compose.partial_results` makes them notices or an error)."""

    def __init__(self, cluster: Cluster, engine: Engine, state: IndexState, attempt: Attempt) -> None:
        self.cluster, self.engine, self.state, self.attempt = cluster, engine, state, attempt
        self.notices: list[str] = []
        self.partial: list[Partial] = []
        self.fetched: list[
            float
        ] = []  # the took of each request fetching excerpts after the hits (counted by the result)

    @property
    def alias(self) -> str:
        return self.state.alias

    # -- sending ---------------------------------------------------------------------------------
    def search(
        self,
        body: Mapping[str, Any],
        *,
        pipeline: str | None = None,
        leg: str = "search",
        beside: str | None = None,
        named_scores: bool = False,
    ) -> Json:
        """``body`` on the alias (and on the index ``beside`` it: the empty shard); ``named_scores``: with each
        named query's score per hit."""
        target = f"{self.alias},{beside}" if beside else self.alias
        with self._sending(leg, "search") as span:
            # named_scores only where asked: a port that never answers them (a third engine's) needs no such keyword
            asked = {"named_scores": True} if named_scores else {}
            resp = self.cluster.search(target, body, pipeline=pipeline, action=f"searching {self.alias}", **asked)
            span.set_attribute("hybrid.took_ms", responses.took(resp))
        self._check(resp, leg)
        return resp

    def msearch(
        self, bodies_: Sequence[Mapping[str, Any]], *, leg: str = "bm25+dense", each: Sequence[str] = ()
    ) -> tuple[float, list[Json]]:
        """(the server's ``took`` for the whole request, one answer per body); ``each``: what each body is
        for (``bm25``, ``facets``, ...: what a partial answer to it lacks), by default ``leg``."""
        action = f"searching {self.alias}"
        with self._sending(leg, "msearch") as span:
            resp = self.cluster.msearch(self.alias, bodies_, action=action)
            out = responses.msearch_responses(resp, action)
            span.set_attribute("hybrid.took_ms", float(resp.get("took", 0) or 0))
        for i, answer in enumerate(out):
            self._check(answer, each[i] if i < len(each) else leg)
        # The legs run in parallel on the server: the request's took, not the sum of the legs'.
        return float(resp.get("took", max((responses.took(r) for r in out), default=0))), out

    def _check(self, resp: Json, leg: str) -> None:
        """Hits from another index are fine while the alias still includes ours (an alias over several
        indices); else the alias moved. A partial answer is asked again once, then used with a notice."""
        served = frozenset(h.get("_index") for h in (resp.get("hits") or {}).get("hits", [])) - {None}
        ours = self.state.info.index
        if served - {ours} and not self.state.members.get(
            served, lambda: ours in alias_indices(self.cluster, self.alias)
        ):
            raise AliasMoved(self.alias, ours, sorted(served - {ours}))
        failed, total, reasons = responses.shard_failures(resp)
        if failed and any("dimension" in r.lower() for r in reasons):
            # Beside the empty shard, the moved index refusing the query vector's dimension is a failed
            # shard of a 200, not the 400 of a search of that index alone: followed the same way.
            now = alias_indices(self.cluster, self.alias)
            if now and ours not in now:
                raise AliasMoved(self.alias, ours, now)
        if failed:
            self._partial(f"{failed} of {total} shards failed", reasons, leg)

    def _partial(self, what: str, reasons: Sequence[str], leg: str) -> None:
        """An answer lacking what ``what`` says: asked again the first time (:class:`PartialAnswer`), else kept,
        listed."""
        if not self.attempt.accept_partial:
            metrics.partial_result("shards", "asked_again")
            raise PartialAnswer(what)
        missing = MISSING.get(leg, "their hits are missing")
        notice = f"partial result: {what} even when asked again ({'; '.join(reasons) or 'no reason given'}); {missing}"
        self.partial.append(Partial("shards", notice))
        self.notices.append(notice)

    @contextlib.contextmanager
    def _sending(self, leg: str, operation: str) -> Iterator[tracing.Span]:
        """One request of this search: its ``hybrid.request`` span, and its refusals recovered."""
        attributes: dict[str, tracing.AttributeValue | None] = {
            "hybrid.leg": leg,
            "db.operation.name": operation,
            "hybrid.index": self.alias,
        }
        with tracing.span("hybrid.request", attributes) as span, metrics.leg(leg), self._refusals_recovered():
            yield span

    @contextlib.contextmanager
    def _refusals_recovered(self) -> Iterator[None]:
        """A request refused because the alias moved to an index of another vector dimension (a 400
        naming the dimension) is followed like hits from another index; one refused because a node
        was leaving, or by the memory breaker, is asked again, unless the client's transport already
        asked it again (one retry policy per request: :mod:`.recovery`)."""
        try:
            yield
        except BackendError as exc:
            retried = exc.status in self.cluster.retried_statuses
            if isinstance(
                exc, PartialResultError
            ):  # refused for a failed shard (Elasticsearch's retrievers): no hits to keep
                if not self.attempt.accept_partial and not retried:
                    metrics.partial_result("shards", "asked_again")
                    raise PartialAnswer(str(exc), exc) from exc
                metrics.partial_result("shards", "error")
                raise
            if node_left(exc) and not retried:
                raise NodeLeft(exc) from exc
            if overloaded(exc) and not retried:
                raise Overloaded(exc) from exc
            if exc.status != 400 or "dimension" not in (exc.reason or "").lower():
                raise
            now = alias_indices(self.cluster, self.alias)
            if now and self.state.info.index not in now:
                raise AliasMoved(self.alias, self.state.info.index, now) from exc
            raise

    # -- first stages ----------------------------------------------------------------------------
    def single_leg(
        self, stage: FirstStage, query: dict[str, Any], mmr: tuple[float, int] | None = None, *, leg: str
    ) -> Answer:
        resp = self.search(bodies.single_leg(self.engine, self.state, stage, query, mmr), leg=leg)
        return Answer(
            tuple(responses.hits(resp)), responses.facets(resp, stage.page.options.facets), responses.took(resp), 1
        )

    def hybrid(
        self, stage: FirstStage, plan: FusionPlan, *, explain: bool, empty_shard: str | None = None
    ) -> Json | None:
        """The hybrid request (None: the page lies past the end of the fused list, which the server refuses);
        ``empty_shard``: searched beside the index (:meth:`empty_shard`)."""
        body = bodies.hybrid(self.engine, self.state, stage, plan, explain=explain, empty_shard=empty_shard is not None)
        try:
            named = bodies.asks_leg_scores(stage, plan)
            return self.search(body, pipeline=plan.pipeline, leg="hybrid", beside=empty_shard, named_scores=named)
        except BackendError as exc:
            reason = exc.reason or ""
            if empty_shard is not None and (exc.status == 403 or (exc.status == 404 and empty_shard in reason)):
                self.state.facts.get(EMPTY_SHARD_REFUSED, lambda: 1)
                raise EmptyShardRefused(exc) from exc
            why = self.engine.refused_fusion(exc)
            if why is not None:
                raise FusionRefused(plan.fusion, why, exc) from exc
            hybrid = (body.get("query") or {}).get("hybrid") or {}
            if (
                self.state.caps.serverless
                and exc.status == 400
                and "pagination_depth" in reason
                and "pagination_depth" in hybrid
            ):
                raise PaginationDepthRejected(exc) from exc
            if exc.status == 400 and "increase pagination_depth" in reason:
                return None
            raise

    def empty_shard(self, stage: FirstStage, plan: FusionPlan) -> str | None:
        """The engine's empty shard, to search beside a one-shard index's server-fused hybrid so that the
        server fuses before it fetches (the page alone, with its excerpts: one request), where it can:
        not with a collapse or sort the server runs (the empty shard maps no field), nor where the client
        needs the whole fused list. Taken as there (``hybrid init`` creates it) until a search beside it
        is refused (404: absent; 403: not ours to read): then, for this state, not (:class:`EmptyShardRefused`)."""
        name, page = self.engine.empty_shard_index, stage.page
        if (
            name is None
            or not plan.fused_by.server
            or self.state.info.shards != 1
            or self.state.caps.serverless
            or stage.whole
            or page.collapse_on_server
            or page.sort_on_server
        ):
            return None
        return None if self.state.facts.peek(EMPTY_SHARD_REFUSED) else name

    def legs(
        self,
        stage: FirstStage,
        *,
        fields: Sequence[str] = (),
        extra: Sequence[Mapping[str, Any]] = (),
        each: Sequence[str] = (),
    ) -> Legs:
        """Both legs to the stage's depth in one ``_msearch``, with ``extra`` bodies (answers after; ``each``
        says what each is for: ``facets``, ``groups``)."""
        if stage.vector is None:
            raise ValueError("the legs need the query vector")
        legs = bodies.leg_bodies(self.engine, self.state, stage.query, stage.vector, stage.depth, stage.filters, fields)
        took, answers = self.msearch([*legs, *extra], each=(*LEGS, *each))
        return Legs(tuple(tuple(responses.hits(r)) for r in answers[: len(LEGS)]), took, tuple(answers[len(LEGS) :]))

    def facets_apart(self, stage: FirstStage) -> Json:
        return self.search(bodies.facets(self.engine, self.state, stage), leg="facets")

    def documents(self, ids: Sequence[str], stage: FirstStage) -> dict[str, RawHit]:
        """The final page's documents: their sources (``_mget``), or, with highlights or bounded text,
        a search for exactly them (the excerpts it can carry in its sources, :meth:`texts` the rest)."""
        if not ids:
            return {}
        action = f"fetching documents from {self.alias}"
        excerpts = bodies.excerpts(self.state, stage)
        if stage.page.highlight or excerpts:
            body = bodies.documents(self.engine, self.state, stage, ids, excerpts.in_request)
            with self._sending("documents", "search") as span:
                resp = self.cluster.search(self.state.info.index, body, action=action)
                span.set_attribute("hybrid.took_ms", responses.took(resp))
            self._check(resp, "documents")  # a shard that failed would leave hits of the page without their documents
            found = self.bounded(responses.hits(resp), stage, excerpts)
            return {r.id: r for r in found}
        with self._sending("documents", "mget"):
            docs = self.cluster.mget(
                self.state.info.index, ids, exclude=bodies.exclude(self.state, stage), action=action
            )
        # A document on a shard that failed comes with an error, not found: false (which is a document deleted
        # meanwhile).
        errors = [responses.error_reason(d["error"]) for d in docs if d.get("error")]
        if errors:
            self._partial(
                f"{len(errors)} of the page's {len(ids)} documents could not be fetched",
                list(dict.fromkeys(errors)),
                "documents",
            )
        return {d["_id"]: RawHit(d["_id"], 0.0, d.get("_source", {})) for d in docs if d.get("found")}

    def bounded(self, raws: Sequence[RawHit], stage: FirstStage, excerpts: Excerpts) -> list[RawHit]:
        """``raws`` with their bounded text fields filled: from their own highlights (``in_request``),
        and by one search for the excerpts the request could not carry (``after``)."""
        raws = [with_excerpts(r, excerpts.in_request, excerpts.max_chars) for r in raws]
        if not excerpts.after or not raws:
            return raws
        ids = hit_ids(raws)
        body = bodies.texts(self.engine, self.state, stage, ids, excerpts.after)
        with self._sending("excerpts", "search") as span:
            resp = self.cluster.search(self.state.info.index, body, action=f"fetching excerpts from {self.alias}")
            span.set_attribute("hybrid.took_ms", responses.took(resp))
        self._check(resp, "excerpts")
        self.fetched.append(responses.took(resp))
        found = {h.id: excerpts_of(h, excerpts.after, excerpts.max_chars) for h in responses.hits(resp)}
        return [with_texts(r, found) for r in raws]

    # -- what planning and the result ask --------------------------------------------------------
    def stored_fusion(self, name: str) -> Fusion | None:
        """The fusion of a stored pipeline, read once per state (None: no such pipeline). A pipeline
        deleted later still fails loudly: the server rejects the request naming it."""

        return self.state.pipelines.get(name, lambda: self.engine.placement.stored_fusion(self.cluster, name))

    def match_quality(self, query: str, filters: Mapping[str, Any] | None) -> tuple[float | None, Signals]:
        """BM25's match quality for ``query`` (:func:`adapter.fusion.choice.policy.match_quality`) and what asking
        cost."""
        quality, _, signals = self.evidence(query, filters)
        return quality, signals

    def evidence(self, query: str, filters: Mapping[str, Any] | None) -> tuple[float | None, float | None, Signals]:
        """BM25's match quality and the query's term coverage (:func:`adapter.fusion.choice.signals.term_coverage`),
        from the BM25 leg's best hit and the query's term statistics; recorded apart from the search's
        own requests."""
        with recording() as sent:
            resp = self.search(bodies.top_bm25(self.state, query, filters), leg="signals")
        top = responses.hits(resp)
        coverage, fields, took = self.coverage(query)
        quality = match_quality(top[0].score if top else 0.0, fields, legacy_bm25=self.state.caps.legacy_bm25)
        return quality, coverage, Signals(responses.took(resp) + took, 2, tuple(sent))

    def coverage(self, query: str) -> tuple[float | None, list[FieldTerms], float]:
        """The query's term coverage (:func:`adapter.fusion.choice.signals.term_coverage`), the term statistics
        per text field and the server's took, from one ``_termvectors`` of the query on the index."""
        with tracing.span(
            "hybrid.request", {"hybrid.leg": "signals", "db.operation.name": "termvectors", "hybrid.index": self.alias}
        ):
            tv = self.cluster.termvectors(
                self.state.info.index,
                bodies.term_statistics(self.state, query),
                action=f"reading term statistics of {self.alias}",
            )
        fields = responses.term_statistics(tv, field_boosts(self.state.text_leg.fields))
        return term_coverage(fields), fields, float(tv.get("took", 0) or 0)

    def switched(self) -> IndexState:
        """The state with the cluster's switching settings read (once per state: :meth:`Cluster.with_switches`)."""
        caps = self.state.switched.get("caps", lambda: self.cluster.with_switches(self.state.caps))
        return self.state.with_caps(caps)

    def max_clauses(self) -> int:
        return self.state.facts.get("max_clause_count", lambda: max_clause_count(self.cluster))

    def unknown_filter_fields(self, filters: Mapping[str, Any]) -> list[str]:
        """Filters on a field the index does not map match nothing; say so (asked when a filtered search is empty)."""
        fields = mapped_fields(self.cluster, self.state.info.index)
        metadata = sorted(f.split(".", 1)[1] for f in fields if f.startswith("metadata.") and f.count(".") == 1)
        asked = [(f, f) for v in filters.values() if isinstance(v, Clause) for f in v.fields if f != "_id"]
        asked += [(k, filter_field(k)) for k, v in filters.items() if not isinstance(v, Clause)]
        return [
            f"filter field {key!r} ({field}) is not in the mapping of {self.state.info.index}: no document has it, "
            f"so the filter matches nothing (metadata fields: {', '.join(metadata) or 'none'})"
            for key, field in asked
            if field not in fields
        ]


def vector_of(state: IndexState, query: str, vector: VectorLike | None) -> np.ndarray:
    """The query's vector: the one given (checked against the index's dimension), else the index's embedder's."""
    if vector is not None:
        wide = np.asarray(vector, dtype=np.float64)
        dimension = state.info.fingerprint.dimension
        if wide.shape != (dimension,):
            raise IndexMismatchError(
                f"the query vector has shape {wide.shape}; index {state.alias!r} expects ({dimension},)"
            )
        check_query_vector(wide)
        return wide.astype(np.float32)
    with tracing.span("hybrid.embed", {"hybrid.model": state.info.fingerprint.model}):
        embedder = state.embedder()
        # The same query again is not embedded again (adapter.models.query_cache: keyed by the model's fingerprint).
        return aio.offload(
            QUERY_VECTORS.get, embedder.fingerprint.key, query, embedder.embed_query
        )  # off the event loop


FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_query_vector(wide: np.ndarray) -> None:
    """Refuse a given query vector (as float64) the server could not score: the servers read it as float32 and
    compute similarities in float32, so a value over float32's range arrives as ``Infinity`` and a norm that
    overflows makes every score NaN."""
    bad = np.flatnonzero(~np.isfinite(wide))
    if bad.size:
        raise InputError(
            f"the query vector has {bad.size} values that are not finite numbers (first at position {int(bad[0])})"
        )
    bad = np.flatnonzero(np.abs(wide) > FLOAT32_MAX)
    if bad.size:
        raise InputError(
            f"the query vector has {bad.size} values that are not finite in 32-bit floats, as the server reads "
            f"them (first at position {int(bad[0])}: {float(wide[bad[0]]):g}; the largest is {FLOAT32_MAX:g})"
        )
    if float(np.dot(wide, wide)) > FLOAT32_MAX:
        raise InputError(
            "the query vector's values are too large: its squared norm overflows 32-bit floats, in which the "
            "server computes similarities (scale it down; cosine ranks a scaled vector the same)"
        )
