"""Learned fusion: a linear model over per-hit leg features, trained on judgments. Pure.

The server's normalisation processor adds the legs' normalised scores with fixed weights; it
cannot add "this leg found the hit at all" or a rank term, which is what a model trained on
judged queries uses (learning to rank with a pointwise logistic loss over the candidates of both
legs; Liu, *Learning to Rank for Information Retrieval*, 2009, ch. 2). So it fuses in the client:
both legs are fetched (one ``_msearch``) and ranked here by :meth:`LearnedFusion.fuse`.

Features of a candidate (:data:`FEATURES`), per leg, all 0 when the leg missed it: the min_max
normalised score (as the server's min_max: over the leg's candidates), the z-score (floored at 0),
a found flag, and ``1 / rank``. The model is :class:`LearnedFusion` (weights, bias, how it was
trained), a versioned JSON asset written by ``hybrid eval --tune`` (:meth:`dumps`); its score is
the linear decision value, so ranking needs no sigmoid. Training (:func:`train`) needs
scikit-learn (the ``eval`` extra), scoring only numpy.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from .errors import InputError
from .fusion import LEGS, FusedDoc, Fusion
from .types import LegScore

LEARNED = "learned"
MODEL_SCHEMA = 1
MODEL_KIND = "learned-fusion"
Run = Sequence[tuple[str, float]]
_PER_LEG = ("min_max", "z_score", "found", "inverse_rank")
FEATURES = tuple(f"{leg}_{name}" for leg in LEGS for name in _PER_LEG)


def _leg_features(run: Run) -> dict[str, tuple[float, float, float, float]]:
    firsts: dict[str, tuple[int, float]] = {}
    for rank, (doc_id, raw) in enumerate(run, start=1):
        firsts.setdefault(doc_id, (rank, float(raw)))
    if not firsts:
        return {}
    scores = np.fromiter((s for _, s in firsts.values()), dtype=np.float64, count=len(firsts))
    ranks = np.fromiter((r for r, _ in firsts.values()), dtype=np.float64, count=len(firsts))
    lo, hi = float(scores.min()), float(scores.max())
    std = float(scores.std(ddof=1)) if len(scores) > 1 else 0.0
    mm = np.ones_like(scores) if hi == lo else (scores - lo) / (hi - lo)
    z = np.maximum(0.0, (scores - scores.mean()) / std) if std > 0 else np.zeros_like(scores)
    rows = np.column_stack([mm, z, np.ones_like(scores), 1.0 / ranks]).tolist()
    return {doc_id: (row[0], row[1], row[2], row[3]) for doc_id, row in zip(firsts, rows)}


def features(runs: Sequence[Run]) -> tuple[list[str], np.ndarray]:
    """The candidates of both legs (first seen first) and their feature matrix (``len x FEATURES``)."""
    if len(runs) != len(LEGS):
        raise InputError(f"learned fusion takes {len(LEGS)} legs ({', '.join(LEGS)}), got {len(runs)}")
    per_leg = [_leg_features(run) for run in runs]
    ids = list(dict.fromkeys(d for leg in per_leg for d in leg))
    zero = (0.0, 0.0, 0.0, 0.0)
    matrix = np.asarray([[v for leg in per_leg for v in leg.get(d, zero)] for d in ids], dtype=np.float64)
    return ids, matrix.reshape(len(ids), len(FEATURES))


@dataclass(frozen=True)
class LearnedFusion(Fusion):
    """A linear model over :data:`FEATURES` (``weights`` are per feature, not per leg); no search
    engine runs it, so the searcher fuses in the client with it (and says so)."""

    weights: tuple[float, ...]
    bias: float = 0.0
    trained_on: Mapping[str, Any] | None = field(default=None, compare=False)

    kind: ClassVar[str] = LEARNED
    spellings: ClassVar[tuple[str, ...]] = (LEARNED,)
    registered: ClassVar[bool] = False  # it needs its model file: not a method to parse from a name or vary

    @property
    def name(self) -> str:
        return LEARNED

    @classmethod
    def parse(cls, name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None) -> LearnedFusion | None:
        return None  # from its file (LearnedFusion.loads), never from a name

    def contributions(self, scores: Sequence[float | None], fused: float) -> list[float]:
        raise InputError("a learned fusion's per-leg parts come with its fused documents (LearnedFusion.fuse)")

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise InputError(f"a learned fusion needs {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(self.weights)}")
        if not all(math.isfinite(w) for w in (*self.weights, self.bias)):
            raise InputError("a learned fusion's weights must be finite numbers")

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        """Every candidate of both legs, best first, scored by the model (ties: best rank, then id)."""
        ids, x = features(runs)
        if not ids:
            return []
        per = len(_PER_LEG)
        w = np.asarray(self.weights).reshape(len(LEGS), per)
        parts = (x.reshape(len(ids), len(LEGS), per) * w).sum(axis=2)  # each leg's share of the score
        scores = (parts.sum(axis=1) + self.bias).tolist()
        parts_list, mm = parts.tolist(), x[:, ::per].tolist()  # the min_max column of each leg
        positions = [{d: (r, float(sc)) for r, (d, sc) in reversed(list(enumerate(run, start=1)))} for run in runs]
        fused = []
        for i, doc_id in enumerate(ids):
            legs, best = [], math.inf
            for j, name in enumerate(leg_names):
                rank, raw = positions[j].get(doc_id, (None, None))
                legs.append(LegScore(name, rank, raw, mm[i][j] if rank else None, 1.0, parts_list[i][j]))
                if rank is not None and rank < best:
                    best = rank
            fused.append((scores[i], best, doc_id, tuple(legs)))
        fused.sort(key=lambda item: (-item[0], item[1], item[2]))
        return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in fused]

    # -- the versioned asset ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"schema": MODEL_SCHEMA, "kind": MODEL_KIND, "features": list(FEATURES), "weights": list(self.weights),
                "bias": self.bias, "trained_on": dict(self.trained_on) if self.trained_on else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LearnedFusion:
        if not isinstance(data, Mapping) or data.get("kind") != MODEL_KIND:
            raise InputError(f"not a learned fusion model (expected \"kind\": \"{MODEL_KIND}\")")
        if data.get("schema") != MODEL_SCHEMA:
            raise InputError(f"learned fusion schema {data.get('schema')!r} is not supported (this version reads {MODEL_SCHEMA})")
        if list(data.get("features") or []) != list(FEATURES):
            raise InputError(f"the model's features {data.get('features')} are not this version's {list(FEATURES)}")
        try:
            return cls(tuple(float(w) for w in data["weights"]), float(data.get("bias", 0.0)), data.get("trained_on"))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the learned fusion model is unreadable: {exc}") from exc

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    @classmethod
    def loads(cls, text: str) -> LearnedFusion:
        try:
            return cls.from_json(json.loads(text))
        except json.JSONDecodeError as exc:
            raise InputError(f"the learned fusion file is not JSON: {exc}") from exc


def training_rows(legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels (judged relevant: 1) and query index of every candidate of every judged query."""
    xs, ys, groups = [], [], []
    for n, (qid, runs) in enumerate(legs.items()):
        if qid not in qrels:
            continue
        ids, x = features(runs)
        xs.append(x)
        ys.append(np.asarray([1.0 if qrels[qid].get(d, 0) > 0 else 0.0 for d in ids]))
        groups.append(np.full(len(ids), n))
    if not xs:
        raise InputError("no judged query to train the learned fusion on")
    return np.vstack(xs), np.concatenate(ys), np.concatenate(groups)


def train(legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]], *, c: float = 1.0,
          trained_on: Mapping[str, Any] | None = None) -> LearnedFusion:
    """Fit the model on judged queries' legs (logistic regression, L2 penalty ``1 / c``)."""
    from ._optional import require

    linear_model = require("sklearn.linear_model", "training a learned fusion")
    x, y, _ = training_rows(legs, qrels)
    if y.min() == y.max():
        raise InputError("the training queries' candidates are all relevant or all not: nothing to learn")
    model = linear_model.LogisticRegression(C=c, max_iter=1000).fit(x, y)
    return LearnedFusion(tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0]), trained_on)
