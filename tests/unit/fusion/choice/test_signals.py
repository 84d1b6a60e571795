"""Length-independent signals (adapter.fusion.choice.signals) on hand-checked queries and legs."""

from __future__ import annotations

import math

import pytest

from adapter.fusion.choice.policy import FieldTerms, match_quality
from adapter.fusion.choice.signals import (
    QueryEvidence,
    corpus_signals,
    overlap,
    peakedness,
    rank_correlation,
    term_coverage,
)

pytestmark = pytest.mark.unit

N = 6000  # documents, as in LISA

# LISA's query 1 as the english analyzer leaves it (distinct stems; df measured on the corpus).
LONG = FieldTerms(
    "all_text",
    1.0,
    N,
    (
        ("interest", 2, 1200),
        ("identif", 1, 380),
        ("evalu", 1, 610),
        ("novel", 1, 40),
        ("comput", 2, 1500),
        ("architectur", 2, 25),
        ("instanc", 1, 90),
        ("increas", 1, 700),
        ("parallel", 1, 12),
        ("simd", 1, 1),
        ("mimd", 1, 1),
        ("machin", 1, 300),
        ("also", 1, 900),
        ("inform", 1, 3500),
        ("associ", 4, 200),
        ("store", 2, 150),
        ("memori", 2, 30),
        ("processor", 2, 20),
    ),
)
# The same corpus, a two-word code query: "error E-4012" -> error, e, 4012 (the code is in no document here).
CODE = FieldTerms("all_text", 1.0, N, (("error", 1, 60), ("e", 1, 400), ("4012", 1, 0)))


def test_coverage_is_the_share_of_query_terms_the_index_holds():
    assert term_coverage([LONG]) == 1.0  # a paragraph in the corpus's own words: every term is there
    assert term_coverage([CODE]) == pytest.approx(2 / 3)  # the code is unknown to this index
    assert term_coverage([]) is None and term_coverage([FieldTerms("text", 1.0, N, ())]) is None
    # A term counts when any field holds it, whatever its boost (the title holds none of these).
    title = FieldTerms("title", 2.0, N, (("error", 1, 0),))
    assert term_coverage([title, CODE]) == pytest.approx(2 / 3)


def test_coverage_in_the_fields_layout_counts_a_term_either_field_holds():
    """Walking `make demo` (issue 22, first hour): the demo said "100% of a query's terms are missing from the index
    (median of 12 calibration queries)" right after BM25 found E-4012. The query goes into title and text alike, so
    both fields have the same terms; the tie picked the title, where none of these words are (measured on the demo's
    index: text holds pedid (df 4) of cómo, devuelv, pedid; title none). BM25 matches a term in either field."""
    terms = ("cómo", "devuelv", "pedid")
    title = FieldTerms("title", 1.0, 12, tuple((t, 1, 0) for t in terms))
    text = FieldTerms("text", 1.0, 12, tuple((t, 1, 4 if t == "pedid" else 0) for t in terms))
    assert term_coverage([title, text]) == pytest.approx(1 / 3)
    assert term_coverage([text, title]) == pytest.approx(1 / 3)


def test_match_quality_falls_with_query_length_where_coverage_does_not():
    # The best hit holds the three rarest terms (one occurrence each, average length): BM25's score is
    # their idf sum. For the long request that is a fine hit, yet its match quality is low because the
    # ideal holds all eighteen terms; coverage says nothing about how many terms one hit holds.
    from adapter.fusion.choice.policy import idf

    top = sum(idf(N, df) for df in (1, 1, 12))
    long_quality = match_quality(top, [LONG])
    short = FieldTerms("all_text", 1.0, N, (("simd", 1, 1), ("mimd", 1, 1), ("parallel", 1, 12)))
    short_quality = match_quality(top, [short])
    assert short_quality == pytest.approx(2.2)  # a full match of a three-term query: 1 + k1
    assert long_quality < 0.5 * short_quality  # the same hit, read as a weak match of the long one
    assert term_coverage([LONG]) == term_coverage([short]) == 1.0


A = [("d1", 9.0), ("d2", 7.0), ("d3", 5.0), ("d4", 4.0)]
B = [("d2", 0.9), ("d1", 0.8), ("d5", 0.7), ("d6", 0.6)]


def test_overlap_and_rank_correlation_of_two_legs():
    assert overlap(A, B, k=4) == 0.5
    assert overlap(A, A, k=4) == 1.0 and overlap(A, [], k=4) == 0.0
    assert rank_correlation(A, A, k=4) == 1.0
    assert rank_correlation(A, [("x", 1.0), ("y", 0.5), ("z", 0.2), ("w", 0.1)], k=4) == 0.0  # disjoint
    # d1 1 vs 2, d2 2 vs 1, d3 3 vs 5, d4 4 vs 5, d5 5 vs 3, d6 5 vs 4: footrule 1+1+2+1+2+1 = 8 of at most 20.
    assert rank_correlation(A, B, k=4) == pytest.approx(1 - 8 / 20)
    with pytest.raises(ValueError):
        overlap(A, B, k=0)


def test_peakedness_is_scale_free():
    bm25 = [("a", 30.0), ("b", 12.0), ("c", 11.0), ("d", 10.0)]
    cosine = [(d, s / 100) for d, s in bm25]  # the same shape on a cosine's scale
    assert peakedness(bm25) == pytest.approx(peakedness(cosine))
    # mean 15.75; squared deviations 14.25^2 + 3.75^2 + 4.75^2 + 5.75^2 = 272.75 over n - 1 = 3
    assert peakedness(bm25) == pytest.approx((30 - 15.75) / math.sqrt(272.75 / 3))
    assert peakedness(bm25[:2]) is None and peakedness([("a", 1.0)] * 3) is None


def test_query_evidence_and_the_corpus_median():
    ev = [QueryEvidence.of([LONG], A, B, k=4), QueryEvidence.of([CODE], A, A, k=4), QueryEvidence.of([], [], B, k=4)]
    assert [e.coverage for e in ev] == [1.0, pytest.approx(2 / 3), None]
    assert [e.terms for e in ev] == [18, 3, 0]
    med = corpus_signals(ev)
    assert med["coverage"] == pytest.approx((1.0 + 2 / 3) / 2)  # None is not a measurement
    assert med["overlap"] == 0.5 and med["terms"] == 3.0
