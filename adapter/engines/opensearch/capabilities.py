"""OpenSearch's capabilities: what each release of neural-search and k-NN runs, read from a probe. Pure.

The flags follow the neural-search releases: the ``hybrid`` query and ``normalization-processor``
2.10; RRF (``score-ranker-processor``), ``hybrid_score_explanation`` and ``pagination_depth`` 2.19;
``z_score`` 3.0; RRF weights 3.1. Native k-NN engines (faiss, nmslib) are assumed present unless a
node says otherwise with the ``knn_native: false`` attribute (``hybrid local up`` sets it: the
Maven k-NN zip has no native libraries).

What a search page can add to a hybrid query, by version (docs/OPENSEARCH-FEATURES.md has each one
checked on 3.6.0 and 2.19.1): aggregations 2.13; sort 2.16; ``hybrid.filter`` 3.0; ``collapse``
3.1 (2.19 ignores it silently, so it is never sent there) with ``inner_hits`` 3.2; ``min_score`` on
the fused score 3.5 (before, the server applies it to each leg's raw score); highlighting works
wherever the hybrid query does. Server-side MMR (``ext.mmr``) is k-NN 3.3, for top-level ``knn``
queries only, and runs only when the cluster setting enables its processors. ``_delete_by_query``
needs the ``reindex`` module; the Polish analyzer the ``analysis-stempel`` plugin, ICU folding
``analysis-icu``; Hunspell dictionaries are named by the node attribute ``hunspell``. In-query
fusion (``hybrid.fusion``, no pipeline) is unreleased: it is recognised by the cluster setting that
switches it (``plugins.neural_search.hybrid.fusion.enabled``), not by a version. Which fusions run,
and why not: the renderers in :mod:`adapter.engines.opensearch.fusion`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from adapter.engines import responses
from adapter.engines.capabilities import Capabilities, EngineName, version_tuple
from adapter.index.analysis import ICU, STEMPEL

NEURAL_PLUGINS = ("opensearch-knn", "opensearch-neural-search")
# Analysis plugins Amazon OpenSearch Service (managed and Serverless) bundles; assumed where the
# cluster hides its plugin list.
AWS_ANALYSIS_PLUGINS = (
    ICU,
    "analysis-kuromoji",
    "analysis-nori",
    "analysis-phonetic",
    "analysis-smartcn",
    STEMPEL,
    "analysis-ukrainian",
)
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
    # named sub-queries' scores (include_named_queries_score) on a hybrid page: checked on 2.19.1 and 3.6.0
    "hybrid_leg_scores": (2, 19, 0),
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
PROBED_SETTINGS = (MMR_SETTING, FUSION_SETTING)
SETTINGS_SINCE = (3, 3, 0)  # server MMR; older clusters have none of PROBED_SETTINGS, so they are not asked
# What GET / answers with compatibility.override_main_response_version on (7.10.2): no OpenSearch release
# numbers itself so; the version is then read from _nodes.
OVERRIDDEN_VERSION = (7, 0, 0)


@dataclass(frozen=True)
class OpenSearchCapabilities(Capabilities):
    """What only OpenSearch's own code reads, beside the shared flags."""

    explanation: bool = False  # the hybrid_score_explanation response processor (2.19+)
    native_engines: bool = False  # the k-NN plugin's faiss and nmslib (not in the Maven zip hybrid local runs)
    # RRF ranks each leg's hits among every shard's candidates (3.5+); before, within each shard
    rrf_global_ranks: bool = False


def opensearch_capabilities(
    version: str,
    *,
    neural_search: bool = True,
    native_engines: bool = True,
    plugins: Iterable[str] = (),
    distribution: str = "opensearch",
    modules: Iterable[str] | None = None,
    hunspell: Iterable[str] = (),
    cluster_settings: Mapping[str, Any] | None = None,
) -> OpenSearchCapabilities:
    """The feature set of an OpenSearch ``version`` (with or without neural-search).

    ``modules`` None means unknown (a cluster hiding ``_nodes``): the managed service has
    ``reindex``. ``cluster_settings`` are the values of :data:`MMR_SETTING` and
    :data:`FUSION_SETTING` as the cluster reports them (defaults included; a key the cluster
    does not know is absent).
    """
    v = version_tuple(version)
    settings = cluster_settings or {}
    knn = neural_search or "opensearch-knn" in set(plugins)
    mmr_on, fusion_on = _switched(settings)
    flags: dict[str, Any] = {flag: neural_search and v >= since for flag, since in NEURAL_SEARCH_SINCE.items()}
    return OpenSearchCapabilities(
        version=version,
        distribution=distribution,
        plugins=tuple(sorted(p for p in plugins if p)),
        **flags,
        native_engines=native_engines,
        engine=EngineName.OPENSEARCH,
        legacy_bm25=v < (3, 0, 0),
        server_mmr=knn and v >= (3, 3, 0),
        server_mmr_enabled=knn and v >= (3, 3, 0) and mmr_on,
        # Recognised by the switch the plugin registers, not by a version: no release has it yet.
        in_query_fusion=neural_search and fusion_on,
        delete_by_query=modules is None or "reindex" in set(modules),
        modules=tuple(sorted(m for m in (modules or ()) if m)),
        hunspell=tuple(sorted(h for h in hunspell if h)),
    )


def _switched(settings: Mapping[str, Any]) -> tuple[bool, bool]:
    """Whether the flat cluster ``settings`` turn on server MMR's processors, and in-query fusion."""
    factories = settings.get(MMR_SETTING) or []
    factories = [factories] if isinstance(factories, str) else list(factories)
    fusion_switch = settings.get(FUSION_SETTING)
    return (
        "*" in factories or all(f in factories for f in MMR_FACTORIES),
        fusion_switch is not None and str(fusion_switch).lower() == "true",
    )


def root_capabilities(root: Mapping[str, Any]) -> OpenSearchCapabilities:
    """A search's capabilities from ``GET /`` alone (:meth:`adapter.engines.opensearch.OpenSearchEngine.search_probe`):
    the version's features with neural-search and k-NN installed; plugins, modules and Hunspell
    locales unknown (none listed), and on 3.3+ the switching cluster settings not read yet."""
    version = str((root.get("version") or {}).get("number", "0"))
    caps = opensearch_capabilities(version, distribution=(root.get("version") or {}).get("distribution", "opensearch"))
    return replace(caps, switches_read=version_tuple(version) < SETTINGS_SINCE)


def capabilities_with_switches(caps: Capabilities, settings: Mapping[str, Any] | None) -> Capabilities:
    """``caps`` with server MMR and in-query fusion as the cluster ``settings`` (``GET _cluster/settings``,
    defaults included) switch them."""
    flat = {name: responses.cluster_setting(settings or {}, name) for name in PROBED_SETTINGS}
    mmr_on, fusion_on = _switched({k: v for k, v in flat.items() if v is not None})
    return replace(
        caps,
        server_mmr_enabled=caps.server_mmr and mmr_on,
        in_query_fusion=caps.hybrid and fusion_on,
        switches_read=True,
    )


def serverless_capabilities(distribution: str = "opensearch") -> OpenSearchCapabilities:
    """Amazon OpenSearch Serverless: no version, nodes or plugins to read. AWS documents hybrid
    search with ``normalization-processor`` (min_max, l2; the three means), not RRF or z_score.
    ``pagination_depth`` is sent as to a managed cluster, so scores and order match it; where a
    collection rejects it, the searcher drops it and says so (``SearchResult.notices``)."""
    return OpenSearchCapabilities(
        version="serverless",
        distribution=distribution,
        plugins=AWS_ANALYSIS_PLUGINS,
        hybrid=True,
        normalization=True,
        rrf=False,
        rrf_weights=False,
        z_score=False,
        explanation=False,
        pagination_depth=True,
        native_engines=True,
        serverless=True,
        engine=EngineName.OPENSEARCH,
        hybrid_aggregations=True,
        hybrid_sort=True,
        hybrid_highlight=True,
    )


def capabilities_from(
    root: Mapping[str, Any], nodes: Mapping[str, Any] | None, settings: Mapping[str, Any] | None = None
) -> OpenSearchCapabilities:
    """Derive capabilities from ``GET /``, ``GET _nodes/plugins`` (None where the cluster hides it:
    then the plugins Amazon OpenSearch Service ships are assumed) and the cluster settings the
    features depend on (``GET _cluster/settings?include_defaults``, see :data:`PROBED_SETTINGS`).

    Plugins, modules and Hunspell locales count only when every node has them: a request may land
    on any node.
    """
    distribution = root.get("version", {}).get("distribution", "opensearch")
    flat = {name: responses.cluster_setting(settings or {}, name) for name in PROBED_SETTINGS}
    flat = {k: v for k, v in flat.items() if v is not None}
    if nodes is None:  # a managed cluster that hides _nodes: its version, plugins assumed
        return opensearch_capabilities(
            root.get("version", {}).get("number", "0"),
            distribution=distribution,
            plugins=AWS_ANALYSIS_PLUGINS,
            cluster_settings=flat,
        )
    node_list = list(nodes.get("nodes", {}).values())
    versions = sorted({n.get("version", "0") for n in node_list}, key=version_tuple)
    version = versions[0] if versions else root.get("version", {}).get("number", "0")

    def on_every_node(values: Iterable[Iterable[str]]) -> set[str]:
        sets = [set(v) for v in values]
        return set.intersection(*sets) if sets else set()

    plugins = on_every_node({p.get("name") for p in n.get("plugins", [])} for n in node_list)
    modules = on_every_node({m.get("name") for m in n.get("modules", [])} for n in node_list)
    hunspell = on_every_node(
        {h.strip() for h in str(n.get("attributes", {}).get("hunspell", "")).split(",") if h.strip()} for n in node_list
    )
    native = not any(n.get("attributes", {}).get("knn_native") == "false" for n in node_list)
    return opensearch_capabilities(
        version,
        neural_search=all(p in plugins for p in NEURAL_PLUGINS),
        native_engines=native and "opensearch-knn" in plugins,
        plugins=plugins,
        distribution=distribution,
        # An answer without module lists (older recordings) says nothing about them.
        modules=modules if any("modules" in n for n in node_list) else None,
        hunspell=hunspell,
        cluster_settings=flat,
    )
