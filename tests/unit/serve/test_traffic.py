"""The serve's live interleaving tally (adapter.serve.traffic.LiveTally): pure, no node."""

import pytest

from tests.support.extras import skip_module_without

skip_module_without("serve")  # adapter.serve's package imports FastAPI, which `make unit` does not install

from adapter.serve.traffic import LiveTally  # noqa: E402
from adapter.traffic.interleave import Interleaving, Team  # noqa: E402

pytestmark = pytest.mark.unit

B, C = Team.BASELINE, Team.CANDIDATE


def page(*pairs):
    return Interleaving(tuple(d for d, _ in pairs), tuple(t for _, t in pairs))


def test_a_page_shown_is_a_tie_until_its_clicks_decide_it():
    live = LiveTally()
    live.shown("q1", page(("a", B), ("b", C), ("c", C)))
    live.shown("q2", page(("a", C), ("b", B)))
    assert (live.tally().wins, live.tally().losses, live.tally().ties) == (0, 0, 2)
    live.clicked("q1", "b")
    live.clicked("q2", "b")
    assert (live.tally().wins, live.tally().losses, live.tally().ties) == (1, 1, 0)
    live.clicked("q1", "a")  # one each on q1: a tie again
    live.clicked("q1", "a")  # a document clicked twice counts once
    assert (live.tally().wins, live.tally().losses, live.tally().ties) == (0, 1, 1)


def test_clicks_on_unknown_searches_or_documents_not_shown_change_nothing():
    live = LiveTally()
    live.shown("q1", page(("a", B)))
    assert live.clicked("nope", "a") is False and live.clicked("q1", "zzz") is False
    assert (live.tally().wins, live.tally().losses, live.tally().ties) == (0, 0, 1)


def test_pages_past_the_bound_keep_their_outcome_but_take_no_more_clicks():
    live = LiveTally(keep=2)
    live.shown("q1", page(("a", C)))
    live.clicked("q1", "a")
    live.shown("q2", page(("a", C)))
    live.shown("q3", page(("a", C)))  # q1 forgotten: its win stays counted
    assert live.clicked("q1", "a") is False
    assert (live.tally().wins, live.tally().ties, live.tally().searches) == (1, 2, 3)


def test_a_query_id_shown_twice_counts_once():
    live = LiveTally()
    live.shown("q1", page(("a", C)))
    live.shown("q1", page(("a", C)))  # a page reloaded with its query id is the page that was logged
    assert live.tally().searches == 1


def test_the_team_of_a_clicked_hit_is_known_while_its_page_is():
    live = LiveTally(keep=1)
    live.shown("q1", page(("a", B), ("b", C)))
    assert (live.team_of("q1", "b"), live.team_of("q1", "a"), live.team_of("q1", "zzz"), live.team_of("nope", "a")) == (
        C,
        B,
        None,
        None,
    )
    live.shown("q2", page(("a", C)))  # q1 forgotten
    assert live.team_of("q1", "b") is None and live.team_of("q2", "a") is C
