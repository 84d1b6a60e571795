"""Paired tests and Holm's correction, checked against scipy and against the arithmetic."""

import numpy as np
import pytest

from adapter.evaluation.significance import ALPHA, compare, holm, paired_tests, randomization_pvalues, sign_patterns
from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit


def test_holm_is_the_step_down_arithmetic():
    # sorted: 0.005 (x4), 0.01 (x3), 0.03 (x2), 0.04 (x1); each at least the one before it.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([3 * 0.01, max(0.06, 1 * 0.04), 2 * 0.03, 4 * 0.005])
    assert holm([0.5, 0.6]) == [1.0, 1.0] and holm([]) == []


@requires_extra("report")
def test_the_randomization_test_is_scipys_exact_one():
    from scipy import stats

    rng = np.random.default_rng(3)
    x, y = rng.random(11), rng.random(11)
    ours = randomization_pvalues(x - y)[0]
    theirs = stats.permutation_test(
        (x, y), lambda u, v, axis: np.mean(u - v, axis=axis), permutation_type="samples", vectorized=True
    ).pvalue
    assert sign_patterns(11)[1] and ours == pytest.approx(theirs, abs=1e-12)


@requires_extra("report")
def test_the_sampled_randomization_test_agrees_with_scipys_within_its_error():
    from scipy import stats

    rng = np.random.default_rng(4)
    x = rng.random(300)
    y = x - 0.01 + rng.normal(0, 0.12, 300)
    ours = randomization_pvalues(x - y)[0]
    theirs = stats.permutation_test(
        (x, y),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        random_state=1,
    ).pvalue
    assert abs(ours - theirs) < 4 * np.sqrt(theirs * (1 - theirs) / 10_000) + 1e-3


@requires_extra("report")
def test_paired_t_test_is_scipys_and_identical_scores_show_no_difference():
    from scipy import stats

    a, b = [[0.2, 0.5, 0.9, 0.4, 0.7]], [[0.1, 0.45, 0.7, 0.41, 0.5]]
    ((p_rand, p_t),) = paired_tests(a, b)
    assert p_t == pytest.approx(stats.ttest_rel(a[0], b[0]).pvalue)
    assert p_rand == pytest.approx(
        2 * 2 / 32
    )  # exact: 2 of 32 sign patterns reach the observed mean (and 2 its mirror)
    assert paired_tests([[0.3, 0.3, 0.6]], [[0.3, 0.3, 0.6]]) == [(1.0, 1.0)]


@requires_extra("report")
def test_compare_tests_each_pair_once_and_corrects_within_each_measure():
    rng = np.random.default_rng(5)
    qids = [str(i) for i in range(60)]
    base = {q: float(v) for q, v in zip(qids, rng.random(60))}
    better = {q: min(1.0, v + 0.2) for q, v in base.items()}
    same = dict(base)
    scores = {"ndcg@10": {"default": base, "bm25": same, "big": better}}
    rows = compare(scores, ["default", "bm25"])
    assert {(c.technique, c.baseline) for c in rows} == {
        ("bm25", "default"),
        ("big", "default"),
        ("default", "bm25"),
        ("big", "bm25"),
    }
    big = next(c for c in rows if c.technique == "big" and c.baseline == "default")
    assert big.delta > 0.1 and big.significant and big.p_randomization_adjusted < ALPHA
    # Three distinct pairs: {bm25, default} (identical, p = 1), {big, default}, {big, bm25}.
    assert big.p_t_adjusted == pytest.approx(min(1.0, big.p_t * 3)) or big.p_t_adjusted == pytest.approx(
        min(1.0, big.p_t * 2)
    )
    twin = next(c for c in rows if c.technique == "bm25" and c.baseline == "default")
    assert twin.p_randomization == 1.0 and not twin.significant


@requires_extra("report")
def test_the_t_test_p_values_are_scipys_ttest_rel():
    from scipy import stats

    from adapter.evaluation.significance import paired_t_pvalues

    rng = np.random.default_rng(6)
    x, y = rng.random((4, 40)), rng.random((4, 40))
    assert paired_t_pvalues(x - y) == pytest.approx(stats.ttest_rel(x, y, axis=1).pvalue, rel=1e-12)
    assert paired_t_pvalues(np.array([[0.1, 0.1, 0.1]]))[0] == 1.0  # no spread: no evidence either way
