"""Label-free signals of how much each leg can be trusted, that do not grow or shrink with the
length of the query. Pure: the legs' ranked lists and the query's term statistics in, numbers out.

BM25's *match quality* (:func:`adapter.fusion.choice.policy.match_quality`) compares the best hit with an
ideal match of every analysed query term: a paragraph-long request scores low whatever BM25's
real strength, so it measures query length as much as leg strength (issue 18: it moved the
weight to the weaker dense leg on long natural-language requests). The signals here are ratios
per term or per rank instead:

- :func:`term_coverage`: the share of the query's distinct analysed terms that the index holds at
  all (document frequency > 0). A vocabulary gap (an inflected language without a stemmer,
  paraphrases of a small help centre) leaves query terms that BM25 can never match; a long
  request in the corpus's own words does not.
- :func:`overlap`: how many of one leg's top ``k`` the other leg also has in its top ``k``.
- :func:`rank_correlation`: Spearman's footrule agreement of the two legs over the union of their
  top ``k`` (1: the same order, 0: nothing in common).
- :func:`peakedness`: the top score's distance from the rest of its own list in standard
  deviations (scale-free: the same for BM25's unbounded scores and the vector leg's cosines).

A corpus is summarised by the median of each signal over a sample of its queries
(:func:`corpus_signals`), as :class:`adapter.fusion.choice.policy.Calibration` summarises match quality.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from adapter.fusion.choice.policy import FieldTerms

Run = Sequence[tuple[str, float]]  # (id, raw score), best first


def term_coverage(fields: Sequence[FieldTerms]) -> float | None:
    """The share of the query's distinct analysed terms that some query field holds (a document
    frequency above 0 there: BM25 matches a term in any of them); None without terms. In the fields
    layout the query fills title and text alike, so a term absent from titles still counts when
    bodies hold it."""
    held: dict[str, bool] = {}
    for f in fields:
        for term, _, df in f.terms:
            held[term] = held.get(term, False) or df > 0
    if not held:
        return None
    return sum(held.values()) / len(held)


def overlap(a: Run, b: Run, k: int = 10) -> float:
    """``|top_k(a) & top_k(b)| / k`` (0 when either leg returned nothing)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return len({d for d, _ in a[:k]} & {d for d, _ in b[:k]}) / k


def rank_correlation(a: Run, b: Run, k: int = 10) -> float:
    """1 minus Spearman's footrule distance of the legs over the union of their top ``k``,
    normalised by its maximum (a document absent from a leg's top ``k`` sits at rank ``k + 1``):
    1 for the same top ``k`` in the same order, 0 for disjoint lists."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ra = {d: i for i, (d, _) in enumerate(a[:k], start=1)}
    rb = {d: i for i, (d, _) in enumerate(b[:k], start=1)}
    union = set(ra) | set(rb)
    if not union:
        return 0.0
    distance = sum(abs(ra.get(d, k + 1) - rb.get(d, k + 1)) for d in union)
    # Disjoint top-k lists: each side's k documents are each (k + 1 - rank) away: 2 * sum(1..k).
    worst = k * (k + 1)
    return max(0.0, 1.0 - distance / worst)


def peakedness(run: Run) -> float | None:
    """``(top - mean) / sample std`` of the leg's scores (None with fewer than 3 or no spread)."""
    scores = [float(s) for _, s in run]
    if len(scores) < 3:
        return None
    std = statistics.stdev(scores)
    if std <= 0 or not math.isfinite(std):
        return None
    return (scores[0] - statistics.fmean(scores)) / std


@dataclass(frozen=True)
class QueryEvidence:
    """The length-independent signals of one query (None: not measurable for it)."""

    coverage: float | None
    overlap: float
    rank_correlation: float
    bm25_peak: float | None
    dense_peak: float | None
    terms: int  # distinct analysed terms, for the record (not an input of any weight)

    @classmethod
    def of(cls, fields: Sequence[FieldTerms], bm25: Run, dense: Run, k: int = 10) -> QueryEvidence:
        main = max(fields, key=lambda f: (len(f.terms), f.doc_count)) if fields else None
        return cls(
            term_coverage(fields),
            overlap(bm25, dense, k),
            rank_correlation(bm25, dense, k),
            peakedness(bm25),
            peakedness(dense),
            len({t for t, _, _ in main.terms}) if main else 0,
        )


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def corpus_signals(evidence: Sequence[QueryEvidence]) -> Mapping[str, float | None]:
    """The median of each signal over a sample of the corpus's queries."""
    return {
        "coverage": _median(e.coverage for e in evidence),
        "overlap": _median(e.overlap for e in evidence),
        "rank_correlation": _median(e.rank_correlation for e in evidence),
        "bm25_peak": _median(e.bm25_peak for e in evidence),
        "dense_peak": _median(e.dense_peak for e in evidence),
        "terms": _median(float(e.terms) for e in evidence),
    }
