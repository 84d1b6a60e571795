"""The default row's regret in one ``hybrid eval`` run: what it lost against the best fixed fusion
of the same run and against each leg (adapter.fusion.choice.selection's measure, on one set). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from adapter.evaluation.noise import gap
from adapter.fusion.choice.selection import SetRun, fixed_rows

# A loss above this is worth a warning line (one or two queries' worth on a small set).
WARN_LOSS = 0.005


def _lost(default: str, ndcg: float, rival: str, rival_ndcg: float, error: float | None) -> str | None:
    """The line saying ``default`` lost to ``rival`` by over WARN_LOSS (``error``: the gap's standard error) or None."""
    loss = rival_ndcg - ndcg
    if loss <= WARN_LOSS:
        return None
    noise = f" (within one standard error, {error:.4f}: noise)" if error is not None and abs(loss) <= error else ""
    return f"the default ({default}, {ndcg:.4f}) lost to {rival} ({rival_ndcg:.4f}) by {loss:.4f}{noise}"


@dataclass(frozen=True)
class DefaultRegret:
    """The default row against the best fixed untuned fusion and the better leg of its run."""

    default: str
    ndcg: float
    best_fixed: str
    best_fixed_ndcg: float
    best_leg: str
    best_leg_ndcg: float
    standard_error: float | None = None  # the regret's, paired over the run's queries (None: not measured per query)
    leg_error: float | None = None  # that of the default's gap to the better leg

    @property
    def within_noise(self) -> bool:
        """Whether the regret is inside one standard error (a tie, not a win or a loss)."""
        return self.standard_error is not None and abs(self.regret) <= self.standard_error

    @property
    def regret(self) -> float:
        """Best fixed fusion minus the default (positive: the default lost)."""
        return self.best_fixed_ndcg - self.ndcg

    @property
    def warnings(self) -> tuple[str, ...]:
        """A line for each rival the default lost to by over WARN_LOSS: the better leg alone, the best fixed fusion."""
        rivals = (
            (f"{self.best_leg} alone", self.best_leg_ndcg, self.leg_error),
            (f"the fixed {self.best_fixed}", self.best_fixed_ndcg, self.standard_error),
        )
        return tuple(
            line
            for rival, ndcg, error in rivals
            if (line := _lost(self.default, self.ndcg, rival, ndcg, error)) is not None
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "default": self.default,
            "ndcg@10": round(self.ndcg, 4),
            "best_fixed": self.best_fixed,
            "best_fixed_ndcg@10": round(self.best_fixed_ndcg, 4),
            "regret": round(self.regret, 4),
            "best_leg": self.best_leg,
            "best_leg_ndcg@10": round(self.best_leg_ndcg, 4),
            "warnings": list(self.warnings),
            **(
                {"standard_error": round(self.standard_error, 4), "within_noise": self.within_noise}
                if self.standard_error is not None
                else {}
            ),
        }


def default_regret(
    rows: Mapping[str, float],
    default: str | None,
    per_query: Mapping[str, Sequence[float]] | None = None,
    name: str = "run",
) -> DefaultRegret | None:
    """The regret of ``default`` among a run's rows (row -> nDCG@10); None when the run has no such
    row, no fixed fusion or no leg to compare with. With ``per_query`` (every row's nDCG@10 per
    query), its standard error against the best fixed fusion, paired over the queries (``name``: the
    bootstrap's seed, the run's dataset and split)."""
    if not default or default not in rows or not fixed_rows(rows) or not ({"bm25", "dense"} & set(rows)):
        return None
    (fixed, fixed_value), (leg, leg_value) = SetRun("run", rows).best_fixed, SetRun("run", rows).best_leg
    # Against the best fixed fusion, as the regret is, paired over the queries.
    error = gap(name, fixed, default, per_query).standard_error if per_query else None
    leg_error = gap(name, leg, default, per_query).standard_error if per_query else None
    return DefaultRegret(default, rows[default], fixed, fixed_value, leg, leg_value, error, leg_error)


def leg_loss(
    rows: Mapping[str, float],
    default: str | None,
    per_query: Mapping[str, Sequence[float]] | None = None,
    name: str = "run",
) -> str | None:
    """Where a run has the default and a leg but no fixed fusion (``--techniques bm25,dense,<default>``), so no
    :func:`default_regret`: the warning that the default lost to the better leg alone, as the full run words it;
    None where it did not lose by over WARN_LOSS, or the run has no such rows."""
    if not default or default not in rows or not ({"bm25", "dense"} & set(rows)):
        return None
    leg, leg_value = SetRun("run", rows).best_leg
    error = gap(name, leg, default, per_query).standard_error if per_query else None
    return _lost(default, rows[default], f"{leg} alone", leg_value, error)
