"""What a cluster can do for hybrid search, as flags the shell reads. Pure.

Each engine probes its clusters (:meth:`adapter.engines.port.Cluster.probe`) and fills these flags
from what it finds: :mod:`adapter.engines.opensearch.capabilities` (the neural-search releases: the
``hybrid`` query and ``normalization-processor`` 2.10; RRF, explanations and ``pagination_depth``
2.19; ``z_score`` 3.0; RRF weights 3.1; what a search page can add by version,
docs/OPENSEARCH-FEATURES.md) and :mod:`adapter.engines.elasticsearch.capabilities` (the ``rrf`` /
``linear`` retrievers, licences, the ``query`` + ``knn`` sum). Which fusion the server runs, and
why not, is each engine's renderer's (``adapter.engines.<engine>.fusion``, :mod:`adapter.engines.render`).
:class:`Capabilities` holds what the shell reads; each engine's dataclass derives from it with what only that
engine's code reads (``OpenSearchCapabilities``, ``ElasticsearchCapabilities``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from adapter._enums import TextEnum
from adapter.engines.render import renderer, server_support, servers
from adapter.fusion.base import Fusion, methods
from adapter.fusion.rrf import DEFAULT_RANK_CONSTANT
from adapter.index.analysis import ICU, STEMPEL


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


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.19.1"`` -> ``(2, 19, 1)``; suffixes such as ``-SNAPSHOT`` are ignored."""
    parts = []
    for piece in str(version).split("-")[0].split(".")[:3]:
        parts.append(int(piece) if piece.isdigit() else 0)
    return tuple(parts + [0] * (3 - len(parts)))


@dataclass(frozen=True)
class Capabilities:
    """The flags the shell reads, every engine's (False: the cluster does not run it, or the engine has no such
    thing). An engine derives its own frozen dataclass from this one for what only its code reads
    (:class:`~adapter.engines.opensearch.capabilities.OpenSearchCapabilities`,
    :class:`~adapter.engines.elasticsearch.capabilities.ElasticsearchCapabilities`), and a new engine names only
    the flags it has."""

    version: str
    distribution: str
    plugins: tuple[str, ...]
    engine: EngineName = EngineName.OPENSEARCH
    # The hybrid query, and the server-side fusions the renderers (adapter.engines.<engine>.fusion) read.
    hybrid: bool = False
    normalization: bool = False
    rrf: bool = False
    rrf_weights: bool = False
    z_score: bool = False
    pagination_depth: bool = False  # a hybrid query's candidates per shard, sent as such
    serverless: bool = False
    # BM25 scores carry the legacy (1 + k1) factor: OpenSearch before 3.0 (LegacyBM25Similarity by
    # default). 3.x scores with Lucene's BM25, about 2.2x lower for the same match.
    legacy_bm25: bool = False
    # What a search page can add to a hybrid query (see the engine's rules).
    hybrid_aggregations: bool = False
    hybrid_sort: bool = False
    hybrid_highlight: bool = False
    hybrid_filter: bool = False
    hybrid_collapse: bool = False
    collapse_inner_hits: bool = False
    fused_min_score: bool = False
    server_mmr: bool = False  # the engine reranks a vector query by MMR (OpenSearch: the k-NN plugin's ext.mmr, 3.3+)
    server_mmr_enabled: bool = False  # ... and the cluster setting turns its processors on
    in_query_fusion: bool = False  # hybrid.fusion: fused without a search pipeline (unreleased)
    # A server-fused hybrid page answers each hit's raw score per leg (named sub-queries with
    # include_named_queries_score): the legs' relevance on the server's pages (docs/INTEROP.md, Scores)
    hybrid_leg_scores: bool = False
    # The cluster settings behind server_mmr_enabled and in_query_fusion were read (False: a search's probe
    # left them for when a search needs them; both flags are False until then).
    switches_read: bool = True
    delete_by_query: bool = False  # the reindex module
    modules: tuple[str, ...] = ()
    hunspell: tuple[str, ...] = ()  # Hunspell locales every node has (node attribute `hunspell`)
    # language analyzers, asciifolding, stemmers (absent from Elasticsearch's integ-test zip)
    analysis_common: bool = True

    @property
    def stempel(self) -> bool:
        """The ``polish`` analyzer and the ``polish_stem`` / ``polish_stop`` filters."""
        return STEMPEL in self.plugins

    @property
    def icu(self) -> bool:
        """``icu_tokenizer`` and ``icu_folding``."""
        return ICU in self.plugins

    def without(self, fusion: Fusion) -> Capabilities:
        """These capabilities less the server-side way of running ``fusion`` (after the cluster
        refused it: an unknown retriever, a licence that does not cover it)."""
        found = renderer(self.engine, fusion)
        return self if found is None else found.without(self)

    def fusions(
        self, weights: tuple[float, ...] | None = None, *, rank_constants: Iterable[int] = (DEFAULT_RANK_CONSTANT,)
    ) -> list[Fusion]:
        """Every server-side fusion this cluster runs, by method (adapter.fusion: each normalisation x
        combination the server allows with ``weights``, then RRF with each of ``rank_constants``, then,
        on Elasticsearch, the score sum with ``weights`` as boosts)."""
        runs = set(self.engine_servers())
        return [
            fusion
            for method in methods()
            if method in runs
            for fusion in method.variants(weights, rank_constants)
            if self.supports(fusion)[0]
        ]

    def engine_servers(self) -> tuple[type[Fusion], ...]:
        """The fusion methods this cluster's engine runs server-side (on some release; :meth:`supports` says whether
        here)."""
        return tuple(method for method in methods() if self.engine in servers(method))

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why (the engine's renderer of it knows)."""
        why = server_support(fusion, self)
        return why is None, why or ""
