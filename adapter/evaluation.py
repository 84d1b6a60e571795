"""``hybrid eval``: score every technique on a labelled BEIR dataset, and tune hybrid weights.

The corpus goes into a fresh index through the normal ingest path (the embedding cache makes a
second run cheap). Query vectors are computed once per query and passed to every technique, so
the latencies here are retrieval only; query embedding is measured in the benchmarks.

Tuning (``tune=True``) fetches both legs once per query of the *tuning* split, scores every
normalisation x combination x BM25 weight (0.0-1.0 by 0.1) and RRF rank constants offline with
the server's own formulas (:mod:`adapter.fusion`), picks the best by nDCG@10, and then runs that
fusion through the server on the *report* split. The two splits must differ.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .admin import alias_indices, init_index
from .assets import IndexSpec, render_pipeline
from .capabilities import Capabilities
from .client import translate_errors
from .embedders import Embedder
from .errors import InputError
from .fusion import fuse_normalized, rrf, same_ranking_up_to_ties
from .metrics import MEASURES, Dataset, evaluate
from .search import Searcher
from .sources import FieldMap, read_jsonl
from .types import Combination, Fusion, Technique

SCHEMA_VERSION = 1
TUNE_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
TUNE_RANK_CONSTANTS = (5, 10, 20, 40, 60, 80, 100)


@dataclass(frozen=True)
class TechniqueSpec:
    name: str
    technique: Technique
    fusion: Fusion | None = None
    rerank: bool = False
    mmr: float | None = None
    mmr_candidates: int = 30  # MMR picks the final MMR_TOP from this many first-stage hits


MMR_TOP = 10


def standard_techniques(caps: Capabilities, *, weights=(0.5, 0.5), rerank: bool = False, mmr: float | None = None,
                        mmr_candidates: int = 30) -> list[TechniqueSpec]:
    """bm25, dense, every server fusion the cluster has, client-rrf; then +rerank / +mmr variants."""
    base = [TechniqueSpec("bm25", Technique.BM25), TechniqueSpec("dense", Technique.DENSE)]
    for fusion in caps.fusions():
        if fusion.kind == "normalization":
            fusion = Fusion(normalization=fusion.normalization, combination=fusion.combination, weights=tuple(weights))
        base.append(TechniqueSpec(f"hybrid-{fusion.name}", Technique.HYBRID, fusion))
    base.append(TechniqueSpec("client-rrf", Technique.CLIENT_RRF, Fusion.rrf()))
    out = list(base)
    if rerank:
        out += [TechniqueSpec(f"{s.name}+rerank", s.technique, s.fusion, rerank=True) for s in base]
    if mmr is not None:
        out += [TechniqueSpec(f"{s.name}+mmr", s.technique, s.fusion, mmr=mmr, mmr_candidates=mmr_candidates) for s in base]
    return out


@dataclass(frozen=True)
class TechniqueResult:
    metrics: dict[str, float]
    latency_ms_p50: float
    latency_ms_p95: float
    server_ms_p50: float
    server_ms_p95: float
    queries: int
    notices: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {**self.metrics, "latency_ms_p50": self.latency_ms_p50, "latency_ms_p95": self.latency_ms_p95,
                "server_ms_p50": self.server_ms_p50, "server_ms_p95": self.server_ms_p95, "queries": self.queries,
                "notices": list(self.notices)}


@dataclass(frozen=True)
class EvalReport:
    dataset: str
    split: str
    embedder: str
    index: str
    results: dict[str, TechniqueResult]
    settings: dict[str, Any] = field(default_factory=dict)
    tuning: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The documented schema (docs/EVALUATION.md)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "dataset": self.dataset,
            "split": self.split,
            "embedder": self.embedder,
            "index": self.index,
            "settings": self.settings,
            "results": {name: r.as_json() for name, r in self.results.items()},
            "tuning": self.tuning,
        }

    def best(self, metric: str = "ndcg@10", among: Callable[[str], bool] = lambda name: True) -> str:
        names = [n for n in self.results if among(n)]
        return max(names, key=lambda n: self.results[n].metrics[metric])


def eval_alias(dataset: Dataset, embedder: Embedder) -> str:
    """The default name of a dataset's eval index: eval-<dataset>-<embedder spec>."""
    return f"eval-{dataset.name}-{embedder.fingerprint.spec}".lower().replace(":", "-").replace("/", "-").replace("_", "-")


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def prepare_index(client, dataset: Dataset, embedder: Embedder, alias: str, *, analyzer: str, title_boost: float = 1.0,
                  use_titles: bool = True, fresh: bool = True, progress: bool = True) -> str:
    """A fresh hybrid index of the dataset's corpus, filled through the normal ingest path."""
    from .ingest import Ingestor
    from .sources import count_rows

    if fresh and alias_indices(client, alias):
        with translate_errors(f"deleting the old {alias}", client):
            client.indices.delete(index=f"{alias}-v*")
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer=analyzer, title_boost=title_boost))
    with translate_errors(f"counting {alias}", client):
        have = client.count(index=alias)["count"]
    total = count_rows(dataset.corpus)
    if have != total:
        report = Ingestor(client, alias, embedder, progress=progress).ingest(read_jsonl(dataset.corpus, FieldMap(title="title" if use_titles else None, metadata=())), total=total)
        if report.failures:
            raise InputError(f"{len(report.failures)} corpus documents failed to index (see {report.failures_file})")
    return alias


def run_technique(
    searcher: Searcher,
    queries: dict[str, str],
    vectors: dict[str, np.ndarray],
    spec: TechniqueSpec,
    *,
    k: int = 100,
    depth: int = 100,
    rerank_top: int = 50,
    progress: bool = True,
) -> tuple[dict[str, list[tuple[str, float]]], list[float], list[float], set[str]]:
    from tqdm.auto import tqdm

    rankings, client_ms, server_ms, notices = {}, [], [], set()
    for qid, text in tqdm(queries.items(), desc=spec.name, unit="q", disable=not progress, leave=False):
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


def evaluate_techniques(
    searcher: Searcher,
    dataset: Dataset,
    specs: Sequence[TechniqueSpec],
    *,
    k: int = 100,
    depth: int = 100,
    progress: bool = True,
) -> tuple[dict[str, TechniqueResult], dict[str, dict[str, list[tuple[str, float]]]]]:
    vectors = {qid: searcher.embedder.embed_query(text) for qid, text in dataset.queries.items()}
    results = {}
    runs = {}
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
        )
    return results, runs


def rrf_parity(server: dict[str, list[tuple[str, float]]], client: dict[str, list[tuple[str, float]]]) -> dict[str, int]:
    """How many queries the server's RRF and the client fallback rank identically (and up to ties)."""
    return {
        "queries": len(server),
        "identical_order": sum(1 for q in server if [d for d, _ in server[q]] == [d for d, _ in client.get(q, [])]),
        "identical_up_to_ties": sum(1 for q in server if same_ranking_up_to_ties(server[q], client.get(q, []))),
    }


def tune_fusion(searcher: Searcher, dataset: Dataset, caps: Capabilities, *, depth: int = 100, progress: bool = True) -> tuple[Fusion, list[dict[str, Any]]]:
    """Best fusion on ``dataset`` (the tuning split) by nDCG@10, computed offline from fetched legs."""
    from tqdm.auto import tqdm

    legs = {}
    for qid, text in tqdm(dataset.queries.items(), desc=f"legs ({dataset.split})", unit="q", disable=not progress, leave=False):
        legs[qid] = searcher.legs(text, depth=depth)
    candidates: list[Fusion] = []
    for norm in caps.normalizations():
        for comb in Combination:
            if norm.value == "z_score" and comb is not Combination.ARITHMETIC_MEAN:
                continue
            candidates += [Fusion(normalization=norm, combination=comb, weights=(w, round(1 - w, 1))) for w in TUNE_WEIGHTS]
    if caps.rrf:
        candidates += [Fusion.rrf(rc) for rc in TUNE_RANK_CONSTANTS]
    trials = []
    for fusion in tqdm(candidates, desc="tuning", unit="setting", disable=not progress, leave=False):
        rankings = {}
        for qid, (bm25, dense) in legs.items():
            if fusion.kind == "rrf":
                fused = rrf([bm25, dense], rank_constant=fusion.rank_constant)
            else:
                fused = fuse_normalized([bm25, dense], normalization=fusion.normalization, combination=fusion.combination, weights=fusion.weights)
            rankings[qid] = [f.id for f in fused[:100]]
        metrics = evaluate(dataset.qrels, rankings)
        trials.append({"fusion": fusion.name, "weights": list(fusion.weights) if fusion.weights else None,
                       "rank_constant": fusion.rank_constant if fusion.kind == "rrf" else None, **metrics, "_fusion": fusion})
    best = max(trials, key=lambda t: (t["ndcg@10"], t["recall@100"]))
    return best["_fusion"], [{k: v for k, v in t.items() if k != "_fusion"} for t in trials]


def write_json(report: EvalReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.as_json(), indent=2) + "\n")


def format_table(report: EvalReport) -> str:
    """Quality and latency per technique; ``*`` marks the best value of each column."""
    cols = [*MEASURES, "latency_ms_p50", "latency_ms_p95", "server_ms_p50"]
    rows = {name: r.as_json() for name, r in report.results.items()}
    best = {}
    for col in cols:
        values = [row[col] for row in rows.values()]
        best[col] = min(values) if col.endswith(("p50", "p95")) else max(values)
    width = max(len(n) for n in rows) + 2
    queries = next(iter(report.results.values())).queries if report.results else 0
    lines = [f"{report.dataset} ({report.split}, {queries} queries), embedder {report.embedder}",
             f"{'technique':<{width}}" + "".join(f"{c:>16}" for c in cols)]
    for name, row in rows.items():
        cells = []
        for col in cols:
            mark = "*" if row[col] == best[col] else " "
            fmt = f"{row[col]:.4f}" if col in MEASURES else f"{row[col]:.1f}"
            cells.append(f"{fmt + mark:>16}")
        lines.append(f"{name:<{width}}" + "".join(cells))
    return "\n".join(lines)


def plot(report: EvalReport, path: str | Path) -> None:
    """PNG: nDCG@10 and Recall@100 per technique, and client latency p50/p95."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report.results)
    rows = [report.results[n] for n in names]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(10, 0.6 * len(names) + 3), 9), sharex=True)
    x = np.arange(len(names))
    ndcg = [r.metrics["ndcg@10"] for r in rows]
    ax1.bar(x - 0.2, ndcg, 0.4, label="nDCG@10")
    ax1.bar(x + 0.2, [r.metrics["recall@100"] for r in rows], 0.4, label="Recall@100")
    for xi, value in zip(x, ndcg):
        ax1.text(xi - 0.2, value + 0.01, f"{value:.3f}", ha="center", va="bottom", fontsize=7, rotation=90)
    ax1.set_ylim(0, 1.1)
    ax1.set_title(f"Quality: {report.dataset} {report.split}")
    ax2.bar(x - 0.2, [r.latency_ms_p50 for r in rows], 0.4, label="client p50")
    ax2.bar(x + 0.2, [r.latency_ms_p95 for r in rows], 0.4, label="client p95")
    ax2.plot(x, [r.server_ms_p50 for r in rows], "k.", label="server took p50")
    ax2.set_title("Latency per query (ms)")
    ax2.set_xticks(x)
    ax2.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"embedder: {report.embedder}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_eval(
    client,
    dataset: Dataset,
    embedder: Embedder,
    *,
    alias: str,
    analyzer: str = "english",
    techniques: Sequence[str] | None = None,
    reranker=None,
    mmr: float | None = None,
    mmr_candidates: int = 30,
    weights: tuple[float, float] = (0.5, 0.5),
    tune_split: Dataset | None = None,
    title_boost: float = 1.0,
    use_titles: bool = True,
    k: int = 100,
    depth: int = 100,
    fresh: bool = True,
    progress: bool = True,
) -> EvalReport:
    if tune_split is not None and tune_split.split == dataset.split:
        raise InputError(f"tuning and reporting on the same split ({dataset.split!r}) would overstate the result; tune on another split")
    started = time.perf_counter()
    prepare_index(client, dataset, embedder, alias, analyzer=analyzer, title_boost=title_boost, use_titles=use_titles,
                  fresh=fresh, progress=progress)
    searcher = Searcher(client, alias, embedder, reranker=reranker, depth=depth)
    caps = searcher.caps
    specs = standard_techniques(caps, weights=weights, rerank=reranker is not None, mmr=mmr, mmr_candidates=mmr_candidates)
    if techniques:
        known = {s.name: s for s in specs}
        unknown = [t for t in techniques if t not in known]
        if unknown:
            raise InputError(f"unknown techniques {unknown}; available here: {', '.join(known)}")
        specs = [known[t] for t in techniques]
    tuning = None
    if tune_split is not None:
        best, trials = tune_fusion(searcher, tune_split, caps, depth=depth, progress=progress)
        specs.append(TechniqueSpec(f"hybrid-tuned-{best.name}", Technique.HYBRID, best))
        if mmr is not None:
            specs.append(TechniqueSpec(f"hybrid-tuned-{best.name}+mmr", Technique.HYBRID, best, mmr=mmr, mmr_candidates=mmr_candidates))
        top = sorted(trials, key=lambda t: -t["ndcg@10"])
        tuning = {
            "split": tune_split.split,
            "queries": len(tune_split.queries),
            "chosen": {"fusion": best.name, "weights": list(best.weights) if best.weights else None,
                       "rank_constant": best.rank_constant if best.kind == "rrf" else None},
            "pipeline": render_pipeline(best, explanation=caps.explanation),
            "top_trials": top[:10],
        }
    results, runs = evaluate_techniques(searcher, dataset, specs, k=k, depth=depth, progress=progress)
    parity = rrf_parity(runs["hybrid-rrf"], runs["client-rrf"]) if {"hybrid-rrf", "client-rrf"} <= set(runs) else None
    return EvalReport(
        dataset=dataset.name,
        split=dataset.split,
        embedder=embedder.fingerprint.model,
        index=alias,
        results=results,
        settings={"analyzer": analyzer, "title_boost": title_boost, "titles": use_titles, "k": k, "depth_per_leg": depth, "weights": list(weights), "mmr_lambda": mmr,
                  "mmr": f"picks the top {MMR_TOP} of {mmr_candidates} first-stage hits" if mmr is not None else None,
                  "text_fields": list(searcher.text_leg.fields), "opensearch": caps.version,
                  "seconds": round(time.perf_counter() - started, 1), "rrf_parity": parity},
        tuning=tuning,
    )
