"""The fusion vocabulary: how the two legs of a hybrid search become one list. Pure.

Two kinds, named and validated as the server names and validates them:

- :class:`RRF` — Reciprocal Rank Fusion (neural-search ``score-ranker-processor``): a
  ``rank_constant`` (1..10000, default 60) and, from OpenSearch 3.1, per-leg ``weights``.
- :class:`ScoreNormalization` — ``normalization-processor``: a normalisation ``technique``
  (min_max, l2, z_score from 3.0) and a ``combination`` (arithmetic, geometric, harmonic mean)
  with per-leg ``weights`` in [0, 1] that sum to 1.

A third, :class:`ScoreSum`, is Elasticsearch's free-tier hybrid: ``query`` and ``knn`` in one
request, each leg's raw score times its weight (boost), summed. No normalisation: BM25 scores are
unbounded while cosine scores lie in [0, 1], so the weights must make up for the scales.

All are frozen, validated at construction (an invalid fusion cannot exist), have a stable short
``name`` that :func:`parse_fusion` reads back (``rrf``, ``rrf-40``, ``min_max-arithmetic_mean``),
and render to the processor they configure (:meth:`processor`). Which fusions a given cluster can
run is :class:`adapter.capabilities.Capabilities`' business, not theirs.

Weights are per leg, in leg order: the text (BM25) leg first, the vector leg second.
"""

from __future__ import annotations

import copy
import enum
import math
from dataclasses import dataclass
from typing import Any, Mapping, Union

from .errors import InputError

LEGS = ("bm25", "dense")
DEFAULT_WEIGHTS: tuple[float, float] = (0.5, 0.5)
DEFAULT_RANK_CONSTANT = 60
# neural-search checks that normalisation weights sum to 1 within this tolerance.
WEIGHT_SUM_TOLERANCE = 0.01
RANK_CONSTANT_RANGE = (1, 10_000)


class Normalization(str, enum.Enum):
    """Score normalisation of ``normalization-processor`` (z_score needs OpenSearch 3.0+)."""

    MIN_MAX = "min_max"
    L2 = "l2"
    Z_SCORE = "z_score"


class Combination(str, enum.Enum):
    """Score combination of ``normalization-processor``."""

    ARITHMETIC_MEAN = "arithmetic_mean"
    GEOMETRIC_MEAN = "geometric_mean"
    HARMONIC_MEAN = "harmonic_mean"


def parse_enum(enum_cls, value, what: str):
    """``value`` as a member of ``enum_cls`` (case-insensitive), or an InputError listing the choices."""
    if isinstance(value, enum_cls):
        return value
    try:
        return enum_cls(str(value).strip().lower())
    except ValueError:
        raise InputError(f"unknown {what} {value!r}; expected one of: {', '.join(e.value for e in enum_cls)}") from None


def parse_weights(text: str | None) -> tuple[float, ...] | None:
    """``"0.3,0.7"`` -> ``(0.3, 0.7)``; None or empty -> None. Validation is the fusion's job."""
    if text is None or not str(text).strip():
        return None
    try:
        return tuple(float(w) for w in str(text).split(","))
    except ValueError:
        raise InputError(f"weights must be comma-separated numbers, e.g. 0.3,0.7; got {text!r}") from None


def _checked_weights(weights, *, unit_sum: bool) -> tuple[float, ...] | None:
    if weights is None:
        return None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise InputError(f"weights must be numbers, got {weights!r}") from None
    if len(values) != len(LEGS):
        raise InputError(f"{len(values)} weights given for {len(LEGS)} legs; give one weight per leg ({', '.join(LEGS)})")
    if not all(math.isfinite(w) for w in values):
        raise InputError(f"weights must be finite numbers, got {list(values)}")
    if any(w < 0 for w in values):
        raise InputError(f"weights must not be negative, got {list(values)}")
    if unit_sum and (any(w > 1 for w in values) or abs(sum(values) - 1.0) > WEIGHT_SUM_TOLERANCE):
        raise InputError(f"the server requires weights in [0, 1] that sum to 1.0, got {list(values)}")
    if not unit_sum and sum(values) == 0:
        raise InputError(f"at least one weight must be positive, got {list(values)}")
    return values


@dataclass(frozen=True)
class RRF:
    """Reciprocal Rank Fusion (Cormack, Clarke & Buettcher 2009) as ``score-ranker-processor`` runs it."""

    rank_constant: int = DEFAULT_RANK_CONSTANT
    weights: tuple[float, ...] | None = None  # None: every leg counts 1 (weights need OpenSearch 3.1+)

    kind = "rrf"

    def __post_init__(self) -> None:
        low, high = RANK_CONSTANT_RANGE
        if isinstance(self.rank_constant, bool) or not isinstance(self.rank_constant, int) or not low <= self.rank_constant <= high:
            raise InputError(f"rank_constant must be an integer between {low} and {high}, got {self.rank_constant!r}")
        # The server checks RRF weights as it checks normalisation weights: in [0, 1], summing to 1.
        object.__setattr__(self, "weights", _checked_weights(self.weights, unit_sum=True))

    @property
    def name(self) -> str:
        """``rrf`` for the default rank constant, else ``rrf-<k>``; weights are not part of the name."""
        return "rrf" if self.rank_constant == DEFAULT_RANK_CONSTANT else f"rrf-{self.rank_constant}"

    @property
    def effective_weights(self) -> tuple[float, ...]:
        return self.weights or (1.0,) * len(LEGS)

    def processor(self, template: Mapping[str, Any] | None = None, *, legacy: bool = False) -> dict[str, Any]:
        """The ``score-ranker-processor`` entry, filled into ``template`` (the pipeline asset's) if given.

        ``legacy``: neural-search before 3.1 reads the rank constant from
        ``combination.parameters.rank_constant`` and silently ignores ``combination.rank_constant``
        (3.1 moved it, and accepts only weights under ``parameters``).
        """
        proc = copy.deepcopy(dict(template or {"score-ranker-processor": {}}))
        combination = proc.setdefault("score-ranker-processor", {}).setdefault("combination", {})
        combination["technique"] = "rrf"
        combination.pop("rank_constant", None)
        combination.pop("parameters", None)
        if legacy:
            if self.weights is not None:
                raise InputError("RRF weights need OpenSearch 3.1+")
            combination["parameters"] = {"rank_constant": self.rank_constant}
        else:
            combination["rank_constant"] = self.rank_constant
            if self.weights is not None:
                combination["parameters"] = {"weights": list(self.weights)}
        return proc

    def with_weights(self, weights: tuple[float, ...] | None) -> RRF:
        return RRF(self.rank_constant, weights)

    @classmethod
    def parse(cls, text: str, *, weights: tuple[float, ...] | None = None) -> RRF:
        """``rrf`` or ``rrf-<rank constant>``."""
        name = str(text).strip().lower()
        if name == "rrf":
            return cls(weights=weights)
        if name.startswith("rrf-"):
            try:
                constant = int(name[4:])
            except ValueError:
                raise InputError(f"RRF is written rrf or rrf-<rank constant>, e.g. rrf-40; got {text!r}") from None
            return cls(constant, weights)
        raise InputError(f"not an RRF fusion name: {text!r} (expected rrf or rrf-<rank constant>)")


@dataclass(frozen=True)
class ScoreNormalization:
    """Score normalisation then weighted combination, as ``normalization-processor`` runs it."""

    technique: Normalization = Normalization.MIN_MAX
    combination: Combination = Combination.ARITHMETIC_MEAN
    weights: tuple[float, ...] | None = None  # None: DEFAULT_WEIGHTS

    kind = "normalization"

    def __post_init__(self) -> None:
        object.__setattr__(self, "technique", parse_enum(Normalization, self.technique, "normalization technique"))
        object.__setattr__(self, "combination", parse_enum(Combination, self.combination, "combination technique"))
        object.__setattr__(self, "weights", _checked_weights(self.weights, unit_sum=True))
        if self.technique is Normalization.Z_SCORE and self.combination is not Combination.ARITHMETIC_MEAN:
            raise InputError("z_score normalisation works only with arithmetic_mean combination on the server")

    @property
    def name(self) -> str:
        """``<technique>-<combination>``; weights are not part of the name."""
        return f"{self.technique.value}-{self.combination.value}"

    @property
    def effective_weights(self) -> tuple[float, ...]:
        return self.weights or DEFAULT_WEIGHTS

    def processor(self, template: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``normalization-processor`` entry, filled into ``template`` (the pipeline asset's) if given."""
        proc = copy.deepcopy(dict(template or {"normalization-processor": {}}))
        body = proc.setdefault("normalization-processor", {})
        body.setdefault("normalization", {})["technique"] = self.technique.value
        combination = body.setdefault("combination", {})
        combination["technique"] = self.combination.value
        combination["parameters"] = {**combination.get("parameters", {}), "weights": list(self.effective_weights)}
        return proc

    def with_weights(self, weights: tuple[float, ...] | None) -> ScoreNormalization:
        return ScoreNormalization(self.technique, self.combination, weights)

    @classmethod
    def parse(cls, text: str, *, weights: tuple[float, ...] | None = None) -> ScoreNormalization:
        """``<technique>-<combination>`` (``min_max-harmonic_mean``) or a bare technique (arithmetic mean)."""
        name = str(text).strip().lower()
        technique, _, combination = name.partition("-")
        return cls(technique, combination or Combination.ARITHMETIC_MEAN, weights)


@dataclass(frozen=True)
class ScoreSum:
    """Each leg's raw score times its weight, summed: Elasticsearch's ``query`` + ``knn`` request
    (``_score = w_bm25 * bm25 + w_dense * similarity``, the weights sent as boosts). Not normalised."""

    weights: tuple[float, ...] | None = None  # None: (1, 1), the plain sum

    kind = "sum"
    name = "sum"  # weights are not part of the name

    def __post_init__(self) -> None:
        # Boosts: any non-negative numbers, at least one positive (the scales of the legs differ).
        object.__setattr__(self, "weights", _checked_weights(self.weights, unit_sum=False))

    @property
    def effective_weights(self) -> tuple[float, ...]:
        return self.weights or (1.0,) * len(LEGS)

    def with_weights(self, weights: tuple[float, ...] | None) -> ScoreSum:
        return ScoreSum(weights)


Fusion = Union[RRF, ScoreNormalization, ScoreSum]
DEFAULT_FUSION: Fusion = ScoreNormalization()


def parse_fusion(text: str | None, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None) -> Fusion | None:
    """A fusion from its short name plus optional weights / rank constant (the CLI's flags).

    ``None`` when nothing was asked for. A rank constant alone means RRF; weights alone mean the
    default normalisation with those weights. A rank constant with a normalisation is an error,
    never silently dropped.
    """
    if text is None and weights is None and rank_constant is None:
        return None
    name = (text or ("rrf" if rank_constant is not None else DEFAULT_FUSION.name)).strip().lower()
    if name == "rrf" or name.startswith("rrf-"):
        fusion = RRF.parse(name, weights=weights)
        if rank_constant is not None:
            if name != "rrf" and rank_constant != fusion.rank_constant:
                raise InputError(f"{name!r} and rank constant {rank_constant} disagree; give one of them")
            fusion = RRF(rank_constant, weights)
        return fusion
    if rank_constant is not None:
        raise InputError(f"a rank constant applies to RRF only, not to {name!r}")
    if name == ScoreSum.name:
        return ScoreSum(weights)
    if not name or name.split("-")[0] not in {n.value for n in Normalization}:
        choices = ", ".join(["rrf", "rrf-<k>", *(f"{n.value}-<combination>" for n in Normalization), ScoreSum.name])
        raise InputError(f"unknown fusion {text!r}; expected one of: {choices}")
    return ScoreNormalization.parse(name, weights=weights)


def fusion_from_processor(processors: list[dict[str, Any]]) -> Fusion | None:
    """The fusion a pipeline's ``phase_results_processors`` perform (None: not a hybrid fusion)."""
    for proc in processors or []:
        if "normalization-processor" in proc:
            p = proc["normalization-processor"]
            weights = (p.get("combination") or {}).get("parameters", {}).get("weights")
            return ScoreNormalization(
                (p.get("normalization") or {}).get("technique", Normalization.MIN_MAX),
                (p.get("combination") or {}).get("technique", Combination.ARITHMETIC_MEAN),
                tuple(weights) if weights else None,
            )
        if "score-ranker-processor" in proc:
            c = proc["score-ranker-processor"].get("combination", {})
            params = c.get("parameters") or {}
            weights = params.get("weights")
            constant = params.get("rank_constant", c.get("rank_constant", DEFAULT_RANK_CONSTANT))  # before / from 3.1
            return RRF(int(constant), tuple(weights) if weights else None)
    return None
