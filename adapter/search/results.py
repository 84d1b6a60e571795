"""What a search returns: the technique asked for, the hits, and how they were produced. Pure values."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from adapter._enums import parse_enum
from adapter.fusion.base import FusedBy, LegScore

if TYPE_CHECKING:
    from adapter.engines.dsl import SentRequest
    from adapter.engines.responses import Facet
    from adapter.fusion import Fusion
    from adapter.fusion.choice.values import FusionChoice


class Technique(str, enum.Enum):
    """Retrieval techniques, named as the seeds name them."""

    BM25 = "bm25"
    DENSE = "dense"
    HYBRID = "hybrid"  # one `hybrid` query, fused by a search pipeline on the server
    CLIENT_RRF = "client-rrf"  # the two legs in one _msearch, fused here by RRF with the server's formula
    # the two legs in one _msearch, fused here by any fusion (adapter.fusion), the server's formula where it has one
    CLIENT = "client"

    @property
    def fused_by_client(self) -> bool:
        return self in (Technique.CLIENT_RRF, Technique.CLIENT)

    @classmethod
    def parse(cls, value: str | Technique) -> Technique:
        return parse_enum(cls, value, "technique")


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
    title: str = ""  # the index's title field (adapter.index.documents), when it has one
    text: str = ""  # the index's body field
    highlight: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # field -> snippets, matches in <em>
    chunks: tuple[Hit, ...] = ()  # with collapse: the next best hits of the same document (group), best first
    # The score as a relevance in [0, 1], one meaning under every fusion where the index keeps a map
    # (adapter.search.relevance; SearchResult.relevance_by says how); None until the result is assembled.
    relevance: float | None = None


@dataclass(frozen=True)
class Excerpts:
    """The text fields a result carries as excerpts of at most ``max_chars`` characters each, in the
    hits' ``title``, ``text`` and ``source``: a text that fits whole, as written (but for spaces and
    line breaks at its ends); a longer one its start, cut where a word ends and ended with ``…``
    (:func:`adapter.search.excerpt.excerpt`). ``SearchOptions(full_text=True)`` (``--full-text``)
    returns them whole."""

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
    # how each hit's relevance was computed: "map" (the index's, for this fusion) or "formula"
    relevance_by: str = "formula"

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
