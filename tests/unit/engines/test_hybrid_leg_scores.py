"""hybrid_leg_scores on hand-made hybrid_score_explanation answers: by leg names, else by raw score."""

from __future__ import annotations

from typing import Any

from adapter.engines.responses import hybrid_leg_scores

LEGS = ("bm25", "knn")


def detail(normalised: float, raw: float | None) -> dict[str, Any]:
    return {"value": normalised, "details": [{"value": raw}] if raw is not None else []}


def test_named_legs_place_the_details():
    explanation = {"details": [detail(0.7, 3.0)]}
    assert hybrid_leg_scores(explanation, LEGS, matched=["knn"], raw_scores=[3.0, 0.9]) == [None, 0.7]
    both = {"details": [detail(0.25, 1.0), detail(0.5, 2.0)]}
    assert hybrid_leg_scores(both, LEGS, matched=["knn", "bm25"]) == [0.25, 0.5]


def test_without_names_a_detail_goes_to_the_leg_whose_raw_score_it_wraps():
    swapped = {"details": [detail(0.8, 0.9), detail(0.3, 12.5)]}
    assert hybrid_leg_scores(swapped, LEGS, raw_scores=[12.5, 0.9]) == [0.3, 0.8]
    close = {"details": [detail(0.6, 0.90004)]}
    assert hybrid_leg_scores(close, LEGS, raw_scores=[None, 0.9]) == [None, 0.6]


def test_without_a_raw_match_the_first_free_leg_with_a_score_or_the_own_position():
    unmatched = {"details": [detail(0.4, 7.0), detail(0.2, 8.0)]}
    assert hybrid_leg_scores(unmatched, LEGS, raw_scores=[1.0, 2.0]) == [0.4, 0.2]
    no_raw = {"details": [{"value": 0.9}]}
    assert hybrid_leg_scores(no_raw, LEGS, raw_scores=[None, 2.0]) == [None, 0.9]
    # the names do not fit the details (two matched, one detail): the raw scores decide
    assert hybrid_leg_scores(no_raw, LEGS, matched=["bm25", "knn"], raw_scores=[1.0, 2.0]) == [0.9, None]


def test_details_beyond_the_scored_legs_are_dropped():
    three = {"details": [detail(0.1, 1.0), detail(0.2, 2.0), detail(0.3, 3.0)]}
    assert hybrid_leg_scores(three, LEGS, raw_scores=[1.0, None]) == [0.1, None]
    assert hybrid_leg_scores(None, LEGS) == [None, None]
    assert hybrid_leg_scores({"details": [detail(0.5, 1.0)]}, LEGS) == [None, None]
