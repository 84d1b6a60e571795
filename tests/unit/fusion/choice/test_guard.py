"""The better-leg guard of the adaptive policy (issue 31), its evidence for `hybrid calibrate`, and
the standard errors `hybrid eval` prints. Pure: no cluster."""

from __future__ import annotations

import json

import pytest

from adapter.errors import InputError
from adapter.fusion.choice.policy import (
    ISSUE18_POLICY,
    POLICY_SCHEMA,
    AdaptivePolicy,
    Calibration,
    QuerySignals,
    calibrate,
    leg_evidence,
)

pytestmark = pytest.mark.unit

GUARD = AdaptivePolicy(departure_weight=0.0, exact_departure=0.0)
GAP = Calibration(0.77, 400, coverage=0.5, exact_share=0.4)  # half the query terms missing: full departure
NO_GAP = Calibration(2.1, 300, coverage=1.0, exact_share=0.6)


def test_a_full_departure_gives_natural_language_queries_the_dense_leg_alone_and_codes_the_baseline():
    natural = GUARD.choose(QuerySignals.of("jak zmienić hasło do routera"), GAP)
    code = GUARD.choose(QuerySignals.of("błąd R-651"), GAP)
    assert natural.weights == (0.0, 1.0) and natural.per_query
    assert code.weights == (0.5, 0.5) and code.per_query
    assert any(r.startswith("guard: a natural-language query") for r in natural.reasons)
    assert any("exact-term query (code: R-651" in r and "keeps the baseline" in r for r in code.reasons)
    # Half the evidence: half the way, for natural-language queries only.
    half = Calibration(0.9, 400, coverage=0.80)
    assert GUARD.confidence(half) == pytest.approx(0.5)
    assert GUARD.choose(QuerySignals("natural"), half).weights == (0.25, 0.75)
    assert GUARD.choose(QuerySignals("exact", ("code: X-1",)), half).weights == (0.5, 0.5)


def test_without_a_vocabulary_gap_the_guard_changes_nothing():
    for text in ("effects of statins on LDL", "list directory contents"):
        choice = GUARD.choose(QuerySignals.of(text), NO_GAP)
        assert choice.weights == (0.5, 0.5) and choice.confidence == 0.0 and not choice.per_query


def test_the_policy_of_issue_18_departs_for_every_query_and_keeps_bm25_at_its_floor():
    for text in ("jak zmienić hasło", "błąd R-651"):
        assert ISSUE18_POLICY.choose(QuerySignals.of(text), GAP).weights == (0.1, 0.9)


def test_a_policy_file_written_before_the_guard_keeps_meaning_what_it_meant():
    old = {
        "schema": 2,
        "kind": "adaptive-fusion-policy",
        "name": "learned",
        "normalization": "min_max",
        "parameters": {
            "bias": 0.0,
            "corpus": 0.0,
            "query": 0.0,
            "exact": 0.0,
            "uncalibrated_quality": 2.12,
            "min_weight": 0.1,
            "step": 0.05,
            "coverage_start": 0.85,
            "coverage_full": 0.75,
            "sample_queries": 0.0,
            "min_queries": 10.0,
        },
    }
    policy = AdaptivePolicy.from_json(old)
    assert policy.departure_weight is None and policy.exact_departure == 1.0
    assert policy.choose(QuerySignals("natural"), GAP).weights == (0.1, 0.9)
    back = AdaptivePolicy.loads(GUARD.dumps())
    assert back == GUARD and json.loads(GUARD.dumps())["schema"] == POLICY_SCHEMA
    with pytest.raises(InputError, match="unknown policy parameters"):
        AdaptivePolicy.from_json(
            {**old, "parameters": {**old["parameters"], "departure_weight": 0.0}}
        )  # not a schema-2 parameter
    with pytest.raises(InputError, match="departure_weight must be in"):
        AdaptivePolicy(departure_weight=0.2)
    with pytest.raises(InputError, match="exact_departure must be in"):
        AdaptivePolicy(exact_departure=1.5)


def test_calibrate_counts_the_queries_with_codes_and_the_evidence_says_the_guards_decision():
    cal = calibrate(
        [1.0, 0.8, 0.9, 0.7],
        coverages=[0.5, 0.4, 0.6, 0.5],
        texts=["jak zmienić hasło", "błąd R-651", "faktura", "SIM-200"],
    )
    assert cal.exact_share == 0.5 and Calibration.from_meta(cal.to_meta()) == cal
    lines = leg_evidence(GUARD, cal).lines()
    assert (
        lines[0]
        == "bm25: reaches 50% of a query's analysed terms (median of 4 queries); 50% of the queries carry codes or "
        "identifiers"
    )
    assert lines[-1].startswith(
        "guard: no evidence that one leg dominates (confidence 0.00; 4 calibration queries, fewer than 10)"
    )
    many = Calibration(0.8, 40, coverage=0.5, exact_share=0.5)
    decided = leg_evidence(GUARD, many).lines()[-1]
    assert "confidence 1.00" in decided and "bm25 0.00 / dense 1.00 (the dense leg alone)" in decided
    assert decided.endswith("exact-term queries bm25 0.50 / dense 0.50")
    assert leg_evidence(GUARD, NO_GAP).lines()[-1] == (
        "guard: no evidence that one leg dominates (confidence 0.00): every query gets bm25 0.50 / dense 0.50"
    )


def test_a_bare_hybrid_query_gets_the_weights_of_the_calibrations_mix_of_query_classes():
    from adapter.fusion.choice.policy import corpus_fusion

    # 40% of the calibration queries carry codes (bm25 0.5 each), 60% are natural language (bm25 0.0).
    assert GUARD.bare_weights(GAP) == (0.2, 0.8)
    meta = {"policy": GUARD.to_json(), "calibration": GAP.to_meta()}
    assert corpus_fusion(meta, z_score=True).weights == (0.2, 0.8)
    assert GUARD.bare_weights(NO_GAP) == (0.5, 0.5)  # no departure: the baseline
    unmeasured = Calibration(0.77, 400, coverage=0.5)  # calibrated before the mix was kept: BM25 not silenced
    assert GUARD.bare_weights(unmeasured) == (0.1, 0.9)
    assert ISSUE18_POLICY.bare_weights(GAP) == (0.1, 0.9)


def test_the_default_policy_is_the_guard_the_rule_picked_on_every_committed_set():
    """Recomputes rule 8 of docs/EVALUATION.md from the committed round-3 reports: the guard's family
    on every set, the rule's pick for the selected form, and the shipped policy's parameters."""
    from pathlib import Path

    from adapter.fusion.choice import defaults
    from adapter.fusion.choice.policy import DEFAULT_POLICY
    from adapter.fusion.choice.selection import ClusterKind, SetRun, as_run_on, choose

    row = defaults.selected_row(ClusterKind.OPENSEARCH_3)
    assert row in defaults.SHIPPED_AS  # the guarded policy won the selection (round 3): it is what ships
    form = "min_max" if row.endswith("-min_max") else "z_score"
    kind = ClusterKind.OPENSEARCH_2 if form == "min_max" else ClusterKind.OPENSEARCH_3
    root = Path(__file__).resolve().parents[4]  # the repository
    runs = []
    for path in sorted((root / "docs" / "evals" / "default-rule").glob("*.json")):
        report = json.loads(path.read_text())
        per = {k: v for k, v in report["per_query_ndcg@10"].items() if not k.startswith("hybrid-adaptive-guard")}
        runs.append(as_run_on(SetRun(report["dataset"], {k: sum(v) / len(v) for k, v in per.items()}, per), kind))
    family = sorted({k for r in runs for k in r.rows if k.startswith(f"guard-{form}-")}, key=lambda k: k)
    pick = choose(runs, family).row  # e.g. guard-min_max-0.05-codes-kept
    _, _, floor, codes = pick.split("-", 3)
    assert DEFAULT_POLICY.departure_weight == float(floor)
    assert DEFAULT_POLICY.exact_departure == (0.0 if codes == "codes-kept" else 1.0)
    assert defaults.default_technique() == defaults.SHIPPED_AS[row]  # what `hybrid eval` runs it as
    assert DEFAULT_POLICY.base(True).value == form


def test_on_a_corpus_where_dense_dominates_the_default_gives_words_to_the_dense_leg_and_codes_to_both():
    # wsparcie-pl's calibration (36 train queries, 69% of their terms in the index, 42% with codes).
    from adapter.fusion.choice.policy import DEFAULT_POLICY

    cal = Calibration(0.77, 36, coverage=0.69, exact_share=0.42)
    assert DEFAULT_POLICY.choose(QuerySignals.of("jak zmienić hasło do routera"), cal).weights == (0.05, 0.95)
    assert DEFAULT_POLICY.choose(QuerySignals.of("R-651"), cal).weights == (0.5, 0.5)
    # Issue 39 (candidate P): 3 of its 4 words are not the code: 0.5 - 3/4 * (0.5 - 0.05) = 0.1625 -> 0.15.
    assert DEFAULT_POLICY.choose(QuerySignals.of("błąd R-651 przy logowaniu"), cal).weights == (0.15, 0.85)
    assert DEFAULT_POLICY.bare_weights(cal) == (0.25, 0.75)  # a query of unknown class counts as all code, as before
    assert (
        leg_evidence(DEFAULT_POLICY, cal)
        .lines()[-1]
        .endswith(
            "exact-term queries bm25 0.50 / dense 0.50; a code among other words moves towards the first by their share"
        )
    )


def test_the_default_policy_is_the_candidate_the_code_heavy_rule_picked_on_the_committed_sets():
    """Recomputes docs/EVALUATION.md's rule for code-heavy corpora (issue 39 item 4) from the committed reports
    (docs/evals/code-guard, scripts/study_code_guard.py): the smallest worst-case regret against each set's best
    untuned alternative, candidates within 0.005 of it tied, then the smallest mean, then the order K, P, H, A."""
    from pathlib import Path

    from adapter.fusion.choice.policy import DEFAULT_POLICY

    reports = sorted((Path(__file__).resolve().parents[4] / "docs" / "evals" / "code-guard").glob("*.json"))
    assert len(reports) >= 9
    means = []
    for path in reports:
        per = json.loads(path.read_text())["per_query_ndcg@10"]
        means.append({row: sum(v) / len(v) for row, v in per.items()})
    order = ("K", "P", "H", "A")
    alternatives = (
        "bm25",
        "dense",
        "hybrid-min_max-arithmetic_mean",
        "hybrid-l2-arithmetic_mean",
        "hybrid-z_score-arithmetic_mean",
        "hybrid-rrf",
    )
    regrets = {c: [max(m[a] for a in alternatives) - m[c] for m in means] for c in order}
    best = min(max(r) for r in regrets.values())
    tied = [c for c in order if max(regrets[c]) - best <= 0.005 + 1e-12]
    pick = min(tied, key=lambda c: (round(sum(regrets[c]) / len(means), 9), order.index(c)))
    parameters = {"K": (0.0, 0.0), "P": (0.0, 1.0), "H": (0.5, 0.0), "A": (1.0, 0.0)}[pick]
    assert (DEFAULT_POLICY.exact_departure, DEFAULT_POLICY.exact_by_words) == parameters


# -- issue 39 item 4: a code inside a sentence of words follows the departure by its share of words -----------------
BY_WORDS = AdaptivePolicy(departure_weight=0.0, exact_departure=0.0, exact_by_words=1.0)


def test_the_share_of_a_querys_words_that_hold_an_exact_term():
    from adapter.fusion.choice.advise import classify

    assert classify("R-651").exact_words == 1.0
    assert classify("router pokazuje R-561").exact_words == pytest.approx(1 / 3)
    assert classify("jak zwiększyć net.timeout na wolnym internecie").exact_words == pytest.approx(1 / 6)
    assert classify("zmniejszyć sync.parallel bo dostaję 429").exact_words == pytest.approx(
        2 / 5
    )  # a dotted name, a number
    assert classify("jak zmienić hasło do routera").exact_words == 0.0
    assert classify("ENOSPC inotify").exact_words == 0.5  # an acronym of an error, then a word


def test_exact_by_words_a_code_in_a_sentence_follows_the_departure_by_its_words_and_a_bare_code_keeps_the_baseline():
    # Full departure (GAP): bm25 0 for natural language; exact-term queries by the share of words that are not codes.
    assert BY_WORDS.choose(QuerySignals.of("CHM-1042"), GAP).weights == (0.5, 0.5)
    sentence = BY_WORDS.choose(QuerySignals.of("router pokazuje R-561"), GAP)  # 2 of 3 words follow: 0.5 - 2/3 * 0.5
    assert sentence.weights == (0.15, 0.85)
    assert any("follows 67% of the departure (67% of its words are not exact terms)" in r for r in sentence.reasons)
    assert BY_WORDS.choose(QuerySignals.of("jak zmienić hasło do routera"), GAP).weights == (0.0, 1.0)
    # Half the evidence: half of it.
    half = Calibration(0.9, 400, coverage=0.80)
    assert BY_WORDS.choose(QuerySignals.of("router pokazuje R-561"), half).weights == (0.35, 0.65)
    # Without a vocabulary gap nothing moves; a query known only by its class counts as all code.
    assert BY_WORDS.choose(QuerySignals.of("router pokazuje R-561"), NO_GAP).weights == (0.5, 0.5)
    assert BY_WORDS.choose(QuerySignals("exact", ("code: X-1",)), GAP).weights == (0.5, 0.5)
    # Off (0, the shipped value before issue 39), or codes departing fully anyway, it changes nothing.
    assert GUARD.choose(QuerySignals.of("router pokazuje R-561"), GAP).weights == (0.5, 0.5)
    both = AdaptivePolicy(departure_weight=0.0, exact_departure=1.0, exact_by_words=1.0)
    assert both.choose(QuerySignals.of("CHM-1042"), GAP).weights == (0.0, 1.0)


def test_exact_by_words_is_kept_in_the_policy_file_and_older_files_read_without_it():
    assert AdaptivePolicy.loads(BY_WORDS.dumps()) == BY_WORDS
    schema3 = json.loads(GUARD.dumps())
    schema3["schema"] = 3
    del schema3["parameters"]["exact_by_words"]
    assert AdaptivePolicy.from_json(schema3).exact_by_words == 0.0
    with pytest.raises(InputError, match="unknown policy parameters"):
        AdaptivePolicy.from_json({**schema3, "parameters": {**schema3["parameters"], "exact_by_words": 1.0}})
    with pytest.raises(InputError, match="exact_by_words must be in"):
        AdaptivePolicy(exact_by_words=2.0)
