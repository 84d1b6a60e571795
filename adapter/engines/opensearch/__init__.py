"""OpenSearch: ``knn_vector`` mappings, the ``hybrid`` query fused by search pipelines.

Pure apart from :meth:`OpenSearchEngine.probe`, which asks the cluster for its version, plugins,
modules and node attributes (``_nodes/plugins``), and on 3.3+ for the settings that switch features
on (server MMR, in-query fusion).
The version comes from ``_nodes`` rather than ``GET /``, which reports 7.10.2 when
``compatibility.override_main_response_version`` is on. Serverless (``aoss``) has neither and is
not asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from adapter.engines import responses
from adapter.engines.index_assets import IndexAssets
from adapter.engines.capabilities import Capabilities, version_tuple
from adapter.engines.dsl import filter_clauses, named_query, search_body
from adapter.engines.opensearch.capabilities import (  # noqa: F401  (PROBED_SETTINGS re-exported)
    OVERRIDDEN_VERSION,
    PROBED_SETTINGS,
    OpenSearchCapabilities,
    SETTINGS_SINCE,
    capabilities_from,
    capabilities_with_switches,
    root_capabilities,
    serverless_capabilities,
)
from adapter.engines.opensearch.fusion import fusion_from_processors, step
from adapter.engines.opensearch.placement import InPipeline
from adapter.engines.probed import ProbedClusters
from adapter.errors import BackendError, CapabilityError, ConfigurationError
from adapter.fusion import LEGS, Fusion
from adapter.fusion.choice.selection import ClusterKind
from adapter.index.assets import IndexSpec, load_asset

if TYPE_CHECKING:
    from adapter.engines import HybridRequest
    from adapter.engines.opensearch.cluster import OpenSearchCluster


def probe_settings(client: Any) -> Mapping[str, Any]:
    """The cluster settings of :data:`PROBED_SETTINGS`, defaults included ({} where they are hidden)."""
    from adapter.engines.opensearch.client import translate_errors
    from adapter.errors import BackendError, ClusterUnavailableError

    paths = ",".join(f"*.{name}" for name in PROBED_SETTINGS)
    try:
        with translate_errors("reading cluster settings", client):
            return client.cluster.get_settings(include_defaults=True, filter_path=paths) or {}
    except ClusterUnavailableError:
        raise
    except BackendError:  # a managed cluster that hides its settings: the features they switch count as off
        return {}


# On one shard OpenSearch runs the fetch phase in the same round as the query phase (query and
# fetch), before the search pipeline fuses: a hybrid then reads the source (and highlights) of every
# candidate of both legs, up to 2 x depth, where it returns a page. With a second shard the server
# fuses first and fetches the page alone: searching this empty, write-blocked, hidden index beside
# the hybrid index gives it one, without changing a score (it holds no document, and its knn leg
# has ignore_unmapped). `hybrid init` creates it (adapter.admin.init).
EMPTY_SHARD_INDEX = "hybrid-empty-shard"


class OpenSearchEngine(IndexAssets):
    name = "opensearch"
    highlight_offset_option = "max_analyzer_offset"  # highlight: how much of a field is analysed at most
    empty_shard_index: str | None = EMPTY_SHARD_INDEX

    def __init__(self) -> None:
        self._probed = ProbedClusters()
        self.placement = InPipeline(self)  # fusion in search pipelines

    def measured_kind(self, caps: Capabilities) -> ClusterKind:
        """The default measured on OpenSearch 3.x, or on 2.x where the cluster has no z_score."""
        return ClusterKind.OPENSEARCH_3 if caps.z_score else ClusterKind.OPENSEARCH_2

    def cluster(self, client: Any) -> OpenSearchCluster:
        """The port over an opensearch-py ``client``."""
        from adapter.engines.opensearch.cluster import OpenSearchCluster

        return OpenSearchCluster(client, self)

    # -- capabilities ------------------------------------------------------------------------------
    def probe(
        self,
        client: Any,
        *,
        refresh: bool = False,
        serverless: bool | None = None,
        root: Mapping[str, Any] | None = None,
    ) -> Capabilities:
        """What the cluster runs, cached per cluster. Serverless (``serverless``, by default read from
        the client's SigV4 service) answers neither ``GET /`` nor ``_nodes``: nothing is asked.
        ``root``: the ``GET /`` answer the caller already has (the engine's detection asked it)."""
        from opensearchpy.exceptions import AuthorizationException, NotFoundError

        from adapter.engines.opensearch.client import is_serverless, translate_errors

        if serverless if serverless is not None else is_serverless(client):
            return serverless_capabilities()
        root = root or self._root(client)
        key = self._key(client, root)
        probed = self._probed.get(key, refresh=refresh)
        if probed is not None:
            return probed
        try:
            with translate_errors("listing plugins", client):
                nodes = client.nodes.info(metric="plugins")
        except Exception as exc:  # a managed cluster that hides _nodes (404/403)
            if isinstance(exc.__cause__, (NotFoundError, AuthorizationException)):
                nodes = None
            else:
                raise
        version = capabilities_from(root, nodes).version
        settings = probe_settings(client) if version_tuple(version) >= SETTINGS_SINCE else None
        caps = capabilities_from(root, nodes, settings)
        return self._probed.put(key, caps)

    def search_probe(self, client: Any, *, root: Mapping[str, Any] | None = None) -> Capabilities:
        """What a search needs of the cluster, from ``GET /`` alone (``root``: the answer the caller
        has; else it is asked): its version's features, neural-search and k-NN taken as installed
        (``hybrid init`` refuses a cluster without them, and an index with a ``knn_vector`` field
        needs k-NN; a cluster that lost neural-search later refuses the ``hybrid`` query, and the
        searcher falls back: :meth:`refused_fusion`). Analysis plugins, modules and node attributes
        (what init and ingest read) are not asked; nor are the cluster settings that switch server
        MMR and in-query fusion (``switches_read`` False: :meth:`with_switches` reads them when a
        search needs them). The full probe where one is cached already, where the version is hidden
        (``compatibility.override_main_response_version`` answers 7.10.2), and on Serverless."""
        from adapter.engines.opensearch.client import is_serverless

        if is_serverless(client):
            return serverless_capabilities()
        root = root or self._root(client)
        probed = self._probed.get(self._key(client, root))
        version = str((root.get("version") or {}).get("number", "0"))
        if probed is not None or version_tuple(version) >= OVERRIDDEN_VERSION:
            return probed or self.probe(client, root=root)
        return root_capabilities(root)

    def with_switches(self, client: Any, caps: Capabilities) -> Capabilities:
        """``caps`` with the cluster settings that switch server MMR and in-query fusion read (one request on 3.3+)."""
        if caps.switches_read:
            return caps
        return capabilities_with_switches(caps, probe_settings(client))

    def _root(self, client: Any) -> Mapping[str, Any]:
        from adapter.engines.opensearch.client import translate_errors

        with translate_errors("probing the cluster", client):
            root: Mapping[str, Any] = client.info()
        return root

    def _key(self, client: Any, root: Mapping[str, Any]) -> str:
        from adapter.engines.opensearch.client import describe

        return str(root.get("cluster_uuid") or root.get("cluster_name") or describe(client) or "the cluster")

    # -- assets --------------------------------------------------------------------------------------
    def render_vector_component(self, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        vector = load_asset("mappings", "component-vector")
        props = vector["template"]["mappings"]["properties"]
        field = props.pop("embedding")
        field["dimension"] = spec.fingerprint.dimension
        # the plugin calls the method's engine so
        field["method"].update(engine=spec.knn_method, space_type=spec.space_type)
        field["method"]["parameters"] = {"m": spec.m, "ef_construction": spec.ef_construction}
        props[spec.vector_field] = field
        return vector

    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        if spec.knn_method != "lucene" and not (isinstance(caps, OpenSearchCapabilities) and caps.native_engines):
            raise ConfigurationError(
                f"k-NN method {spec.knn_method!r} needs the k-NN native libraries, which this cluster does not have "
                "(node attribute knn_native=false); use the k-NN method lucene (--knn-method lucene)"
            )

    def render_pipeline(self, fusion: Fusion, caps: Capabilities) -> dict[str, Any]:
        """A search pipeline running ``fusion`` on this cluster, with ``hybrid_score_explanation``
        where the cluster has it (:mod:`adapter.engines.opensearch.fusion` renders the processor)."""
        processor = step(fusion)
        body = load_asset("pipelines", processor.asset)
        body["phase_results_processors"] = [processor.processor(body["phase_results_processors"][0], caps)]
        if isinstance(caps, OpenSearchCapabilities) and caps.explanation:
            body["response_processors"] = load_asset("pipelines", "explanation")["response_processors"]
        return body

    def pipeline_fusion(self, body: Mapping[str, Any]) -> Fusion | None:
        return fusion_from_processors((body or {}).get("phase_results_processors", []))

    # -- requests ------------------------------------------------------------------------------------
    def knn_query(
        self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """A k-NN leg. Filters go inside the knn clause: a pre-filter that still returns k hits."""
        body: dict[str, Any] = {"vector": [float(x) for x in vector], "k": int(k)}
        clauses = filter_clauses(filters)
        if clauses:
            body["filter"] = {"bool": {"filter": clauses}}
        return {"knn": {field: body}}

    def hybrid_body(self, request: HybridRequest) -> dict[str, Any]:
        """One ``hybrid`` query (text leg first, vector leg second). With ``explain`` each sub-query
        is named after its leg, so the server's explanation can say which leg matched, and with
        ``leg_scores``, so that ``include_named_queries_score`` answers each leg's raw score per hit
        (the legs' relevance, docs/INTEROP.md, Scores); only then: a named sub-query is evaluated again
        for every returned hit (``matched_queries``). ``pagination_depth`` (2.19+) fixes the
        candidates per leg, so pages of one query are cut from the same fused list.

        ``filter`` goes to ``hybrid.filter`` (3.0+), which the server pushes into every leg (into
        the knn clause as its pre-filter); older clusters need it inside each leg instead.
        ``fusion`` fuses in the query itself (``hybrid.fusion``, no pipeline; unreleased, see
        :func:`fusion_clause`): then ``pagination_depth`` is not sent (the server refuses both)."""
        caps, depth, filter, fusion = request.caps, request.depth, request.filter, request.fusion
        if filter is not None and not caps.hybrid_filter:
            raise CapabilityError(
                f"hybrid.filter needs OpenSearch 3.0+, the cluster runs {caps.version}; put the filter in each leg"
            )
        if fusion is not None and not caps.in_query_fusion:
            raise CapabilityError(f"the cluster ({caps.version}) has no in-query fusion (hybrid.fusion)")
        knn = _unmapped_ignored(request.knn) if request.empty_shard else request.knn
        legs = (request.text, knn)
        hybrid: dict[str, Any] = {
            "queries": (
                [named_query(q, leg) for q, leg in zip(legs, LEGS)]
                if request.explain or request.leg_scores
                else list(legs)
            )
        }
        if filter is not None:
            hybrid["filter"] = dict(filter)
        if fusion is not None:
            hybrid["fusion"] = fusion_clause(fusion, caps, window_size=depth)
        elif caps.pagination_depth:
            hybrid["pagination_depth"] = int(depth)
        body = search_body(
            {"hybrid": hybrid},
            size=request.size,
            from_=request.from_,
            exclude_source=request.exclude,
            explain=request.explain,
        )
        if request.inline_pipeline is not None:
            body["search_pipeline"] = request.inline_pipeline  # a temporary pipeline, defined in the request
        return body

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        """``body`` (a top-level ``knn`` query) reranked by the k-NN plugin's MMR (``ext.mmr``,
        3.3+, with the cluster setting on): it oversamples ``candidates`` hits and keeps ``size``.
        The server's ``diversity`` weighs redundancy: the adapter's MMR lambda is ``1 - diversity``."""
        if "knn" not in body.get("query", {}):
            raise CapabilityError("server-side MMR runs on a top-level knn query only (not hybrid, not bool)")
        return {
            **body,
            "ext": {"mmr": {"diversity": float(diversity), "candidates": int(candidates), "vector_field_path": field}},
        }

    # -- fallbacks -----------------------------------------------------------------------------------
    def refused_fusion(self, error: BackendError) -> str | None:
        """Capabilities come from the version (a searcher's probe: :meth:`search_probe`) or the plugins'
        versions, so a refusal is a real error, but for one: a cluster that lost neural-search after
        ``hybrid init`` has no ``hybrid`` query (400 "unknown query [hybrid]"), and fuses in the client."""
        reason = (error.reason or "").lower()
        if (
            error.status == 400
            and "[hybrid]" in reason
            and ("unknown query" in reason or "no [query] registered" in reason)
        ):
            return "the cluster has no hybrid query (the neural-search plugin is not installed)"
        return None

    # -- answers -------------------------------------------------------------------------------------
    def explained_leg_scores(
        self, hit: responses.RawHit, raw_scores: Sequence[float | None], *, weights: Sequence[float] | None = None
    ) -> list[float | None]:
        return responses.hybrid_leg_scores(hit.explanation, LEGS, matched=hit.matched_queries, raw_scores=raw_scores)


def _unmapped_ignored(knn: Mapping[str, Any]) -> dict[str, Any]:
    """The knn leg answering nothing on an index without its field (the empty shard), instead of an error."""
    ((field, clause),) = knn["knn"].items()
    return {"knn": {field: {**clause, "ignore_unmapped": True}}}


def fusion_clause(fusion: Fusion, caps: Capabilities, *, window_size: int) -> dict[str, Any]:
    """The ``hybrid.fusion`` object of in-query fusion: the processor's own ``normalization`` /
    ``combination`` (RRF's ``rank_constant`` where 3.1+ reads it) and the candidates per leg
    (``window_size``). Shape from neural-search's fused-mode branch (RFC #1930, PR #1933/#1948);
    unreleased, so it follows what that branch accepts."""
    processor = step(fusion)
    template = load_asset("pipelines", processor.asset)["phase_results_processors"][0]
    (inner,) = processor.processor(template, None).values()  # the rank constant where 3.1+ reads it
    return {**inner, "window_size": int(window_size)}


OPENSEARCH = OpenSearchEngine()
ENGINE = OPENSEARCH  # what the registry finds (adapter.engines.registry)
