"""Choosing the default by leave-one-set-out regret (adapter.fusion.choice.selection), on hand-made numbers."""

from __future__ import annotations

import pytest

from adapter.errors import AssetError
from adapter.fusion.choice.selection import ClusterKind, SetRun, choose, default_rows, fixed_rows, leave_one_out, runs_on, scores

pytestmark = pytest.mark.unit

MM, Z, RRF, AD = "hybrid-min_max-arithmetic_mean", "hybrid-z_score-arithmetic_mean", "hybrid-rrf", "hybrid-adaptive"


def sets() -> list[SetRun]:
    # a: dense beats every fixed fusion, adaptive wins big; b: adaptive loses 0.09 to min_max (the issue's
    # held-out corpus 1); c: a tie.
    return [
        SetRun("a", {"bm25": 0.70, "dense": 0.90, MM: 0.83, Z: 0.86, RRF: 0.85, AD: 0.99}),
        SetRun("b", {"bm25": 0.49, "dense": 0.45, MM: 0.56, Z: 0.55, RRF: 0.55, AD: 0.47}),
        SetRun("c", {"bm25": 0.68, "dense": 0.65, MM: 0.73, Z: 0.74, RRF: 0.72, AD: 0.74}),
    ]


def test_fixed_rows_are_the_untuned_server_fusions():
    rows = {"bm25": 0, "dense": 0, MM: 0, Z: 0, RRF: 0, AD: 0, "hybrid-tuned-l2-arithmetic_mean": 0, "hybrid-learned": 0,
            "hybrid-l2-geometric_mean": 0, MM + "+mmr": 0, "client-rrf": 0}
    assert fixed_rows(rows) == [MM, Z, RRF, "hybrid-l2-geometric_mean", "client-rrf"]


def test_regret_is_the_loss_against_the_best_untuned_alternative_of_the_same_run():
    a, b, _ = sets()
    assert a.best_fixed == (Z, 0.86) and b.best_fixed == (MM, 0.56)
    assert a.best_leg == ("dense", 0.90) and a.reference == 0.90  # dense alone beat every fixed fusion on a
    assert a.regret(AD) == pytest.approx(0.90 - 0.99)  # negative: adaptive beat every alternative
    assert a.regret(Z) == pytest.approx(0.90 - 0.86)  # the best fixed fusion still lost to a leg
    assert b.regret(AD) == pytest.approx(0.56 - 0.47)


def test_the_default_is_the_smallest_worst_case_loss_not_the_best_mean():
    measured = {s.row: s for s in scores(sets(), [MM, Z, RRF, AD])}
    # adaptive has the best mean regret ((-0.09 + 0.09 + 0.00) / 3 = 0 against z_score's (0.04 + 0.01 + 0) / 3)...
    assert measured[AD].mean == pytest.approx(0.0) and measured[Z].mean == pytest.approx(0.05 / 3)
    assert measured[AD].worst == pytest.approx(0.09) and measured[Z].worst == pytest.approx(0.04)
    assert measured[MM].worst == pytest.approx(0.07) and measured[RRF].worst == pytest.approx(0.05)
    # ... but z_score's worst case (0.04 on a) is the smallest: it is the default.
    assert choose(sets(), [MM, Z, RRF, AD]).row == Z


def test_ties_go_to_the_better_mean_then_the_earlier_candidate():
    legs = {"bm25": 0.5, "dense": 0.5}
    even = [SetRun("a", {**legs, MM: 0.8, Z: 0.8}), SetRun("b", {**legs, MM: 0.7, Z: 0.7})]
    assert choose(even, [MM, Z]).row == MM and choose(even, [Z, MM]).row == Z
    # Same worst case (0 on a), better mean on b: z_score.
    mean = [SetRun("a", {**legs, MM: 0.8, Z: 0.8}), SetRun("b", {**legs, MM: 0.7, Z: 0.75})]
    assert choose(mean, [MM, Z]).row == Z


def test_leave_one_out_scores_each_sets_choice_made_without_it():
    held = {h.held_out: h for h in leave_one_out(sets(), [MM, Z, RRF, AD])}
    # Without b, adaptive looks best (worst regret 0 on c, -0.09 on a): on b it then loses 0.09.
    assert held["b"].chosen == AD and held["b"].regret == pytest.approx(0.09)
    # Without a: min_max and z_score tie (worst 0.01, mean 0.005): the earlier candidate, scored on a.
    assert held["a"].chosen == MM and held["a"].regret == pytest.approx(0.90 - 0.83)
    assert held["c"].chosen == Z and held["c"].regret == pytest.approx(0.0)


def test_the_default_follows_the_cluster_kind():
    assert runs_on(Z, ClusterKind.OPENSEARCH_3) and not runs_on(Z, ClusterKind.OPENSEARCH_2)
    assert runs_on(MM, ClusterKind.OPENSEARCH_2) and not runs_on("hybrid-sum", ClusterKind.OPENSEARCH_3)
    # Elasticsearch: the sum on the server, every other fusion in the client with the server's formula.
    assert runs_on("hybrid-sum", ClusterKind.ELASTICSEARCH) and runs_on(Z, ClusterKind.ELASTICSEARCH)
    # The policy's z_score form runs on 3.x only; its min_max form on both.
    assert runs_on(AD, ClusterKind.OPENSEARCH_3) and runs_on(AD + "-min_max", ClusterKind.OPENSEARCH_3)
    assert runs_on(AD + "-min_max", ClusterKind.OPENSEARCH_2) and not runs_on(AD, ClusterKind.OPENSEARCH_2)
    rows = default_rows(sets(), [MM, Z, RRF, AD])
    # Without z_score (and its row as a reference): rrf's worst loss is 0.05 (a), min_max's 0.07 (a).
    assert rows == {"opensearch-3": Z, "opensearch-2": RRF, "elasticsearch": Z}


def test_nothing_to_choose_from_is_an_error():
    with pytest.raises(AssetError, match="no measured sets"):
        choose([], [MM])
    with pytest.raises(AssetError, match="measured on every set"):
        choose([SetRun("a", {"bm25": 0.1, MM: 0.5}), SetRun("b", {"bm25": 0.1, Z: 0.5})], [MM, Z])
    with pytest.raises(AssetError, match="no fixed untuned fusion"):
        SetRun("a", {"bm25": 0.1, AD: 0.5}).regret(AD)
    with pytest.raises(AssetError, match="no bm25 or dense row"):
        SetRun("a", {MM: 0.1, AD: 0.5}).regret(AD)
