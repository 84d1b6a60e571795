"""COEC judgments, with the arithmetic written out."""

import pytest

from adapter.errors import InputError
from adapter.traffic.clicks import Shown, as_qrels, as_ratings, coec_judgments, grade, position_ctr

pytestmark = pytest.mark.unit


def shown(query, *docs):
    return [Shown(query, d, p) for p, d in enumerate(docs)]


# Four pages: q1 shows (a, b) twice, q2 shows (b, c) twice. Clicks: a at 0 once, b at 1 twice (q1), c at 1 once (q2).
IMPRESSIONS = shown("q1", "a", "b") * 2 + shown("q2", "b", "c") * 2
CLICKS = [Shown("q1", "a", 0), Shown("q1", "b", 1), Shown("q1", "b", 1), Shown("q2", "c", 1)]


def test_position_ctr_is_clicks_over_impressions_per_position():
    # position 0: 4 impressions, 1 click; position 1: 4 impressions, 3 clicks
    assert position_ctr(IMPRESSIONS, CLICKS) == {0: 1 / 4, 1: 3 / 4}


def test_coec_is_clicks_over_expected_clicks():
    got = {(j.query, j.doc): j for j in coec_judgments(IMPRESSIONS, CLICKS, min_impressions=2)}
    # q1/a: 2 impressions at 0 -> expected 2 * 1/4 = 0.5; 1 click -> 1 / 0.5 = 2
    assert got["q1", "a"].expected_clicks == pytest.approx(0.5) and got["q1", "a"].coec == pytest.approx(2.0)
    # q1/b: 2 at position 1 -> expected 2 * 3/4 = 1.5; 2 clicks -> 4/3
    assert got["q1", "b"].coec == pytest.approx(2 / 1.5)
    # q2/b: 2 at 0, no click -> 0; q2/c: 2 at 1, 1 click -> 1 / 1.5
    assert got["q2", "b"].coec == 0.0 and got["q2", "c"].coec == pytest.approx(1 / 1.5)
    assert [got[k].grade for k in (("q1", "a"), ("q1", "b"), ("q2", "b"), ("q2", "c"))] == [2, 1, 0, 0]
    assert as_qrels(got.values()) == {"q1": {"a": 2, "b": 1}, "q2": {"b": 0, "c": 0}}
    assert as_ratings(got.values())["q1"]["a"] == pytest.approx(2.0)


def test_a_document_at_several_positions_sums_its_expectations():
    impressions = [Shown("q", "a", 0), Shown("q", "a", 1), Shown("q", "b", 1), Shown("q", "b", 0)]
    clicks = [Shown("q", "a", 0), Shown("q", "a", 1)]
    # ctr: position 0 = 1/2, position 1 = 1/2; a expected 1/2 + 1/2 = 1, clicked 2 -> COEC 2
    (a, b) = coec_judgments(impressions, clicks, min_impressions=1)
    assert (a.doc, a.expected_clicks, a.coec) == ("a", pytest.approx(1.0), pytest.approx(2.0))
    assert (b.clicks, b.coec) == (0, 0.0)


def test_rarely_shown_pairs_are_left_unjudged():
    assert coec_judgments(IMPRESSIONS, CLICKS, min_impressions=3) == []
    assert len(coec_judgments(IMPRESSIONS, CLICKS, min_impressions=2)) == 4


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(InputError, match="never shown"):
        coec_judgments(IMPRESSIONS, [Shown("q9", "a", 0)])
    with pytest.raises(InputError, match="increasing"):
        coec_judgments(IMPRESSIONS, CLICKS, thresholds=(2.0, 1.0))
    with pytest.raises(InputError, match="min_impressions"):
        coec_judgments(IMPRESSIONS, CLICKS, min_impressions=0)


def test_grades_count_the_thresholds_reached():
    assert [grade(x) for x in (0.0, 0.99, 1.0, 1.99, 2.0, 7.5)] == [0, 0, 1, 1, 2, 2]
    assert grade(0.6, (0.5,)) == 1
