"""`hybrid eval`'s regret lines for the default row (adapter.evaluation.regret), on hand-made rows."""

from __future__ import annotations

import pytest

from adapter.evaluation import EvalReport, TechniqueResult, TechniqueSpec
from adapter.evaluation.regret import default_regret
from adapter.fusion import ScoreNormalization
from adapter.search.results import Technique

pytestmark = pytest.mark.unit

ROWS = {
    "bm25": 0.490,
    "dense": 0.446,
    "hybrid-min_max-arithmetic_mean": 0.561,
    "hybrid-rrf": 0.550,
    "hybrid-adaptive": 0.470,
}


def test_a_default_that_lost_to_a_fixed_fusion_and_a_leg_gets_two_warnings():
    r = default_regret(ROWS, "hybrid-adaptive")
    assert (r.best_fixed, r.best_leg) == ("hybrid-min_max-arithmetic_mean", "bm25")
    assert r.regret == pytest.approx(0.561 - 0.470)
    assert r.warnings == (
        "the default (hybrid-adaptive, 0.4700) lost to bm25 alone (0.4900) by 0.0200",
        "the default (hybrid-adaptive, 0.4700) lost to the fixed hybrid-min_max-arithmetic_mean (0.5610) by 0.0910",
    )
    assert r.as_json()["regret"] == 0.091


def test_small_losses_and_wins_warn_nothing():
    assert default_regret({**ROWS, "hybrid-adaptive": 0.557}, "hybrid-adaptive").warnings == ()  # 0.004: within noise
    win = default_regret({**ROWS, "hybrid-adaptive": 0.60}, "hybrid-adaptive")
    assert win.regret == pytest.approx(-0.039) and win.warnings == ()
    # The default is a fixed fusion itself: regret against the best one, 0 when it is that one.
    assert default_regret(ROWS, "hybrid-min_max-arithmetic_mean").regret == 0.0


def test_no_default_row_or_nothing_to_compare_gives_none():
    assert default_regret(ROWS, "hybrid-z_score-arithmetic_mean") is None
    assert default_regret(ROWS, None) is None
    assert default_regret({"bm25": 0.5, "hybrid-adaptive": 0.4}, "hybrid-adaptive") is None


def _result(ndcg: float, spec: TechniqueSpec) -> TechniqueResult:
    return TechniqueResult({"ndcg@10": ndcg, "recall@10": 0, "recall@100": 0, "mrr@10": 0}, 0, 0, 0, 0, 10, spec=spec)


def test_the_eval_report_carries_the_default_regret_and_ignores_tuned_rows():
    mm = ScoreNormalization()
    results = {
        "bm25": _result(0.49, TechniqueSpec("bm25", Technique.BM25)),
        "dense": _result(0.45, TechniqueSpec("dense", Technique.DENSE)),
        "hybrid-min_max-arithmetic_mean": _result(
            0.56, TechniqueSpec("hybrid-min_max-arithmetic_mean", Technique.HYBRID, mm)
        ),
        "hybrid-tuned-min_max-arithmetic_mean": _result(
            0.60, TechniqueSpec("hybrid-tuned-min_max-arithmetic_mean", Technique.HYBRID, mm, tuned=True)
        ),
        "hybrid-min_max-arithmetic_mean+mmr": _result(0.58, TechniqueSpec("x", Technique.HYBRID, mm, mmr=0.5)),
    }
    report = EvalReport(
        "d", "test", "m", "i", results, settings={"default_technique": "hybrid-min_max-arithmetic_mean"}
    )
    data = report.as_json()["default_regret"]
    assert data["best_fixed"] == "hybrid-min_max-arithmetic_mean" and data["regret"] == 0.0 and data["warnings"] == []
    assert EvalReport("d", "test", "m", "i", results).as_json()["default_regret"] is None


# -- with per-query values: standard errors and what is within them (issue 31) --------------------
def _noisy(ndcg_by_query: list[float], spec: TechniqueSpec) -> TechniqueResult:
    from adapter.evaluation.noise import standard_error

    mean = sum(ndcg_by_query) / len(ndcg_by_query)
    return TechniqueResult(
        {"ndcg@10": mean, "recall@10": 0, "recall@100": 0, "mrr@10": 0},
        0,
        0,
        0,
        0,
        len(ndcg_by_query),
        spec=spec,
        ndcg_by_query=tuple(ndcg_by_query),
        standard_error=standard_error("d test", ndcg_by_query),
    )


def noisy_report() -> EvalReport:
    # 20 queries. min_max wins 0.05 over z_score on average, by 1.0 on one query and 0 on the others
    # (noise: one query's luck); bm25 loses 0.2 on every query (a difference).
    mm, z = ScoreNormalization(), ScoreNormalization("z_score")
    results = {
        "bm25": _noisy([0.3] * 20, TechniqueSpec("bm25", Technique.BM25)),
        "dense": _noisy([0.5] * 20, TechniqueSpec("dense", Technique.DENSE)),
        "hybrid-min_max-arithmetic_mean": _noisy(
            [1.0] + [0.5] * 19, TechniqueSpec("hybrid-min_max-arithmetic_mean", Technique.HYBRID, mm)
        ),
        "hybrid-z_score-arithmetic_mean": _noisy(
            [0.0] + [0.5] * 19 + [], TechniqueSpec("hybrid-z_score-arithmetic_mean", Technique.HYBRID, z)
        ),
    }
    return EvalReport("d", "test", "m", "i", results, settings={"default_technique": "hybrid-z_score-arithmetic_mean"})


def test_each_row_has_its_standard_error_and_its_gap_to_the_best_row():
    report = noisy_report()
    gaps = report.gaps
    assert gaps["hybrid-min_max-arithmetic_mean"].delta == 0.0  # the best row
    z = gaps["hybrid-z_score-arithmetic_mean"]
    # One query of 20 differs by 1.0: mean 0.05, standard error about sqrt(0.05 * 0.95 / 20) ~ 0.049.
    assert z.delta == pytest.approx(-0.05) and z.standard_error == pytest.approx(0.0487, abs=0.006)
    assert gaps["bm25"].delta == pytest.approx(-0.225) and not gaps["bm25"].within_noise
    data = report.as_json()
    assert data["results"]["bm25"]["standard_error"] == {"ndcg@10": 0.0}
    assert data["results"]["hybrid-z_score-arithmetic_mean"]["versus_best"]["to"] == "hybrid-min_max-arithmetic_mean"


def test_the_default_regret_says_its_standard_error_and_a_loss_inside_it_is_a_tie():
    regret = noisy_report().default_regret
    assert regret.regret == pytest.approx(0.05) and regret.standard_error == pytest.approx(0.0487, abs=0.006)
    assert regret.within_noise == (0.05 <= regret.standard_error)
    assert regret.warnings[-1].startswith("the default (hybrid-z_score-arithmetic_mean, 0.4750) lost to the fixed")
    assert regret.warnings[-1].endswith(": noise)") == regret.within_noise
    data = noisy_report().as_json()["default_regret"]
    assert data["standard_error"] == round(regret.standard_error, 4) and data["within_noise"] == regret.within_noise


def test_the_table_prints_each_rows_standard_error_and_marks_gaps_within_noise():
    from adapter.evaluation import format_table

    table = format_table(noisy_report())
    lines = {line.split()[0]: line for line in table.splitlines() if line.startswith(("bm25", "hybrid-"))}
    assert " best " in lines["hybrid-min_max-arithmetic_mean"]
    assert "-0.2250 " in lines["bm25"] and "-0.2250~" not in lines["bm25"]
    z = lines["hybrid-z_score-arithmetic_mean"]
    assert ("-0.0500~" in z) == noisy_report().gaps["hybrid-z_score-arithmetic_mean"].within_noise
    assert "~ where that gap is within one paired standard error" in table


def test_a_noisy_report_follows_the_eval_contract():
    pytest.importorskip("jsonschema")
    from adapter.index.contracts import Contract, validate

    import json
    from pathlib import Path

    # A real report's settings, with the noisy rows and regret (what schema version 3 adds).
    results = Path(__file__).resolve().parents[3] / "docs" / "results"
    real = json.loads((results / "eval-scifact-server.json").read_text())
    noisy = noisy_report().as_json()
    validate(
        Contract.EVAL,
        {**real, "schema_version": 3, "results": noisy["results"], "default_regret": noisy["default_regret"]},
    )


def test_a_run_without_a_fixed_fusion_still_warns_when_the_default_lost_to_a_leg(capsys):
    """Issue 39: `hybrid eval --techniques bm25,dense,hybrid-adaptive` (the rows a user compares the default with
    first) printed no regret and no warning, however much the default lost to a leg: there was no fixed fusion to
    measure the regret against. The loss to the better leg is still said, as the full run says it."""
    from adapter.cli.printers import print_eval
    from adapter.evaluation.regret import leg_loss

    rows = {"bm25": 0.490, "dense": 0.560, "hybrid-adaptive": 0.470}
    assert default_regret(rows, "hybrid-adaptive") is None  # no fixed fusion: no regret (the JSON's is null)
    assert (
        leg_loss(rows, "hybrid-adaptive")
        == "the default (hybrid-adaptive, 0.4700) lost to dense alone (0.5600) by 0.0900"
    )
    assert leg_loss({**rows, "hybrid-adaptive": 0.557}, "hybrid-adaptive") is None  # 0.003: within WARN_LOSS
    assert leg_loss(rows, None) is None and leg_loss({"bm25": 0.4, "hybrid-adaptive": 0.5}, "hybrid-adaptive") is None
    # as `hybrid eval` prints it
    results = {
        "bm25": _result(0.49, TechniqueSpec("bm25", Technique.BM25)),
        "dense": _result(0.56, TechniqueSpec("dense", Technique.DENSE)),
        "hybrid-adaptive": _result(0.47, TechniqueSpec("hybrid-adaptive", Technique.HYBRID, ScoreNormalization())),
    }
    report = EvalReport("s", "test", "m", "i", results, {"default_technique": "hybrid-adaptive"})
    print_eval(report)
    assert (
        "warning: the default (hybrid-adaptive, 0.4700) lost to dense alone (0.5600) by 0.0900"
        in capsys.readouterr().out
    )
