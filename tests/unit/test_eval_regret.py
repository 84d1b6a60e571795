"""`hybrid eval`'s regret lines for the default row (adapter.evaluation.regret), on hand-made rows."""

from __future__ import annotations

import pytest

from adapter.evaluation import EvalReport, TechniqueResult, TechniqueSpec
from adapter.evaluation.regret import default_regret
from adapter.fusion import ScoreNormalization
from adapter.search.results import Technique

pytestmark = pytest.mark.unit

ROWS = {"bm25": 0.490, "dense": 0.446, "hybrid-min_max-arithmetic_mean": 0.561, "hybrid-rrf": 0.550, "hybrid-adaptive": 0.470}


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
        "hybrid-min_max-arithmetic_mean": _result(0.56, TechniqueSpec("hybrid-min_max-arithmetic_mean", Technique.HYBRID, mm)),
        "hybrid-tuned-min_max-arithmetic_mean": _result(0.60, TechniqueSpec("hybrid-tuned-min_max-arithmetic_mean", Technique.HYBRID,
                                                                            mm, tuned=True)),
        "hybrid-min_max-arithmetic_mean+mmr": _result(0.58, TechniqueSpec("x", Technique.HYBRID, mm, mmr=0.5)),
    }
    report = EvalReport("d", "test", "m", "i", results, settings={"default_technique": "hybrid-min_max-arithmetic_mean"})
    data = report.as_json()["default_regret"]
    assert data["best_fixed"] == "hybrid-min_max-arithmetic_mean" and data["regret"] == 0.0 and data["warnings"] == []
    assert EvalReport("d", "test", "m", "i", results).as_json()["default_regret"] is None
