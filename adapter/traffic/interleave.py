"""Team-draft interleaving of two rankings, click credit, and the sign test over its outcomes. Pure.

Team-draft interleaving (Radlinski, Kurup & Joachims, "How does clickthrough data reflect retrieval
quality?", CIKM 2008, Algorithm 2): the two rankers pick in turns, as captains pick players; the
team with fewer picks goes next, a fair coin breaks the tie, and each pick is the picker's best
document not yet on the page. Each document on the page remembers which team put it there. A
search's outcome is the team with more clicked documents (a tie when equal, zero clicks included).

Over many searches the candidate's wins and losses are compared by a two-sided sign (binomial)
test over the non-tied searches (Dixon & Mood 1946), as Chapelle, Joachims, Radlinski & Yue
("Large-scale validation and analysis of interleaved search evaluation", TOIS 2012) analyse
interleaving; their Δ = (wins + ties / 2) / n - 1/2 is reported beside it as the effect size.
Each search counts once: the test assumes searches independent, which repeated searches of one user
are not quite (a caution for the report's reader, not a correction made here).
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from adapter.errors import InputError

ALPHA = 0.05


class Team(str, enum.Enum):
    """Which ranker put a document on the page: ``baseline`` (what runs now) or ``candidate``."""

    BASELINE = "baseline"
    CANDIDATE = "candidate"


class Outcome(str, enum.Enum):
    """One search, from the candidate's side."""

    WIN = "win"
    LOSS = "loss"
    TIE = "tie"


@dataclass(frozen=True)
class Interleaving:
    """The page shown (``ids``, best first) and the team of each position (``teams[i]`` for ``ids[i]``)."""

    ids: tuple[str, ...]
    teams: tuple[Team, ...]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.teams):
            raise InputError(f"an interleaving needs one team per id: {len(self.ids)} ids, {len(self.teams)} teams")
        if len(set(self.ids)) != len(self.ids):
            raise InputError("an interleaving shows each document once")

    def team_of(self, doc_id: str) -> Team | None:
        """The team that put ``doc_id`` on the page (None: it was not shown)."""
        try:
            return self.teams[self.ids.index(doc_id)]
        except ValueError:
            return None


def team_draft(baseline: Sequence[str], candidate: Sequence[str], k: int, rng: random.Random) -> Interleaving:
    """Radlinski et al.'s team draft of the two rankings (best first) into a page of at most ``k``.

    When one ranking runs out of new documents the other fills the rest of the page, each pick
    credited to its own team (the published algorithm stops there; a short page would be worse for
    users than a page whose tail belongs to one team). ``rng`` flips the coins: the same seed gives
    the same page."""
    if k < 1:
        raise InputError(f"an interleaving needs k >= 1, got {k}")
    lists = {Team.BASELINE: list(dict.fromkeys(baseline)), Team.CANDIDATE: list(dict.fromkeys(candidate))}
    cursor = {Team.BASELINE: 0, Team.CANDIDATE: 0}
    picks = {Team.BASELINE: 0, Team.CANDIDATE: 0}
    ids: list[str] = []
    teams: list[Team] = []
    shown: set[str] = set()

    def next_new(team: Team) -> str | None:
        ranking = lists[team]
        while cursor[team] < len(ranking) and ranking[cursor[team]] in shown:
            cursor[team] += 1
        return ranking[cursor[team]] if cursor[team] < len(ranking) else None

    while len(ids) < k:
        offers = {team: doc for team in Team if (doc := next_new(team)) is not None}
        if not offers:
            break
        if len(offers) == 1:
            team = next(iter(offers))
        elif picks[Team.BASELINE] != picks[Team.CANDIDATE]:
            team = min(Team, key=lambda t: picks[t])
        else:
            team = Team.BASELINE if rng.random() < 0.5 else Team.CANDIDATE
        doc = offers[team]
        ids.append(doc)
        teams.append(team)
        shown.add(doc)
        picks[team] += 1
    return Interleaving(tuple(ids), tuple(teams))


@dataclass(frozen=True)
class Credit:
    """Clicked documents of one search, per team (clicks on documents not on the page are ignored)."""

    baseline: int
    candidate: int

    @property
    def outcome(self) -> Outcome:
        if self.candidate > self.baseline:
            return Outcome.WIN
        if self.candidate < self.baseline:
            return Outcome.LOSS
        return Outcome.TIE


def credit(page: Interleaving, clicked: Collection[str]) -> Credit:
    """Each clicked document counts once for the team that showed it."""
    counts = {Team.BASELINE: 0, Team.CANDIDATE: 0}
    for doc in set(clicked):
        team = page.team_of(doc)
        if team is not None:
            counts[team] += 1
    return Credit(counts[Team.BASELINE], counts[Team.CANDIDATE])


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial (sign) test of ``wins`` against ``losses`` at p = 1/2: the chance,
    were both rankers equally good, of a split at least this uneven. 1.0 with no decided search.

    The tail ``sum_{i <= min} C(n, i) / 2^n`` is summed from its largest term down, each term the
    one before times ``i / (n - i + 1)``, the first from :func:`math.lgamma` (so no scipy, and a
    report over 100,000 searches costs microseconds, not the seconds that exact big integers took);
    a unit test checks it against ``scipy.stats.binomtest``."""
    if wins < 0 or losses < 0:
        raise InputError(f"counts cannot be negative: {wins} wins, {losses} losses")
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    term = math.exp(math.lgamma(n + 1) - math.lgamma(low + 1) - math.lgamma(n - low + 1) - n * math.log(2))
    tail = 0.0
    for i in range(low, -1, -1):
        tail += term
        if term < tail * 1e-17:
            break
        term *= i / (n - i + 1)
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class Tally:
    """Wins, losses and ties of the candidate over a set of searches, and what they say."""

    wins: int
    losses: int
    ties: int

    @property
    def searches(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def p_value(self) -> float:
        """Two-sided sign test over the non-tied searches (:func:`sign_test`)."""
        return sign_test(self.wins, self.losses)

    @property
    def delta(self) -> float:
        """Chapelle et al.'s Δ: (wins + ties/2) / searches - 1/2; above 0 the candidate is preferred."""
        return (self.wins + self.ties / 2) / self.searches - 0.5 if self.searches else 0.0

    @property
    def verdict(self) -> str:
        """``candidate``, ``baseline`` or ``no difference`` at :data:`ALPHA`."""
        if self.p_value >= ALPHA:
            return "no difference"
        return Team.CANDIDATE.value if self.wins > self.losses else Team.BASELINE.value


def tally(outcomes: Iterable[Outcome]) -> Tally:
    counts = {o: 0 for o in Outcome}
    for outcome in outcomes:
        counts[Outcome(outcome)] += 1
    return Tally(counts[Outcome.WIN], counts[Outcome.LOSS], counts[Outcome.TIE])
