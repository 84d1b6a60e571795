"""The searcher: the seeds' five techniques against OpenSearch, fused by the server where it can.

- ``bm25``: a ``match``-type query over the text fields.
- ``dense``: a ``knn`` query; the query vector is computed in Python by the index's embedder.
- ``hybrid``: one ``hybrid`` query (text leg + knn leg) sent with a search pipeline, named or
  temporary; never without one (the server would silently return unfused results).
- ``client-rrf``: both legs in one ``_msearch``, fused here with the server's RRF formula.
- rerank (cross-encoder over the top N) and MMR (over stored vectors) can follow any of them.

When the cluster cannot run the requested fusion, the searcher falls back to ``client-rrf`` and
says so in ``SearchResult.notices`` (or raises :class:`CapabilityError` if fallback is off).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from . import fusion as fusion_fns
from .admin import get_pipeline, index_fingerprint, read_index_meta
from .assets import IndexNames, fusion_from_pipeline, render_pipeline
from .capabilities import probe
from .client import translate_errors
from .embedders import Embedder, check_fingerprint, load_embedder
from .errors import BackendError, CapabilityError, IndexMismatchError, InputError, PipelineNotFoundError
from .mmr import mmr as mmr_select
from .queries import LEGS, TextLeg, clean_query, hybrid_query, knn_query, msearch_lines, search_body, text_query
from .rerank import Reranker
from .types import Fusion, Hit, LegScore, SearchResult, Technique

DEFAULT_FUSION = Fusion()
KNN_MAX_K = 10_000


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


def _parse_hits(resp: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The one place the server's hit JSON is read."""
    return [
        {"id": h["_id"], "score": float(h.get("_score") or 0.0), "source": h.get("_source", {}), "explanation": h.get("_explanation")}
        for h in resp.get("hits", {}).get("hits", [])
    ]


def _server_normalized(explanation: Mapping[str, Any] | None) -> dict[str, float]:
    """Per-leg normalised scores from ``hybrid_score_explanation`` (legs that returned the hit)."""
    out: dict[str, float] = {}
    for detail in (explanation or {}).get("details", []):
        inner = (detail.get("details") or [{}])[0]
        leg = "dense" if str(inner.get("description", "")).startswith("within top") else "bm25"
        out[leg] = float(detail.get("value", 0.0))
    return out


class Searcher:
    """Search the hybrid index behind ``alias``.

    ``embedder`` defaults to the one recorded in the index's fingerprint (loaded on first use); a
    given embedder must match that fingerprint. ``depth`` is the candidate depth per leg.
    """

    def __init__(
        self,
        client,
        alias: str,
        embedder: Embedder | None = None,
        *,
        reranker: Reranker | None = None,
        text_leg: TextLeg | None = None,
        fusion: Fusion = DEFAULT_FUSION,
        pipeline: str | None = None,
        depth: int = 100,
        allow_fallback: bool = True,
    ) -> None:
        self.client = client
        self.alias = alias
        self.names = IndexNames(alias)
        self.index, mapping = read_index_meta(client, alias)
        self.fingerprint = index_fingerprint(mapping, self.index)
        meta = mapping.get("_meta", {})
        self.vector_field = meta.get("vector_field", "embedding")
        if self.vector_field not in mapping.get("properties", {}):
            raise IndexMismatchError(f"index {self.index!r} has no vector field {self.vector_field!r}; it cannot serve dense or hybrid search")
        self.text_leg = text_leg or TextLeg(tuple(meta.get("query_fields") or meta.get("text_fields") or ("title", "text")))
        if embedder is not None:
            check_fingerprint(alias, self.fingerprint, embedder)
        self._embedder = embedder
        self.reranker = reranker
        self.fusion = fusion
        self.pipeline = pipeline
        if depth < 1:
            raise InputError(f"depth must be at least 1, got {depth}")
        self.depth = depth
        self.allow_fallback = allow_fallback
        self.caps = probe(client)
        with translate_errors(f"reading settings of {self.index}", client):
            settings = client.indices.get_settings(index=self.index, include_defaults=True)[self.index]
        window = settings.get("settings", {}).get("index", {}).get("max_result_window") or settings.get("defaults", {}).get("index", {}).get("max_result_window", 10000)
        self.max_window = int(window)
        self._pipelines: dict[str, Fusion | None] = {}

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.fingerprint.spec)
            check_fingerprint(self.alias, self.fingerprint, self._embedder)
        return self._embedder

    # -- building blocks -------------------------------------------------------------------------
    def query_vector(self, query: str, vector: Sequence[float] | None = None) -> np.ndarray:
        if vector is not None:
            arr = np.asarray(vector, dtype=np.float32)
            if arr.shape != (self.fingerprint.dimension,):
                raise IndexMismatchError(f"the query vector has shape {arr.shape}; index {self.alias!r} expects ({self.fingerprint.dimension},)")
            return arr
        return self.embedder.embed_query(query)

    def _pipeline_fusion(self, name: str) -> Fusion | None:
        if name not in self._pipelines:
            body = get_pipeline(self.client, name)
            if body is None:
                raise PipelineNotFoundError(name, f"create it with `hybrid init --index {self.alias}`")
            self._pipelines[name] = fusion_from_pipeline(body)
        return self._pipelines[name]

    def _pipeline_exists(self, name: str) -> bool:
        """Cached per searcher: a pipeline deleted later still fails loudly (PipelineNotFoundError)."""
        if name not in self._pipelines:
            body = get_pipeline(self.client, name)
            if body is None:
                return False
            self._pipelines[name] = fusion_from_pipeline(body)
        return True

    def _resolve_fusion(self, fusion: Fusion | None, pipeline: str | None) -> tuple[Fusion, str | None, dict | None, str | None]:
        """(effective fusion, named pipeline, inline pipeline body, reason to fall back or None)."""
        pipeline = pipeline or (None if fusion is not None else self.pipeline)
        if pipeline:
            found = self._pipeline_fusion(pipeline)
            if found is None:
                raise InputError(f"search pipeline {pipeline!r} does not fuse hybrid results (no normalization or score-ranker processor)")
            ok, why = self.caps.supports(found)
            return found, pipeline, None, None if ok else why
        wanted = fusion or self.fusion
        ok, why = self.caps.supports(wanted)
        if not ok:
            return wanted, None, None, why
        wanted.validate_weights(2, require_unit_sum=wanted.kind == "normalization")
        named = self.names.pipeline(wanted)
        if self._pipeline_exists(named):
            stored = self._pipeline_fusion(named)
            if stored is not None and (wanted.weights is None or stored == wanted):
                return stored, named, None, None
        if fusion is None and wanted is self.fusion and wanted == DEFAULT_FUSION:
            raise PipelineNotFoundError(named, f"create it with `hybrid init --index {self.alias}`")
        # Parameters no stored pipeline has: send the pipeline with the request (server-side still).
        return wanted, None, render_pipeline(wanted, explanation=self.caps.explanation), None

    def _leg_bodies(self, query: str, vector: np.ndarray, depth: int, filters) -> list[dict]:
        """Both legs to ``depth``, ids and scores only: sources are fetched for the final page."""
        return [
            {**search_body(text_query(query, self.text_leg, filters), size=depth), "_source": False},
            {**search_body(knn_query(vector, field=self.vector_field, k=depth, filters=filters), size=depth), "_source": False},
        ]

    def _sources(self, ids: Sequence[str], *, with_vectors: bool) -> dict[str, dict]:
        if not ids:
            return {}
        params = {} if with_vectors else {"_source_excludes": self.vector_field}
        with translate_errors(f"fetching documents from {self.alias}", self.client):
            docs = self.client.mget(index=self.index, body={"ids": list(ids)}, params=params)["docs"]
        return {d["_id"]: d.get("_source", {}) for d in docs if d.get("found")}

    def _msearch(self, bodies: Sequence[dict]) -> tuple[float, list[dict]]:
        """(the server's ``took`` for the whole request, one response per body)."""
        with translate_errors(f"searching {self.alias}", self.client):
            resp = self.client.msearch(body=msearch_lines(self.alias, bodies))
        out = []
        for r in resp["responses"]:
            if "error" in r:
                err = r["error"]
                reason = (err.get("root_cause") or [err])[0].get("reason") if isinstance(err, dict) else err
                raise BackendError(f"searching {self.alias}: OpenSearch answered {r.get('status')}: {reason}", status=r.get("status"), reason=str(reason))
            out.append(r)
        # The legs run in parallel on the server: the request's took, not the sum of the legs'.
        return float(resp.get("took", max((r.get("took", 0) for r in out), default=0))), out

    def _search(self, body: dict, pipeline: str | None = None) -> dict:
        params = {"search_pipeline": pipeline} if pipeline else None
        with translate_errors(f"searching {self.alias}", self.client):
            return self.client.search(index=self.alias, body=body, params=params)

    # -- the call --------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        technique: str | Technique = Technique.HYBRID,
        k: int = 10,
        from_: int = 0,
        filters: Mapping[str, Any] | None = None,
        fusion: Fusion | None = None,
        pipeline: str | None = None,
        depth: int | None = None,
        rerank_top: int | None = None,
        mmr_lambda: float | None = None,
        mmr_candidates: int | None = None,
        explain: bool = False,
        query_vector: Sequence[float] | None = None,
    ) -> SearchResult:
        """Run one query. ``rerank_top`` reranks that many first-stage hits (needs a reranker);
        ``mmr_lambda`` diversifies the final list with MMR over ``mmr_candidates`` candidates."""
        started = time.perf_counter()
        query = clean_query(query)
        technique = Technique.parse(technique)
        if not isinstance(k, int) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        if from_ < 0:
            raise InputError(f"from must be >= 0, got {from_}")
        if from_ + k > min(self.max_window, KNN_MAX_K):
            raise InputError(f"from + k = {from_ + k} exceeds the cluster's limit of {min(self.max_window, KNN_MAX_K)} (index.max_result_window / k-NN k)")
        if rerank_top is not None:
            if self.reranker is None:
                raise InputError("rerank was asked for but the searcher has no reranker")
            if rerank_top < from_ + k:
                raise InputError(f"rerank_top ({rerank_top}) must cover from + k ({from_ + k})")
        if mmr_lambda is not None and not 0.0 <= mmr_lambda <= 1.0:
            raise InputError(f"MMR lambda must be between 0 and 1, got {mmr_lambda}")
        post = rerank_top is not None or mmr_lambda is not None
        wanted = from_ + k
        first_stage = max(wanted, rerank_top or 0, (mmr_candidates or 3 * wanted) if mmr_lambda is not None else 0)
        depth = max(depth or self.depth, first_stage)
        if depth > KNN_MAX_K:
            raise InputError(f"candidate depth {depth} exceeds the k-NN limit of {KNN_MAX_K}")
        page_from, page_size = (0, first_stage) if post else (from_, k)
        notices: list[str] = []
        with_vectors = mmr_lambda is not None

        needs_vector = technique is not Technique.BM25 or mmr_lambda is not None
        vector = self.query_vector(query, query_vector) if needs_vector else None
        fused_by = "none"
        requests = 1
        effective: Fusion | None = None
        named = inline = None
        if technique is Technique.HYBRID:
            effective, named, inline, fallback_reason = self._resolve_fusion(fusion, pipeline)
            if fallback_reason:
                if not self.allow_fallback:
                    raise CapabilityError(f"{fallback_reason}; fallback to client-rrf is disabled")
                rank_constant = effective.rank_constant if effective.kind == "rrf" else 60
                weights = effective.weights if effective.kind == "rrf" else None
                notices.append(f"{fallback_reason}: fell back to client-rrf (both legs fused in Python by RRF, rank_constant {rank_constant})")
                technique = Technique.CLIENT_RRF
                effective = Fusion.rrf(rank_constant, weights)
        elif technique is Technique.CLIENT_RRF:
            if fusion is not None and fusion.kind != "rrf":
                raise InputError("client-rrf fuses by RRF only; pass Fusion.rrf(rank_constant, weights) or use technique hybrid")
            effective = fusion or Fusion.rrf()

        stage = _Stage(query, vector, filters, depth, page_from, page_size, with_vectors)
        if technique is Technique.BM25:
            hits, took = self._single_leg(stage, text_query(query, self.text_leg, filters))
        elif technique is Technique.DENSE:
            knn = knn_query(vector, field=self.vector_field, k=max(depth, page_from + page_size), filters=filters)
            hits, took = self._single_leg(stage, knn)
        elif technique is Technique.HYBRID:
            hits, took, requests = self._server_hybrid(stage, effective, named, inline, explain)
            fused_by = f"server:{named}" if named else f"server:inline:{effective.name}"
        else:
            hits, took, requests = self._client_rrf(stage, effective)
            fused_by = f"client:{effective.name}"

        if rerank_top is not None:
            hits = self._rerank(query, hits[:rerank_top])
        if mmr_lambda is not None:
            hits = self._mmr(vector, hits, wanted, mmr_lambda)
        if post:
            hits = [replace(h, rank=from_ + i + 1) for i, h in enumerate(hits[from_:wanted])]
        if with_vectors:
            hits = [replace(h, source={k2: v for k2, v in h.source.items() if k2 != self.vector_field}) for h in hits]
        return SearchResult(
            query=query,
            technique=technique,
            hits=tuple(hits),
            fused_by=fused_by,
            took_ms=float(took),
            total_ms=(time.perf_counter() - started) * 1000.0,
            notices=tuple(notices),
            requests=requests,
        )

    # -- first stages ------------------------------------------------------------------------------
    def _exclude(self, stage: _Stage) -> tuple[str, ...]:
        return () if stage.with_vectors else (self.vector_field,)

    def _single_leg(self, stage: _Stage, query: dict) -> tuple[list[Hit], float]:
        body = search_body(query, size=stage.size, from_=stage.from_, exclude_source=self._exclude(stage))
        resp = self._search(body)
        raw = _parse_hits(resp)
        return [Hit(r["id"], r["score"], r["source"], stage.from_ + i + 1) for i, r in enumerate(raw)], float(resp.get("took", 0))

    def _server_hybrid(self, stage: _Stage, fusion: Fusion, named: str | None, inline: dict | None, explain: bool) -> tuple[list[Hit], float, int]:
        hq = hybrid_query(
            text_query(stage.query, self.text_leg, stage.filters),
            knn_query(stage.vector, field=self.vector_field, k=stage.depth, filters=stage.filters),
            pagination_depth=stage.depth if self.caps.pagination_depth else None,
        )
        body = search_body(hq, size=stage.size, from_=stage.from_, exclude_source=self._exclude(stage), explain=explain, search_pipeline=inline)
        resp = self._search(body, pipeline=named)
        took, requests = float(resp.get("took", 0)), 1
        raw = _parse_hits(resp)
        legs_by_id: dict[str, tuple[LegScore, ...]] = {}
        if explain:
            runs, leg_took = self._runs(stage.query, stage.vector, stage.depth, stage.filters)
            took += leg_took
            requests += 1
            legs_by_id = self._server_legs(raw, runs, fusion)
        hits = [Hit(r["id"], r["score"], r["source"], stage.from_ + i + 1, legs_by_id.get(r["id"], ())) for i, r in enumerate(raw)]
        return hits, took, requests

    def _client_rrf(self, stage: _Stage, fusion: Fusion) -> tuple[list[Hit], float, int]:
        runs, took = self._runs(stage.query, stage.vector, stage.depth, stage.filters)
        fused = fusion_fns.rrf([[(d["id"], d["score"]) for d in run] for run in runs],
                               rank_constant=fusion.rank_constant, weights=fusion.weights, leg_names=LEGS)
        page = fused[stage.from_ : stage.from_ + stage.size]
        sources = self._sources([f.id for f in page], with_vectors=stage.with_vectors)
        hits = [Hit(f.id, f.score, sources.get(f.id, {}), stage.from_ + i + 1, f.legs) for i, f in enumerate(page)]
        return hits, took, 2

    def legs(self, query: str, *, depth: int | None = None, filters=None, query_vector: Sequence[float] | None = None) -> list[list[tuple[str, float]]]:
        """Each leg's ranked ``(id, raw score)`` list to ``depth``, from one ``_msearch`` (for tuning
        fusion offline: :func:`adapter.fusion.fuse_normalized` and :func:`adapter.fusion.rrf`)."""
        query = clean_query(query)
        vector = self.query_vector(query, query_vector)
        runs, _ = self._runs(query, vector, depth or self.depth, filters)
        return [[(d["id"], d["score"]) for d in run] for run in runs]

    def _runs(self, query: str, vector: np.ndarray, depth: int, filters) -> tuple[list[list[dict]], float]:
        """Both legs, each to ``depth``, in one ``_msearch`` (ids and scores)."""
        took, responses = self._msearch(self._leg_bodies(query, vector, depth, filters))
        return [_parse_hits(r) for r in responses], took

    def _server_legs(self, raw: list[dict], runs: list[list[dict]], fusion: Fusion) -> dict[str, tuple[LegScore, ...]]:
        """Per-leg explanations: normalised scores from ``hybrid_score_explanation``, ranks and raw
        scores from the legs run separately. With ``explain=true`` neural-search 2.19 reports a
        ``_score`` that can differ from the combination of its own normalised details by ~1e-4;
        the contributions are computed from the details."""
        default = (1.0, 1.0) if fusion.kind == "rrf" else (0.5, 0.5)
        weights = list(fusion.weights or default)
        positions = [{d["id"]: (i + 1, d["score"]) for i, d in enumerate(run)} for run in runs]
        out = {}
        for r in raw:
            normalized = _server_normalized(r["explanation"])
            scores = [normalized.get(leg) for leg in LEGS]
            if fusion.kind == "rrf":
                parts = [w * s if s is not None else 0.0 for s, w in zip(scores, weights)]
            else:
                parts = fusion_fns.contributions(scores, weights, fusion.combination, r["score"])
            legs = []
            for leg_i, leg in enumerate(LEGS):
                rank, raw_score = positions[leg_i].get(r["id"], (None, None))
                legs.append(LegScore(leg, rank, raw_score, scores[leg_i], weights[leg_i], parts[leg_i]))
            out[r["id"]] = tuple(legs)
        return out

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        texts = [f"{h.title}\n{h.text}" if h.title else h.text for h in hits]
        scores = self.reranker.score(query, texts)
        order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
        return [replace(hits[i], score=float(scores[i]), rerank_score=float(scores[i]),
                        first_stage_score=hits[i].first_stage_score if hits[i].first_stage_score is not None else hits[i].score)
                for i in order]

    def _mmr(self, vector: np.ndarray, hits: list[Hit], k: int, lambda_: float) -> list[Hit]:
        if not hits:
            return hits
        missing = [h.id for h in hits if self.vector_field not in h.source]
        if missing:
            raise IndexMismatchError(f"hits {missing[:3]} have no stored vector in {self.vector_field!r}; MMR needs the index's vectors")
        vectors = np.asarray([h.source[self.vector_field] for h in hits], dtype=np.float32)
        picked = mmr_select(vector, vectors, k=k, lambda_=lambda_, relevance=[h.score for h in hits])
        return [replace(hits[i], score=s, mmr_score=s,
                        first_stage_score=hits[i].first_stage_score if hits[i].first_stage_score is not None else hits[i].score)
                for i, s in picked]
