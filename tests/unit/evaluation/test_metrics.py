import math

import pytest

from adapter.errors import InputError
from adapter.fusion import rrf_term
from adapter.evaluation.metrics import evaluate, load_beir, run_from_rankings
from tests.support.extras import requires_extra


@requires_extra("eval")
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


@requires_extra("eval")
def test_queries_missing_from_the_run_count_as_zero():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert evaluate(qrels, {"q1": ["d1"]})["mrr@10"] == pytest.approx(0.5)


@requires_extra("eval")
def test_rank_order_is_kept_even_for_tied_scores():
    import ir_measures

    # RRF ties for real: rank 1 in one leg only scores 1/61 in either leg. The server returns tied
    # documents in its internal order, here "b" before "a".
    tie = rrf_term(1)
    server_hits = [("b", tie), ("a", tie)]
    qrels = {"q": {"b": 1}}
    # Scored by their tied scores, trec_eval breaks the tie by document id and puts "a" first.
    naive = ir_measures.calc_aggregate([ir_measures.RR @ 10], qrels, {"q": dict(server_hits)})
    assert naive[ir_measures.RR @ 10] == 0.5
    # Scored by rank, the order the technique returned wins.
    assert evaluate(qrels, {"q": [d for d, _ in server_hits]})["mrr@10"] == 1.0
    run = run_from_rankings({"q": ["b", "a", "c", "a"]})
    assert sorted(run["q"], key=run["q"].get, reverse=True) == ["b", "a", "c"]


def test_load_beir(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "first"}\n{"_id": "2", "text": "unjudged"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    ds = load_beir(tmp_path, "test")
    assert ds.queries == {"1": "first"} and ds.qrels == {"1": {"d1": 1}} and ds.corpus.name == "corpus.jsonl"
    with pytest.raises(InputError, match="missing qrels/train.tsv"):
        load_beir(tmp_path, "train")
