"""Choosing the product's default fusion by leave-one-set-out regret. Pure: numbers in, choice out.

The default must hold on data nobody tuned for, so it is judged by its *loss* on each labelled
set, not by its mean: a set's **regret** for a candidate row is the best untuned alternative of
that set's own run minus the candidate's nDCG@10 (a candidate that beats them all has a negative
regret). The alternatives are every fixed untuned fusion (the server fusions at their default
weights: min_max, l2, z_score, geometric/harmonic means, RRF) and each leg alone: a default that
loses to BM25 alone made search worse for a user who turned hybrid on, whatever the fusions did. The default is the candidate with the
smallest **worst-case** regret over the sets, then the best mean regret, then the earlier
candidate (the simpler one).

That choice is itself checked the way it will be used, on a set it never saw: for each set,
the rule is applied to the *other* sets and the row it picks is scored on the held-out one
(:func:`leave_one_out`). A candidate whose parameters were fitted on labelled sets must come
with rows fitted without the set they are reported on (the offline study of docs/EVALUATION.md
does that); a fixed fusion has nothing to fit.

Which candidates a cluster can run differs (z_score needs OpenSearch 3.0+; Elasticsearch on a
basic licence runs only the score sum or client fusion), so the rule is applied per
:class:`ClusterKind` to the candidates that kind runs.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping, Sequence

from adapter.errors import AssetError

HYBRID_PREFIX = "hybrid-"
ADAPTIVE_ROW = "hybrid-adaptive"


class ClusterKind(str, enum.Enum):
    """The fusion vocabularies of the clusters the product runs on."""

    OPENSEARCH_3 = "opensearch-3"  # min_max, l2, z_score (3.0+), the three means, RRF
    OPENSEARCH_2 = "opensearch-2"  # no z_score
    ELASTICSEARCH = "elasticsearch"  # basic licence: the score sum server-side, any fusion client-side


def fixed_rows(rows: Mapping[str, float]) -> list[str]:
    """The fixed untuned fusions among a run's rows (``hybrid-<normalisation>-<combination>`` at the
    run's default weights, ``hybrid-rrf``, Elasticsearch's ``hybrid-sum`` and ``client-rrf``): what a
    user gets without choosing."""
    out = []
    for name in rows:
        if name in ("hybrid-sum", "client-rrf"):
            out.append(name)
            continue
        if not name.startswith(HYBRID_PREFIX) or "+" in name:
            continue
        rest = name[len(HYBRID_PREFIX):]
        if rest == "rrf" or rest.split("-")[0] in ("min_max", "l2", "z_score"):
            out.append(name)
    return out


def runs_on(row: str, kind: ClusterKind) -> bool:
    """Whether a cluster of ``kind`` runs a candidate row (by its name, as ``hybrid eval`` names rows).

    The adaptive policy's two forms are measured on 3.x: ``hybrid-adaptive`` on z_score, which 2.19
    cannot run, and ``hybrid-adaptive-min_max``, which both can."""
    if kind is ClusterKind.ELASTICSEARCH:
        # The searcher fuses in the client whatever the licence does not run server-side, with the
        # server's formulas: every fixed row measured on OpenSearch is what it gets (and the sum is
        # its own). Not the policy's z_score form: the policy's base follows the cluster's z_score
        # capability, which Elasticsearch does not report, so it runs the min_max form there.
        return row != ADAPTIVE_ROW
    if row in ("hybrid-sum", "client-rrf"):
        return False
    if kind is ClusterKind.OPENSEARCH_2:
        return "z_score" not in row and row != ADAPTIVE_ROW
    return True


@dataclass(frozen=True)
class SetRun:
    """One labelled set's run: each row's nDCG@10 on a split nothing was tuned on."""

    name: str
    rows: Mapping[str, float]

    @property
    def best_fixed(self) -> tuple[str, float]:
        fixed = fixed_rows(self.rows)
        if not fixed:
            raise AssetError(f"{self.name}: no fixed untuned fusion row to measure regret against")
        best = max(fixed, key=lambda r: (self.rows[r], -fixed.index(r)))
        return best, self.rows[best]

    @property
    def best_leg(self) -> tuple[str, float]:
        legs = [r for r in ("bm25", "dense") if r in self.rows]
        if not legs:
            raise AssetError(f"{self.name}: no bm25 or dense row")
        best = max(legs, key=lambda r: self.rows[r])
        return best, self.rows[best]

    @property
    def reference(self) -> float:
        """The best untuned alternative: the best fixed fusion or the better leg, whichever scored more."""
        return max(self.best_fixed[1], self.best_leg[1])

    def regret(self, row: str) -> float:
        """The best untuned alternative minus ``row`` (positive: ``row`` lost)."""
        return self.reference - self.rows[row]


@dataclass(frozen=True)
class Score:
    """A candidate over sets: its regret on each, worst and mean."""

    row: str
    regrets: Mapping[str, float]

    @property
    def worst(self) -> float:
        return max(self.regrets.values())

    @property
    def mean(self) -> float:
        return sum(self.regrets.values()) / len(self.regrets)


def _key(score: Score, order: Sequence[str]) -> tuple[float, float, int]:
    # Rounded so that a difference below the fourth decimal of nDCG@10 (noise) does not decide.
    return (round(score.worst, 4), round(score.mean, 4), order.index(score.row))


def scores(sets: Sequence[SetRun], candidates: Sequence[str]) -> list[Score]:
    """Every candidate measured on every set, with its regrets (candidates missing a set are left out)."""
    return [Score(c, {s.name: s.regret(c) for s in sets}) for c in candidates if all(c in s.rows for s in sets)]


def choose(sets: Sequence[SetRun], candidates: Sequence[str]) -> Score:
    """The candidate with the smallest worst-case regret, then the smallest mean regret."""
    if not sets:
        raise AssetError("no measured sets to choose the default from")
    measured = scores(sets, candidates)
    if not measured:
        raise AssetError(f"no candidate ({', '.join(candidates)}) was measured on every set")
    return min(measured, key=lambda s: _key(s, list(candidates)))


@dataclass(frozen=True)
class HeldOut:
    """The rule applied without one set, and what its pick lost on that set."""

    held_out: str
    chosen: str  # the row chosen on the other sets
    regret: float  # its regret on the held-out set


def leave_one_out(sets: Sequence[SetRun], candidates: Sequence[str]) -> list[HeldOut]:
    """For each set: the choice made on the others, scored on it (among the candidates measured on
    every set, so that the pick can be scored where it was not chosen)."""
    candidates = [c for c in candidates if all(c in s.rows for s in sets)]
    out = []
    for s in sets:
        rest = [o for o in sets if o.name != s.name]
        if not rest:
            continue
        pick = choose(rest, candidates).row
        out.append(HeldOut(s.name, pick, s.regret(pick)))
    return out


def candidates_for(kind: ClusterKind, candidates: Sequence[str]) -> list[str]:
    return [c for c in candidates if runs_on(c, kind)]


def as_run_on(run: SetRun, kind: ClusterKind) -> SetRun:
    """The set's run as a cluster of ``kind`` would have it: the legs and the rows it runs."""
    return SetRun(run.name, {r: v for r, v in run.rows.items() if r in ("bm25", "dense") or runs_on(r, kind)})


def default_rows(sets: Sequence[SetRun], candidates: Sequence[str]) -> dict[str, str]:
    """The chosen row per cluster kind, its regret measured against the fixed fusions that kind
    runs (kinds with no candidate and no fixed fusion measured on every set are absent)."""
    out = {}
    for kind in ClusterKind:
        runs = [as_run_on(s, kind) for s in sets]
        mine = candidates_for(kind, candidates)
        if all(fixed_rows(r.rows) for r in runs) and scores(runs, mine):
            out[kind.value] = choose(runs, mine).row
    return out
