"""Choosing the default by leave-one-set-out regret (adapter.fusion.choice.selection), on hand-made numbers."""

from __future__ import annotations

import pytest

from adapter.errors import AssetError
from adapter.fusion.choice.selection import (
    ClusterKind,
    SetRun,
    choose,
    default_rows,
    fixed_rows,
    leave_one_out,
    runs_on,
    scores,
)

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
    rows = {
        "bm25": 0,
        "dense": 0,
        MM: 0,
        Z: 0,
        RRF: 0,
        AD: 0,
        "hybrid-tuned-l2-arithmetic_mean": 0,
        "hybrid-learned": 0,
        "hybrid-l2-geometric_mean": 0,
        MM + "+mmr": 0,
        "client-rrf": 0,
    }
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
    assert rows == {"opensearch-3": Z, "opensearch-2": RRF, "elasticsearch": Z, "client": Z}


def test_nothing_to_choose_from_is_an_error():
    with pytest.raises(AssetError, match="no measured sets"):
        choose([], [MM])
    with pytest.raises(AssetError, match="measured on every set"):
        choose([SetRun("a", {"bm25": 0.1, MM: 0.5}), SetRun("b", {"bm25": 0.1, Z: 0.5})], [MM, Z])
    with pytest.raises(AssetError, match="no fixed untuned fusion"):
        SetRun("a", {"bm25": 0.1, AD: 0.5}).regret(AD)
    with pytest.raises(AssetError, match="no bm25 or dense row"):
        SetRun("a", {MM: 0.1, AD: 0.5}).regret(AD)


# -- the rule with its noise (issue 31) ------------------------------------------------------------
def noisy(name, rows, n=40, seed=0):
    """A set whose rows' per-query nDCG@10 average to ``rows`` (the same jitter in every row, so rows
    differ by a constant per query unless ``rows`` gives a (mean, spread) pair)."""
    import zlib

    import numpy as np

    rng = np.random.default_rng(seed)  # per row below: crc32, not hash() (salted per process: a flaky test)
    base = rng.uniform(-0.2, 0.2, n)
    per, means = {}, {}
    for row, value in rows.items():
        mean, spread = value if isinstance(value, tuple) else (value, 0.0)
        own = (
            base + np.random.default_rng(seed + zlib.crc32(row.encode()) % 1000).normal(0.0, spread, n)
            if spread
            else base.copy()
        )
        own = own - own.mean() + mean
        per[row], means[row] = own.tolist(), float(np.mean(own))
    return SetRun(name, means, per)


def test_a_regrets_standard_error_is_the_bootstrap_of_the_paired_difference():
    import numpy as np

    from adapter.fusion.choice.selection import standard_error

    s = noisy("a", {"bm25": 0.5, "dense": 0.5, MM: 0.70, Z: (0.69, 0.05)}, n=60)
    diffs = np.asarray(s.per_query[MM]) - np.asarray(s.per_query[Z])
    analytic = diffs.std(ddof=0) / np.sqrt(len(diffs))  # what the bootstrap of a mean converges to
    assert standard_error(s, Z) == pytest.approx(analytic, rel=0.1)
    assert standard_error(s, MM) == 0.0  # the reference against itself
    # Paired: rows that differ by a constant on every query have no noise in their difference.
    same = noisy("b", {"bm25": 0.5, "dense": 0.5, MM: 0.70, Z: 0.69})
    assert standard_error(same, Z) == pytest.approx(0.0, abs=1e-12)


def test_a_worst_case_inside_one_standard_error_is_a_tie_and_the_mean_decides():
    # z_score's worst case is 0.003 smaller (min_max's is on b, where their per-query gap is noisy), but
    # it loses on average: the issue-18 situation. The rule picks min_max.
    from adapter.fusion.choice.selection import ranked

    sets = [
        noisy("a", {"bm25": 0.40, "dense": 0.40, MM: 0.60, Z: 0.58, AD: 0.50}, seed=1),
        noisy("b", {"bm25": 0.40, "dense": 0.40, MM: (0.60, 0.08), Z: 0.623, AD: 0.52}, seed=2),
        noisy("c", {"bm25": 0.40, "dense": 0.40, MM: 0.70, Z: 0.68, AD: 0.60}, seed=3),
    ]
    measured = {s.row: s for s in scores(sets, [MM, Z, AD])}
    assert measured[Z].worst == pytest.approx(0.02) and measured[MM].worst == pytest.approx(
        0.023
    )  # the old rule: z_score
    assert measured[MM].mean < measured[Z].mean
    marks = {s.row: s for s in ranked(sets, [MM, Z, AD])}
    assert marks[MM].tied and marks[Z].tied and not marks[AD].tied
    assert marks[MM].tie_error >= marks[MM].worst - marks[Z].worst and marks[Z].tie_error == 0.0
    assert marks[MM].errors["b"] > 0.01 and marks[MM].errors["a"] == 0.0  # the reference on a: no noise against itself
    assert choose(sets, [MM, Z, AD]).row == MM


def test_a_worst_case_gap_beyond_its_standard_error_is_kept():
    # The same means, but each row differs from the others by the same amount on every query: no noise,
    # so the smaller worst case wins.
    sets = [
        noisy("a", {"bm25": 0.40, "dense": 0.40, MM: 0.60, Z: 0.58}, seed=1),
        noisy("b", {"bm25": 0.40, "dense": 0.40, MM: 0.60, Z: 0.623}, seed=2),
        noisy("c", {"bm25": 0.40, "dense": 0.40, MM: 0.70, Z: 0.68}, seed=3),
    ]
    assert choose(sets, [MM, Z]).row == Z


def test_leave_one_out_reports_the_held_out_regrets_standard_error():
    from adapter.fusion.choice.selection import standard_error

    sets = [
        noisy(n, {"bm25": 0.4, "dense": 0.4, MM: (0.6 + d, 0.05), Z: 0.6}, seed=i)
        for i, (n, d) in enumerate((("a", 0.01), ("b", -0.01), ("c", 0.0)))
    ]
    held = leave_one_out(sets, [MM, Z])
    assert [h.held_out for h in held] == ["a", "b", "c"]
    for h, s in zip(held, sets):
        assert h.error == standard_error(s, h.chosen) and h.regret == pytest.approx(s.regret(h.chosen))


def test_dbsf_in_the_client_is_a_candidate_only_where_the_fusion_runs_in_the_client():
    assert runs_on("client-dbsf", ClusterKind.ELASTICSEARCH)
    assert not runs_on("client-dbsf", ClusterKind.OPENSEARCH_3) and not runs_on("client-dbsf", ClusterKind.OPENSEARCH_2)
    assert "client-dbsf" in fixed_rows({"client-dbsf": 0.5, "bm25": 0.4})
    # The guard-less policy of issue 18 keeps its two forms' place: the z_score one needs OpenSearch 3.x.
    assert not runs_on("hybrid-adaptive-issue18", ClusterKind.OPENSEARCH_2)
    assert runs_on("hybrid-adaptive-issue18-min_max", ClusterKind.ELASTICSEARCH)
