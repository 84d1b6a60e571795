"""The stored evaluation and its HTML report, from a synthetic evaluation (no cluster)."""

import json

import pytest

from adapter.errors import InputError
from adapter.evaluation import EvalReport, stored
from adapter.evaluation.html import report_data, write_report
from adapter.evaluation.perquery import FusionUsed, query_metrics
from adapter.evaluation.metrics import Dataset
from tests.support.tiny_eval import QRELS, QUERIES, write_tiny_evaluation
from tests.support.extras import requires_extra

pytestmark = [pytest.mark.unit, requires_extra("eval", "report")]  # the tiny evaluation is scored by ir_measures


@pytest.fixture
def evaluation(tmp_path):
    return write_tiny_evaluation(tmp_path)


def test_a_stored_eval_reads_back_what_was_measured(evaluation):
    report, root = evaluation
    back = stored.load(root)
    assert back.techniques == list(report.results)
    for name, result in report.results.items():
        for q, run in result.per_query.items():
            mine = back.runs[name][q]
            assert mine.ids == run.ids and mine.fusion == run.fusion and mine.client_ms == run.client_ms
    assert back.runs["hybrid-adaptive"]["q3"].fusion == FusionUsed("min_max-arithmetic_mean", (0.9, 0.1))
    assert back.qrels == QRELS and back.classes["q3"] == "exact" and back.titles["a"] == "title of a"
    # The means the eval reported come back from the run files.
    scores = query_metrics(QRELS, back.runs)
    for name, result in report.results.items():
        assert sum(scores["ndcg@10"][name].values()) / len(QRELS) == pytest.approx(result.metrics["ndcg@10"])


def test_a_folder_that_is_not_a_stored_eval_is_named(tmp_path):
    with pytest.raises(InputError, match="no eval.json"):
        stored.load(tmp_path)


def test_the_drill_down_has_each_legs_rank_raw_and_normalised_score(evaluation):
    _, root = evaluation
    data = report_data(stored.load(root), resamples=200)
    q1 = data["drill"]["q1"]
    assert q1["legs"]["bm25"]["a"] == [1, 12.0] and q1["legs"]["dense"]["a"] == [2, 0.9]
    assert "e" not in q1["legs"]["bm25"]  # not returned by BM25
    # min_max over the leg's list: (s - min) / (max - min); the minimum itself becomes 0.001.
    norm = q1["norm"]["hybrid-adaptive"]
    assert norm["b"][0] == pytest.approx((9.5 - 3.0) / (12.0 - 3.0), rel=1e-4) and norm["a"][1] == pytest.approx(
        (0.90 - 0.2) / (0.91 - 0.2), rel=1e-4
    )
    assert q1["weights"]["hybrid-adaptive"] == [0.2, 0.8] and data["drill"]["q3"]["weights"]["hybrid-adaptive"] == [
        0.9,
        0.1,
    ]
    # RRF: 1 / (60 + rank) in each leg.
    assert q1["norm"]["hybrid-rrf"]["a"] == [pytest.approx(1 / 61, rel=1e-4), pytest.approx(1 / 62, rel=1e-4)]
    assert data["default"] == "hybrid-adaptive" and data["legs"] == ["bm25", "dense"]


def test_the_summary_tests_against_the_default_and_each_leg(evaluation):
    _, root = evaluation
    data = report_data(stored.load(root), resamples=200)
    tests = data["tests"]
    assert tests["baselines"] == ["hybrid-adaptive", "bm25", "dense"] and tests["correction"] == "Holm-Bonferroni"
    pairs = {(c["technique"], c["baseline"], c["measure"]) for c in tests["comparisons"]}
    assert ("hybrid-rrf", "hybrid-adaptive", "ndcg@10") in pairs and ("hybrid-rrf", "dense", "mrr@10") in pairs
    assert ("bm25", "bm25", "ndcg@10") not in pairs
    assert len(data["scores"]["ndcg@10"]["bm25"]) == len(data["queries"]) == 3


def test_the_page_is_self_contained(evaluation):
    _, root = evaluation
    page = write_report(stored.load(root), resamples=200)
    html = page.read_text()
    assert "http://" not in html and "https://" not in html  # nothing fetched from a network
    for name in (
        "dom.js",
        "report.js",
        "labels.js",
        "report.css",
        "chart.umd.min.js",
        "data.js",
        "chart.js-LICENSE.md",
    ):
        assert (page.parent / "assets" / name).is_file()
    assert "Holm-Bonferroni" in html and "hybrid-adaptive" in html
    data = (page.parent / "assets" / "data.js").read_text()
    assert data.startswith("window.REPORT_DATA = ") and json.loads(
        data[len("window.REPORT_DATA = ") :].rstrip().rstrip(";")
    )


def test_a_default_the_eval_did_not_run_is_said_on_the_page(evaluation, tmp_path):
    report, _ = evaluation
    results = {k: v for k, v in report.results.items() if k != "hybrid-adaptive"}
    dataset = Dataset("tiny", tmp_path, "test", QUERIES, QRELS)
    root = stored.write(
        EvalReport("tiny", "test", "minilm", "eval-tiny", results, settings=report.settings), dataset, tmp_path / "es"
    )
    data = report_data(stored.load(root), resamples=200)
    assert data["default"] == "hybrid-rrf"  # no min_max row either: the first hybrid row
    assert "hybrid-adaptive, was not run on this cluster; the comparisons use hybrid-rrf" in data["default_note"]
    assert "was not run on this cluster" in write_report(stored.load(root), resamples=200).read_text()


def test_a_learned_fusion_row_gets_its_lists_in_the_drill_down_without_a_normalisation(tmp_path):
    # `hybrid eval --tune --report DIR` stopped at the report with "unknown fusion 'learned'": the
    # drill-down rebuilt every fused row's fusion from its name, and a learned model has no name to parse.
    from adapter.evaluation import TechniqueSpec
    from adapter.fusion.choice.learned import LearnedFusion
    from adapter.search.results import Technique
    from tests.support.tiny_eval import BM25, result

    report, _ = write_tiny_evaluation(tmp_path)
    model = LearnedFusion(weights=(1.0,) * 4)  # the default features: per leg its DBSF score and a found flag
    learned = result(TechniqueSpec("client-learned", Technique.CLIENT, model), BM25, model)
    report = EvalReport(
        report.dataset,
        report.split,
        report.embedder,
        report.index,
        {**report.results, "client-learned": learned},
        settings=report.settings,
    )
    root = stored.write(report, Dataset("tiny", tmp_path, "test", QUERIES, QRELS), tmp_path / "learned")
    data = report_data(stored.load(root), resamples=200)
    assert data["drill"]["q1"]["lists"]["client-learned"][0][0] == "a"
    assert "client-learned" not in data["drill"]["q1"]["norm"] and "hybrid-rrf" in data["drill"]["q1"]["norm"]


def test_the_report_data_pins_its_keys_queries_titles_latency_and_scores(evaluation):
    report, root = evaluation
    data = report_data(stored.load(root), resamples=200)
    assert list(data) == [
        "dataset", "split", "embedder", "index", "engine", "version", "settings", "default", "default_note",
        "legs", "measures", "techniques", "tests", "queries", "scores", "latency", "qrels", "titles", "drill",
    ]  # fmt: skip
    assert (data["engine"], data["version"], data["legs"]) == ("opensearch", None, ["bm25", "dense"])
    assert data["queries"] == [
        {"id": "q1", "text": "histone H2A.Z", "class": "exact", "relevant": 1},
        {"id": "q2", "text": "what lowers blood pressure", "class": "natural", "relevant": 2},
        {"id": "q3", "text": "BRCA1 mutations", "class": "exact", "relevant": 1},
    ]
    assert data["titles"] == {d: f"title of {d}" for d in "abcdyxez"} and list(data["titles"]) == list("abcdyxez")
    assert data["latency"]["bm25"] == {"client": [12.0, 12.0, 12.0], "server": [2.0, 2.0, 2.0]}
    assert data["scores"]["ndcg@10"]["bm25"] == [1.0, 0.3801, 0.0]
    assert data["scores"]["mrr@10"]["dense"] == [0.5, 1.0, 1.0]
    assert data["tests"]["baselines"] == ["hybrid-adaptive", "bm25", "dense"]
    assert data["qrels"] == {q: dict(stored.load(root).qrels[q]) for q in ("q1", "q2", "q3")}
