"""Learned fusion: a linear model over per-hit leg features, trained on judgments. Pure.

The server's normalisation processor adds the legs' normalised scores with fixed weights; it
cannot add "this leg found the hit at all" or a rank term, which is what a model trained on
judged queries uses (learning to rank with a pointwise logistic loss over the candidates of both
legs; Liu, *Learning to Rank for Information Retrieval*, 2009, ch. 2). So it fuses in the client:
both legs are fetched (one ``_msearch``) and ranked here by :meth:`LearnedFusion.fuse`.

Features of a candidate, per leg, all 0 when the leg missed it (:data:`LEG_FEATURES`): the min_max
normalised score (as the server's min_max: over the leg's candidates), the z-score (floored at 0),
the DBSF score (``(s - (mean - 3 std)) / (6 std)``, :mod:`adapter.fusion.dbsf`'s, unfloored), a
found flag, and ``1 / rank``. A model names the features it was trained on (``<leg>_<feature>``);
:data:`FEATURE_SETS` are the sets training chooses between. The model is :class:`LearnedFusion`
(features, weights, bias, how it was trained), a versioned JSON asset written by ``hybrid eval
--tune`` (:meth:`LearnedFusion.dumps`); its score is the linear decision value, so ranking needs no
sigmoid. :func:`select` picks the feature set and the regularisation by cross-validation on the
judged (train) queries it is given, never on the split it is reported on. Training needs
scikit-learn and ir-measures (the ``eval`` extra), scoring only numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from adapter.errors import InputError
from adapter.fusion import LEGS, FusedDoc, Fusion
from adapter.fusion.base import LegScore
from adapter.fusion.choice.asset import JsonAsset
from adapter.fusion.dbsf import LONE, SIGMAS

LEARNED = "learned"
MAX_WEIGHT_SUM = 1e100  # far beyond any trained model's (standardised features, C <= 1), far below float64's overflow
MODEL_SCHEMA = 2  # 2: the model names its features (schema 1: always the eight of SCHEMA1_FEATURES)
MODEL_KIND = "learned-fusion"
Run = Sequence[tuple[str, float]]


def _min_max(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    lo, hi = float(scores.min()), float(scores.max())
    return np.ones_like(scores) if hi == lo else (scores - lo) / (hi - lo)


def _z_score(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    std = float(scores.std(ddof=1)) if len(scores) > 1 else 0.0
    return np.maximum(0.0, (scores - scores.mean()) / std) if std > 0 else np.zeros_like(scores)


def _dbsf(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    # DBSF's map (adapter.fusion.dbsf), in float64: mean +- 3 sample std -> [0, 1], a lone score or no spread 0.5.
    std = float(scores.std(ddof=1)) if len(scores) > 1 else 0.0
    if std <= 0:
        return np.full_like(scores, LONE)
    mapped: np.ndarray = (scores - (scores.mean() - SIGMAS * std)) / (2 * SIGMAS * std)
    return mapped


# Per-leg features: (the leg's scores, its 1-based ranks) over its distinct candidates -> one column.
LEG_FEATURES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "min_max": _min_max,
    "z_score": _z_score,
    "dbsf": _dbsf,
    "found": lambda scores, ranks: np.ones_like(scores),
    "inverse_rank": lambda scores, ranks: 1.0 / ranks,
}
# The sets training chooses between, simplest first (the one-standard-error rule prefers the first).
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "dbsf": ("dbsf", "found"),
    "scores": ("min_max", "z_score", "found", "inverse_rank"),
    "scores+dbsf": ("min_max", "z_score", "found", "inverse_rank", "dbsf"),
}
REGULARISATION = (0.1, 1.0)  # scikit-learn's C (inverse L2 penalty) on standardised features
FOLDS = 5


def feature_names(per_leg: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{leg}_{name}" for leg in LEGS for name in per_leg)


FEATURES = feature_names(FEATURE_SETS["dbsf"])  # what a model gets unless training chooses otherwise
SCHEMA1_FEATURES = feature_names(FEATURE_SETS["scores"])  # the features of every schema-1 model


def _per_leg(names: Sequence[str]) -> tuple[str, ...]:
    """The per-leg feature names of a model's features (the same for both legs, in order)."""
    per = len(names) // len(LEGS)
    parts = tuple(n.split("_", 1)[1] if "_" in n else "" for n in names[:per])
    if (
        per == 0
        or len(names) != per * len(LEGS)
        or tuple(names) != feature_names(parts)
        or not set(parts) <= set(LEG_FEATURES)
    ):
        raise InputError(
            f"learned fusion features must be <leg>_<feature> for the legs {', '.join(LEGS)} in that order, "
            f"with features among {', '.join(LEG_FEATURES)}; got {list(names)}"
        )
    return parts


def _leg_features(run: Run, per_leg: Sequence[str]) -> dict[str, list[float]]:
    firsts: dict[str, tuple[int, float]] = {}
    for rank, (doc_id, raw) in enumerate(run, start=1):
        firsts.setdefault(doc_id, (rank, float(raw)))
    if not firsts:
        return {}
    scores = np.fromiter((s for _, s in firsts.values()), dtype=np.float64, count=len(firsts))
    ranks = np.fromiter((r for r, _ in firsts.values()), dtype=np.float64, count=len(firsts))
    columns = np.column_stack([LEG_FEATURES[name](scores, ranks) for name in per_leg]).tolist()
    return dict(zip(firsts, columns))


def features(runs: Sequence[Run], names: Sequence[str] = FEATURES) -> tuple[list[str], np.ndarray]:
    """The candidates of both legs (first seen first) and their feature matrix (``len x names``)."""
    if len(runs) != len(LEGS):
        raise InputError(f"learned fusion takes {len(LEGS)} legs ({', '.join(LEGS)}), got {len(runs)}")
    per = _per_leg(names)
    per_leg = [_leg_features(run, per) for run in runs]
    ids = list(dict.fromkeys(d for leg in per_leg for d in leg))
    zero = [0.0] * len(per)
    matrix = np.asarray([[v for leg in per_leg for v in leg.get(d, zero)] for d in ids], dtype=np.float64)
    return ids, matrix.reshape(len(ids), len(names))


@dataclass(frozen=True)
class LearnedFusion(Fusion, JsonAsset):
    """A linear model over its ``features`` (``weights`` are per feature, not per leg); no search
    engine runs it, so the searcher fuses in the client with it (and says so)."""

    weights: tuple[float, ...]
    bias: float = 0.0
    trained_on: Mapping[str, Any] | None = field(default=None, compare=False)
    features: tuple[str, ...] = FEATURES

    kind: ClassVar[str] = LEARNED
    spellings: ClassVar[tuple[str, ...]] = (LEARNED,)
    registered: ClassVar[bool] = False  # it needs its model file: not a method to parse from a name or vary
    FILE: ClassVar[str] = "the learned fusion file"
    FILE_HOLDS: ClassVar[str] = "a learned fusion model"
    FILE_KIND: ClassVar[str] = MODEL_KIND
    FILE_SCHEMA: ClassVar[int] = MODEL_SCHEMA

    @property
    def name(self) -> str:
        return LEARNED

    @classmethod
    def parse(
        cls, name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
    ) -> LearnedFusion | None:
        return None  # from its file (LearnedFusion.loads), never from a name

    def contributions(self, scores: Sequence[float | None], fused: float) -> list[float]:
        raise InputError("a learned fusion's per-leg parts come with its fused documents (LearnedFusion.fuse)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(self.features))
        _per_leg(self.features)
        if len(self.weights) != len(self.features):
            raise InputError(
                f"a learned fusion needs {len(self.features)} weights ({', '.join(self.features)}), got "
                f"{len(self.weights)}"
            )
        if not all(math.isfinite(w) for w in (*self.weights, self.bias)):
            raise InputError("a learned fusion's weights must be finite numbers")
        magnitude = sum(abs(w) for w in (*self.weights, self.bias))  # inf when it overflows (fsum would raise)
        if not magnitude < MAX_WEIGHT_SUM:
            # Each feature is within [0, depth] (most within [0, 1]): weights this large score every hit inf.
            raise InputError(
                f"a learned fusion's weights are too large to score with (the sum of their magnitudes is "
                f"{magnitude:.3g}; at most {MAX_WEIGHT_SUM:.0e}): "
                "the model file is damaged or was not written by `hybrid eval --tune`; train it again"
            )

    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        """Every candidate of both legs, best first, scored by the model (ties: best rank, then id)."""
        ids, x = features(runs, self.features)
        if not ids:
            return []
        per = len(self.features) // len(LEGS)
        w = np.asarray(self.weights).reshape(len(LEGS), per)
        parts = (x.reshape(len(ids), len(LEGS), per) * w).sum(axis=2)  # each leg's share of the score
        total = parts.sum(axis=1) + self.bias
        if not np.isfinite(total).all():  # a score that is not a number ranks nothing and is no JSON
            raise InputError(
                f"the learned fusion model scored {int((~np.isfinite(total)).sum())} of {len(ids)} candidates "
                "as inf or nan (weights too large for these features): train it again with `hybrid eval --tune`"
            )
        scores = total.tolist()
        found = [name.split("_", 1)[1] for name in self.features[:per]]
        shown = found.index("min_max") if "min_max" in found else 0  # the normalised score an explanation shows
        parts_list, normed = parts.tolist(), x[:, shown::per].tolist()
        positions = [{d: (r, float(sc)) for r, (d, sc) in reversed(list(enumerate(run, start=1)))} for run in runs]
        fused = []
        for i, doc_id in enumerate(ids):
            legs, best = [], math.inf
            for j, name in enumerate(leg_names):
                rank, raw = positions[j].get(doc_id, (None, None))
                legs.append(LegScore(name, rank, raw, normed[i][j] if rank else None, 1.0, parts_list[i][j]))
                if rank is not None and rank < best:
                    best = rank
            fused.append((scores[i], best, doc_id, tuple(legs)))
        fused.sort(key=lambda item: (-item[0], item[1], item[2]))
        return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in fused]

    # -- what it was trained on --------------------------------------------------------------------
    def fit_for(self, *, index: str, embedder: str, depth: int) -> tuple[str, ...]:
        """Notices for a search of ``index`` (embedded by fingerprint key ``embedder``, ``depth`` candidates per leg)
        where it differs from what the model records it was trained on (``trained_on``: index, embedder, depth).
        Another embedder is refused (:class:`InputError`): its dense scores are another scale, so the model's
        weights for them mean nothing. A model that records none of them says so once."""
        about = dict(self.trained_on or {})
        trained = {key: about.get(key) for key in ("index", "embedder", "depth")}
        if trained["embedder"] is not None and trained["embedder"] != embedder:
            raise InputError(
                f"this learned fusion model was trained on vectors of embedder {trained['embedder']} (fingerprint "
                f"key), and this index is embedded by {embedder}: its weights for the dense leg do not apply. Train "
                "one on this index with `hybrid eval --tune`"
            )
        if all(v is None for v in trained.values()):
            return (
                "this learned fusion model does not record the index, embedder and depth it was trained on (written "
                "before they were recorded), so nothing checks that it fits this search: train it again with `hybrid "
                "eval --tune`",
            )
        notices = []
        if trained["index"] is not None and trained["index"] != index:
            notices.append(
                f"this learned fusion model was trained on the results of index {trained['index']}, not {index}: "
                "its weights fit that index's score distributions"
            )
        if trained["depth"] is not None and trained["depth"] != depth:
            notices.append(
                f"this learned fusion model was trained on {trained['depth']} candidates per leg and this search "
                f"fetched {depth} (its rank and z-score features differ with the depth): pass --depth "
                f"{trained['depth']}"
            )
        return tuple(notices)

    # -- the versioned asset ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            **self.header(),
            "features": list(self.features),
            "weights": list(self.weights),
            "bias": self.bias,
            "trained_on": dict(self.trained_on) if self.trained_on else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LearnedFusion:
        schema = cls.schema_of(data)
        names = tuple(data.get("features") or [])
        if schema == 1 and names != SCHEMA1_FEATURES:
            raise InputError(f"the model's features {list(names)} are not schema 1's {list(SCHEMA1_FEATURES)}")
        try:
            return cls(
                tuple(float(w) for w in data["weights"]), float(data.get("bias", 0.0)), data.get("trained_on"), names
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the learned fusion model is unreadable: {exc}") from exc


# -- training --------------------------------------------------------------------------------------
def _query_order(qids: Sequence[str]) -> list[str]:
    """Query ids in id order (numbers as numbers), so folds do not depend on how the legs were fetched."""
    return sorted(qids, key=lambda q: (0, int(q), "") if q.isdigit() else (1, 0, q))


def training_rows(
    legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]], names: Sequence[str] = FEATURES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels (judged relevant: 1) and query index of every candidate of every judged query."""
    xs, ys, groups = [], [], []
    for n, (qid, runs) in enumerate(legs.items()):
        if qid not in qrels:
            continue
        ids, x = features(runs, names)
        xs.append(x)
        ys.append(np.asarray([1.0 if qrels[qid].get(d, 0) > 0 else 0.0 for d in ids]))
        groups.append(np.full(len(ids), n))
    if not xs:
        raise InputError("no judged query to train the learned fusion on")
    return np.vstack(xs), np.concatenate(ys), np.concatenate(groups)


def train(
    legs: Mapping[str, Sequence[Run]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    names: Sequence[str] = FEATURES,
    c: float = 1.0,
    trained_on: Mapping[str, Any] | None = None,
) -> LearnedFusion:
    """Fit the model on judged queries' legs: logistic regression on standardised features (L2
    penalty ``1 / c``), the standardisation folded back into the weights of the raw features."""
    from adapter._optional import require

    linear_model = require("sklearn.linear_model", "training a learned fusion")
    x, y, _ = training_rows(legs, qrels, names)
    if y.min() == y.max():
        raise InputError("the training queries' candidates are all relevant or all not: nothing to learn")
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    model = linear_model.LogisticRegression(C=c, max_iter=2000).fit((x - mean) / std, y)
    weights = model.coef_[0] / std
    bias = float(model.intercept_[0] - (model.coef_[0] * mean / std).sum())
    return LearnedFusion(tuple(float(w) for w in weights), bias, trained_on, tuple(names))


@dataclass(frozen=True)
class Selected:
    """The model :func:`select` chose, and the held-out nDCG@10 of every setting it compared."""

    model: LearnedFusion
    setting: str  # "<feature set> C=<c>"
    cross_validated: Mapping[str, float]  # setting -> mean nDCG@10 over the held-out folds (empty: not cross-validated)
    standard_error: float  # of the paired per-query difference between the best setting and the chosen one
    folds: int = FOLDS  # 0: too few judged queries to cross-validate; the default setting was trained
    skipped_folds: int = 0  # folds whose training queries had nothing to learn (no relevant candidate, or no other)

    def as_json(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "folds": self.folds,
            "standard_error": round(self.standard_error, 4),
            "skipped_folds": self.skipped_folds,
            "cross_validated_ndcg@10": {k: round(v, 4) for k, v in self.cross_validated.items()},
        }


# The held-out measure of rankings, per query: (qrels, rankings by query) -> score by query.
PerQuery = Callable[[Mapping[str, Mapping[str, int]], Mapping[str, Sequence[str]]], Mapping[str, float]]
DEFAULT_SETTING = ("dbsf", 1.0)  # what a model gets when there are too few judged queries to choose (train's C)


def select(
    legs: Mapping[str, Sequence[Run]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    score: PerQuery,
    sets: Mapping[str, Sequence[str]] = FEATURE_SETS,
    regularisation: Sequence[float] = REGULARISATION,
    folds: int = FOLDS,
    trained_on: Mapping[str, Any] | None = None,
) -> Selected:
    """The feature set and ``C`` by ``folds``-fold cross-validation on these judged queries (folds
    interleave the queries in id order; one per query when there are fewer queries than folds),
    then trained on all of them. A single judged query cannot be cross-validated: it trains
    :data:`DEFAULT_SETTING`, and ``folds`` 0 says so.

    The simplest feature set (in their order) whose best setting's held-out nDCG@10 is within one
    standard error of the best setting's (the paired per-query difference; the one-standard-error
    rule, Hastie, Tibshirani & Friedman, *Elements of Statistical Learning* 7.10) wins, as
    :func:`adapter.fusion.choice.policy.learn_policy` chooses a policy family; its ``C`` is its best one.
    ``score`` measures the held-out rankings (the evaluation's nDCG@10, :func:`adapter.evaluation.metrics.per_query`),
    passed in: the fusion core imports nothing from the evaluation above it."""
    judged = _judged(legs, qrels, folds)
    folds = min(folds, len(judged))
    if folds < 2:
        name, c = DEFAULT_SETTING
        model = train(
            {q: legs[q] for q in judged}, qrels, names=feature_names(FEATURE_SETS[name]), c=c, trained_on=trained_on
        )
        return Selected(model, f"{name} C={c:g}", {}, 0.0, folds=0)
    fits = _fits(legs, qrels, judged, folds)
    scored = [q for i, q in enumerate(judged) if i % folds in fits]
    settings = [(name, c) for name in sets for c in sorted(regularisation)]
    held = {
        f"{name} C={c:g}": _held_out(
            legs, qrels, judged, folds, fits, names=feature_names(sets[name]), c=c, score=score
        )
        for name, c in settings
    }
    mean = {s: float(np.mean([v[q] for q in scored])) for s, v in held.items()}
    chosen, se = _one_standard_error(held, mean, scored, sets)
    name, c = settings[list(held).index(chosen)]
    model = train({q: legs[q] for q in judged}, qrels, names=feature_names(sets[name]), c=c, trained_on=trained_on)
    return Selected(model, chosen, mean, se, folds=folds, skipped_folds=folds - len(fits))


def _judged(legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]], folds: int) -> list[str]:
    """The judged queries in id order, after checking there is one and that ``folds`` is 2 or more."""
    judged = [q for q in _query_order(list(legs)) if q in qrels]
    if not judged:
        raise InputError("no judged query to train the learned fusion on")
    if folds < 2:
        raise InputError(f"choosing a learned fusion by cross-validation needs 2 folds or more, got {folds}")
    return judged


def _fits(
    legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]], judged: Sequence[str], folds: int
) -> dict[int, list[str]]:
    """Each fold's training queries, by fold, for the folds that have something to learn."""
    # A fold whose training queries are all relevant or all not has nothing to learn: its held-out
    # queries are scored by no setting (the same for each), rather than the selection failing.
    fits = {k: [q for i, q in enumerate(judged) if i % folds != k] for k in range(folds)}
    fits = {k: qs for k, qs in fits.items() if _learnable(legs, qrels, qs)}
    if not fits:
        raise InputError("no cross-validation fold has training queries with both relevant and other candidates")
    return fits


def _held_out(
    legs: Mapping[str, Sequence[Run]],
    qrels: Mapping[str, Mapping[str, int]],
    judged: Sequence[str],
    folds: int,
    fits: Mapping[int, Sequence[str]],
    *,
    names: Sequence[str],
    c: float,
    score: PerQuery,
) -> dict[str, float]:
    """One setting's held-out score by query: each fold's model ranks the queries it was not trained on."""
    scores: dict[str, float] = {}
    for k, fit_on in fits.items():
        model = train({q: legs[q] for q in fit_on}, qrels, names=names, c=c)
        ranked = {q: [f.id for f in model.fuse(legs[q])[:100]] for i, q in enumerate(judged) if i % folds == k}
        scores.update(score({q: qrels[q] for q in ranked}, ranked))
    return scores


def _one_standard_error(
    held: Mapping[str, Mapping[str, float]],
    mean: Mapping[str, float],
    scored: Sequence[str],
    sets: Mapping[str, Sequence[str]],
) -> tuple[str, float]:
    """The chosen setting and its standard error: the simplest feature set's best setting within one
    standard error of the best setting (the best one itself, error 0.0, when none is)."""
    order = list(held)

    def top(candidates: Sequence[str]) -> str:
        return max(candidates, key=lambda s: (round(mean[s], 9), -order.index(s)))

    best = top(order)
    for name in sets:  # simplest first
        mine = top([s for s in order if s.startswith(f"{name} C=")])
        diff = np.asarray([held[best][q] - held[mine][q] for q in scored])
        err = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
        if mean[best] - mean[mine] <= err:
            return mine, err
    return best, 0.0


def _learnable(legs: Mapping[str, Sequence[Run]], qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str]) -> bool:
    """Whether training on these queries has both relevant and other candidates to tell apart."""
    if not qids:
        return False
    _, y, _ = training_rows({q: legs[q] for q in qids}, qrels)
    return bool(y.min() != y.max())
