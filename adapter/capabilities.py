"""What a cluster can do for hybrid search: the one place that knows which fusions exist where. Pure.

The engine probes the cluster (:meth:`adapter.engines.Engine.probe`) and derives these flags from
the version and plugins it finds. For OpenSearch they follow the neural-search releases: the
``hybrid`` query and ``normalization-processor`` 2.10; RRF (``score-ranker-processor``),
``hybrid_score_explanation`` and ``pagination_depth`` 2.19; ``z_score`` 3.0; RRF weights 3.1.
Native k-NN engines (faiss, nmslib) are assumed present unless a node says otherwise with the
``knn_native: false`` attribute (``hybrid local up`` sets it: the Maven k-NN zip has no native
libraries).

What a search page can add to a hybrid query, by version (docs/OPENSEARCH-FEATURES.md has each one
checked on 3.6.0 and 2.19.1): aggregations 2.13; sort 2.16; ``hybrid.filter`` 3.0; ``collapse``
3.1 (2.19 ignores it silently, so it is never sent there) with ``inner_hits`` 3.2; ``min_score`` on
the fused score 3.5 (before, the server applies it to each leg's raw score); highlighting works
wherever the hybrid query does. Server-side MMR (``ext.mmr``) is k-NN 3.3, for top-level ``knn``
queries only, and runs only when the cluster setting enables its processors. ``_delete_by_query``
needs the ``reindex`` module; the Polish analyzer the ``analysis-stempel`` plugin, ICU folding
``analysis-icu``; Hunspell dictionaries are named by the node attribute ``hunspell``. In-query
fusion (``hybrid.fusion``, no pipeline) is unreleased: it is recognised by the cluster setting that
switches it (``plugins.neural_search.hybrid.fusion.enabled``), not by a version.
For Elasticsearch there are no search pipelines: fusion is part of the request. The ``rrf`` (8.14+)
and ``linear`` (8.18+; min_max, and l2 from 8.19/9.1) retrievers need the ``rank-rrf`` module *and*
an Enterprise or trial licence; every 8.4+ cluster runs the free-tier ``query`` + ``knn`` request
whose scores are summed with boosts (:class:`~adapter.fusion.score_sum.ScoreSum`, not normalised); what each
engine needs for each fusion is its renderer's (``adapter.engines.<engine>.fusion``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .analysis import ICU, STEMPEL
from .fusion.base import Fusion, methods
from .fusion.render import renderer, server_support
from .fusion.rrf import DEFAULT_RANK_CONSTANT

# Elasticsearch licences under which rank-rrf's retrievers run (RRF was Platinum before 8.17).
RETRIEVER_LICENSES = ("enterprise", "trial")
ANALYSIS_MODULE = "analysis-common"
RANK_MODULE = "rank-rrf"

# Analysis plugins Amazon OpenSearch Service (managed and Serverless) bundles; assumed where the
# cluster hides its plugin list.
AWS_ANALYSIS_PLUGINS = (ICU, "analysis-kuromoji", "analysis-nori", "analysis-phonetic", "analysis-smartcn", STEMPEL,
                        "analysis-ukrainian")
# The first OpenSearch (neural-search) release with each hybrid feature; docs/OPENSEARCH-FEATURES.md.
NEURAL_SEARCH_SINCE = {
    "hybrid": (2, 10, 0),
    "normalization": (2, 10, 0),
    "hybrid_highlight": (2, 10, 0),  # undocumented; works (neural-search #1215), checked on 2.19.1 and 3.6.0
    "hybrid_aggregations": (2, 13, 0),
    "hybrid_sort": (2, 16, 0),
    "rrf": (2, 19, 0),
    "explanation": (2, 19, 0),
    "pagination_depth": (2, 19, 0),
    "z_score": (3, 0, 0),
    "hybrid_filter": (3, 0, 0),
    "rrf_weights": (3, 1, 0),
    "hybrid_collapse": (3, 1, 0),
    "collapse_inner_hits": (3, 2, 0),
    "fused_min_score": (3, 5, 0),
    # RRF ranks each leg's hits among every shard's candidates; before, within each shard (neural-search #1718)
    "rrf_global_ranks": (3, 5, 0),
}
MMR_FACTORIES = ("mmr_over_sample_factory", "mmr_rerank_factory")
MMR_SETTING = "cluster.search.enabled_system_generated_factories"
FUSION_SETTING = "plugins.neural_search.hybrid.fusion.enabled"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.19.1"`` -> ``(2, 19, 1)``; suffixes such as ``-SNAPSHOT`` are ignored."""
    parts = []
    for piece in str(version).split("-")[0].split(".")[:3]:
        parts.append(int(piece) if piece.isdigit() else 0)
    return tuple(parts + [0] * (3 - len(parts)))


@dataclass(frozen=True)
class Capabilities:
    version: str
    distribution: str
    plugins: tuple[str, ...]
    hybrid: bool
    normalization: bool
    rrf: bool
    rrf_weights: bool
    z_score: bool
    explanation: bool
    pagination_depth: bool
    native_engines: bool
    serverless: bool = False
    engine: str = "opensearch"
    # BM25 scores carry the legacy (1 + k1) factor: OpenSearch before 3.0 (LegacyBM25Similarity by
    # default). 3.x scores with Lucene's BM25, about 2.2x lower for the same match.
    legacy_bm25: bool = False
    # What a search page can add to a hybrid query (see the module docstring).
    hybrid_aggregations: bool = False
    hybrid_sort: bool = False
    hybrid_highlight: bool = False
    hybrid_filter: bool = False
    hybrid_collapse: bool = False
    collapse_inner_hits: bool = False
    fused_min_score: bool = False
    rrf_global_ranks: bool = False
    server_mmr: bool = False  # the k-NN plugin knows ext.mmr (3.3+)
    server_mmr_enabled: bool = False  # ... and the cluster setting turns its processors on
    in_query_fusion: bool = False  # hybrid.fusion: fused without a search pipeline (unreleased)
    delete_by_query: bool = False  # the reindex module
    modules: tuple[str, ...] = ()
    hunspell: tuple[str, ...] = ()  # Hunspell locales every node has (node attribute `hunspell`)
    search_pipelines: bool = True  # fusion runs in a search pipeline (OpenSearch), else in the request (Elasticsearch)
    score_sum: bool = False  # Elasticsearch: query + knn in one request, raw scores summed with boosts
    license: str | None = None  # Elasticsearch: the licence type (basic, trial, enterprise...); None: unknown
    analysis_common: bool = True  # language analyzers, asciifolding, stemmers (absent from Elasticsearch's integ-test zip)

    @classmethod
    def opensearch(cls, version: str, *, neural_search: bool = True, native_engines: bool = True,
                   plugins: Iterable[str] = (), distribution: str = "opensearch", modules: Iterable[str] | None = None,
                   hunspell: Iterable[str] = (), cluster_settings: Mapping[str, Any] | None = None) -> Capabilities:
        """The feature set of an OpenSearch ``version`` (with or without neural-search).

        ``modules`` None means unknown (a cluster hiding ``_nodes``): the managed service has
        ``reindex``. ``cluster_settings`` are the values of :data:`MMR_SETTING` and
        :data:`FUSION_SETTING` as the cluster reports them (defaults included; a key the cluster
        does not know is absent).
        """
        v = version_tuple(version)
        settings = cluster_settings or {}
        knn = neural_search or "opensearch-knn" in set(plugins)
        factories = settings.get(MMR_SETTING) or []
        factories = [factories] if isinstance(factories, str) else list(factories)
        fusion_switch = settings.get(FUSION_SETTING)
        return cls(
            version=version,
            distribution=distribution,
            plugins=tuple(sorted(p for p in plugins if p)),
            **{flag: neural_search and v >= since for flag, since in NEURAL_SEARCH_SINCE.items()},
            native_engines=native_engines,
            legacy_bm25=v < (3, 0, 0),
            server_mmr=knn and v >= (3, 3, 0),
            server_mmr_enabled=knn and v >= (3, 3, 0) and ("*" in factories or all(f in factories for f in MMR_FACTORIES)),
            # Recognised by the switch the plugin registers, not by a version: no release has it yet.
            in_query_fusion=neural_search and fusion_switch is not None and str(fusion_switch).lower() == "true",
            delete_by_query=modules is None or "reindex" in set(modules),
            modules=tuple(sorted(m for m in (modules or ()) if m)),
            hunspell=tuple(sorted(h for h in hunspell if h)),
        )

    @classmethod
    def serverless_collection(cls, distribution: str = "opensearch") -> Capabilities:
        """Amazon OpenSearch Serverless: no version, nodes or plugins to read. AWS documents hybrid
        search with ``normalization-processor`` (min_max, l2; the three means), not RRF or z_score.
        ``pagination_depth`` is sent as to a managed cluster, so scores and order match it; where a
        collection rejects it, the searcher drops it and says so (``SearchResult.notices``)."""
        return cls(version="serverless", distribution=distribution, plugins=AWS_ANALYSIS_PLUGINS, hybrid=True, normalization=True,
                   rrf=False, rrf_weights=False, z_score=False, explanation=False, pagination_depth=True, native_engines=True,
                   serverless=True, hybrid_aggregations=True, hybrid_sort=True, hybrid_highlight=True)

    @property
    def stempel(self) -> bool:
        """The ``polish`` analyzer and the ``polish_stem`` / ``polish_stop`` filters."""
        return STEMPEL in self.plugins

    @property
    def icu(self) -> bool:
        """``icu_tokenizer`` and ``icu_folding``."""
        return ICU in self.plugins

    @classmethod
    def elasticsearch(cls, version: str, *, modules: Iterable[str] | None = None, license: str | None = None,
                      hunspell: Iterable[str] = ()) -> Capabilities:
        """An Elasticsearch ``version`` with these ``modules`` and plugins (None: unknown, a standard
        distribution is assumed) under ``license`` (None: unknown; retrievers are tried, and a
        refusal is turned into the fallback by the searcher)."""
        v = version_tuple(version)
        names = set(modules) if modules is not None else {RANK_MODULE, ANALYSIS_MODULE}
        retrievers = RANK_MODULE in names and (license is None or license in RETRIEVER_LICENSES)
        return cls(
            version=version,
            distribution="elasticsearch",
            plugins=tuple(sorted(p for p in names if p)),
            hybrid=True,
            normalization=retrievers and v >= (8, 18, 0),  # the linear retriever
            rrf=retrievers and v >= (8, 14, 0),
            rrf_weights=retrievers and v >= (9, 3, 0),
            z_score=False,
            explanation=False,
            pagination_depth=False,
            native_engines=False,  # Lucene HNSW only: no faiss or nmslib
            engine="elasticsearch",
            search_pipelines=False,
            score_sum=v >= (8, 4, 0),
            license=license,
            analysis_common=ANALYSIS_MODULE in names,
            hunspell=tuple(sorted(set(hunspell))),
        )

    def without(self, fusion: Fusion) -> Capabilities:
        """These capabilities less the server-side way of running ``fusion`` (after the cluster
        refused it: an unknown retriever, a licence that does not cover it)."""
        found = renderer(self.engine, fusion)
        return self if found is None else found.without(self)

    def fusions(self, weights: tuple[float, ...] | None = None, *, rank_constants: Iterable[int] = (DEFAULT_RANK_CONSTANT,)) -> list[Fusion]:
        """Every server-side fusion this cluster runs, by method (adapter.fusion: each normalisation x
        combination the server allows with ``weights``, then RRF with each of ``rank_constants``, then,
        on Elasticsearch, the score sum with ``weights`` as boosts)."""
        return [fusion for method in methods() if self.engine in method.servers
                for fusion in method.variants(weights, rank_constants) if self.supports(fusion)[0]]

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why (the engine's renderer of it knows)."""
        why = server_support(fusion, self)
        return why is None, why or ""
