"""Graded judgments from clicks: COEC, clicks over expected clicks. Pure.

COEC (Zhang & Jones, "Comparing click logs and editorial labels for training query rewriting",
WWW 2007 workshop on query log analysis; the implicit judgments of OpenSearch's Search Relevance
Workbench, ``CoecClickModel``): users click the top of a page more whatever it holds, so a click is
weighed against the clicks that position earns on average.

1. Per position p, the click-through rate over every search: ``ctr[p] = clicks at p / impressions at p``.
2. Per (query, document): its clicks ``c`` and its expected clicks ``E = sum of ctr[p]`` over each
   time it was shown, at the position it was shown at. ``COEC = c / E`` (0 where ``E`` is 0).

A COEC of 1 is a document clicked as often as its positions predict; above 1, more. The workbench
multiplies one position (the lowest it saw) by the impressions; summing over the impressions, as
here, is the published definition and the same number when a document always sits at one position.

Grades for qrels (whole numbers, what ``hybrid eval`` reads) are the thresholds a COEC reaches:
with the default ``(1.0, 2.0)``, below 1 is 0, [1, 2) is 1, 2 and above is 2. Pairs shown fewer than
``min_impressions`` times are left out (unjudged), not graded 0: too few views say nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from adapter.errors import InputError

DEFAULT_THRESHOLDS = (1.0, 2.0)
DEFAULT_MIN_IMPRESSIONS = 3


@dataclass(frozen=True)
class Shown:
    """A document shown for a query at a 0-based ``position`` (an impression)."""

    query: str
    doc: str
    position: int


@dataclass(frozen=True)
class Judgment:
    """What the clicks say of one (query, document) pair."""

    query: str
    doc: str
    impressions: int
    clicks: int
    expected_clicks: float
    coec: float
    grade: int


def position_ctr(impressions: Iterable[Shown], clicks: Iterable[Shown]) -> dict[int, float]:
    """Clicks over impressions at each position (every search, every query)."""
    shown: dict[int, int] = defaultdict(int)
    clicked: dict[int, int] = defaultdict(int)
    for s in impressions:
        shown[s.position] += 1
    for c in clicks:
        clicked[c.position] += 1
    return {p: clicked[p] / n for p, n in sorted(shown.items())}


def grade(coec: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> int:
    """How many of the (increasing) ``thresholds`` ``coec`` reaches."""
    return sum(1 for t in thresholds if coec >= t)


def coec_judgments(
    impressions: Sequence[Shown],
    clicks: Sequence[Shown],
    *,
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> list[Judgment]:
    """COEC of every (query, document) shown at least ``min_impressions`` times, in query then
    document order. A click on a document that was never shown for its query is refused: the
    impressions and the clicks come from different logs, and the ratio would mean nothing."""
    if min_impressions < 1:
        raise InputError(f"min_impressions must be at least 1, got {min_impressions}")
    if list(thresholds) != sorted(thresholds) or any(t <= 0 for t in thresholds):
        raise InputError(f"grade thresholds must be positive and increasing, got {tuple(thresholds)}")
    ctr = position_ctr(impressions, clicks)
    expected: dict[tuple[str, str], float] = defaultdict(float)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for s in impressions:
        expected[s.query, s.doc] += ctr[s.position]
        seen[s.query, s.doc] += 1
    clicked: dict[tuple[str, str], int] = defaultdict(int)
    for click in clicks:
        if (click.query, click.doc) not in seen:
            raise InputError(
                f"a click on {click.doc!r} for the query {click.query!r}, which was never shown for it; "
                "the clicks and the impressions must come from the same log"
            )
        clicked[click.query, click.doc] += 1
    out = []
    for (query, doc), n in sorted(seen.items()):
        if n < min_impressions:
            continue
        e, c = expected[query, doc], clicked[query, doc]
        ratio = c / e if e > 0 else 0.0
        out.append(Judgment(query, doc, n, c, e, ratio, grade(ratio, thresholds)))
    return out


def as_qrels(judgments: Iterable[Judgment]) -> dict[str, dict[str, int]]:
    """query -> document -> grade, every judged pair (grade 0 included: judged not relevant)."""
    qrels: dict[str, dict[str, int]] = {}
    for j in judgments:
        qrels.setdefault(j.query, {})[j.doc] = j.grade
    return qrels


def as_ratings(judgments: Iterable[Judgment]) -> dict[str, dict[str, float]]:
    """query -> document -> COEC, as the workbench's implicit judgments rate them."""
    ratings: dict[str, dict[str, float]] = {}
    for j in judgments:
        ratings.setdefault(j.query, {})[j.doc] = j.coec
    return ratings


def judged_queries(judgments: Iterable[Judgment]) -> Mapping[str, int]:
    """query -> how many of its pairs were judged."""
    counts: dict[str, int] = defaultdict(int)
    for j in judgments:
        counts[j.query] += 1
    return dict(counts)
