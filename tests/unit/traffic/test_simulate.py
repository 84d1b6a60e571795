"""The simulated users, and that the traffic core is pure."""

import random

import pytest

from adapter.errors import InputError
from adapter.traffic.interleave import Outcome
from adapter.traffic.simulate import ClickUser, Session, interleaved_sessions, running, sessions_to_detect
from tests.unit.api.test_public_api import importlinter_config

pytestmark = pytest.mark.unit
PURE = (
    "adapter.traffic.interleave",
    "adapter.traffic.clicks",
    "adapter.traffic.ubi",
    "adapter.traffic.report",
    "adapter.traffic.simulate",
)


def test_the_traffic_core_imports_nothing_from_the_shell():
    # import-linter's pure-core contract (pyproject) checks them, every import form, indirect ones too
    # (tests/unit/api/test_public_api.py runs it): these modules must stay among its sources.
    contract = next(c for c in importlinter_config()["contracts"] if c["id"] == "pure-core")
    assert set(PURE) <= set(contract["source_modules"])


def test_attention_falls_with_position():
    user = ClickUser(eta=1.0)
    assert [user.examined(p) for p in range(3)] == [1.0, 1 / 2, 1 / 3]
    assert ClickUser(eta=0.0).examined(9) == 1.0
    with pytest.raises(InputError):
        ClickUser(click=(0.1, 1.5))


def test_a_perfect_user_clicks_every_relevant_hit_and_nothing_else():
    user = ClickUser(click=(0.0, 1.0), stop=(0.0, 0.0), eta=0.0)
    assert user.clicks(["a", "b", "c"], {"b": 1, "c": 3}, random.Random(0)) == [("b", 1), ("c", 2)]
    # a user who always stops after a relevant click never reaches c
    assert ClickUser(click=(0.0, 1.0), stop=(0.0, 1.0)).clicks(["a", "b", "c"], {"b": 1, "c": 1}, random.Random(0)) == [
        ("b", 1)
    ]


def test_click_rates_follow_position_and_grade():
    user, rng = ClickUser(click=(0.4, 0.9), stop=(0.0, 0.0), eta=1.0), random.Random(7)
    n = 20_000
    top = sum(bool(user.clicks(["r"], {"r": 1}, rng)) for _ in range(n)) / n
    assert top == pytest.approx(0.9, abs=0.01)  # looked at always (1/1), clicked 90%
    at_two = sum(("r", 1) in user.clicks(["x", "r"], {"r": 1}, rng) for _ in range(n)) / n
    assert at_two == pytest.approx(0.9 / 2, abs=0.015)  # looked at half the time
    noise = sum(("x", 0) in user.clicks(["x"], {}, rng) for _ in range(n)) / n
    assert noise == pytest.approx(0.4, abs=0.015)


def test_interleaving_prefers_the_ranking_that_puts_relevant_hits_first():
    qrels = {f"q{i}": {f"rel{i}": 1} for i in range(20)}
    good = {q: [f"rel{q[1:]}"] + [f"n{j}" for j in range(9)] for q in qrels}
    bad = {q: [f"n{j}" for j in range(9)] + [f"rel{q[1:]}"] for q in qrels}
    sessions = interleaved_sessions(bad, good, qrels, 400, seed=1)
    t = running(sessions)
    assert t.wins > t.losses and t.p_value < 0.05 and t.verdict == "candidate"
    assert sessions == interleaved_sessions(bad, good, qrels, 400, seed=1)  # seeded
    assert sessions_to_detect(sessions, step=10) is not None
    same = interleaved_sessions(good, good, qrels, 400, seed=2)
    assert running(same).verdict == "no difference"  # one ranking against itself: the coin splits its clicks
    with pytest.raises(InputError, match="both rankings"):
        interleaved_sessions({}, good, qrels, 10)


def test_sessions_to_detect_asks_the_result_to_hold_to_the_end():
    def s(outcome):
        return Session("q", (), (), (), outcome)

    # 10 wins: p = 2/1024 < 0.05 at 10; then 10 losses: 10-10, p = 1 at 20 -> not detected
    assert sessions_to_detect([s(Outcome.WIN)] * 10 + [s(Outcome.LOSS)] * 10, step=10) is None
    # 6 wins at 10 (with 4 ties): p = 2/64 = 0.031 -> detected at 10, and holds at 20 (12-0)
    assert sessions_to_detect(([s(Outcome.WIN)] * 6 + [s(Outcome.TIE)] * 4) * 2, step=10) == 10


def test_logged_sessions_read_back_as_the_pages_clicks_and_teams_shown():
    from adapter.traffic import report
    from adapter.traffic.calibrate import traffic_of
    from adapter.traffic.simulate import logged

    baseline = {"q1": ["a", "b", "c"], "q2": ["d", "e", "f"]}
    candidate = {"q1": ["c", "a", "b"], "q2": ["f", "e", "d"]}
    qrels = {"q1": {"c": 1}, "q2": {"d": 1, "f": 1}}
    sessions = interleaved_sessions(
        baseline, candidate, qrels, 40, user=ClickUser(click=(0.0, 1.0), stop=(0.0, 0.0)), k=3, seed=5
    )
    texts = {"q1": "Where is  my order", "q2": "refund"}
    queries, events = logged(sessions, texts, "docs", experiment=("rrf", "mm"))
    assert [q.hit_ids for q in queries] == [s.page for s in sessions] and {q.hybrid["index"] for q in queries} == {
        "docs"
    }
    by_id = {q.query_id: q for q in queries}
    joined = report.join(by_id, events)
    assert [joined.positions.get(q.query_id, ()) for q in queries] == [s.clicks for s in sessions]
    (experiment,) = report.experiments(by_id, joined)
    assert (experiment.baseline, experiment.candidate) == ("rrf", "mm") and experiment.tally == running(sessions)
    # every relevant hit shown is clicked and nothing else: the judgments are the labels, keyed by the normalised text
    traffic = traffic_of(queries, events, ("docs",), min_impressions=1)
    assert (
        traffic.searches == 40 and traffic.other_indices == 0 and traffic_of(queries, events, ("other",)).searches == 0
    )
    assert {key: {d for d, g in docs.items() if g > 0} for key, docs in traffic.qrels.items()} == {
        "where is my order": {"c"},
        "refund": {"d", "f"},
    }
    assert traffic.queries == {"where is my order": "Where is  my order", "refund": "refund"}
