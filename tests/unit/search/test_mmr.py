import numpy as np
import pytest

from adapter.search.mmr import mmr


def test_lambda_one_is_pure_relevance_order():
    q = [1.0, 0.0]
    cands = [[0.9, 0.1], [1.0, 0.0], [0.0, 1.0]]
    picked = mmr(q, cands, k=3, lambda_=1.0)
    assert [i for i, _ in picked] == [1, 0, 2]


def test_lambda_zero_skips_a_near_duplicate():
    # 0 and 1 are near-identical; 2 is different. Pure diversity must not take 1 right after 0.
    q = [1.0, 0.0, 0.0]
    cands = [[1.0, 0.0, 0.0], [0.99, 0.01, 0.0], [0.0, 0.0, 1.0]]
    relevance_first = mmr(q, cands, k=2, lambda_=1.0)
    diverse = mmr(q, cands, k=2, lambda_=0.0)
    assert [i for i, _ in relevance_first] == [0, 1]
    assert [i for i, _ in diverse] == [0, 2]


def test_mmr_score_is_the_formula():
    q = np.array([1.0, 0.0])
    cands = np.array([[1.0, 0.0], [0.6, 0.8]])
    picked = mmr(q, cands, k=2, lambda_=0.5)
    # first: 0.5 * cos(q, c0) = 0.5; second: 0.5 * cos(q, c1) - 0.5 * cos(c0, c1) = 0.5*0.6 - 0.5*0.6 = 0
    assert picked[0] == (0, pytest.approx(0.5))
    assert picked[1] == (1, pytest.approx(0.0))


def test_relevance_scores_are_min_max_scaled():
    cands = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]]
    picked = mmr([1.0, 0.0], cands, k=3, lambda_=1.0, relevance=[10.0, 30.0, 20.0])
    assert [i for i, _ in picked] == [1, 2, 0]
    assert picked[0][1] == pytest.approx(1.0) and picked[2][1] == pytest.approx(0.0)


def test_inputs_are_not_mutated_and_bad_input_is_rejected():
    cands = np.array([[1.0, 0.0], [0.0, 2.0]])
    before = cands.copy()
    mmr([1.0, 0.0], cands, k=1)
    assert np.array_equal(cands, before)
    with pytest.raises(ValueError):
        mmr([1.0, 0.0], cands, k=1, lambda_=1.5)
    with pytest.raises(ValueError):
        mmr([1.0, 0.0, 0.0], cands, k=1)
    assert mmr([1.0, 0.0], np.zeros((0, 2)), k=3) == []
