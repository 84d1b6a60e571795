import math

import numpy as np
import pytest

from adapter.fusion import combine, contributions, rrf, rrf_term
from adapter.fusion import Combination


def f32(x):
    return float(np.float32(x))


def test_rrf_term_is_the_servers_rounded_float():
    assert rrf_term(1) == f32(round(1 / 61, 10))
    assert rrf_term(3, 10) == f32(round(1 / 13, 10))
    with pytest.raises(ValueError):
        rrf_term(0)


def test_rrf_sums_reciprocal_ranks_over_legs():
    bm25 = [("a", 12.0), ("b", 8.0), ("c", 1.0)]
    dense = [("c", 0.9), ("a", 0.8), ("d", 0.7)]
    fused = rrf([bm25, dense], rank_constant=60, leg_names=("bm25", "dense"))
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2), rel=1e-6)
    assert scores["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1), rel=1e-6)
    assert scores["b"] == pytest.approx(1 / (60 + 2), rel=1e-6)
    assert scores["d"] == pytest.approx(1 / (60 + 3), rel=1e-6)
    assert [f.id for f in fused] == ["a", "c", "b", "d"]


def test_rrf_explanations_add_up_and_keep_raw_scores():
    fused = rrf([[("a", 12.0), ("b", 8.0)], [("b", 0.9)]], leg_names=("bm25", "dense"))
    b = next(f for f in fused if f.id == "b")
    bm25, dense = b.legs
    assert (bm25.leg, bm25.rank, bm25.raw_score) == ("bm25", 2, 8.0)
    assert (dense.leg, dense.rank, dense.raw_score) == ("dense", 1, 0.9)
    assert bm25.contribution + dense.contribution == pytest.approx(b.score, rel=1e-6)
    a = next(f for f in fused if f.id == "a")
    assert a.legs[1].rank is None and a.legs[1].contribution == 0.0


def test_rrf_weights_multiply_each_leg():
    fused = rrf([[("a", 1.0), ("b", 0.5)], [("b", 1.0), ("a", 0.5)]], weights=[0.8, 0.2])
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.8 / 61 + 0.2 / 62, rel=1e-6)
    assert scores["b"] == pytest.approx(0.8 / 62 + 0.2 / 61, rel=1e-6)
    assert fused[0].id == "a"


def test_rrf_rank_constant_changes_scores():
    fused = rrf([[("a", 1.0)], [("a", 1.0)]], rank_constant=1)
    assert fused[0].score == pytest.approx(1 / 2 + 1 / 2, rel=1e-6)


def test_rrf_ties_break_by_best_rank_then_id():
    # x: ranks (1, -), y: ranks (-, 1): equal scores; both best rank 1 -> id order.
    fused = rrf([[("y", 1.0)], [("x", 1.0)]])
    assert [f.id for f in fused] == ["x", "y"]


def test_rrf_does_not_mutate_inputs_and_counts_a_repeated_id_once():
    run = [("a", 2.0), ("a", 1.0), ("b", 0.5)]
    copy = list(run)
    fused = rrf([run])
    assert run == copy
    assert {f.id: f.score for f in fused}["a"] == pytest.approx(1 / 61, rel=1e-6)


def test_rrf_rejects_mismatched_weights():
    with pytest.raises(ValueError):
        rrf([[("a", 1.0)]], weights=[0.5, 0.5])


def test_arithmetic_mean_counts_a_missing_leg_as_zero():
    assert combine([1.0, None], [0.3, 0.7], Combination.ARITHMETIC_MEAN) == pytest.approx(0.3 * 1.0 / 1.0)
    assert combine([0.5, 0.25], [0.5, 0.5], Combination.ARITHMETIC_MEAN) == pytest.approx(0.375)


def test_geometric_and_harmonic_skip_missing_legs():
    assert combine([0.5, None], [0.3, 0.7], Combination.GEOMETRIC_MEAN) == pytest.approx(0.5)
    assert combine([0.5, 0.2], [0.5, 0.5], Combination.GEOMETRIC_MEAN) == pytest.approx(math.sqrt(0.5 * 0.2))
    assert combine([0.5, 0.2], [0.5, 0.5], Combination.HARMONIC_MEAN) == pytest.approx(1.0 / (0.5 / 0.5 + 0.5 / 0.2))


@pytest.mark.parametrize("combination", list(Combination))
def test_contributions_add_up_to_the_fused_score(combination):
    scores, weights = [0.8, 0.3], [0.4, 0.6]
    fused = combine(scores, weights, combination)
    assert sum(contributions(scores, weights, combination, fused)) == pytest.approx(fused)


from adapter.fusion import fuse_normalized, normalize  # noqa: E402
from adapter.fusion import Normalization  # noqa: E402


def test_min_max_normalisation_matches_the_server_edge_cases():
    assert normalize([10.0, 6.0, 2.0], Normalization.MIN_MAX) == pytest.approx([1.0, 0.5, 0.001])
    assert normalize([3.0], Normalization.MIN_MAX) == [1.0]
    assert normalize([], Normalization.MIN_MAX) == []


def test_l2_and_z_score_normalisation():
    assert normalize([3.0, 4.0], Normalization.L2) == pytest.approx([0.6, 0.8])
    # mean 2, sample std 1: z = (3-2)/1 = 1; 2 == mean -> max; 1 -> negative -> 0.001
    assert normalize([3.0, 2.0, 1.0], Normalization.Z_SCORE) == pytest.approx([1.0, 3.0, 0.001])


def test_fuse_normalized_is_min_max_then_weighted_mean():
    bm25 = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
    dense = [("b", 0.9), ("d", 0.5)]
    fused = fuse_normalized(
        [bm25, dense],
        normalization=Normalization.MIN_MAX,
        combination=Combination.ARITHMETIC_MEAN,
        weights=[0.3, 0.7],
        leg_names=("bm25", "dense"),
    )
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.3 * 1.0)
    assert scores["b"] == pytest.approx(0.3 * 0.5 + 0.7 * 1.0)
    assert scores["c"] == pytest.approx(0.3 * 0.001)
    assert scores["d"] == pytest.approx(0.7 * 0.001)
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    b = fused[0]
    assert [(leg.leg, leg.rank, leg.raw_score, leg.normalized_score) for leg in b.legs] == [
        ("bm25", 2, 6.0, pytest.approx(0.5)),
        ("dense", 1, 0.9, 1.0),
    ]
    assert sum(leg.contribution for leg in b.legs) == pytest.approx(b.score)


from adapter.fusion import same_ranking_up_to_ties  # noqa: E402


def test_rankings_agree_up_to_the_order_of_ties():
    a = [("x", 0.5), ("p", 0.3), ("q", 0.3), ("z", 0.1)]
    assert same_ranking_up_to_ties(a, [("x", 0.5), ("q", 0.3), ("p", 0.3), ("z", 0.1)])
    assert not same_ranking_up_to_ties(a, [("x", 0.5), ("p", 0.3), ("z", 0.3), ("q", 0.1)])
    assert not same_ranking_up_to_ties(a, [("p", 0.5), ("x", 0.3), ("q", 0.3), ("z", 0.1)])
    # the last tie group may be cut differently at the end of the list
    assert same_ranking_up_to_ties([("x", 0.5), ("p", 0.3)], [("x", 0.5), ("q", 0.3)])
    assert not same_ranking_up_to_ties(a, a[:3])
