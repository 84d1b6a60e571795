"""Running techniques over a labelled dataset: build the index, search every query, score.

The corpus goes into a fresh index through the normal ingest path (the embedding cache makes a
second run cheap). Query vectors are computed once per query and passed to every technique, so
the latencies here are retrieval only; query embedding is measured in the benchmarks.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..admin import init_index
from ..assets import IndexSpec
from ..cache import EmbeddingCache
from ..capabilities import Capabilities
from ..catalog import alias_indices
from ..client import translate_errors
from ..embedders import Embedder
from ..errors import InputError
from ..fusion import same_ranking_up_to_ties
from ..fusions import DEFAULT_WEIGHTS, RRF, ScoreNormalization
from ..metrics import Dataset, evaluate
from ..search import Searcher
from ..sources import FieldMap, RowError, SourceDoc, read_jsonl
from ..types import Technique
from .report import MMR_TOP, EvalReport, TechniqueResult, TechniqueSpec, Tuning
from .tune import tune_fusion

Ranking = dict[str, list[tuple[str, float]]]


def standard_techniques(caps: Capabilities, *, weights=DEFAULT_WEIGHTS, rerank: bool = False, mmr: float | None = None,
                        mmr_candidates: int = 30) -> list[TechniqueSpec]:
    """bm25, dense, every server fusion the cluster has, client-rrf; then +rerank / +mmr variants."""
    base = [TechniqueSpec("bm25", Technique.BM25), TechniqueSpec("dense", Technique.DENSE)]
    base += [TechniqueSpec(f"hybrid-{f.name}", Technique.HYBRID, f) for f in caps.fusions(tuple(weights))]
    base.append(TechniqueSpec("client-rrf", Technique.CLIENT_RRF, RRF()))
    out = list(base)
    if rerank:
        out += [TechniqueSpec(f"{s.name}+rerank", s.technique, s.fusion, rerank=True) for s in base]
    if mmr is not None:
        out += [TechniqueSpec(f"{s.name}+mmr", s.technique, s.fusion, mmr=mmr, mmr_candidates=mmr_candidates) for s in base]
    return out


def fusion_asset(fusion) -> dict:
    """Where there are no search pipelines (Elasticsearch): the winning fusion, to pass per search."""
    weights = ",".join(f"{w:g}" for w in fusion.effective_weights)
    return {"description": f"no search pipelines on this engine: the fusion goes with each search request "
                           f"(hybrid search --fusion {fusion.name} --weights {weights})",
            "fusion": fusion.name, "weights": list(fusion.effective_weights)}


def eval_alias(dataset: Dataset, embedder: Embedder) -> str:
    """The default name of a dataset's eval index: eval-<dataset>-<embedder spec>."""
    return f"eval-{dataset.name}-{embedder.fingerprint.spec}".lower().replace(":", "-").replace("/", "-").replace("_", "-")


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


@dataclass(frozen=True)
class PreparedIndex:
    alias: str
    skipped: tuple[str, ...] = ()  # ids of corpus documents without text, left out


def prepare_index(client, dataset: Dataset, embedder: Embedder, alias: str, *, analyzer: str, title_boost: float = 1.0,
                  use_titles: bool = True, fresh: bool = True, progress: bool = True, cache: EmbeddingCache | None = None
                  ) -> PreparedIndex:
    """A fresh hybrid index of the dataset's corpus, filled through the normal ingest path.

    Documents without text are left out with a notice (classic collections have a few; they can
    never be retrieved by text anyway); any other bad row is an error naming its failures file,
    which goes to the temporary folder, not the working directory.
    """
    from ..ingest import Ingestor

    old = alias_indices(client, alias) if fresh else []
    if old:  # by name: Elasticsearch refuses wildcard deletes (action.destructive_requires_name)
        with translate_errors(f"deleting the old {alias}", client):
            client.indices.delete(index=",".join(old))
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer=analyzer, title_boost=title_boost))
    with translate_errors(f"counting {alias}", client):
        have = client.count(index=alias)["count"]
    rows = list(read_jsonl(dataset.corpus, FieldMap(title="title" if use_titles else None, metadata=())))
    skipped = tuple(str(r.id) for r in rows if isinstance(r, RowError) and r.empty)
    rows = [r for r in rows if not (isinstance(r, RowError) and r.empty)]
    if have != sum(1 for r in rows if isinstance(r, SourceDoc)):
        failures = Path(tempfile.gettempdir()) / f"hybrid-eval-failures-{alias}.jsonl"
        report = Ingestor.open(client, alias, embedder, cache=cache, progress=progress, failures_path=failures).ingest(rows, total=len(rows))
        if report.failures:
            raise InputError(f"{len(report.failures)} corpus documents failed to index (see {report.failures_file})")
    return PreparedIndex(alias, skipped)


def run_technique(searcher: Searcher, queries: dict[str, str], vectors: dict[str, np.ndarray], spec: TechniqueSpec, *,
                  k: int = 100, depth: int = 100, rerank_top: int = 50, progress: bool = True
                  ) -> tuple[Ranking, list[float], list[float], set[str]]:
    from ..progress import track

    rankings, client_ms, server_ms, notices = {}, [], [], set()
    for qid, text in track(queries.items(), spec.name, total=len(queries), enabled=progress):
        result = searcher.search(
            text, technique=spec.technique, k=k, depth=depth, fusion=spec.fusion, query_vector=vectors[qid],
            rerank_top=max(rerank_top, k) if spec.rerank else None,
        )
        ranked = [(h.id, h.score) for h in result.hits]
        if spec.mmr is not None:
            # As used: MMR picks the final MMR_TOP from the top mmr_candidates; the rest of the
            # first-stage list follows unchanged, so Recall@100 stays comparable.
            result = searcher.search(
                text, technique=spec.technique, k=MMR_TOP, depth=depth, fusion=spec.fusion, query_vector=vectors[qid],
                mmr_lambda=spec.mmr, mmr_candidates=spec.mmr_candidates,
            )
            picked = [(h.id, h.score) for h in result.hits]
            chosen = {d for d, _ in picked}
            ranked = picked + [(d, sc) for d, sc in ranked if d not in chosen]
        rankings[qid] = ranked
        client_ms.append(result.total_ms or 0.0)
        server_ms.append(result.took_ms or 0.0)
        notices.update(result.notices)
    return rankings, client_ms, server_ms, notices


def evaluate_techniques(searcher: Searcher, dataset: Dataset, specs: Sequence[TechniqueSpec], *, k: int = 100, depth: int = 100,
                        progress: bool = True) -> tuple[dict[str, TechniqueResult], dict[str, Ranking]]:
    vectors = {qid: searcher.embedder.embed_query(text) for qid, text in dataset.queries.items()}
    results, runs = {}, {}
    for spec in specs:
        ranked, client_ms, server_ms, notices = run_technique(searcher, dataset.queries, vectors, spec, k=k, depth=depth, progress=progress)
        runs[spec.name] = ranked
        results[spec.name] = TechniqueResult(
            metrics=evaluate(dataset.qrels, {q: [d for d, _ in hits] for q, hits in ranked.items()}),
            latency_ms_p50=_percentile(client_ms, 50),
            latency_ms_p95=_percentile(client_ms, 95),
            server_ms_p50=_percentile(server_ms, 50),
            server_ms_p95=_percentile(server_ms, 95),
            queries=len(ranked),
            notices=tuple(sorted(notices)),
            spec=spec,
        )
    return results, runs


def rrf_parity(server: Ranking, client: Ranking) -> dict[str, int]:
    """How many queries the server's RRF and the client fallback rank identically (and up to ties)."""
    return {
        "queries": len(server),
        "identical_order": sum(1 for q in server if [d for d, _ in server[q]] == [d for d, _ in client.get(q, [])]),
        "identical_up_to_ties": sum(1 for q in server if same_ranking_up_to_ties(server[q], client.get(q, []))),
    }


def run_eval(
    client,
    dataset: Dataset,
    embedder: Embedder,
    *,
    alias: str,
    analyzer: str = "english",
    techniques: Sequence[str] | None = None,
    available_only: bool = False,
    reranker=None,
    mmr: float | None = None,
    mmr_candidates: int = 30,
    weights: tuple[float, float] = DEFAULT_WEIGHTS,
    tune_split: Dataset | None = None,
    title_boost: float = 1.0,
    use_titles: bool = True,
    k: int = 100,
    depth: int = 100,
    fresh: bool = True,
    progress: bool = True,
    cache: EmbeddingCache | None = None,
) -> EvalReport:
    if tune_split is not None and tune_split.split == dataset.split:
        raise InputError(f"tuning and reporting on the same split ({dataset.split!r}) would overstate the result; tune on another split")
    ScoreNormalization(weights=weights)
    started = time.perf_counter()
    prepared = prepare_index(client, dataset, embedder, alias, analyzer=analyzer, title_boost=title_boost, use_titles=use_titles,
                             fresh=fresh, progress=progress, cache=cache)
    searcher = Searcher.open(client, alias, embedder, reranker=reranker, depth=depth)
    caps = searcher.caps
    specs = standard_techniques(caps, weights=weights, rerank=reranker is not None, mmr=mmr, mmr_candidates=mmr_candidates)
    if techniques:
        known = {s.name: s for s in specs}
        unknown = [t for t in techniques if t not in known]
        if available_only:  # the subset this cluster runs (hybrid-rrf, say, is not on every cluster)
            techniques, unknown = [t for t in techniques if t in known], []
        if unknown or not techniques:
            raise InputError(f"unknown techniques {unknown}; available here: {', '.join(known)}")
        specs = [known[t] for t in techniques]
    tuning = None
    if tune_split is not None:
        best, trials = tune_fusion(searcher, tune_split, depth=depth, progress=progress)
        specs.append(TechniqueSpec(f"hybrid-tuned-{best.name}", Technique.HYBRID, best, tuned=True))
        if mmr is not None:
            specs.append(TechniqueSpec(f"hybrid-tuned-{best.name}+mmr", Technique.HYBRID, best, mmr=mmr, mmr_candidates=mmr_candidates, tuned=True))
        asset = searcher.engine.render_pipeline(best, caps) if caps.search_pipelines else fusion_asset(best)
        tuning = Tuning(tune_split.split, len(tune_split.queries), best, asset, tuple(trials))
    results, runs = evaluate_techniques(searcher, dataset, specs, k=k, depth=depth, progress=progress)
    parity = rrf_parity(runs["hybrid-rrf"], runs["client-rrf"]) if {"hybrid-rrf", "client-rrf"} <= set(runs) else None
    return EvalReport(
        dataset=dataset.name,
        split=dataset.split,
        embedder=embedder.fingerprint.model,
        index=alias,
        results=results,
        settings={"analyzer": analyzer, "title_boost": title_boost, "titles": use_titles, "k": k, "depth_per_leg": depth,
                  "weights": list(weights), "mmr_lambda": mmr,
                  "mmr": f"picks the top {MMR_TOP} of {mmr_candidates} first-stage hits" if mmr is not None else None,
                  "text_fields": list(searcher.text_leg.fields), "engine": caps.engine, "version": caps.version,
                  "opensearch": caps.version, "seconds": round(time.perf_counter() - started, 1), "rrf_parity": parity,
                  "skipped_empty_documents": list(prepared.skipped)},
        tuning=tuning,
    )
