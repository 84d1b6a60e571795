"""The default row's regret in one ``hybrid eval`` run: what it lost against the best fixed fusion
of the same run and against each leg (adapter.fusion.choice.selection's measure, on one set). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from adapter.fusion.choice.selection import SetRun, fixed_rows

# A loss above this is worth a warning line (one or two queries' worth on a small set).
WARN_LOSS = 0.005


@dataclass(frozen=True)
class DefaultRegret:
    """The default row against the best fixed untuned fusion and the better leg of its run."""

    default: str
    ndcg: float
    best_fixed: str
    best_fixed_ndcg: float
    best_leg: str
    best_leg_ndcg: float

    @property
    def regret(self) -> float:
        """Best fixed fusion minus the default (positive: the default lost)."""
        return self.best_fixed_ndcg - self.ndcg

    @property
    def warnings(self) -> tuple[str, ...]:
        out = []
        if self.best_leg_ndcg - self.ndcg > WARN_LOSS:
            out.append(f"the default ({self.default}, {self.ndcg:.4f}) lost to {self.best_leg} alone ({self.best_leg_ndcg:.4f}) "
                       f"by {self.best_leg_ndcg - self.ndcg:.4f}")
        if self.regret > WARN_LOSS:
            out.append(f"the default ({self.default}, {self.ndcg:.4f}) lost to the fixed {self.best_fixed} ({self.best_fixed_ndcg:.4f}) "
                       f"by {self.regret:.4f}")
        return tuple(out)

    def as_json(self) -> dict[str, Any]:
        return {"default": self.default, "ndcg@10": round(self.ndcg, 4), "best_fixed": self.best_fixed,
                "best_fixed_ndcg@10": round(self.best_fixed_ndcg, 4), "regret": round(self.regret, 4),
                "best_leg": self.best_leg, "best_leg_ndcg@10": round(self.best_leg_ndcg, 4), "warnings": list(self.warnings)}


def default_regret(rows: Mapping[str, float], default: str | None) -> DefaultRegret | None:
    """The regret of ``default`` among a run's rows (row -> nDCG@10); None when the run has no such
    row, no fixed fusion or no leg to compare with."""
    if not default or default not in rows or not fixed_rows(rows) or not ({"bm25", "dense"} & set(rows)):
        return None
    run = SetRun("run", rows)
    (fixed, fixed_value), (leg, leg_value) = run.best_fixed, run.best_leg
    return DefaultRegret(default, rows[default], fixed, fixed_value, leg, leg_value)
