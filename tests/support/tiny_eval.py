"""A synthetic stored evaluation (three queries, bm25, dense and two fusions; no cluster): for the
report's unit tests and for serving a report in the page tests."""

from __future__ import annotations

from pathlib import Path

from adapter.evaluation import EvalReport, TechniqueResult, TechniqueSpec, stored
from adapter.evaluation.perquery import FusionUsed, QueryRun
from adapter.fusion import RRF, ScoreNormalization
from adapter.evaluation.metrics import Dataset, evaluate
from adapter.evaluation.run import standard_techniques
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.search.results import Technique

QUERIES = {"q1": "histone H2A.Z", "q2": "what lowers blood pressure", "q3": "BRCA1 mutations"}
QRELS = {"q1": {"a": 1}, "q2": {"b": 2, "c": 1}, "q3": {"z": 1}}
BM25 = {"q1": [("a", 12.0), ("b", 9.5), ("c", 3.0)], "q2": [("c", 8.0), ("d", 7.0)], "q3": [("y", 4.0), ("x", 4.0)]}
DENSE = {
    "q1": [("b", 0.91), ("a", 0.90), ("e", 0.2)],
    "q2": [("b", 0.88), ("c", 0.70), ("d", 0.5)],
    "q3": [("z", 0.8), ("y", 0.7)],
}


def fused(fusion):
    return {q: [(f.id, f.score) for f in fusion.fuse([BM25[q], DENSE[q]])] for q in QUERIES}


def result(spec, rankings, fusion=None, per_query_weights=None) -> TechniqueResult:
    runs = {}
    for q, ranking in rankings.items():
        used = fusion.with_weights(per_query_weights[q]) if per_query_weights else fusion
        runs[q] = QueryRun(
            tuple(ranking),
            10.0 + len(q),
            2.0,
            FusionUsed.of(used) if used else None,
            tuple(f"title of {d}" for d, _ in ranking[:10]),
        )
    metrics = evaluate(QRELS, {q: [d for d, _ in r] for q, r in rankings.items()})
    return TechniqueResult(metrics, 11.0, 12.0, 2.0, 3.0, len(rankings), spec=spec, per_query=runs)


def write_tiny_evaluation(tmp_path: Path) -> tuple[EvalReport, Path]:
    """(the evaluation, the folder ``stored.write`` wrote it to: ``tmp_path / "eval"``)."""
    rrf, mm = RRF(), ScoreNormalization(weights=(0.3, 0.7))
    weights = {"q1": (0.2, 0.8), "q2": (0.5, 0.5), "q3": (0.9, 0.1)}
    results = {
        "bm25": result(TechniqueSpec("bm25", Technique.BM25), BM25),
        "dense": result(TechniqueSpec("dense", Technique.DENSE), DENSE),
        "hybrid-rrf": result(TechniqueSpec("hybrid-rrf", Technique.HYBRID, rrf), fused(rrf), rrf),
        "hybrid-adaptive": result(TechniqueSpec("hybrid-adaptive", Technique.HYBRID, mm), fused(mm), mm, weights),
    }
    report = EvalReport(
        "tiny", "test", "minilm", "eval-tiny", results, settings={"default_technique": "hybrid-adaptive", "k": 3}
    )
    dataset = Dataset("tiny", tmp_path, "test", QUERIES, QRELS)
    return report, stored.write(report, dataset, tmp_path / "eval")


# The rows a default eval runs on OpenSearch 3.x, in its order: the product's default, hybrid-adaptive-min_max, comes
# last.
WIDE_TECHNIQUES = tuple(t.name for t in standard_techniques(opensearch_capabilities("3.6.0")))


def write_wide_evaluation(tmp_path: Path) -> tuple[EvalReport, Path]:
    """The tiny evaluation with the 14 rows of a default eval on OpenSearch 3.x and long queries, as the
    per-query table meets them (the fusions' lists: RRF's or min_max's; the page only reads their names)."""
    rrf, mm = RRF(), ScoreNormalization(weights=(0.3, 0.7))
    results = {
        "bm25": result(TechniqueSpec("bm25", Technique.BM25), BM25),
        "dense": result(TechniqueSpec("dense", Technique.DENSE), DENSE),
    }
    for i, name in enumerate(WIDE_TECHNIQUES[2:]):
        fusion = rrf if i % 2 else mm
        results[name] = result(TechniqueSpec(name, Technique.HYBRID, fusion), fused(fusion), fusion)
    queries = {
        q: f"{text}: what the literature says about it, in one long natural-language question"
        for q, text in QUERIES.items()
    }
    report = EvalReport(
        "wide",
        "test",
        "multilingual-e5-small",
        "eval-wide",
        results,
        settings={"default_technique": "hybrid-adaptive-min_max", "k": 3},
    )
    return report, stored.write(report, Dataset("wide", tmp_path, "test", queries, QRELS), tmp_path / "eval")
