"""Simulated users who click by a labelled set's relevance, to check interleaving and the click
model against the truth. Pure (``random`` with a seed: the same seed, the same clicks).

The user follows the position-based click model (Craswell, Zoeter, Taylor & Ramsey, "An
experimental comparison of click position-bias models", WSDM 2008): the hit at 0-based position
``p`` is looked at with probability ``(1 / (p + 1)) ** eta``, and a hit looked at is clicked with a
probability set by its grade. The grade probabilities follow the "informational" user of Hofmann,
Whiteson & de Rijke ("A probabilistic method for inferring preferences from clicks", CIKM 2011),
the noisy one their interleaving simulations use: a non-relevant hit is clicked 40% of the times it
is looked at, a relevant one 90%. Clicks are independent (several per page are possible).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapter.errors import InputError
from adapter.traffic.interleave import Outcome, Tally, credit, tally, team_draft


@dataclass(frozen=True)
class ClickUser:
    """``click[g]``: the chance a looked-at hit of grade ``g`` is clicked (grades above the last
    take the last); ``eta``: how fast attention falls with position."""

    click: tuple[float, ...] = (0.4, 0.9)
    eta: float = 1.0

    def __post_init__(self) -> None:
        if not self.click or any(not 0.0 <= p <= 1.0 for p in self.click):
            raise InputError(f"click probabilities must be in [0, 1], got {self.click}")
        if self.eta < 0:
            raise InputError(f"eta must be >= 0, got {self.eta}")

    def examined(self, position: int) -> float:
        return float((1.0 / (position + 1)) ** self.eta)

    def clicks(self, page: Sequence[str], grades: Mapping[str, int], rng: random.Random) -> list[tuple[str, int]]:
        """The (document, 0-based position) pairs this user clicks on ``page``."""
        out = []
        for p, doc in enumerate(page):
            g = min(max(int(grades.get(doc, 0)), 0), len(self.click) - 1)
            if rng.random() < self.examined(p) and rng.random() < self.click[g]:
                out.append((doc, p))
        return out


@dataclass(frozen=True)
class Session:
    """One simulated search: the query, the page shown, its teams, and the clicks."""

    query: str
    page: tuple[str, ...]
    teams: tuple[str, ...]
    clicks: tuple[tuple[str, int], ...]
    outcome: Outcome


def interleaved_sessions(baseline: Mapping[str, Sequence[str]], candidate: Mapping[str, Sequence[str]],
                         qrels: Mapping[str, Mapping[str, int]], sessions: int, *, user: ClickUser = ClickUser(),
                         k: int = 10, seed: int = 0) -> list[Session]:
    """``sessions`` searches, each of a query drawn uniformly from ``qrels``, shown the team draft of
    the two rankings (query -> ids best first) and clicked by ``user``."""
    queries = sorted(q for q in qrels if q in baseline and q in candidate)
    if not queries:
        raise InputError("no judged query has both rankings")
    rng = random.Random(seed)
    out = []
    for _ in range(sessions):
        q = rng.choice(queries)
        page = team_draft(baseline[q], candidate[q], k, rng)
        clicked = user.clicks(page.ids, qrels[q], rng)
        outcome = credit(page, [d for d, _ in clicked]).outcome
        out.append(Session(q, page.ids, tuple(t.value for t in page.teams), tuple(clicked), outcome))
    return out


def sessions_to_detect(sessions: Sequence[Session], *, alpha: float = 0.05, step: int = 10) -> int | None:
    """The fewest sessions (a multiple of ``step``) after which the sign test has p < ``alpha`` and
    stays below it to the end of ``sessions``; None if it never does. (Looking at every step and
    stopping at the first is optional stopping, which inflates false positives: this asks for the
    point from which the result holds, a stricter reading.)"""
    found = None
    counts = {o: 0 for o in Outcome}
    for n, session in enumerate(sessions, start=1):
        counts[session.outcome] += 1
        if n % step:
            continue
        significant = Tally(counts[Outcome.WIN], counts[Outcome.LOSS], counts[Outcome.TIE]).p_value < alpha
        if significant and found is None:
            found = n
        elif not significant:
            found = None
    return found


def running(sessions: Sequence[Session]) -> Tally:
    return tally(s.outcome for s in sessions)
