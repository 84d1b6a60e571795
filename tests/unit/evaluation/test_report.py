import json
from dataclasses import replace

import pytest

from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.errors import InputError
from adapter.evaluation import (
    EvalReport,
    Family,
    SCHEMA_VERSION,
    TechniqueResult,
    TechniqueSpec,
    format_table,
    standard_techniques,
)
from adapter.evaluation.run import product_default
from adapter.evaluation.tune import candidates
from adapter.fusion import RRF, ScoreNormalization
from adapter.fusion.choice.advise import advise, verdict
from adapter.fusion.choice.policy import DEFAULT_POLICY, AdaptivePolicy
from adapter.search.results import Technique
from tests.support.extras import requires_extra


def result(ndcg, p50, spec=None):
    return TechniqueResult(
        {"ndcg@10": ndcg, "recall@10": ndcg, "recall@100": 0.9, "mrr@10": ndcg},
        p50,
        p50 * 2,
        p50 / 2,
        p50,
        300,
        spec=spec,
    )


def report():
    return EvalReport(
        "scifact",
        "test",
        "all-MiniLM-L6-v2",
        "eval-scifact",
        {
            "bm25": result(0.68, 5.0, TechniqueSpec("bm25", Technique.BM25)),
            "hybrid-rrf": result(0.72, 9.0, TechniqueSpec("hybrid-rrf", Technique.HYBRID, RRF())),
        },
        settings={"k": 100},
        tuning=None,
    )


def test_json_follows_the_documented_schema():
    data = json.loads(json.dumps(report().as_json()))
    assert {"schema_version", "dataset", "split", "embedder", "index", "settings", "results", "tuning"} <= set(data)
    assert data["schema_version"] == SCHEMA_VERSION and data["dataset"] == "scifact" and data["split"] == "test"
    for row in data["results"].values():
        assert {
            "ndcg@10",
            "recall@10",
            "recall@100",
            "mrr@10",
            "latency_ms_p50",
            "latency_ms_p95",
            "server_ms_p50",
            "server_ms_p95",
        } <= set(row)
        assert all(isinstance(row[k], float) for k in ("ndcg@10", "latency_ms_p50"))


def test_table_marks_the_best_value_of_each_column():
    lines = format_table(report()).splitlines()
    bm25 = next(line for line in lines if line.startswith("bm25"))
    hybrid = next(line for line in lines if line.startswith("hybrid-rrf"))
    assert "0.7200*" in hybrid and "0.6800 " in bm25  # best quality
    assert "5.0*" in bm25 and "9.0 " in hybrid  # lowest latency


def test_standard_techniques_follow_the_cluster():
    caps = opensearch_capabilities("2.19.1")
    names = [s.name for s in standard_techniques(caps, mmr=0.5)]
    assert names[:2] == ["bm25", "dense"]
    assert "hybrid-min_max-harmonic_mean" in names and "hybrid-rrf" in names and "client-rrf" in names
    assert not any("z_score" in n for n in names)
    assert "hybrid-rrf+mmr" in names and not any("rerank" in n for n in names)


@pytest.mark.parametrize(
    "caps",
    [
        opensearch_capabilities("3.6.0"),
        opensearch_capabilities("2.19.1"),
        opensearch_capabilities("3.6.0", neural_search=False),
        elasticsearch_capabilities("9.2.4", modules=()),  # the integ-test zip: no retrievers, fused in the client
        elasticsearch_capabilities("9.2.4", license="trial"),
    ],
    ids=["opensearch-3.6", "opensearch-2.19", "no-neural-search", "elasticsearch-basic", "elasticsearch-trial"],
)
def test_the_product_default_is_a_row_on_every_cluster(caps):
    """Issue 39: eval named the default (hybrid-adaptive) on Elasticsearch but ran no such row, so its regret
    compared nothing."""
    default = product_default(caps)
    specs = {s.name: s for s in standard_techniques(caps)}
    assert default is not None and default in specs
    fusion = specs[default].fusion
    assert specs[default].technique is Technique.HYBRID and isinstance(fusion, AdaptivePolicy)
    assert replace(fusion, normalization=DEFAULT_POLICY.normalization, name=DEFAULT_POLICY.name) == DEFAULT_POLICY
    assert product_default(caps) not in {s.name for s in standard_techniques(caps, policy=None)}


def test_rows_say_their_family_so_nothing_is_recognised_by_name():
    specs = {s.name: s for s in standard_techniques(opensearch_capabilities("2.19.1"), mmr=0.5)}
    assert specs["client-rrf"].family is Family.HYBRID and specs["dense+mmr"].family is Family.DENSE
    assert specs["dense+mmr"].post_processed and not specs["dense"].post_processed
    row = report().as_json()["results"]["hybrid-rrf"]
    assert row["family"] == "hybrid" and row["post_processed"] is False


def test_advise_verdict_uses_families_and_skips_post_processing():
    data = report().as_json()
    data["results"]["bm25+mmr"] = {**data["results"]["bm25"], "ndcg@10": 0.9, "post_processed": True}
    v = verdict(advise(["error E-4012 en BRCA1"]), data)
    assert v.best == "hybrid-rrf" and v.best_family == "hybrid" and v.matches and v.best_overall == "bm25+mmr"
    assert "matches" in str(v) and "bm25+mmr" in str(v)
    assert not verdict(advise(["how do I return an order"]), data).matches
    del data["results"]["bm25"]["family"]
    with pytest.raises(InputError, match="re-run"):
        verdict(advise(["x"]), data)


def test_tuning_grid_follows_the_cluster_without_duplicates():
    old, new = candidates(opensearch_capabilities("2.19.1")), candidates(opensearch_capabilities("3.6.0"))
    assert len(old) == 6 * 11 + 7 and len(new) == 7 * 11 + 7
    assert len({(f.name, f.weights) for f in new}) == len(new)
    assert (
        ScoreNormalization("z_score", weights=(0.3, 0.7)) in new
        and ScoreNormalization("z_score", weights=(0.3, 0.7)) not in old
    )


def test_pareto_front_keeps_only_what_nothing_beats():
    from adapter.evaluation.report import pareto_front

    points = {
        "bm25": (18.0, 0.694),
        "dense": (21.0, 0.649),
        "client-rrf": (12.0, 0.719),
        "default": (38.0, 0.722),
        "tuned": (37.0, 0.727),
        "twin": (12.0, 0.719),
    }
    assert pareto_front(points) == ["client-rrf", "twin", "tuned"]  # ordered by latency; default is beaten by tuned


@requires_extra("eval")
def test_chart_is_drawn_from_a_report_or_its_json(tmp_path):
    from adapter.evaluation import plot

    plot(report(), tmp_path / "a.png")
    data = report().as_json()
    for row in data["results"].values():  # JSON from before rows carried their family
        row.pop("family"), row.pop("post_processed")
    plot(data, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "b.png").stat().st_size > 10_000


def test_depth_below_k_is_refused_rather_than_silently_raised(tmp_path):
    # The searcher fetches at least k candidates per leg, so `--depth 30` with k = 100 used to run
    # at depth 100 while the report said depth_per_leg 30.
    from adapter.evaluation import run_eval
    from adapter.evaluation.metrics import Dataset

    dataset = Dataset("tiny", tmp_path, "test", {"q1": "x"}, {"q1": {"d1": 1}})
    with pytest.raises(InputError, match=r"depth 30 is below k 100"):
        run_eval(None, dataset, None, alias="tiny", depth=30, k=100)


def test_the_eval_table_explains_its_star():
    row = TechniqueResult({"ndcg@10": 0.5, "recall@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5}, 1.0, 2.0, 1.0, 1.0, 3)
    table = format_table(EvalReport("d", "test", "m", "i", {"bm25": row}))
    assert "0.5000*" in table and table.splitlines()[-1].startswith(
        "* the best of its column: the highest metric, the lowest latency"
    )
