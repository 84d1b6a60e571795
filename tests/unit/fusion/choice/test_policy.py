"""Adaptive fusion's core: signals on hand-checked queries, the policy's arithmetic, the asset, learning."""

from __future__ import annotations

import json
import math

import pytest

from adapter.fusion.choice.policy import (
    BM25_K1,
    DEFAULT_POLICY,
    AdaptivePolicy,
    Calibration,
    Example,
    FieldTerms,
    QuerySignals,
    calibrate,
    corpus_fusion,
    ideal_score,
    idf,
    learn_policy,
    match_quality,
    score_policy,
    weight_grid,
)
from adapter.errors import InputError
from adapter.fusion import ScoreNormalization
from adapter.engines.responses import term_statistics
from adapter.engines.opensearch.capabilities import opensearch_capabilities

pytestmark = pytest.mark.unit


# -- signals ---------------------------------------------------------------------------------------
def test_idf_is_lucenes_bm25_idf():
    assert idf(12, 4) == pytest.approx(math.log(1 + (12 - 4 + 0.5) / (4 + 0.5)))
    assert idf(12, 0) == pytest.approx(math.log(26))  # a term no document has


def test_ideal_score_takes_the_best_field_and_skips_empty_ones():
    title = FieldTerms("title", 0.5, 10, (("gen", 1, 1),))
    text = FieldTerms("text", 1.0, 10, (("gen", 1, 2), ("cell", 2, 5)))
    empty = FieldTerms("extra", 3.0, 0, (("gen", 1, 0),))
    text_ideal = idf(10, 2) + 2 * idf(10, 5)  # a term twice in the query counts twice, as the match query sums it
    assert ideal_score([title, text, empty]) == pytest.approx(max(0.5 * idf(10, 1), text_ideal) / 2.2)


def test_match_quality_of_the_demo_query():
    # "¿cómo devuelvo un pedido?" on the 12 seed documents: the spanish analyzer keeps "cómo" (the
    # stopword list has "como"), "devuelv" matches nothing, "pedid" is in 4 documents; BM25's best
    # hit ("Facturación", 1.417) holds only "pedido": well under an ideal match.
    fields = [FieldTerms("text", 1.0, 12, (("cómo", 1, 0), ("devuelv", 1, 0), ("pedid", 1, 4)))]
    ideal = (2 * math.log(26) + idf(12, 4)) / 2.2
    assert match_quality(1.417, fields) == pytest.approx(1.417 / ideal)
    assert match_quality(1.417, fields) < 0.5
    assert match_quality(None, fields) == 0.0  # BM25 found nothing
    assert match_quality(3.0, [FieldTerms("text", 1.0, 12, ())]) is None  # no analysed term: no signal


def test_term_statistics_reads_termvectors_of_an_artificial_document():
    resp = {
        "took": 1,
        "term_vectors": {
            "text": {
                "field_statistics": {"doc_count": 12, "sum_doc_freq": 86},
                "terms": {"pedid": {"term_freq": 1, "doc_freq": 4}, "cómo": {"term_freq": 1}},
            }
        },
    }
    (text, title) = term_statistics(resp, [("text", 1.0), ("title", 0.5)])
    assert text == FieldTerms("text", 1.0, 12, (("pedid", 1, 4), ("cómo", 1, 0)))
    assert title == FieldTerms("title", 0.5, 0, ())


@pytest.mark.parametrize(
    "query, kind",
    [
        ("error E-4012", "exact"),
        ("CB-1020-N", "exact"),
        ("¿cómo devuelvo un pedido?", "natural"),
        ("me dice que los tres números de detrás están mal", "natural"),
    ],
)
def test_query_class_is_the_advisors(query, kind):
    assert QuerySignals.of(query).kind == kind


# -- the policy ------------------------------------------------------------------------------------
def test_weight_is_the_logistic_of_the_documented_terms():
    policy = AdaptivePolicy(bias=-1.5, corpus=2.0, query=0.5, exact=1.0, step=0.05)
    cal = Calibration(1.1, 60)
    signals = QuerySignals("exact", ("code: E-4012",), match_quality=2.2)
    w, terms = policy.weight(signals, cal)
    logit = -1.5 + 2.0 * math.log(1.1) + 0.5 * math.log(2.2 / 1.1) + 1.0
    assert terms == pytest.approx(
        {"bias": -1.5, "corpus": 2.0 * math.log(1.1), "query": 0.5 * math.log(2.0), "exact": 1.0, "confidence": 0.0}
    )  # no coverage measured: no departure
    assert w == round(round((1 / (1 + math.exp(-logit))) * 20) / 20, 6)


def test_the_departure_is_the_coverage_shortfall_shrunk_by_the_sample():
    policy = AdaptivePolicy(coverage_start=0.85, coverage_full=0.65, sample_queries=10.0)
    # 25% of terms missing (coverage 0.75): 0.10 of the 0.20 span below the start, 30 queries -> 30 / 40.
    cal = Calibration(0.8, 30, coverage=0.75)
    assert policy.confidence(cal) == pytest.approx(0.5 * 0.75)
    w, _ = policy.weight(QuerySignals("natural"), cal)
    assert w == pytest.approx(0.5 + 0.375 * (0.1 - 0.5)) and w == 0.35  # from 0.5 towards the 0.1 floor
    assert policy.confidence(Calibration(0.8, 30, coverage=0.95)) == 0.0  # above the start: the baseline
    assert policy.confidence(Calibration(0.8, 10**6, coverage=0.2)) == pytest.approx(1.0, abs=1e-4)  # full, any sample
    assert policy.confidence(Calibration(0.8, 30)) == 0.0  # calibrated before coverage was measured
    assert AdaptivePolicy(coverage_start=0.0, coverage_full=0.0).confidence(cal) == 0.0  # departure off
    few = Calibration(0.8, 9, coverage=0.2)  # under min_queries (10): too few to say anything about the corpus
    assert policy.confidence(few) == 0.0
    assert "fewer than 10: too few to depart" in " | ".join(policy.choose(QuerySignals.of("x"), few).reasons)


def test_default_policy_is_the_baseline_unless_the_corpus_says_otherwise():
    assert DEFAULT_POLICY.choose(QuerySignals.of("anything")).weights == (0.5, 0.5)
    assert not DEFAULT_POLICY.uses_legs  # no request before the hybrid one
    # Long requests in the corpus's own words (LISA: match quality 0.83, every term in the index): the
    # baseline, where the match-quality policy gave the weaker dense leg 0.75.
    long_requests = DEFAULT_POLICY.choose(
        QuerySignals.of("I AM INTERESTED IN ..."), Calibration(0.83, 35, coverage=1.0)
    )
    assert long_requests.weights == (0.5, 0.5) and long_requests.confidence == 0.0
    # A vocabulary gap: half the query terms are not in the index at all.
    gap = DEFAULT_POLICY.choose(QuerySignals.of("jak zmienić hasło"), Calibration(0.77, 400, coverage=0.5))
    assert gap.weights == (0.05, 0.95) and gap.confidence > 0.95  # the better-leg guard: the dense leg leads
    # ... and a bare code keeps the baseline: BM25 matches codes the vocabulary gap does not touch; a code among
    # words follows the departure by their share (issue 39: "błąd R-651", 1 of 2: 0.5 - 0.5 * 0.45 = 0.275 -> 0.3).
    code = DEFAULT_POLICY.choose(QuerySignals.of("R-651"), Calibration(0.77, 400, coverage=0.5))
    assert code.weights == (0.5, 0.5) and code.per_query
    assert DEFAULT_POLICY.choose(QuerySignals.of("błąd R-651"), Calibration(0.77, 400, coverage=0.5)).weights == (
        0.3,
        0.7,
    )


def test_weights_are_clipped_and_on_the_grid():
    for c in (0.0, 0.3, 0.7, 0.8, 1.0):
        w, _ = AdaptivePolicy(step=0.1, min_weight=0.2).weight(
            QuerySignals("natural"), Calibration(1.0, 50, coverage=c)
        )
        assert 0.2 <= w <= 0.8 and abs(w * 10 - round(w * 10)) < 1e-9


def test_choice_says_why_and_how_confident():
    policy = AdaptivePolicy(query=1.0, exact=0.5, corpus=2.0)
    choice = policy.choose(
        QuerySignals.of("error E-4012", match_quality=0.3),
        Calibration(1.0, 12, source="q.txt", coverage=0.80),
        z_score=True,
    )
    text = " | ".join(choice.reasons)
    assert "baseline z_score 0.50 / 0.50" in text or "baseline min_max 0.50 / 0.50" in text  # auto: the measured form
    assert "20% of a query's terms are missing from the index (median of 12 calibration queries)" in text
    assert f"confidence {choice.confidence:.2f} that BM25 is the weaker leg" in text and 0 < choice.confidence < 1
    assert "BM25 match quality 1.00" in text
    assert "matches 0.30 of an ideal match -> less BM25" in text
    assert "exact-term (code: E-4012" in text and "-> more BM25" in text
    assert f"weights bm25 {choice.weights[0]:.2f} / dense {choice.weights[1]:.2f} for this query" in text
    assert (
        choice.kind == "exact"
        and choice.features["match_quality"] == 0.3
        and choice.features["corpus_coverage"] == 0.80
    )
    assert sum(choice.weights) == pytest.approx(1.0) and choice.per_query
    assert policy.fusion(choice) == ScoreNormalization(choice.normalization, "arithmetic_mean", choice.weights)
    assert (
        AdaptivePolicy(normalization="z_score").choose(QuerySignals.of("x"), None, z_score=True).normalization
        == "z_score"
    )
    # Without z_score on the cluster (2.19) the same policy runs on min_max.
    assert policy.fusion(policy.choose(QuerySignals.of("x"), None)).technique.value == "min_max"
    baseline = DEFAULT_POLICY.choose(QuerySignals.of("x"), Calibration(2.0, 300, coverage=0.99), z_score=True)
    assert "confidence 0.00: the baseline" in " | ".join(baseline.reasons) and not baseline.per_query
    assert "for every query of this index" in baseline.reasons[-1]


def test_policy_asset_round_trip_and_refusals():
    learned = AdaptivePolicy(
        bias=-1.25,
        corpus=2.0,
        query=0.5,
        exact=-0.5,
        name="learned",
        normalization="min_max",
        trained_on={"dataset": "scifact", "split": "train", "queries": 809},
    )
    again = AdaptivePolicy.loads(learned.dumps())
    assert again == learned and again.trained_on == learned.trained_on and again.name == "learned"
    assert (
        json.loads(learned.dumps())["schema"] == 4
    )  # 3: the better-leg guard's parameters (issue 31); 4: exact_by_words (issue 39)
    with pytest.raises(InputError, match="not an adaptive fusion policy"):
        AdaptivePolicy.from_json({"kind": "something else"})
    with pytest.raises(InputError, match="schema 5 is not supported"):
        AdaptivePolicy.from_json({**learned.to_json(), "schema": 5})
    with pytest.raises(InputError, match="unknown policy parameters"):
        AdaptivePolicy.from_json({**learned.to_json(), "parameters": {"bias": 1, "surprise": 2}})
    with pytest.raises(InputError, match="not JSON"):
        AdaptivePolicy.loads("{")
    with pytest.raises(InputError, match="step must divide 1"):
        AdaptivePolicy(step=0.3)
    with pytest.raises(InputError, match="unknown policy normalization"):
        AdaptivePolicy(normalization="l2")


def test_a_schema_1_policy_file_keeps_meaning_what_it_meant():
    # Written before issue 18 (docs/results/policy-*.json): min_max, the match-quality logit, no coverage departure.
    old = AdaptivePolicy.from_json(
        {"schema": 1, "kind": "adaptive-fusion-policy", "name": "learned", "parameters": {"bias": -1.25, "query": 0.5}}
    )
    assert (old.bias, old.corpus, old.query, old.normalization, old.departs) == (-1.25, 2.0, 0.5, "min_max", False)
    w, _ = old.weight(QuerySignals("natural"), Calibration(0.39, 12, coverage=0.2))
    assert w == 0.1  # the old corpus prior, whatever the coverage


def test_calibration_round_trip_and_median():
    cal = calibrate([0.2, None, 1.0, 3.0], coverages=[1.0, None, 0.5, 0.8], dense_hits=[True, False], source="log")
    assert cal == Calibration(1.0, 3, 0.5, "log", coverage=0.8)
    assert Calibration.from_meta(cal.to_meta()) == cal
    assert Calibration.from_meta(None) is None
    with pytest.raises(InputError, match="no calibration query had an analysed term"):
        calibrate([None, None])
    with pytest.raises(InputError, match="unreadable"):
        Calibration.from_meta({"queries": 3})


def test_corpus_fusion_is_what_a_bare_query_gets():
    meta = {"calibration": Calibration(0.39, 1000, coverage=0.3).to_meta()}
    assert corpus_fusion(meta) == ScoreNormalization(weights=(0.1, 0.9))
    from adapter.fusion.choice.defaults import measured_adaptive_base

    assert corpus_fusion(meta, z_score=True) == ScoreNormalization(measured_adaptive_base(), weights=(0.1, 0.9))
    assert corpus_fusion(None) == ScoreNormalization(weights=(0.5, 0.5))
    stored = {
        "calibration": Calibration(0.39, 12, coverage=1.0).to_meta(),
        "policy": AdaptivePolicy(bias=3.0).to_json(),
    }
    assert corpus_fusion(stored).weights[0] > 0.5


# -- learning --------------------------------------------------------------------------------------
GRID = weight_grid(0.05)


def peaked(at: float, height: float = 1.0) -> tuple[float, ...]:
    """nDCG@10 per weight that is best at ``at``."""
    return tuple(height * max(0.0, 1 - abs(w - at) * 2) for w in GRID)


def test_learning_finds_a_consistent_corpus_weight():
    examples = [Example(QuerySignals("natural"), peaked(0.8)) for _ in range(40)]
    learned = learn_policy(DEFAULT_POLICY, examples, Calibration(2.12, 40), grid=GRID)
    assert learned.family == "weight"
    assert learned.policy.weight(QuerySignals("natural"), Calibration(2.12, 40))[0] == pytest.approx(0.8)
    assert learned.policy.name == "learned"
    assert learned.cross_validated["weight"] > learned.cross_validated["untuned"]


def test_learning_separates_exact_and_natural_queries_when_they_differ():
    examples = [Example(QuerySignals("exact"), peaked(0.9)) for _ in range(30)]
    examples += [Example(QuerySignals("natural"), peaked(0.2)) for _ in range(30)]
    learned = learn_policy(DEFAULT_POLICY, examples, Calibration(2.12, 60), grid=GRID)
    assert learned.family == "class"
    exact_w = learned.policy.weight(QuerySignals("exact"), Calibration(2.12, 60))[0]
    natural_w = learned.policy.weight(QuerySignals("natural"), Calibration(2.12, 60))[0]
    assert exact_w > 0.6 > 0.4 > natural_w


def test_learning_keeps_the_defaults_when_the_split_says_nothing():
    flat = [Example(QuerySignals("natural"), tuple(0.5 for _ in GRID)) for _ in range(20)]
    learned = learn_policy(DEFAULT_POLICY, flat, None, grid=GRID)
    assert learned.family == "untuned"
    assert (learned.policy.bias, learned.policy.query, learned.policy.exact) == (DEFAULT_POLICY.bias, 0.0, 0.0)
    assert score_policy(learned.policy, flat, None, GRID) == pytest.approx(0.5)
    with pytest.raises(InputError, match="no judged queries"):
        learn_policy(DEFAULT_POLICY, [], None, grid=GRID)


def test_match_quality_means_the_same_on_legacy_and_lucene_bm25():
    # OpenSearch 2.x scores a match (1 + k1) times higher than 3.x (LegacyBM25Similarity vs Lucene's
    # BM25): the same match must give the same quality, so calibrations and policies carry over.
    fields = [FieldTerms("text", 1.0, 1000, (("pedido", 1, 10), ("devuelvo", 1, 3)))]
    legacy_top = ideal_score(fields) * (1 + BM25_K1)
    lucene_top = legacy_top / (1 + BM25_K1)
    assert match_quality(legacy_top, fields, legacy_bm25=True) == pytest.approx(
        match_quality(lucene_top, fields, legacy_bm25=False)
    )

    assert opensearch_capabilities("2.19.1").legacy_bm25 and not opensearch_capabilities("3.6.0").legacy_bm25
