"""Learned fusion (adapter.fusion.choice.learned): features written as arithmetic, the model's ranking, the asset,
training on a toy split, and the searcher fusing in the client with it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from adapter.errors import InputError
from adapter.evaluation.metrics import per_query
from adapter.fusion.choice.learned import (
    FEATURES,
    SCHEMA1_FEATURES,
    LearnedFusion,
    features,
    select,
    train,
    training_rows,
)
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.index.catalog import IndexInfo
from adapter.search import Searcher
from tests.support.pages import page_answer
from adapter.testing import FakeClient
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.support.extras import requires_extra
from tests.support.embedders import FP, UnitEmbedder

pytestmark = pytest.mark.unit


BM25 = [("a", 9.0), ("b", 6.0), ("c", 3.0)]
DENSE = [("b", 0.9), ("d", 0.8), ("a", 0.5)]


def test_features_per_leg_are_min_max_z_score_found_and_inverse_rank():
    ids, x = features([BM25, DENSE], SCHEMA1_FEATURES)
    assert ids == ["a", "b", "c", "d"] and x.shape == (4, len(SCHEMA1_FEATURES))
    row = dict(zip(SCHEMA1_FEATURES, x[ids.index("b")]))
    # BM25: b is 6 in [3, 9] -> 0.5; mean 6, std 3 -> z 0 (floored); rank 2.
    assert row["bm25_min_max"] == pytest.approx((6 - 3) / (9 - 3)) and row["bm25_z_score"] == 0.0
    assert row["bm25_found"] == 1.0 and row["bm25_inverse_rank"] == pytest.approx(1 / 2)
    # Dense: b is the top of [0.5, 0.9] -> 1; z (0.9 - 0.7333) / std.
    std = float(np.std([0.9, 0.8, 0.5], ddof=1))
    assert row["dense_min_max"] == 1.0 and row["dense_z_score"] == pytest.approx((0.9 - 2.2 / 3) / std)
    d = dict(zip(SCHEMA1_FEATURES, x[ids.index("d")]))
    assert (d["bm25_found"], d["bm25_min_max"], d["bm25_inverse_rank"]) == (0.0, 0.0, 0.0)  # BM25 missed d
    with pytest.raises(InputError, match="takes 2 legs"):
        features([BM25])


def test_the_default_features_are_dbsf_scores_and_found_flags():
    # DBSF (adapter.fusion.dbsf): (s - (mean - 3 std)) / (6 std), sample std; 0 where the leg missed it.
    assert FEATURES == ("bm25_dbsf", "bm25_found", "dense_dbsf", "dense_found")
    ids, x = features([BM25, DENSE])
    rows = {d: dict(zip(FEATURES, r)) for d, r in zip(ids, x)}
    assert rows["a"]["bm25_dbsf"] == pytest.approx((9 - (6 - 3 * 3)) / (6 * 3)) and rows["c"][
        "bm25_dbsf"
    ] == pytest.approx((3 - (6 - 9)) / 18)
    std = float(np.std([0.9, 0.8, 0.5], ddof=1))
    assert rows["d"]["dense_dbsf"] == pytest.approx((0.8 - (2.2 / 3 - 3 * std)) / (6 * std))
    assert (rows["d"]["bm25_dbsf"], rows["d"]["bm25_found"], rows["d"]["dense_found"]) == (0.0, 0.0, 1.0)
    lone = dict(zip(FEATURES, features([[("x", 3.0)], []])[1][0]))
    assert lone["bm25_dbsf"] == 0.5  # a lone score has no spread: the middle, as DBSF has it
    with pytest.raises(InputError, match="<leg>_<feature>"):
        features([BM25, DENSE], ("bm25_dbsf", "dense_found"))
    with pytest.raises(InputError, match="<leg>_<feature>"):
        features([BM25, DENSE], ("bm25_magic", "dense_magic"))


def test_the_model_ranks_by_its_linear_score_and_explains_each_leg():
    found_both = LearnedFusion(tuple(1.0 if name.endswith("_found") else 0.0 for name in FEATURES))
    fused = found_both.fuse([BM25, DENSE])
    # a and b are found by both legs (2), c and d by one (1); ties go to the best rank (a 1, b 1; d 2, c 3).
    assert [f.id for f in fused] == ["a", "b", "d", "c"] and [f.score for f in fused] == [2.0, 2.0, 1.0, 1.0]
    legs = {leg.leg: leg for leg in fused[2].legs}
    assert legs["bm25"].rank is None and legs["dense"].rank == 2 and legs["dense"].contribution == 1.0
    assert LearnedFusion((0.0,) * len(FEATURES)).fuse([[], []]) == []


def test_the_model_asset_round_trips_and_refuses_what_it_cannot_read():
    model = LearnedFusion(tuple(float(i) for i in range(len(FEATURES))), -0.5, {"dataset": "scifact", "split": "train"})
    again = LearnedFusion.loads(model.dumps())
    assert again == model and again.trained_on == {"dataset": "scifact", "split": "train"}
    data = json.loads(model.dumps())
    assert data["kind"] == "learned-fusion" and data["schema"] == 2 and data["features"] == list(FEATURES)
    with pytest.raises(InputError, match="not a learned fusion model"):
        LearnedFusion.from_json({"kind": "adaptive-fusion-policy"})
    with pytest.raises(InputError, match="schema 9"):
        LearnedFusion.from_json({**data, "schema": 9})
    with pytest.raises(InputError, match="features"):
        LearnedFusion.from_json({**data, "features": ["bm25_min_max"]})
    with pytest.raises(InputError, match="needs 4 weights"):
        LearnedFusion((1.0,))
    # A schema-1 model (issue 18's first round: always the eight score features) still loads and ranks.
    old = {"schema": 1, "kind": "learned-fusion", "features": list(SCHEMA1_FEATURES), "weights": [1.0] * 8, "bias": 0.0}
    assert (
        LearnedFusion.from_json(old).features == SCHEMA1_FEATURES
        and LearnedFusion.from_json(old).fuse([BM25, DENSE])[0].id in "ab"
    )
    with pytest.raises(InputError, match="schema 1's"):
        LearnedFusion.from_json({**old, "features": list(FEATURES), "weights": [1.0] * 4})


def toy_split():
    """Toy split: the relevant document is always the one both legs found, wherever it ranks."""
    legs, qrels = {}, {}
    for q in range(30):
        bm25 = [(f"q{q}-x{i}", 10.0 - i) for i in range(5)] + [(f"q{q}-rel", 4.0)]
        dense = [(f"q{q}-y{i}", 0.9 - i / 100) for i in range(5)] + [(f"q{q}-rel", 0.8)]
        legs[str(q)], qrels[str(q)] = [bm25, dense], {f"q{q}-rel": 1}
    return legs, qrels


@requires_extra("eval")
def test_training_learns_that_relevant_documents_are_the_ones_both_legs_find():
    legs, qrels = toy_split()
    x, y, groups = training_rows(legs, qrels)
    assert x.shape == (30 * 11, len(FEATURES)) and y.sum() == 30 and len(set(groups)) == 30
    model = train(legs, qrels, trained_on={"dataset": "toy", "split": "train", "queries": 30})
    first = [model.fuse(runs)[0].id for runs in legs.values()]
    assert first == [f"q{q}-rel" for q in range(30)]
    # The standardisation is folded back into the raw features' weights: the same decision values.
    ids, xq = features(legs["0"])
    assert [f.score for f in model.fuse(legs["0"])] == pytest.approx(
        sorted((xq @ np.asarray(model.weights) + model.bias).tolist(), reverse=True)
    )
    with pytest.raises(InputError, match="no judged query"):
        train(legs, {})


@requires_extra("eval")
def test_selection_cross_validates_on_the_given_queries_and_prefers_the_simplest_features():
    legs, qrels = toy_split()
    chosen = select(legs, qrels, score=per_query, trained_on={"dataset": "toy"})
    # Every setting puts the document both legs found first on every held-out query: a tie, so the simplest set wins.
    assert (
        set(chosen.cross_validated.values()) == {1.0}
        and chosen.setting == "dbsf C=0.1"
        and chosen.standard_error == 0.0
    )
    assert chosen.model.features == FEATURES and chosen.model.trained_on == {"dataset": "toy"}
    assert chosen.as_json()["folds"] == 5 and set(chosen.as_json()["cross_validated_ndcg@10"]) == {
        "dbsf C=0.1",
        "dbsf C=1",
        "scores C=0.1",
        "scores C=1",
        "scores+dbsf C=0.1",
        "scores+dbsf C=1",
    }
    # Fewer judged queries than folds (`hybrid eval --tune` on a small train split): one fold per query.
    few = select({k: legs[k] for k in list(legs)[:3]}, qrels, score=per_query)
    assert few.folds == 3 and few.as_json()["folds"] == 3 and few.setting == "dbsf C=0.1"
    # One judged query cannot be cross-validated: the default features and C, and the selection says so.
    one = select({"0": legs["0"]}, qrels, score=per_query)
    assert (
        one.folds == 0
        and one.setting == "dbsf C=1"
        and one.cross_validated == {}
        and one.model.fuse(legs["0"])[0].id == "q0-rel"
    )
    with pytest.raises(InputError, match="no judged query"):
        select(legs, {}, score=per_query)


def test_the_searcher_fuses_in_the_client_and_says_so():
    client = FakeClient(
        {
            "POST */_msearch": {
                "responses": [
                    {"took": 2, "hits": {"hits": [{"_id": d, "_score": s} for d, s in BM25]}},
                    {"took": 3, "hits": {"hits": [{"_id": d, "_score": s} for d, s in DENSE]}},
                ]
            },
            "POST */_search": page_answer({d: {"text": d} for d in "abcd"}, text_fields=("text",)),
        }
    )
    model = LearnedFusion(
        tuple(1.0 if name.endswith("_found") else 0.0 for name in FEATURES),
        trained_on={"dataset": "scifact", "split": "train", "queries": 809},
    )
    index = IndexInfo("docs", "docs-v1", FP, text_fields=("text",), query_fields=("text",))
    searcher = Searcher(client, index, opensearch_capabilities("3.6.0"), UnitEmbedder())
    result = searcher.search("q", technique="client", fusion=model, k=3)  # what `--fusion learned` asks for
    assert [h.id for h in result.hits] == ["a", "b", "d"]
    assert (
        result.fused_by is FusedBy.CLIENT
        and result.technique is Technique.CLIENT
        and result.fused_by_label == "client:learned"
    )
    assert (
        result.fusion == model
        and result.fusion.trained_on["split"] == "train"
        and len(client.calls_to("POST */_msearch")) == 1
    )
    # Asked as a server hybrid, it is still fused in the client, and the result says why.
    hybrid = searcher.search("q", fusion=model, k=3)
    assert hybrid.fused_by is FusedBy.CLIENT and any("run server-side by no search engine" in n for n in hybrid.notices)


@requires_extra("eval")
def test_a_fold_with_nothing_to_learn_is_left_out_of_the_selection_not_an_error():
    # Two judged queries, two folds: query 0's relevant document is the one both legs found; query 2's
    # was never a candidate, so the fold trained on query 2 alone has nothing to learn.
    legs, qrels = {}, {}
    for q in (0, 2):
        bm25 = [(f"q{q}-x{i}", 10.0 - i) for i in range(5)] + [(f"q{q}-rel", 4.0)]
        dense = [(f"q{q}-y{i}", 0.9 - i / 100) for i in range(5)] + [(f"q{q}-rel", 0.8)]
        legs[str(q)], qrels[str(q)] = [bm25, dense], {f"q{q}-rel" if q == 0 else f"q{q}-missing": 1}
    chosen = select(legs, qrels, score=per_query)
    # The other fold (trained on query 0) scores query 2: 0 for every setting, a tie the simplest wins.
    assert chosen.folds == 2 and chosen.skipped_folds == 1 and chosen.as_json()["skipped_folds"] == 1
    assert (
        set(chosen.cross_validated.values()) == {0.0}
        and chosen.setting == "dbsf C=0.1"
        and chosen.standard_error == 0.0
    )
    assert chosen.model.fuse(legs["0"])[0].id == "q0-rel"  # then trained on both queries
