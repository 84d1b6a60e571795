"""`hybrid advise --index`: what it says about the adaptive weights (issue 22, Found 4)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adapter.fusion.choice.policy import DEFAULT_POLICY, AdaptivePolicy, Calibration, QuerySignals
from adapter.fusion.choice.advise import advise
from adapter.cli.printers import print_advice

pytestmark = pytest.mark.unit

QUERIES = ["exact ERR-1042 on checkout", "how do I return an order"]


def test_a_corpus_policy_prints_its_weights_once_for_the_index_not_per_query(capsys):
    # Before: "exact ERR-1042 ... -> adaptive: bm25 0.15 / dense 0.85" on the code query's line, the same as on
    # every natural-language line: it read as if the code query had been weighed and sent to dense.
    cal = Calibration(1.0, 40, coverage=0.70)
    corpus = replace(DEFAULT_POLICY, exact_departure=1.0)  # every query the corpus weights (the guard off for codes)
    choices = [corpus.choose(QuerySignals.of(q), cal, z_score=True) for q in QUERIES]
    print_advice(advise(QUERIES), choices=choices)
    out = capsys.readouterr().out
    assert "-> adaptive: bm25" not in out  # no per-line weights
    lines = [line for line in out.splitlines() if "adaptive fusion on this index" in line]
    assert len(lines) == 1 and "for every query, exact-term or not" in lines[0] and "confidence" in lines[0]
    assert "missing from the index" in out  # why: the corpus evidence


def test_a_per_query_policy_prints_each_querys_weights(capsys):
    policy = AdaptivePolicy(exact=2.0, coverage_start=0.0, coverage_full=0.0)
    choices = [policy.choose(QuerySignals.of(q), None) for q in QUERIES]
    print_advice(advise(QUERIES), choices=choices)
    out = capsys.readouterr().out.splitlines()
    assert "bm25 0.90 / dense 0.10" in out[0] and "bm25 0.50 / dense 0.50" in out[1]
