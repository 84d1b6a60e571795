"""Typed, immutable values shared by the core and the shell. Imports nothing from the I/O shell."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .errors import InputError


class Technique(str, enum.Enum):
    """Retrieval techniques, named as the seeds name them."""

    BM25 = "bm25"
    DENSE = "dense"
    HYBRID = "hybrid"  # one `hybrid` query, fused by a search pipeline on the server
    CLIENT_RRF = "client-rrf"  # the two legs in one _msearch, fused here with the server's formula

    @classmethod
    def parse(cls, value: str | Technique) -> Technique:
        return _parse_enum(cls, value, "technique")


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


def _parse_enum(enum_cls, value, what: str):
    if isinstance(value, enum_cls):
        return value
    try:
        return enum_cls(str(value).strip().lower())
    except ValueError:
        raise InputError(f"unknown {what} {value!r}; expected one of: {', '.join(e.value for e in enum_cls)}") from None


@dataclass(frozen=True)
class Fusion:
    """How the legs of a hybrid search are fused: score normalisation or RRF.

    ``kind`` is ``"normalization"`` or ``"rrf"``. Weights are per leg, in leg order (bm25, dense).
    The server requires normalisation weights in [0, 1] summing to 1; RRF weights need 3.1+.
    """

    kind: str = "normalization"
    normalization: Normalization = Normalization.MIN_MAX
    combination: Combination = Combination.ARITHMETIC_MEAN
    weights: tuple[float, ...] | None = None
    rank_constant: int = 60

    def __post_init__(self) -> None:
        if self.kind not in ("normalization", "rrf"):
            raise InputError(f"unknown fusion kind {self.kind!r}; expected 'normalization' or 'rrf'")
        object.__setattr__(self, "normalization", _parse_enum(Normalization, self.normalization, "normalization"))
        object.__setattr__(self, "combination", _parse_enum(Combination, self.combination, "combination"))
        if self.weights is not None:
            object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        if not 1 <= int(self.rank_constant) <= 10_000:
            raise InputError(f"rank_constant must be between 1 and 10000, got {self.rank_constant}")

    @classmethod
    def rrf(cls, rank_constant: int = 60, weights: tuple[float, ...] | None = None) -> Fusion:
        return cls(kind="rrf", rank_constant=rank_constant, weights=weights)

    @property
    def name(self) -> str:
        """A stable short name, e.g. ``min_max-arithmetic_mean`` or ``rrf``."""
        if self.kind == "rrf":
            return "rrf" if self.rank_constant == 60 else f"rrf-{self.rank_constant}"
        return f"{self.normalization.value}-{self.combination.value}"

    def validate_weights(self, legs: int, *, require_unit_sum: bool) -> None:
        """Raise :class:`InputError` when weights cannot work for ``legs`` legs."""
        if self.weights is None:
            return
        if len(self.weights) != legs:
            raise InputError(f"{len(self.weights)} weights given for {legs} legs; give one weight per leg (bm25, dense)")
        if any(w < 0 for w in self.weights):
            raise InputError(f"weights must not be negative: {list(self.weights)}")
        if require_unit_sum:
            if any(w > 1 for w in self.weights) or abs(sum(self.weights) - 1.0) > 0.01:
                raise InputError(f"the server requires weights in [0, 1] that sum to 1.0, got {list(self.weights)}")


@dataclass(frozen=True)
class LegScore:
    """One leg's part in a hit's fused score (an explanation row)."""

    leg: str  # "bm25" or "dense"
    rank: int | None  # 1-based rank in that leg; None when the leg did not return the hit
    raw_score: float | None  # the leg's own score (BM25 score, k-NN similarity score)
    normalized_score: float | None  # after min_max / l2 / z_score, or 1/(k+rank) for RRF
    weight: float
    contribution: float  # this leg's share of the fused score


@dataclass(frozen=True)
class Hit:
    """One search hit. ``score`` is the final score in the order the hits are returned."""

    id: str
    score: float
    source: Mapping[str, Any] = field(default_factory=dict)
    rank: int = 0  # 1-based position in the result
    legs: tuple[LegScore, ...] = ()  # explanations, when fusion ran (server or client)
    first_stage_score: float | None = None  # the retrieval score, kept when rerank or MMR reorders
    rerank_score: float | None = None
    mmr_score: float | None = None

    @property
    def title(self) -> str:
        return str(self.source.get("title") or "")

    @property
    def text(self) -> str:
        return str(self.source.get("text") or "")


@dataclass(frozen=True)
class SearchResult:
    """What a search returned and how it was produced."""

    query: str
    technique: Technique
    hits: tuple[Hit, ...]
    fused_by: str  # "server:<pipeline>", "client:rrf", or "none" (single leg)
    took_ms: float | None = None  # the server's `took` (summed over requests for client-rrf)
    total_ms: float | None = None  # wall-clock time of the whole call, as the client saw it
    notices: tuple[str, ...] = ()  # anything the caller must know: fallbacks, truncation
    requests: int = 1

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]


@dataclass(frozen=True)
class EmbeddingFingerprint:
    """What makes two embedders interchangeable. Stored in the index's ``_meta.embedding``.

    Vectors from embedders with different fingerprints must never be mixed in one index.
    """

    model: str  # hub name or local path, for people
    spec: str  # how the adapter loads it again (see adapter.embedders.load_embedder)
    weights_sha256: str  # digest of the weight files (or a revision id when weights are remote)
    dimension: int
    normalized: bool  # vectors are L2-normalised (dot product == cosine)
    query_prefix: str = ""
    passage_prefix: str = ""

    def to_meta(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> EmbeddingFingerprint:
        try:
            return cls(**{k: meta[k] for k in cls.__dataclass_fields__})
        except KeyError as exc:
            raise InputError(f"index _meta.embedding lacks {exc.args[0]!r}; was it created by `hybrid init`?") from None

    @property
    def key(self) -> str:
        """Identity for caches: everything that changes the vectors (not the model's path)."""
        ident = {k: v for k, v in asdict(self).items() if k not in ("model", "spec")}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def differences(self, other: EmbeddingFingerprint) -> list[str]:
        """Fields that differ in a way that changes vectors (model path and spec do not)."""
        diffs = []
        for name in ("weights_sha256", "dimension", "normalized", "query_prefix", "passage_prefix"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                diffs.append(f"{name}: {mine!r} != {theirs!r}")
        return diffs


@dataclass(frozen=True)
class ItemFailure:
    """A row or a document that did not make it into the index, and why."""

    id: str | None
    reason: str
    line: int | None = None
    status: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class IngestReport:
    documents: int  # input documents accepted
    chunks: int  # index entries written (== documents when not chunking)
    failures: tuple[ItemFailure, ...]
    embedded: int  # texts sent to the model
    cache_hits: int  # texts whose vectors came from the embedding cache
    seconds_total: float
    seconds_embedding: float
    seconds_indexing: float  # time the indexing thread spent in bulk calls (overlaps embedding)
    failures_file: str | None = None

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds_total if self.seconds_total else 0.0
