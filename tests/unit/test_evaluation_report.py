import json

from adapter.evaluation import SCHEMA_VERSION, EvalReport, TechniqueResult, format_table, standard_techniques
from adapter.capabilities import capabilities_from


def result(ndcg, p50):
    return TechniqueResult({"ndcg@10": ndcg, "recall@10": ndcg, "recall@100": 0.9, "mrr@10": ndcg}, p50, p50 * 2, p50 / 2, p50, 300)


def report():
    return EvalReport("scifact", "test", "all-MiniLM-L6-v2", "eval-scifact", {"bm25": result(0.68, 5.0), "hybrid-rrf": result(0.72, 9.0)},
                      settings={"k": 100}, tuning=None)


def test_json_follows_the_documented_schema():
    data = json.loads(json.dumps(report().as_json()))
    assert {"schema_version", "dataset", "split", "embedder", "index", "settings", "results", "tuning"} <= set(data)
    assert data["schema_version"] == SCHEMA_VERSION and data["dataset"] == "scifact" and data["split"] == "test"
    for row in data["results"].values():
        assert {"ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms_p50", "latency_ms_p95", "server_ms_p50", "server_ms_p95"} <= set(row)
        assert all(isinstance(row[k], float) for k in ("ndcg@10", "latency_ms_p50"))


def test_table_marks_the_best_value_of_each_column():
    lines = format_table(report()).splitlines()
    bm25 = next(line for line in lines if line.startswith("bm25"))
    hybrid = next(line for line in lines if line.startswith("hybrid-rrf"))
    assert "0.7200*" in hybrid and "0.6800 " in bm25  # best quality
    assert "5.0*" in bm25 and "9.0 " in hybrid  # lowest latency


def test_standard_techniques_follow_the_cluster():
    caps = capabilities_from({}, {"nodes": {"n": {"version": "2.19.1", "plugins": [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}]}}})
    names = [s.name for s in standard_techniques(caps, mmr=0.5)]
    assert names[:2] == ["bm25", "dense"]
    assert "hybrid-min_max-harmonic_mean" in names and "hybrid-rrf" in names and "client-rrf" in names
    assert not any("z_score" in n for n in names)
    assert "hybrid-rrf+mmr" in names and not any("rerank" in n for n in names)
