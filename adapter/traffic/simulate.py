"""Simulated users who click by a labelled set's relevance, to check interleaving and the click
model against the truth. Pure (``random`` with a seed: the same seed, the same clicks).

A user reads the page from the top (the cascade of Craswell, Zoeter, Taylor & Ramsey, "An
experimental comparison of click position-bias models", WSDM 2008), looks at the hit at 0-based
position ``p`` with probability ``(1 / (p + 1)) ** eta`` (their position-based model; ``eta`` 0: every
hit reached is looked at), clicks a hit looked at with a probability set by its grade, and after a
click stops reading with a probability set by the clicked hit's grade. Position bias comes from
both the cascade and ``eta``; noise from clicks on non-relevant hits.

The presets are the users of Hofmann, Whiteson & de Rijke's interleaving simulations ("A
probabilistic method for inferring preferences from clicks", CIKM 2011; binary grades):
:data:`NAVIGATIONAL` (clicks 5% / 95% of non-relevant / relevant hits, stops 20% / 90% after them)
and :data:`INFORMATIONAL` (clicks 40% / 90%, stops 10% / 50%: the noisy one), both with ``eta`` 0
as there; :data:`POSITION_BIASED` is the informational user with ``eta`` 1 (attention halves by
position 2), the harder case.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapter.errors import InputError
from adapter.traffic import ubi
from adapter.traffic.interleave import Outcome, Tally, credit, tally, team_draft

SIMULATED_AT = "2026-01-02T03:04:05.000Z"  # every simulated record's timestamp (a decision reads no window)


@dataclass(frozen=True)
class ClickUser:
    """``click[g]`` / ``stop[g]``: the chance a looked-at hit of grade ``g`` is clicked, and that the
    user stops after clicking it (grades above the last take the last); ``eta``: how fast
    attention falls with position."""

    click: tuple[float, ...] = (0.4, 0.9)
    stop: tuple[float, ...] = (0.1, 0.5)
    eta: float = 0.0

    def __post_init__(self) -> None:
        for name, probs in (("click", self.click), ("stop", self.stop)):
            if not probs or any(not 0.0 <= p <= 1.0 for p in probs):
                raise InputError(f"{name} probabilities must be in [0, 1], got {probs}")
        if self.eta < 0:
            raise InputError(f"eta must be >= 0, got {self.eta}")

    def examined(self, position: int) -> float:
        return float((1.0 / (position + 1)) ** self.eta)

    def clicks(self, page: Sequence[str], grades: Mapping[str, int], rng: random.Random) -> list[tuple[str, int]]:
        """The (document, 0-based position) pairs this user clicks on ``page``, top down."""
        out = []
        for p, doc in enumerate(page):
            g = max(int(grades.get(doc, 0)), 0)
            if rng.random() < self.examined(p) and rng.random() < self.click[min(g, len(self.click) - 1)]:
                out.append((doc, p))
                if rng.random() < self.stop[min(g, len(self.stop) - 1)]:
                    break
        return out


NAVIGATIONAL = ClickUser(click=(0.05, 0.95), stop=(0.2, 0.9))
INFORMATIONAL = ClickUser(click=(0.4, 0.9), stop=(0.1, 0.5))
POSITION_BIASED = ClickUser(click=(0.4, 0.9), stop=(0.1, 0.5), eta=1.0)
USERS = {"navigational": NAVIGATIONAL, "informational": INFORMATIONAL, "position-biased": POSITION_BIASED}


@dataclass(frozen=True)
class Session:
    """One simulated search: the query, the page shown, its teams, and the clicks."""

    query: str
    page: tuple[str, ...]
    teams: tuple[str, ...]
    clicks: tuple[tuple[str, int], ...]
    outcome: Outcome


def interleaved_sessions(
    baseline: Mapping[str, Sequence[str]],
    candidate: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    sessions: int,
    *,
    user: ClickUser = INFORMATIONAL,
    k: int = 10,
    seed: int = 0,
) -> list[Session]:
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


def session_records(
    sessions: Sequence[Session],
    texts: Mapping[str, str],
    index: str,
    *,
    experiment: tuple[str, str] | None = None,
    prefix: str = "sim",
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each of ``sessions`` as a service writes it: its query record (the query's text from ``texts``; the index
    searched named ``index``; ``experiment``: the (baseline, candidate) an interleaved page compares) and its click
    events. Query ids are ``<prefix>-<n>``: a store keeps one record per id, so sessions logged into one store apart
    need prefixes of their own."""
    out = []
    for n, s in enumerate(sessions):
        query_id, client_id = f"{prefix}-{n}", f"user-{n % 97}"
        hybrid: dict[str, object] = {"index": index}
        if experiment:
            hybrid["interleaving"] = {"baseline": experiment[0], "candidate": experiment[1], "teams": list(s.teams)}
        query = ubi.query_record(
            query_id=query_id,
            client_id=client_id,
            user_query=texts[s.query],
            hit_ids=s.page,
            timestamp=SIMULATED_AT,
            hybrid=hybrid,
        )
        clicks = [
            ubi.click_event(
                query_id=query_id, client_id=client_id, object_id=doc, position=position, timestamp=SIMULATED_AT
            )
            for doc, position in s.clicks
        ]
        out.append((query, clicks))
    return out


def logged(
    sessions: Sequence[Session], texts: Mapping[str, str], index: str, *, experiment: tuple[str, str] | None = None
) -> tuple[list[ubi.QueryRecord], list[ubi.Event]]:
    """The records a service logs for ``sessions`` (:func:`session_records`), as a store reads them back: what
    :func:`adapter.traffic.calibrate.traffic_of` decides on without a node."""
    queries, events = [], []
    for query, clicks in session_records(sessions, texts, index, experiment=experiment):
        queries.append(ubi.parse_query(query))
        events += [ubi.parse_event(ubi.stored_event(click)) for click in clicks]
    return queries, events
