"""Team-draft interleaving, click credit and the sign test, with the arithmetic written out."""

import math
import random

import pytest

from adapter.errors import InputError
from adapter.traffic.interleave import Interleaving, Outcome, Tally, Team, credit, sign_test, tally, team_draft
from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit
B, C = Team.BASELINE, Team.CANDIDATE


class Coins(random.Random):
    """A coin that lands as told: random() < 0.5 is baseline first."""

    def __init__(self, flips):
        super().__init__(0)
        self.flips = list(flips)

    def random(self):
        return 0.0 if self.flips.pop(0) == "baseline" else 0.9


def test_team_draft_picks_in_turns_and_skips_what_is_shown():
    # Round 1: coin says baseline -> a (B), then candidate's best new is b (C).
    # Round 2: coin says candidate -> its next new is c (C); baseline's next new after a, b(shown) is c(shown) -> d (B).
    page = team_draft(["a", "b", "c", "d"], ["b", "c", "a", "e"], 4, Coins(["baseline", "candidate"]))
    assert page.ids == ("a", "b", "c", "d")
    assert page.teams == (B, C, C, B)


def test_the_team_behind_picks_next_without_a_coin():
    # equal (0-0): coin -> candidate picks x; 0-1: baseline picks a, no coin; equal (1-1): coin -> baseline picks b;
    # 2-1: candidate picks y, no coin. Two coins in all (a third flip would raise IndexError).
    page = team_draft(["a", "b"], ["x", "y"], 4, Coins(["candidate", "baseline"]))
    assert page.ids == ("x", "a", "b", "y") and page.teams == (C, B, B, C)


def test_a_ranking_that_runs_out_leaves_the_page_to_the_other():
    page = team_draft(["a"], ["a", "b", "c"], 3, Coins(["baseline"]))
    assert page.ids == ("a", "b", "c") and page.teams == (B, C, C)
    assert team_draft([], [], 5, random.Random(1)).ids == ()


def test_duplicates_in_a_ranking_are_shown_once():
    page = team_draft(["a", "a", "b"], ["a", "b"], 5, Coins(["baseline"]))
    assert page.ids == ("a", "b") and page.teams == (B, C)


def test_the_same_seed_gives_the_same_page_and_k_is_checked():
    one = team_draft(list("abcdefgh"), list("hgfedcba"), 6, random.Random("q1"))
    assert one == team_draft(list("abcdefgh"), list("hgfedcba"), 6, random.Random("q1"))
    assert sorted(t.value for t in one.teams).count("baseline") == 3  # equal halves on a page of 6
    with pytest.raises(InputError, match="k >= 1"):
        team_draft(["a"], ["b"], 0, random.Random(0))
    with pytest.raises(InputError, match="one team per id"):
        Interleaving(("a", "b"), (B,))


def test_clicks_are_credited_to_the_team_that_showed_them():
    page = Interleaving(("a", "b", "c", "d"), (B, C, C, B))
    assert credit(page, ["b", "c", "zz"]) == credit(page, ["b", "c", "c"])  # a repeat counts once; unknown ids none
    assert credit(page, ["b", "c"]).outcome is Outcome.WIN  # candidate 2, baseline 0
    assert credit(page, ["a", "c"]).outcome is Outcome.TIE  # 1 - 1
    assert credit(page, ["a", "d", "c"]).outcome is Outcome.LOSS  # baseline 2, candidate 1
    assert credit(page, []).outcome is Outcome.TIE


def test_the_sign_test_is_the_binomial_arithmetic():
    # 8 wins, 2 losses: P(X <= 2) for X ~ Bin(10, 1/2) = (1 + 10 + 45) / 1024; two-sided doubles it.
    assert sign_test(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert sign_test(2, 8) == sign_test(8, 2)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    with pytest.raises(InputError):
        sign_test(-1, 3)


@requires_extra("report")
def test_the_sign_test_is_scipys_binomtest():
    from scipy.stats import binomtest

    for wins, losses in ((8, 2), (30, 18), (61, 40), (0, 7), (120, 119), (2055, 1931), (30_000, 29_400), (3, 2500)):
        assert sign_test(wins, losses) == pytest.approx(
            binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-9, abs=1e-300
        )


def test_a_tally_says_delta_and_verdict():
    t = tally([Outcome.WIN] * 8 + [Outcome.LOSS] * 2 + [Outcome.TIE] * 10)
    assert (t.wins, t.losses, t.ties, t.searches) == (8, 2, 10, 20)
    assert t.delta == pytest.approx((8 + 10 / 2) / 20 - 0.5)  # 0.15
    assert t.p_value == pytest.approx(2 * 56 / 1024) and t.verdict == "no difference"  # 0.109
    strong = Tally(wins=15, losses=2, ties=0)
    assert strong.p_value == pytest.approx(2 * (1 + 17 + math.comb(17, 2)) / 2**17) and strong.verdict == "candidate"
    assert Tally(2, 15, 3).verdict == "baseline" and Tally(0, 0, 0).delta == 0.0
