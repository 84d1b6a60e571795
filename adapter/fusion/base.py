"""What every fusion method shares: runs in, a fused run out. Pure.

A *run* is one leg's ranked ``(doc_id, score)`` list, best first. A fusion method is a frozen
dataclass deriving :class:`Fusion`: its parameters (validated at construction, so an invalid
fusion cannot exist), a short ``name`` that :meth:`Fusion.parse` reads back, and :meth:`Fusion.fuse`,
which computes the fused list exactly as the server it mirrors does. Deriving registers it
(:func:`methods`). Weights are per leg, in leg order: the text (BM25) leg first, the vector leg
second.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, Sequence, TypeVar

import numpy as np

from adapter.errors import InputError


class FusedBy(str, enum.Enum):
    """Who fused the legs of a result."""

    NONE = "none"  # a single leg (bm25, dense): nothing to fuse
    SERVER_PIPELINE = "server-pipeline"  # a search pipeline stored on the cluster (named)
    SERVER_INLINE = "server-inline"  # a search pipeline sent with the request
    SERVER_QUERY = "server-query"  # the hybrid query's own `fusion` (in-query fusion, no pipeline)
    SERVER_RETRIEVER = "server-retriever"  # Elasticsearch: an rrf or linear retriever in the request
    SERVER_SUM = "server-sum"  # Elasticsearch: query + knn in one request, raw scores summed with boosts
    CLIENT = "client"  # both legs fetched and fused here (client, client-rrf, or a fallback)

    @property
    def server(self) -> bool:
        """The cluster fuses (a pipeline, the request's body)."""
        return self not in (FusedBy.NONE, FusedBy.CLIENT)

    @property
    def in_request(self) -> bool:
        """The request's body fuses (no search pipeline): in-query fusion, a retriever, the sum."""
        return self in (FusedBy.SERVER_QUERY, FusedBy.SERVER_RETRIEVER, FusedBy.SERVER_SUM)


@dataclass(frozen=True)
class LegScore:
    """One leg's part in a hit's fused score (an explanation row)."""

    leg: str  # "bm25" or "dense"
    rank: int | None  # 1-based rank in that leg; None when the leg did not return the hit
    raw_score: float | None  # the leg's own score (BM25 score, k-NN similarity score)
    normalized_score: float | None  # after min_max / l2 / z_score, or 1/(k+rank) for RRF
    weight: float
    contribution: float  # this leg's share of the fused score


LEGS = ("bm25", "dense")
DEFAULT_WEIGHTS: tuple[float, float] = (0.5, 0.5)
# neural-search checks that normalisation weights sum to 1 within this tolerance.
WEIGHT_SUM_TOLERANCE = 0.01

# A run: (doc_id, score) pairs, best first, as one leg returned them.
Run = Sequence[tuple[str, float]]
# One leg's distinct documents, first (best) occurrence only: doc_id -> (1-based rank, raw score).
Firsts = dict[str, tuple[int, float]]

F = TypeVar("F", bound="Fusion")


@dataclass(frozen=True)
class FusedDoc:
    """One document of a fused run: its fused score and each leg's part in it."""

    id: str
    score: float
    legs: tuple[LegScore, ...]


_METHODS: list[type[Fusion]] = []


class Fusion(abc.ABC):
    """A fusion method with its parameters. Subclasses are frozen dataclasses with a ``weights``
    field; deriving from this class registers them (:func:`methods`)."""

    weights: tuple[float, ...] | None
    # The family, as results and JSON name it ("rrf", "normalization", "sum", "dbsf").
    kind: ClassVar[str]
    # How the name is written, for error messages ("rrf", "rrf-<k>").
    spellings: ClassVar[tuple[str, ...]]
    # The weights when none are given: what the server uses then.
    unweighted: ClassVar[tuple[float, ...]] = (1.0,) * len(LEGS)

    # Whether the method is one of the registry's (named, parsed and varied from a name alone). A
    # fusion that needs a trained model (adapter.fusion.choice.learned) is not: it comes from its file.
    registered: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # ABCMeta sets __abstractmethods__ only after this hook, so an open abstract method is looked up here
        # (a shared base such as BoostWeighted leaves fuse open: not a method).
        abstract = any(getattr(getattr(cls, name, None), "__isabstractmethod__", False) for name in _ABSTRACT)
        if not abstract and cls.registered and cls not in _METHODS:
            _METHODS.append(cls)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The short, stable name (weights are not part of it): ``rrf``, ``min_max-arithmetic_mean``."""

    @property
    def effective_weights(self) -> tuple[float, ...]:
        return self.weights or self.unweighted

    def with_weights(self: F, weights: tuple[float, ...] | None) -> F:
        """The same method with other weights (validated again)."""
        return dataclasses.replace(self, weights=weights)  # type: ignore[type-var]  # every method is a dataclass

    @abc.abstractmethod
    def fuse(self, runs: Sequence[Run], *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
        """Every document of every run, fused, best first (ties: best rank in any leg, then id)."""

    def normalized(self, run: Run) -> dict[str, float | None]:
        """One leg's documents (at their first rank) with the score this method gives them before
        weighting and combining: normalised, ``1 / (k + rank)`` for RRF, the raw score for a sum.
        It does not depend on the weights. By default from :meth:`fuse` on that leg alone; methods
        override it where that is cheaper (the evaluation report asks for it per query and method)."""
        alone = [run, *([[]] * (len(LEGS) - 1))]  # the other legs empty: a leg is normalised on its own
        return {f.id: f.legs[0].normalized_score for f in self.fuse(alone)}

    def relevance(self, score: float) -> float:
        """A fused ``score`` as a relevance in [0, 1] (monotone: the order stays), for frameworks
        that threshold on one (LangChain's ``score_threshold``). By default a non-negative score
        with no upper bound (a raw sum, z-scores) maps to ``s / (1 + s)``; methods whose scores are
        bounded override it with their own bound."""
        return bounded(score)

    def contributions(self, scores: Sequence[float | None], fused: float) -> list[float]:
        """Each leg's share of a hit's ``fused`` score from its per-leg (normalised) ``scores``
        (None: the leg missed it); for a weighted sum, ``weight * score``."""
        return [w * s if s is not None else 0.0 for s, w in zip(scores, self.effective_weights)]

    @classmethod
    @abc.abstractmethod
    def parse(
        cls: type[F], name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
    ) -> F | None:
        """The method named ``name`` (lower case) with these weights, or None when the name is not
        this method's. A parameter the method does not take is an error, never dropped."""

    @classmethod
    def variants(cls: type[F], weights: tuple[float, ...] | None, rank_constants: Iterable[int]) -> list[F]:
        """The parameterisations worth comparing (``hybrid eval``, tuning), with ``weights``."""
        return [cls().with_weights(weights)]  # every method's parameters have defaults


_ABSTRACT = Fusion.__abstractmethods__
B = TypeVar("B", bound="BoostWeighted")


@dataclass(frozen=True)
class BoostWeighted(Fusion):
    """A method whose one parameter is ``weights`` used as boosts: any non-negative numbers, at least one
    positive, not summing to 1 (None: 1 / 1); its name is its ``kind`` and takes no rank constant."""

    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", checked_weights(self.weights, unit_sum=False))

    @property
    def name(self) -> str:
        return self.kind

    @classmethod
    def parse(
        cls: type[B], name: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
    ) -> B | None:
        if name != cls.kind:
            return None
        no_rank_constant(name, rank_constant)
        return cls(weights)


def bounded(score: float) -> float:
    """An unbounded non-negative score in [0, 1): ``s / (1 + s)`` (negative: 0)."""
    return 0.0 if not score > 0 else float(score / (1.0 + score))


def clamped(score: float) -> float:
    """A score that is in [0, 1] up to float rounding, kept there."""
    return min(1.0, max(0.0, float(score)))


def methods() -> tuple[type[Fusion], ...]:
    """Every fusion method, in the order their modules were imported (adapter.fusion imports all)."""
    return tuple(_METHODS)


def no_rank_constant(name: str, rank_constant: int | None) -> None:
    if rank_constant is not None:
        raise InputError(f"a rank constant applies to RRF only, not to {name!r}")


def checked_weights(weights: Iterable[float] | None, *, unit_sum: bool) -> tuple[float, ...] | None:
    """``weights`` as a tuple of floats, one per leg, or an InputError saying what is wrong.
    ``unit_sum``: in [0, 1] and summing to 1 (the server's rule for its processors); else any
    non-negative numbers, at least one positive."""
    if weights is None:
        return None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise InputError(f"weights must be numbers, got {weights!r}") from None
    if len(values) != len(LEGS):
        raise InputError(
            f"{len(values)} weights given for {len(LEGS)} legs; give one weight per leg ({', '.join(LEGS)})"
        )
    if not all(math.isfinite(w) for w in values):
        raise InputError(f"weights must be finite numbers, got {list(values)}")
    if any(w < 0 for w in values):
        raise InputError(f"weights must not be negative, got {list(values)}")
    if unit_sum and (any(w > 1 for w in values) or abs(sum(values) - 1.0) > WEIGHT_SUM_TOLERANCE):
        raise InputError(f"the server requires weights in [0, 1] that sum to 1.0, got {list(values)}")
    if not unit_sum and sum(values) == 0:
        raise InputError(f"at least one weight must be positive, got {list(values)}")
    return values


def parse_weights(text: str | None) -> tuple[float, float] | None:
    """``"0.3,0.7"`` -> ``(0.3, 0.7)``: one weight per leg; None or empty -> None. Their values are
    the fusion's to validate."""
    if text is None or not str(text).strip():
        return None
    try:
        values = [float(w) for w in str(text).split(",")]
    except ValueError:
        raise InputError(f"weights must be comma-separated numbers, e.g. 0.3,0.7; got {text!r}") from None
    if len(values) != len(LEGS):
        raise InputError(
            f"{len(values)} weights given for {len(LEGS)} legs; give one weight per leg ({', '.join(LEGS)})"
        )
    return values[0], values[1]


def leg_names_for(runs: Sequence[Run], leg_names: Sequence[str], weights: Sequence[float]) -> list[str]:
    """``leg_names`` checked against the runs and weights (one of each per leg)."""
    if not (len(leg_names) == len(runs) == len(weights)):
        raise ValueError(f"{len(runs)} runs, {len(leg_names)} leg names and {len(weights)} weights must match")
    return list(leg_names)


def firsts(run: Run) -> Firsts:
    """A leg's documents at their first (best) rank: a document repeated within one run counts once."""
    out: Firsts = {}
    for rank, (doc_id, raw) in enumerate(run, start=1):
        out.setdefault(doc_id, (rank, raw))
    return out


def ranked(fused: Iterable[tuple[float, int, str, tuple[LegScore, ...]]]) -> list[FusedDoc]:
    """``(score, best rank, id, legs)`` rows, best first: ties by the best rank any leg gave, then
    by id, so the order is deterministic (the server's order among equal scores is not specified)."""
    rows = sorted(fused, key=lambda row: (-row[0], row[1], row[2]))
    return [FusedDoc(doc_id, score, legs) for score, _, doc_id, legs in rows]


def weighted_sum(
    runs: Sequence[Run],
    leg_scores: Callable[[Firsts], Sequence[float]],
    weights: Sequence[float],
    leg_names: Sequence[str],
) -> list[FusedDoc]:
    """``sum over legs of weight * leg_scores(leg)[doc]`` in float32, legs in order; a leg that
    missed a document adds nothing. ``leg_scores`` maps a leg's first occurrences (in rank order)
    to one score each: RRF's ``1 / (k + rank)``, the raw score, a normalised score."""
    names = leg_names_for(runs, leg_names, weights)
    per_leg: list[dict[str, tuple[int, float, float]]] = []
    for run in runs:
        first = firsts(run)
        scored = leg_scores(first)
        per_leg.append({d: (rank, raw, s) for (d, (rank, raw)), s in zip(first.items(), scored)})
    rows = []
    for doc_id in dict.fromkeys(d for leg in per_leg for d in leg):
        total = np.float32(0.0)
        legs = []
        for name, leg, w in zip(names, per_leg, weights):
            if doc_id in leg:
                rank, raw, score = leg[doc_id]
                part = np.float32(np.float32(score) * np.float32(w))
                total = np.float32(total + part)
                legs.append(LegScore(name, rank, float(raw), float(score), float(w), float(part)))
            else:
                legs.append(LegScore(name, None, None, None, float(w), 0.0))
        best = min(leg[doc_id][0] for leg in per_leg if doc_id in leg)
        rows.append((float(total), best, doc_id, tuple(legs)))
    return ranked(rows)
