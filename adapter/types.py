"""Typed, immutable values shared by the core and the shell. Imports nothing from the I/O shell."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

from .errors import InputError

if TYPE_CHECKING:
    from .fusion import Fusion

E = TypeVar("E", bound=enum.Enum)


def parse_enum(enum_cls: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum_cls`` (case-insensitive), or an InputError listing the choices."""
    if isinstance(value, enum_cls):
        return value
    try:
        return enum_cls(str(value).strip().lower())
    except ValueError:
        raise InputError(f"unknown {what} {value!r}; expected one of: {', '.join(str(e.value) for e in enum_cls)}") from None


class TextEnum(str, enum.Enum):
    """An enum whose members are their words: ``str()``, f-strings and JSON give the value."""

    def __str__(self) -> str:
        return str(self.value)


class EngineName(TextEnum):
    """The search engine behind a cluster. The shipped engines are members; a third engine's port
    names itself with any other lowercase word (``EngineName("fake")`` makes that word a member of
    its own, as :class:`enum.Flag` makes its combinations), so the set stays open to new ports."""

    OPENSEARCH = "opensearch"
    ELASTICSEARCH = "elasticsearch"

    @classmethod
    def _missing_(cls, value: object) -> EngineName | None:
        if not (isinstance(value, str) and value.isidentifier() and value == value.lower()):
            return None
        member = str.__new__(cls, value)
        member._name_ = value.upper()
        member._value_ = value
        return cls._value2member_map_.setdefault(value, member)  # type: ignore[return-value]


class Technique(str, enum.Enum):
    """Retrieval techniques, named as the seeds name them."""

    BM25 = "bm25"
    DENSE = "dense"
    HYBRID = "hybrid"  # one `hybrid` query, fused by a search pipeline on the server
    CLIENT_RRF = "client-rrf"  # the two legs in one _msearch, fused here by RRF with the server's formula
    CLIENT = "client"  # the two legs in one _msearch, fused here by any fusion (adapter.fusion), the server's formula where it has one

    @property
    def fused_by_client(self) -> bool:
        return self in (Technique.CLIENT_RRF, Technique.CLIENT)

    @classmethod
    def parse(cls, value: str | Technique) -> Technique:
        return parse_enum(cls, value, "technique")


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
    title: str = ""  # the index's title field (adapter.documents), when it has one
    text: str = ""  # the index's body field
    highlight: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # field -> snippets, matches in <em>
    chunks: tuple[Hit, ...] = ()  # with collapse: the next best hits of the same document (group), best first


@dataclass(frozen=True)
class Bucket:
    """One value of a facet and how many hits have it."""

    key: Any
    count: int  # hits (chunks) with this value among those the query matched
    documents: int | None = None  # distinct documents (collapse groups) with it, when the page is collapsed


@dataclass(frozen=True)
class Facet:
    """The most frequent values of one field among the hits a query matched."""

    field: str
    buckets: tuple[Bucket, ...]
    other: int = 0  # hits with a value not in the buckets


@dataclass(frozen=True)
class SentRequest:
    """One request a search sent, exactly as sent: to reproduce it from any client (``--show-query``)."""

    method: str
    path: str  # e.g. /docs/_search
    params: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"search_pipeline": "docs-rrf"}
    body: Any = None  # the JSON body; for _msearch the list of header/body lines

    def as_text(self) -> str:
        """``POST /docs/_search?search_pipeline=...`` and the body (NDJSON for ``_msearch``)."""
        query = "&".join(f"{k}={v}" for k, v in self.params.items())
        head = f"{self.method} {self.path}" + (f"?{query}" if query else "")
        if isinstance(self.body, list):
            return head + "\n" + "\n".join(json.dumps(line, ensure_ascii=False) for line in self.body)
        return head + ("" if self.body is None else "\n" + json.dumps(self.body, indent=2, ensure_ascii=False))


@dataclass(frozen=True)
class FusionChoice:
    """The weights an adaptive fusion policy chose for one query, and why (adapter.adaptive)."""

    weights: tuple[float, float]  # bm25, dense
    reasons: tuple[str, ...]  # for people: the corpus prior, the query's signals, the result
    policy: str  # the policy's name ("adaptive", or a learned one)
    features: Mapping[str, float] = field(default_factory=dict)  # the numbers behind the reasons
    kind: str = "natural"  # the query's class: "exact" or "natural"
    confidence: float = 0.0  # how far the evidence moved the weights from the baseline's, in [0, 1]
    normalization: str = "min_max"  # the base fusion's normalisation (min_max, or z_score where the cluster runs it)
    per_query: bool = False  # whether the weights depend on the query (else every query of the index gets them)


@dataclass(frozen=True)
class Excerpts:
    """The text fields a result carries as excerpts of at most ``max_chars`` characters each, in the
    hits' ``title``, ``text`` and ``source``: a text the query matches whole when shorter, else its
    best fragment around the query's words; a text it does not match from its start to the end of
    its last word within the bound (punctuation after that word is dropped).
    ``SearchOptions(full_text=True)`` (``--full-text``) returns them whole."""

    fields: tuple[str, ...]
    max_chars: int


@dataclass(frozen=True)
class SearchResult:
    """What a search returned and how it was produced."""

    query: str
    technique: Technique
    hits: tuple[Hit, ...]
    fused_by: FusedBy = FusedBy.NONE
    fusion: Fusion | None = None  # the fusion that ran (None for a single leg)
    pipeline: str | None = None  # the stored search pipeline, when fused_by is SERVER_PIPELINE
    took_ms: float | None = None  # the server's `took` (summed over requests for client-rrf)
    total_ms: float | None = None  # wall-clock time of the whole call, as the client saw it
    notices: tuple[str, ...] = ()  # anything the caller must know: fallbacks, truncation
    requests: int = 1
    sent: tuple[SentRequest, ...] = ()  # every request the search sent, in order (the first is the search itself)
    choice: FusionChoice | None = None  # adaptive fusion: the weights chosen for this query and why
    aggregations: Mapping[str, Facet] = field(default_factory=dict)  # the facets asked for (SearchOptions.facets)
    excerpts: Excerpts | None = None  # the text fields bounded to excerpts (None: whole, SearchOptions.full_text)

    @property
    def request_body(self) -> Any:
        """The body of the search request (for ``hybrid``: the ``hybrid`` query, with ``search_pipeline``
        inline when the fusion was sent with it; the stored pipeline is ``sent[0].params``)."""
        return self.sent[0].body if self.sent else None

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.hits]

    @property
    def fused_by_label(self) -> str:
        """``server:<pipeline>``, ``server:inline:<fusion>``, ``server:retriever:<fusion>``, ``server:sum``,
        ``client:<fusion>`` or ``none``, for people."""
        name = self.fusion.name if self.fusion is not None else "?"
        if self.fused_by is FusedBy.SERVER_PIPELINE:
            return f"server:{self.pipeline}"
        if self.fused_by is FusedBy.SERVER_INLINE:
            return f"server:inline:{name}"
        if self.fused_by is FusedBy.SERVER_QUERY:
            return f"server:query:{name}"
        if self.fused_by is FusedBy.SERVER_RETRIEVER:
            return f"server:retriever:{name}"
        if self.fused_by is FusedBy.SERVER_SUM:
            return "server:sum"
        if self.fused_by is FusedBy.CLIENT:
            return f"client:{name}"
        return "none"


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


class FailureSource(TextEnum):
    """Where a row failed, when not in the cluster's answer to indexing it (``ItemFailure.source`` None)."""

    INPUT = "input"  # the row itself: bad JSON, no id, no text
    NOT_SENT = "not-sent"  # never sent, or not confirmed written: the connection was lost
    DELETE_STALE = "delete-stale"  # deleting the chunks a shorter text left behind


@dataclass(frozen=True)
class ItemFailure:
    """A row or a document that did not make it into the index, and why."""

    id: str | None
    reason: str
    line: int | None = None
    status: int | None = None
    source: FailureSource | None = None  # None: the cluster refused to index it (status and reason are its)


@dataclass(frozen=True)
class IngestReport:
    documents: int  # input documents accepted
    chunks: int  # index entries written (== documents when not chunking)
    failures: tuple[ItemFailure, ...]  # the first 1,000 (all of them are in the failures file)
    embedded: int  # texts sent to the model
    cache_hits: int  # texts whose vectors came from the embedding cache
    seconds_total: float
    seconds_embedding: float
    seconds_indexing: float  # time the indexing thread spent in bulk calls (overlaps embedding)
    failures_file: str | None = None
    cache_rejected: int = 0  # cache entries that failed their integrity check and were embedded again
    retried_429: int = 0  # items the cluster refused with 429 (write queue full), retried with backoff
    retried_5xx: int = 0  # items that got a 5xx and were sent once more
    split_requests: int = 0  # requests refused as a whole, split in halves to isolate the bad rows
    failed: int = 0  # rows that did not land; ``failures`` holds the first 1,000 of them, the failures file all

    @property
    def complete(self) -> bool:
        """Every input row landed."""
        return not self.failures and not self.failed

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds_total if self.seconds_total else 0.0
