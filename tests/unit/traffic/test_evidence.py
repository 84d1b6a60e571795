"""The rule that ships a fusion fitted from clicks, or keeps the running one, and the held-out split."""

import hashlib

import pytest

from adapter.errors import InputError
from adapter.traffic.evidence import HeldOut, Interleaved, decide, held_out, held_out_meta, interleaving_meta, split
from adapter.traffic.interleave import Tally

pytestmark = pytest.mark.unit


def live(wins, losses, ties=0):
    return Interleaved("index-default", "traffic-0a1b2c3d", Tally(wins, losses, ties))


def test_a_significant_held_out_gain_ships():
    decision = decide(HeldOut(30, 0.80, 0.86, 0.004), None)
    assert (
        decision.ship and "better on the held-out queries" in decision.reason and "0.8000 -> 0.8600" in decision.reason
    )


def test_a_gain_within_chance_is_kept():
    decision = decide(HeldOut(30, 0.80, 0.81, 0.2), None)
    assert not decision.ship and "within chance" in decision.reason and "p = 0.2" in decision.reason


def test_no_gain_is_kept_even_when_significant():
    # significantly worse is still a p below 0.05: the sign of the gain decides first
    decision = decide(HeldOut(30, 0.86, 0.80, 0.001), None)
    assert not decision.ship and "not better" in decision.reason


def test_the_policy_already_running_is_kept():
    decision = decide(HeldOut(30, 0.86, 0.86, 1.0), live(80, 20), same=True)
    assert not decision.ship and "already runs" in decision.reason


def test_a_significant_interleaving_verdict_decides_either_way():
    # 60 wins, 30 losses: sign test p = 2 * P(X <= 30 | n = 90) ~ 0.002
    better = decide(HeldOut(30, 0.86, 0.85, 0.7), live(60, 30, 10))
    assert better.ship and "users preferred the candidate" in better.reason and "60 wins, 30 losses" in better.reason
    worse = decide(HeldOut(30, 0.80, 0.90, 0.001), live(30, 60, 10))
    assert not worse.ship and "users preferred the running fusion" in worse.reason


def test_an_undecided_interleaving_run_leaves_it_to_the_held_out_split():
    # 11 wins, 9 losses: p = 0.82, no verdict; the held-out split then decides
    assert live(11, 9).tally.p_value > 0.05
    assert decide(HeldOut(30, 0.80, 0.86, 0.004), live(11, 9)).ship
    assert not decide(HeldOut(30, 0.80, 0.81, 0.3), live(11, 9)).ship


def test_without_a_held_out_split_or_a_verdict_it_is_kept():
    decision = decide(None, None)
    assert not decision.ship and "too few judged queries" in decision.reason


def test_the_split_is_a_hash_of_the_text_and_stable():
    keys = [f"consulta {n}" for n in range(2000)]
    fit, out = split(keys, 0.3)
    assert sorted(fit + out) == sorted(keys) and not set(fit) & set(out)
    assert 0.25 < len(out) / len(keys) < 0.35  # a fraction of a uniform hash
    assert split(reversed(keys), 0.3)[1] == list(reversed(out))  # the same side whatever the order
    key = "¿cómo devuelvo un pedido?"
    fraction = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    assert held_out(key, 0.3) == (fraction < 0.3)


@pytest.mark.parametrize("share", [0, 1, -0.1, 1.5])
def test_a_held_out_share_outside_zero_one_is_refused(share):
    with pytest.raises(InputError, match="between 0 and 1"):
        held_out("q", share)


def test_the_evidence_as_meta():
    assert held_out_meta(HeldOut(30, 0.8, 0.86, 0.004)) == {
        "queries": 30,
        "ndcg@10_old": 0.8,
        "ndcg@10_new": 0.86,
        "p_value": 0.004,
    }
    meta = interleaving_meta(live(60, 30, 10))
    assert (
        meta["searches"] == 100
        and meta["verdict"] == "candidate"
        and meta["delta"] == pytest.approx((60 + 5) / 100 - 0.5)
    )
    assert held_out_meta(None) is None and interleaving_meta(None) is None
