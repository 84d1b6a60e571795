"""Whether a fusion fitted from clicks replaces the one an index runs: the evidence and the rule. Pure.

``hybrid calibrate --from-traffic`` (:mod:`adapter.traffic.calibrate`) fits a candidate from the click
judgments and asks this module whether to ship it. Two kinds of evidence, the stronger first:

1. An interleaving run of the candidate against the running fusion (team draft over live users,
   :mod:`adapter.traffic.interleave`): its sign test below :data:`ALPHA` decides, either way.
2. The judgments' held-out split: queries the fit never saw, each scored by nDCG@10 under the
   running fusion and under the candidate. The candidate ships when its mean is higher and the paired
   randomization test (:mod:`adapter.evaluation.significance`; Smucker, Allan & Carterette 2007) puts
   the two-sided p below :data:`ALPHA`.

Anything else keeps the running fusion: "not worse" is no reason to change what users get. The split is
chosen by a hash of each query's text (:func:`held_out`), so a query stays on its side from one run to
the next and a candidate is never scored on what it was fitted on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adapter.errors import InputError
from adapter.traffic.interleave import ALPHA
from adapter.traffic.report import Experiment

MIN_HELD_OUT = 10  # queries: fewer say nothing a test could trust
MIN_TRAIN = 10  # queries the fit needs (two folds of five)


def check_share(share: float) -> None:
    if not 0 < share < 1:
        raise InputError(f"the held-out share must be between 0 and 1 (e.g. 0.3), got {share}")


def held_out(key: str, share: float) -> bool:
    """Whether the query ``key`` (its normalised text) is in the held-out ``share`` of the judgments:
    the first 8 bytes of its SHA-256 read as a fraction below ``share``."""
    check_share(share)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64 < share


def split(keys: Iterable[str], share: float) -> tuple[list[str], list[str]]:
    """``keys`` as (fit on, held out), each in the order given."""
    fit: list[str] = []
    out: list[str] = []
    for key in keys:
        (out if held_out(key, share) else fit).append(key)
    return fit, out


@dataclass(frozen=True)
class HeldOut:
    """The running fusion and the candidate on the held-out queries: mean nDCG@10 and the paired test."""

    queries: int
    old: float
    new: float
    p_value: float  # two-sided paired randomization test of new - old per query

    @property
    def gain(self) -> float:
        return self.new - self.old


# An interleaving run of this candidate against the running fusion: the experiment ``hybrid traffic report`` tallies.
Interleaved = Experiment


@dataclass(frozen=True)
class Decision:
    ship: bool
    reason: str  # one sentence for people: what the evidence said


def decide(
    held: HeldOut | None, interleaved: Interleaved | None, *, same: bool = False, alpha: float = ALPHA
) -> Decision:
    """Ship the candidate or keep the running fusion (the module docstring's rule). ``same``: the fit
    found the policy the index already runs (nothing to ship); ``held``: None when the split is too small."""
    if same:
        return Decision(False, "the fit found the policy the index already runs")
    if interleaved is not None and interleaved.tally.p_value < alpha:
        t = interleaved.tally
        counts = f"{t.wins} wins, {t.losses} losses, {t.ties} ties over {t.searches} interleaved searches, "
        counts += f"p = {t.p_value:.3g}"
        if t.wins > t.losses:
            return Decision(True, f"users preferred the candidate: {counts}")
        return Decision(False, f"users preferred the running fusion: {counts}")
    if held is None:
        return Decision(
            False,
            f"too few judged queries for a held-out split of {MIN_HELD_OUT} and no interleaving verdict: "
            "log more traffic",
        )
    scores = f"held-out nDCG@10 {held.old:.4f} -> {held.new:.4f} over {held.queries} queries, p = {held.p_value:.3g}"
    if held.gain <= 0:
        return Decision(False, f"the candidate is not better on the held-out queries ({scores})")
    if held.p_value >= alpha:
        return Decision(
            False,
            f"the candidate's gain on the held-out queries is within chance ({scores}; it ships below p = {alpha:g})",
        )
    return Decision(True, f"the candidate is better on the held-out queries ({scores})")


def interleaving_meta(found: Interleaved | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {**found.as_json(), "delta": round(found.tally.delta, 6)}


def held_out_meta(held: HeldOut | None) -> Mapping[str, Any] | None:
    if held is None:
        return None
    return {
        "queries": held.queries,
        "ndcg@10_old": round(held.old, 6),
        "ndcg@10_new": round(held.new, 6),
        "p_value": held.p_value,
    }
