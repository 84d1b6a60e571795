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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .analysis import ICU, STEMPEL
from .fusions import DEFAULT_RANK_CONSTANT, RRF, Combination, Fusion, Normalization, ScoreNormalization

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
    server_mmr: bool = False  # the k-NN plugin knows ext.mmr (3.3+)
    server_mmr_enabled: bool = False  # ... and the cluster setting turns its processors on
    in_query_fusion: bool = False  # hybrid.fusion: fused without a search pipeline (unreleased)
    delete_by_query: bool = False  # the reindex module
    modules: tuple[str, ...] = ()
    hunspell: tuple[str, ...] = ()  # Hunspell locales the nodes have (node attribute `hunspell`)

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

    def normalizations(self) -> tuple[Normalization, ...]:
        norms = [Normalization.MIN_MAX, Normalization.L2]
        if self.z_score:
            norms.append(Normalization.Z_SCORE)
        return tuple(norms)

    def fusions(self, weights: tuple[float, ...] | None = None, *, rank_constants: Iterable[int] = (DEFAULT_RANK_CONSTANT,)) -> list[Fusion]:
        """Every server-side fusion this cluster runs: each normalisation x combination the server
        allows (with ``weights``), then RRF with each of ``rank_constants``."""
        if not self.normalization:
            return []
        out: list[Fusion] = []
        for norm in self.normalizations():
            for comb in Combination:
                if norm is Normalization.Z_SCORE and comb is not Combination.ARITHMETIC_MEAN:
                    continue
                out.append(ScoreNormalization(norm, comb, weights))
        if self.rrf:
            out += [RRF(rc) for rc in rank_constants]
        return out

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why."""
        if not self.hybrid:
            return False, f"the cluster ({self.engine} {self.version}) has no neural-search plugin with the hybrid query"
        if isinstance(fusion, RRF):
            if not self.rrf:
                return False, f"RRF (score-ranker-processor) needs OpenSearch 2.19+, the cluster runs {self.version}"
            if fusion.weights is not None and not self.rrf_weights:
                return False, f"RRF weights need OpenSearch 3.1+, the cluster runs {self.version}"
            return True, ""
        if fusion.technique is Normalization.Z_SCORE and not self.z_score:
            return False, f"z_score normalisation needs OpenSearch 3.0+, the cluster runs {self.version}"
        return True, ""
