"""Choosing the product's default fusion by leave-one-set-out regret. Pure: numbers in, choice out.

The default must hold on data nobody tuned for, so it is judged by its *loss* on each labelled
set, not by its mean: a set's **regret** for a candidate row is the best untuned alternative of
that set's own run minus the candidate's nDCG@10 (a candidate that beats them all has a negative
regret). The alternatives are every fixed untuned fusion (the server fusions at their default
weights: min_max, l2, z_score, geometric/harmonic means, RRF) and each leg alone: a default that
loses to BM25 alone made search worse for a user who turned hybrid on, whatever the fusions did. The default is the
candidate with the smallest **worst-case** regret over the sets, then the best mean regret, then the earlier
candidate (the simpler one).

That choice is itself checked the way it will be used, on a set it never saw: for each set,
the rule is applied to the *other* sets and the row it picks is scored on the held-out one
(:func:`leave_one_out`). A candidate whose parameters were fitted on labelled sets must come
with rows fitted without the set they are reported on (the offline study of docs/EVALUATION.md
does that); a fixed fusion has nothing to fit.

**Noise** (issue 31; docs/EVALUATION.md, "The rule"): where the sets carry each row's nDCG@10 per
query, a regret comes with its standard error (the bootstrap over the set's queries of the paired
difference with the reference row), and candidates whose worst case is within one paired standard
error of the best worst case are **tied**: the smallest mean regret decides among them. Issue 18's
rule chose by 0.003 of worst-case regret on sets of 35 queries, which held-out sets then reversed.

Which candidates a cluster can run differs (z_score needs OpenSearch 3.0+; Elasticsearch on a
basic licence runs only the score sum or client fusion), so the rule is applied per
:class:`ClusterKind` to the candidates that kind runs. Which kind a cluster is, its engine declares
(:func:`adapter.engines.engine.measured_kind`); an engine that declares none fuses in the client.
"""

from __future__ import annotations

import enum
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

from adapter.errors import AssetError

HYBRID_PREFIX = "hybrid-"
ADAPTIVE_ROW = "hybrid-adaptive"
CLIENT_ONLY_ROWS = ("client-dbsf",)  # fusions no engine runs: candidates only where the fusion runs in the client
RESAMPLES = 2000  # bootstrap resamples of each set's queries (docs/EVALUATION.md, "The rule")
SEED = 31


class ClusterKind(str, enum.Enum):
    """The fusion vocabularies the default is measured for (an engine says which is its clusters')."""

    OPENSEARCH_3 = "opensearch-3"  # min_max, l2, z_score (3.0+), the three means, RRF
    OPENSEARCH_2 = "opensearch-2"  # no z_score
    ELASTICSEARCH = "elasticsearch"  # basic licence: the score sum server-side, any fusion client-side
    # Every fusion in the client with the server's formula, none on the server: an engine that runs no
    # fusion server-side, or declares no kind of its own.
    CLIENT = "client"


def fixed_rows(rows: Mapping[str, float]) -> list[str]:
    """The fixed untuned fusions among a run's rows (``hybrid-<normalisation>-<combination>`` at the
    run's default weights, ``hybrid-rrf``, Elasticsearch's ``hybrid-sum`` and ``client-rrf``): what a
    user gets without choosing."""
    out = []
    for name in rows:
        if name in ("hybrid-sum", "client-rrf", *CLIENT_ONLY_ROWS):
            out.append(name)
            continue
        if not name.startswith(HYBRID_PREFIX) or "+" in name:
            continue
        rest = name[len(HYBRID_PREFIX) :]
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
        # its own, DBSF too: the fusion already runs in the client there). Not the policy's z_score
        # form: the policy's base follows the cluster's z_score capability, which Elasticsearch does
        # not report, so it runs the min_max form there.
        return not z_form_adaptive(row)
    if kind is ClusterKind.CLIENT:
        # As on Elasticsearch, less the score sum: it adds raw scores whose scales are each engine's own
        # (BM25 unbounded, the similarity's range), so a sum measured on one engine says nothing of another's.
        return row != "hybrid-sum" and not z_form_adaptive(row)
    if row in ("hybrid-sum", "client-rrf", *CLIENT_ONLY_ROWS):
        return False  # the fusion stays on the server: a bare hybrid query from any client gets it
    if kind is ClusterKind.OPENSEARCH_2:
        return "z_score" not in row and not z_form_adaptive(row)
    return True


def z_form_adaptive(row: str) -> bool:
    """A row of the adaptive policy on z_score (``hybrid-adaptive``, ``hybrid-adaptive-issue18``), not its min_max
    form."""
    return row.startswith(ADAPTIVE_ROW) and not row.endswith("-min_max")


@dataclass(frozen=True)
class SetRun:
    """One labelled set's run: each row's nDCG@10 on a split nothing was tuned on."""

    name: str
    rows: Mapping[str, float]
    # Each row's nDCG@10 per query, the queries in one order for every row (the standard errors need
    # them; without them a regret has none and nothing is tied).
    per_query: Mapping[str, Sequence[float]] = field(default_factory=dict)

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
    def reference_row(self) -> str:
        """The best untuned alternative: the best fixed fusion or the better leg, whichever scored more."""
        (fixed, value), (leg, leg_value) = self.best_fixed, self.best_leg
        return fixed if value >= leg_value else leg

    @property
    def reference(self) -> float:
        return self.rows[self.reference_row]

    def regret(self, row: str) -> float:
        """The best untuned alternative minus ``row`` (positive: ``row`` lost)."""
        return self.reference - self.rows[row]

    @property
    def noisy(self) -> bool:
        """Whether every row has its per-query values (so regrets have standard errors)."""
        return bool(self.per_query) and all(r in self.per_query for r in self.rows)

    def differences(self, row: str) -> np.ndarray:
        """Per query, the reference row's nDCG@10 minus ``row``'s (what a regret averages)."""
        diff: np.ndarray = np.asarray(self.per_query[self.reference_row], dtype=float) - np.asarray(
            self.per_query[row], dtype=float
        )
        return diff


@lru_cache(maxsize=64)
def bootstrap_weights(name: str, queries: int, resamples: int = RESAMPLES) -> np.ndarray:
    """The bootstrap's weights for one set: ``resamples`` x ``queries``, each row how often each query
    was drawn over ``queries`` (so a row times the per-query values is a resampled mean). Seeded by the
    set's name, so a set is drawn alike whichever other sets are in the comparison (leave one out)."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode("utf-8"))])
    return (rng.multinomial(queries, np.full(queries, 1.0 / queries), size=resamples) / queries).astype(np.float64)


def regret_draws(run: SetRun, row: str) -> np.ndarray:
    """``row``'s regret on ``run`` in each bootstrap resample of the set's queries."""
    diffs = run.differences(row)
    drawn: np.ndarray = bootstrap_weights(run.name, len(diffs)) @ diffs
    return drawn


def standard_error(run: SetRun, row: str) -> float:
    """The bootstrap standard error of ``row``'s regret on ``run`` (paired: the same queries resampled
    for the row and the reference); 0 without per-query values."""
    if not run.noisy:
        return 0.0
    return float(np.std(regret_draws(run, row), ddof=1))


@dataclass(frozen=True)
class Score:
    """A candidate over sets: its regret on each, worst and mean."""

    row: str
    regrets: Mapping[str, float]
    errors: Mapping[str, float] = field(default_factory=dict)  # each regret's standard error (empty: not measured)
    tie_error: float | None = None  # the paired standard error of its worst case minus the best candidate's
    tied: bool = False  # within one tie_error of the best worst case: the mean decides among these

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
    """Every candidate measured on every set, with its regrets and their standard errors (candidates
    missing a set are left out)."""
    return [
        Score(c, {s.name: s.regret(c) for s in sets}, {s.name: standard_error(s, c) for s in sets if s.noisy})
        for c in candidates
        if all(c in s.rows for s in sets)
    ]


def worst_draws(sets: Sequence[SetRun], row: str) -> np.ndarray:
    """``row``'s worst-case regret over ``sets`` in each resample (each set's queries drawn independently)."""
    worst: np.ndarray = np.max(np.stack([regret_draws(s, row) for s in sets]), axis=0)
    return worst


def with_ties(sets: Sequence[SetRun], measured: Sequence[Score], best: Score) -> list[Score]:
    """``measured`` with each one's paired standard error against ``best`` and whether it is tied with it."""
    if not all(s.noisy for s in sets):
        return [Score(m.row, m.regrets, m.errors, None, m.row == best.row) for m in measured]
    reference = worst_draws(sets, best.row)
    out = []
    for m in measured:
        error = float(np.std(worst_draws(sets, m.row) - reference, ddof=1)) if m.row != best.row else 0.0
        out.append(Score(m.row, m.regrets, m.errors, error, m.worst - best.worst <= error + 1e-12))
    return out


def ranked(sets: Sequence[SetRun], candidates: Sequence[str]) -> list[Score]:
    """Every candidate measured on every set, the chosen one first: the smallest worst-case regret
    (``c*``); then every candidate within one paired standard error of it is tied, and the tied one
    with the smallest mean regret is chosen (then the earlier candidate)."""
    if not sets:
        raise AssetError("no measured sets to choose the default from")
    measured = scores(sets, candidates)
    if not measured:
        raise AssetError(f"no candidate ({', '.join(candidates)}) was measured on every set")
    order = list(candidates)
    best = min(measured, key=lambda s: _key(s, order))
    marked = with_ties(sets, measured, best)
    return sorted(marked, key=lambda s: (not s.tied, round(s.mean, 4) if s.tied else 0.0, _key(s, order)))


def choose(sets: Sequence[SetRun], candidates: Sequence[str]) -> Score:
    """The rule (module docstring, docs/EVALUATION.md): among the candidates tied with the smallest
    worst-case regret, the smallest mean regret."""
    return ranked(sets, candidates)[0]


@dataclass(frozen=True)
class HeldOut:
    """The rule applied without one set, and what its pick lost on that set."""

    held_out: str
    chosen: str  # the row chosen on the other sets
    regret: float  # its regret on the held-out set
    error: float = 0.0  # that regret's standard error


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
        out.append(HeldOut(s.name, pick, s.regret(pick), standard_error(s, pick)))
    return out


def candidates_for(kind: ClusterKind, candidates: Sequence[str]) -> list[str]:
    return [c for c in candidates if runs_on(c, kind)]


def as_run_on(run: SetRun, kind: ClusterKind) -> SetRun:
    """The set's run as a cluster of ``kind`` would have it: the legs and the rows it runs."""
    keep = [r for r in run.rows if r in ("bm25", "dense") or runs_on(r, kind)]
    return SetRun(run.name, {r: run.rows[r] for r in keep}, {r: run.per_query[r] for r in keep if r in run.per_query})


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
