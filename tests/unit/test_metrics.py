import math

import pytest

from adapter.errors import InputError
from adapter.metrics import evaluate, load_beir, run_from_rankings


def test_metrics_on_a_tiny_hand_checked_dataset():
    qrels = {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2}, "q3": {"d9": 1}}
    rankings = {"q1": ["d1", "dx", "d2"], "q2": ["dy", "d3"], "q3": []}
    m = evaluate(qrels, rankings)
    ndcg_q1 = (1 / math.log2(2) + 1 / math.log2(4)) / (1 / math.log2(2) + 1 / math.log2(3))
    ndcg_q2 = (2 / math.log2(3)) / (2 / math.log2(2))
    assert m["ndcg@10"] == pytest.approx((ndcg_q1 + ndcg_q2 + 0) / 3, abs=1e-4)
    assert m["recall@10"] == pytest.approx((1 + 1 + 0) / 3, abs=1e-6)
    assert m["recall@100"] == pytest.approx(2 / 3, abs=1e-6)
    assert m["mrr@10"] == pytest.approx((1 + 1 / 2 + 0) / 3, abs=1e-6)


def test_queries_missing_from_the_run_count_as_zero():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert evaluate(qrels, {"q1": ["d1"]})["mrr@10"] == pytest.approx(0.5)


def test_rank_order_is_kept_even_for_tied_scores():
    run = run_from_rankings({"q": ["b", "a", "c", "a"]})
    assert sorted(run["q"], key=run["q"].get, reverse=True) == ["b", "a", "c"]
    # trec_eval would put "b" after "a" on a score tie; our order must win.
    assert evaluate({"q": {"b": 1}}, {"q": ["b", "a"]})["mrr@10"] == 1.0


def test_load_beir(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "first"}\n{"_id": "2", "text": "unjudged"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    ds = load_beir(tmp_path, "test")
    assert ds.queries == {"1": "first"} and ds.qrels == {"1": {"d1": 1}} and ds.corpus.name == "corpus.jsonl"
    with pytest.raises(InputError, match="missing qrels/train.tsv"):
        load_beir(tmp_path, "train")
