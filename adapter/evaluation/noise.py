"""How much of a run's differences is noise: each row's standard error, and whether its gap to the
best row (or the default's to the best fixed fusion) is inside one paired standard error. Pure.

The same bootstrap as the default's selection (:func:`adapter.fusion.choice.selection.bootstrap_weights`:
2,000 resamples of the run's queries, seeded by the dataset's name), so ``hybrid eval`` and
docs/EVALUATION.md's tables say the same thing about the same queries. A difference whose size is
at most its paired standard error is **within noise**: another draw of queries of the same kind
could reverse it (issue 31: the z_score form won issue 18's selection by 0.003 on 35 queries, and
lost on five of six held-out sets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from adapter.fusion.choice.selection import bootstrap_weights

METRIC = "ndcg@10"


@dataclass(frozen=True)
class Gap:
    """One row against another over the same queries: the mean difference and its paired standard error."""

    row: str
    to: str
    delta: float  # row minus ``to``
    standard_error: float

    @property
    def within_noise(self) -> bool:
        return abs(self.delta) <= self.standard_error

    def as_json(self) -> dict[str, Any]:
        return {
            "to": self.to,
            "delta": round(self.delta, 4),
            "standard_error": round(self.standard_error, 4),
            "within_noise": self.within_noise,
        }


def standard_error(name: str, values: Sequence[float]) -> float:
    """The bootstrap standard error of the mean of ``values`` (one per query)."""
    if len(values) < 2:
        return 0.0
    return float(np.std(bootstrap_weights(name, len(values)) @ np.asarray(values, dtype=float), ddof=1))


def gap(name: str, row: str, to: str, per_query: Mapping[str, Sequence[float]]) -> Gap:
    """``row`` against ``to`` (the same queries, in the same order, in both)."""
    diffs = np.asarray(per_query[row], dtype=float) - np.asarray(per_query[to], dtype=float)
    return Gap(row, to, float(diffs.mean()) if len(diffs) else 0.0, standard_error(name, diffs.tolist()))


def gaps_to_best(name: str, per_query: Mapping[str, Sequence[float]], rows: Sequence[str]) -> dict[str, Gap]:
    """Each of ``rows`` against the best of them by mean (the best against itself: 0, within noise)."""
    if not rows:
        return {}
    best = max(rows, key=lambda r: (float(np.mean(per_query[r])) if len(per_query[r]) else 0.0, -rows.index(r)))
    return {r: gap(name, r, best, per_query) for r in rows}
