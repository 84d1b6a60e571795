"""The relevance map (adapter.fusion.relevance): each fusion's fused scores mapped through their own
reference distribution, so a relevance means the same share of typical top hits under every fusion."""

from __future__ import annotations

import pytest

from adapter.errors import InputError
from adapter.fusion import RRF, parse_fusion
from adapter.fusion.relevance import (
    MIN_SCORES,
    LegRelevance,
    RelevanceMap,
    consensus_ids,
    fit,
    fit_legs,
    leg_scores,
    maps_from_json,
    non_increasing,
)

pytestmark = pytest.mark.unit


def test_the_map_is_the_share_of_reference_scores_reached_interpolated():
    scores = RelevanceMap("rrf", (0.01, 0.02, 0.04))  # quantiles 0, 1/2, 1
    assert scores.relevance(0.0) == 0.0
    assert scores.relevance(0.01) == pytest.approx(0.0)
    assert scores.relevance(0.015) == pytest.approx(0.25)  # halfway between the 0 and 1/2 quantiles
    assert scores.relevance(0.02) == pytest.approx(0.5)
    assert scores.relevance(0.03) == pytest.approx(0.75)
    assert scores.relevance(0.04) == 1.0 and scores.relevance(9.0) == 1.0
    assert scores.relevance(float("inf")) == 1.0 and scores.relevance(float("-inf")) == 0.0


def test_ties_in_the_reference_jump_and_the_map_is_monotone():
    tied = RelevanceMap("min_max-arithmetic_mean", (0.1, 0.5, 1.0, 1.0, 1.0))  # the top hit scores 1 on most queries
    assert tied.relevance(0.99) == pytest.approx((1 + 0.49 / 0.5) / 4)
    assert tied.relevance(1.0) == 1.0
    grid = [i / 200 for i in range(-20, 240)]
    values = [tied.relevance(s) for s in grid]
    assert values == sorted(values) and all(0.0 <= v <= 1.0 for v in values)


def test_fit_keeps_the_quantiles_and_one_threshold_keeps_one_share_under_any_scale():
    rrf = [1 / (60 + r) + 1 / (60 + r + 3) for r in range(1, 41)]
    stretched = [10 * s - 0.1 for s in rrf]  # another fusion: the same order, another scale
    a, b = fit("rrf", rrf), fit("other", stretched)
    assert a.sample == b.sample == 40 and len(a.scores) == 21
    assert a.scores[0] == min(rrf) and a.scores[-1] == max(rrf)
    for threshold in (0.2, 0.5, 0.8):
        kept_a = sum(a.relevance(s) >= threshold for s in rrf)
        kept_b = sum(b.relevance(s) >= threshold for s in stretched)
        assert kept_a == kept_b
    # RRF's formula puts every one of these above 0.5: a threshold on it keeps all, the map keeps the top half
    assert sum(RRF().relevance(s) >= 0.5 for s in rrf) == 40 and sum(a.relevance(s) >= 0.5 for s in rrf) == 20


def test_what_it_refuses():
    with pytest.raises(InputError, match=f"give at least {MIN_SCORES}"):
        fit("rrf", [0.1] * (MIN_SCORES - 1))
    with pytest.raises(InputError, match="must not decrease"):
        RelevanceMap("rrf", (0.2, 0.1))
    with pytest.raises(InputError, match="two finite quantiles"):
        RelevanceMap("rrf", (0.2,))
    with pytest.raises(InputError, match="a list of relevance maps"):
        maps_from_json({"rrf": [0.1, 0.2]})


def test_maps_travel_through_the_index_meta():
    fitted = fit(parse_fusion("z_score-arithmetic_mean").name, [i / 10 for i in range(30)])
    again = maps_from_json([fitted.as_json()])
    assert again == {fitted.fusion: fitted} and maps_from_json(None) == {}


def test_the_consensus_is_the_same_hits_scored_by_each_fusion():
    from adapter.fusion.relevance import consensus

    ranked = {
        "rrf": [[("a", 0.03), ("b", 0.02), ("c", 0.01)], [("x", 0.03)]],
        "min_max": [[("b", 0.9), ("a", 0.5), ("d", 0.1)], [("y", 1.0)]],
    }
    assert consensus(ranked) == {
        "rrf": [0.03, 0.02],
        "min_max": [0.5, 0.9],
    }  # a and b, by id; the second query shares none
    assert consensus({}) == {}
    with pytest.raises(InputError, match="the same sample queries"):
        consensus({"rrf": [[("a", 1.0)]], "min_max": []})
    assert fit("rrf", [i / 10 for i in range(30)], reference="consensus").as_json()["reference"] == "consensus"
    assert (
        RelevanceMap.from_json({"fusion": "rrf", "scores": [0, 1]}).reference == "top"
    )  # maps stored before it was said


def test_non_increasing_raises_each_value_to_the_largest_at_or_after_it():
    assert non_increasing([0.5, 0.9, 0.2, 0.4, 0.1]) == [0.9, 0.9, 0.4, 0.4, 0.1]
    assert non_increasing([]) == [] and non_increasing([0.3]) == [0.3]
    values = [0.9, 0.7, 0.7, 0.1]
    assert non_increasing(values) == values  # an order already kept is left alone


def test_the_legs_raw_scores_of_the_consensus_hits_and_their_maps():
    ranked = {
        "rrf": [[("a", 0.03), ("b", 0.02), ("c", 0.01)]],
        "min_max": [[("b", 1.0), ("a", 0.5), ("d", 0.1)]],
    }
    assert consensus_ids(ranked) == [["a", "b"]]
    runs = [[[("a", 7.0), ("c", 3.0), ("a", 1.0)], [("b", 0.9), ("a", 0.8)]]]  # BM25 did not return b
    assert leg_scores([["a", "b"]], runs) == [[7.0], [0.8, 0.9]]
    bm25, dense = fit_legs(["bm25", "dense"], [range(MIN_SCORES), [0.5 + i / 100 for i in range(MIN_SCORES)]])
    assert (bm25.fusion, dense.fusion, bm25.reference) == ("leg:bm25", "leg:dense", "consensus")
    with pytest.raises(InputError, match="one list of legs per sample query"):
        leg_scores([["a"]], [])


def test_the_legs_relevance_is_the_mean_of_each_legs_share_and_a_missing_leg_counts_zero():
    legs = LegRelevance((RelevanceMap("leg:bm25", (0.0, 10.0)), RelevanceMap("leg:dense", (0.5, 1.0))))
    assert legs.base((5.0, 0.75)) == pytest.approx(0.5)
    assert legs.base((None, 1.0)) == pytest.approx(0.5) and legs.base((None, None)) == 0.0
    with pytest.raises(InputError, match="one raw score per leg"):
        legs.base((1.0,))
    kept = maps_from_json([legs.maps[0].as_json(), legs.maps[1].as_json(), RelevanceMap("rrf", (0.0, 0.1)).as_json()])
    assert LegRelevance.of(kept, ("bm25", "dense")) == legs
    assert LegRelevance.of({"rrf": kept["rrf"]}, ("bm25", "dense")) is None  # maps stored before the legs' still read


def test_maps_written_before_the_legs_maps_still_read():
    old = [{"fusion": "rrf", "scores": [0.01, 0.02, 0.03]}, {"fusion": "z_score-arithmetic_mean", "scores": [0, 1]}]
    read = maps_from_json(old)
    assert set(read) == {"rrf", "z_score-arithmetic_mean"} and read["rrf"].reference == "top"
    assert read["rrf"].relevance(0.02) == pytest.approx(0.5)
