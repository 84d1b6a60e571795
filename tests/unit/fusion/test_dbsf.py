"""DBSF (distribution-based score fusion, Qdrant's definition): the expected scores are the arithmetic."""

import math

import pytest

from adapter.fusion import parse_fusion
from adapter.fusion.dbsf import DBSF, distribution_normalize
from adapter.engines.render import servers

pytestmark = pytest.mark.unit

BM25 = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
DENSE = [("b", 0.9), ("d", 0.7)]


def spread(scores):
    """mean - 3 std and 6 std, with the sample standard deviation (n - 1), as Qdrant computes them."""
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
    return mean - 3 * std, 6 * std


def test_each_leg_maps_mean_plus_minus_three_deviations_to_zero_one():
    low, width = spread([10.0, 6.0, 2.0])  # mean 6, std 4: [-6, 18]
    assert distribution_normalize([10.0, 6.0, 2.0]) == pytest.approx([(10 + 6) / 24, (6 + 6) / 24, (2 + 6) / 24])
    assert distribution_normalize([10.0, 6.0, 2.0]) == pytest.approx([(s - low) / width for s in (10.0, 6.0, 2.0)])


def test_a_lone_score_or_no_spread_is_the_middle_and_outliers_are_not_clipped():
    assert distribution_normalize([]) == []
    assert distribution_normalize([3.2]) == [0.5]
    assert distribution_normalize([0.7, 0.7, 0.7]) == [0.5, 0.5, 0.5]
    # Ten zeros and a one: the one lies 10 / sqrt(11) = 3.015 deviations above the mean, beyond [0, 1].
    scores = [0.0] * 10 + [1.0]
    low, width = spread(scores)
    assert distribution_normalize(scores)[-1] == pytest.approx((1.0 - low) / width) and (1.0 - low) / width > 1


def test_the_legs_are_summed_and_a_missing_leg_adds_nothing():
    low_t, width_t = spread([10.0, 6.0, 2.0])
    low_v, width_v = spread([0.9, 0.7])
    fused = DBSF().fuse([BM25, DENSE])
    expected = {
        "a": (10.0 - low_t) / width_t,
        "b": (6.0 - low_t) / width_t + (0.9 - low_v) / width_v,
        "c": (2.0 - low_t) / width_t,
        "d": (0.7 - low_v) / width_v,
    }
    assert [f.id for f in fused] == ["b", "a", "d", "c"]
    assert {f.id: f.score for f in fused} == pytest.approx(expected, rel=1e-6)
    b = fused[0]
    assert [(leg.leg, leg.rank, leg.raw_score) for leg in b.legs] == [("bm25", 2, 6.0), ("dense", 1, 0.9)]
    assert sum(leg.contribution for leg in b.legs) == pytest.approx(b.score, rel=1e-6)
    assert fused[1].legs[1].rank is None and fused[1].legs[1].contribution == 0.0


def test_weights_multiply_each_legs_normalised_score():
    low_t, width_t = spread([10.0, 6.0, 2.0])
    low_v, width_v = spread([0.9, 0.7])
    fused = {f.id: f.score for f in DBSF((2.0, 0.5)).fuse([BM25, DENSE])}
    assert fused["b"] == pytest.approx(2.0 * (6.0 - low_t) / width_t + 0.5 * (0.9 - low_v) / width_v, rel=1e-6)
    with pytest.raises(Exception, match="negative"):
        DBSF((-1.0, 1.0))


def test_dbsf_is_named_parsed_and_client_side_only():
    assert parse_fusion("dbsf") == DBSF() and parse_fusion("DBSF", weights=(1, 2)) == DBSF((1.0, 2.0))
    assert DBSF().name == "dbsf" and servers(DBSF) == ()
    with pytest.raises(Exception, match="rank constant applies to RRF only"):
        parse_fusion("dbsf", rank_constant=40)
    runs = [list(BM25), list(DENSE)]
    DBSF().fuse(runs)
    assert runs == [BM25, DENSE]  # inputs are never mutated
