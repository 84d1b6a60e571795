"""What the logged traffic says: interleaving outcomes per experiment, and the impressions and clicks
the click model reads. Pure: records in (:mod:`adapter.traffic.ubi`), values out.

Searches and events are joined by ``query_id``. A search's clicks are the distinct documents of
its page that received a ``click`` event; events without a ``query_id``, or whose query is not in
the records read (logged before the window, or dropped), are counted and left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adapter.traffic.clicks import Shown
from adapter.traffic.interleave import Outcome, Tally, credit, tally
from adapter.traffic.ubi import CLICK, Event, QueryRecord


@dataclass(frozen=True)
class Experiment:
    """One baseline against one candidate, over the interleaved searches that compared them."""

    baseline: str
    candidate: str
    tally: Tally

    def as_json(self) -> dict[str, Any]:
        """As ``hybrid traffic report --json`` writes it (a calibration's evidence too, its delta rounded)."""
        t = self.tally
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "searches": t.searches,
            "wins": t.wins,
            "losses": t.losses,
            "ties": t.ties,
            "delta": t.delta,
            "p_value": t.p_value,
            "verdict": t.verdict,
        }


@dataclass(frozen=True)
class Joined:
    """Each search's clicked documents, and the events that matched no search read."""

    clicks: Mapping[str, frozenset[str]]  # query_id -> clicked object ids on its page
    positions: Mapping[str, tuple[tuple[str, int], ...]]  # query_id -> (clicked object id, 0-based position), each once
    orphans: int  # click events with no query_id or no record of their query


def join(queries: Mapping[str, QueryRecord], events: Iterable[Event], *, actions: Collection[str] = (CLICK,)) -> Joined:
    clicks: dict[str, set[str]] = defaultdict(set)
    positions: dict[str, list[tuple[str, int]]] = defaultdict(list)
    orphans = 0
    for event in events:
        if event.action not in actions or event.object_id is None:
            continue
        record = queries.get(event.query_id or "")
        if record is None:
            orphans += 1
            continue
        position = event.position
        if position is None or position >= len(record.hit_ids) or record.hit_ids[position] != event.object_id:
            # the page says where the document was; a missing or contradicting ordinal defers to it
            position = record.hit_ids.index(event.object_id) if event.object_id in record.hit_ids else None
        if position is None:
            orphans += 1
            continue
        if event.object_id in clicks[record.query_id]:
            continue  # a document clicked twice on one page counts once
        clicks[record.query_id].add(event.object_id)
        positions[record.query_id].append((event.object_id, position))
    return Joined({q: frozenset(c) for q, c in clicks.items()}, {q: tuple(p) for q, p in positions.items()}, orphans)


def experiments(queries: Mapping[str, QueryRecord], joined: Joined) -> list[Experiment]:
    """Wins, losses and ties of each (baseline, candidate) pair over its interleaved searches."""
    outcomes: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for record in queries.values():
        spec = record.interleaving
        if spec is None:
            continue
        baseline, candidate, page = spec
        outcomes[baseline, candidate].append(credit(page, joined.clicks.get(record.query_id, frozenset())).outcome)
    return [Experiment(b, c, tally(o)) for (b, c), o in sorted(outcomes.items())]


def impressions_and_clicks(
    queries: Mapping[str, QueryRecord], joined: Joined, *, depth: int | None = None
) -> tuple[list[Shown], list[Shown]]:
    """The click model's input: every hit of every page read as an impression (the page is the
    query record's hit ids, so a page sends no ``impression`` events), and each search's clicked
    documents at their positions. ``depth``: only the first ``depth`` positions (the workbench's
    ``max_rank``)."""
    shown: list[Shown] = []
    clicked: list[Shown] = []
    for record in queries.values():
        key = record.key
        if not key:
            continue
        cut = record.hit_ids if depth is None else record.hit_ids[:depth]
        shown.extend(Shown(key, doc, p) for p, doc in enumerate(cut))
        for doc, p in joined.positions.get(record.query_id, ()):
            if depth is None or p < depth:
                clicked.append(Shown(key, doc, p))
    return shown, clicked
