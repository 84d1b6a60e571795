"""Elasticsearch 8.19 / 9.x: ``dense_vector`` mappings, fusion inside the search request.

Elasticsearch has no search pipelines, no ``hybrid`` query and no ``index.knn`` setting. A hybrid
search is one request whose body does the fusion, the best the cluster allows:

- the ``rrf`` / ``linear`` retrievers (``FusedBy.SERVER_RETRIEVER``): they need the ``rank-rrf``
  module and an Enterprise or trial licence;
- else ``query`` + ``knn`` in one request (``FusedBy.SERVER_SUM``, every licence): each hit's score
  is ``w_bm25 * bm25 + w_dense * similarity``, the weights sent as boosts. Not normalised: BM25 is
  unbounded, the similarity lies in [0, 1];
- else client-side RRF (the searcher), with a notice.

The probe asks ``_nodes/plugins`` (version, modules, the ``hunspell`` node attribute) and
``_license``, never ``GET /`` (the integ-test zip has no root endpoint: 405). Pure apart from
:meth:`ElasticsearchEngine.probe`; the port (:mod:`.cluster`) makes the calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from adapter.engines import responses
from adapter.engines.index_assets import IndexAssets
from adapter.engines.capabilities import Capabilities, version_tuple
from adapter.engines.dsl import filter_clauses
from adapter.engines.elasticsearch.capabilities import capabilities_from, elasticsearch_capabilities  # noqa: F401  (re-exported)
from adapter.engines.elasticsearch.fusion import IN_ELASTICSEARCH_REQUEST, request_fusion
from adapter.engines.probed import ProbedClusters
from adapter.errors import BackendError, CapabilityError, ConfigurationError
from adapter.fusion import LEGS
from adapter.fusion.choice.selection import ClusterKind
from adapter.index.assets import IndexSpec, load_asset

if TYPE_CHECKING:
    from adapter.engines import HybridRequest
    from adapter.engines.elasticsearch.cluster import ElasticsearchCluster

# IndexSpec.space_type (OpenSearch's names) -> dense_vector similarity: the same scores, (1 + cos) / 2 etc.
SIMILARITIES = {"cosinesimil": "cosine", "innerproduct": "dot_product", "l2": "l2_norm"}
# 9.2 leaves vectors out of _source unless the index says otherwise; the adapter reads them (MMR, check).
EXCLUDE_SOURCE_VECTORS = "index.mapping.exclude_source_vectors"
EXCLUDE_SOURCE_VECTORS_SINCE = (9, 2, 0)
KNN_MAX_CANDIDATES = 10_000


class ElasticsearchEngine(IndexAssets):
    """Elasticsearch's dialect; its index template and mapping record the default fusion in ``_meta`` (no default
    pipeline carries it)."""

    name = "elasticsearch"
    highlight_offset_option = "max_analyzed_offset"  # highlight: how much of a field is analysed at most
    empty_shard_index: str | None = None  # its hybrid fetches the page alone

    def __init__(self) -> None:
        self._probed = ProbedClusters()
        self.placement = IN_ELASTICSEARCH_REQUEST  # the request fuses: no search pipelines

    def measured_kind(self, caps: Capabilities) -> ClusterKind:
        """The default measured for Elasticsearch on a basic licence: every fixed fusion runs, by the server
        (the score sum) or in the client with the server's formula."""
        return ClusterKind.ELASTICSEARCH

    def cluster(self, client: Any) -> ElasticsearchCluster:
        """The port over an elasticsearch-py ``client``."""
        from adapter.engines.elasticsearch.cluster import ElasticsearchCluster

        return ElasticsearchCluster(client, self)

    # -- capabilities ------------------------------------------------------------------------------
    def probe(self, client: Any, *, refresh: bool = False) -> Capabilities:
        """Version, modules and Hunspell dictionaries from ``_nodes/plugins``; the licence from
        ``_license``. A cluster that hides them (403/404) is assumed a standard distribution under
        an unknown licence: retrievers are tried, and refused ones fall back (see the searcher)."""
        from adapter.engines.elasticsearch.client import describe, translate_errors

        nodes = _hidden_or(client, "listing nodes and modules", lambda: client.nodes.info(metric="plugins"))
        key = f"{(nodes or {}).get('cluster_name', '')}@{describe(client) or 'the cluster'}"
        probed = self._probed.get(key, refresh=refresh)
        if probed is not None:
            return probed
        version = None
        if nodes is None:
            with translate_errors("reading the cluster's version", client):
                version = client.info()["version"]["number"]
        license = _hidden_or(client, "reading the licence", lambda: client.license.get())
        caps = capabilities_from(nodes, license, version)
        return self._probed.put(key, caps)

    # -- assets --------------------------------------------------------------------------------------
    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        if spec.knn_method != "lucene":
            raise ConfigurationError(
                f"k-NN method {spec.knn_method!r} is OpenSearch's; Elasticsearch indexes vectors with "
                "Lucene's HNSW only: use the k-NN method lucene (--knn-method lucene)"
            )

    def render_vector_component(self, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        vector = load_asset("mappings", "component-vector-elasticsearch")
        props = vector["template"]["mappings"]["properties"]
        field = props.pop("embedding")
        field.update(dims=spec.fingerprint.dimension, similarity=SIMILARITIES[spec.space_type])
        field["index_options"].update(m=spec.m, ef_construction=spec.ef_construction)
        props[spec.vector_field] = field
        if caps is None or version_tuple(caps.version) >= EXCLUDE_SOURCE_VECTORS_SINCE:
            vector["template"]["settings"] = {EXCLUDE_SOURCE_VECTORS: False}
        return vector

    # -- requests ------------------------------------------------------------------------------------
    def knn_query(
        self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The ``knn`` query: ``k`` nearest (per shard), ``num_candidates`` as Elasticsearch's own
        default (1.5 k, at most 10,000) spelled out; filters are a pre-filter, as on OpenSearch."""
        body: dict[str, Any] = {
            "field": field,
            "query_vector": [float(x) for x in vector],
            "k": int(k),
            "num_candidates": max(int(k), min(round(1.5 * k), KNN_MAX_CANDIDATES)),
        }
        clauses = filter_clauses(filters)
        if clauses:
            body["filter"] = {"bool": {"filter": clauses}}
        return {"knn": body}

    def hybrid_body(self, request: HybridRequest) -> dict[str, Any]:
        """The request that fuses: the ``rrf`` / ``linear`` retriever, or ``query`` + ``knn`` summed.
        ``filter`` is never given (no ``caps.hybrid_filter``): each leg carries the filter.

        Each leg brings its top ``depth`` (the knn ``k``, the retrievers' ``rank_window_size``), so
        pages of one query are cut from the same fused list, as OpenSearch's ``pagination_depth``.
        In the sum the text leg brings every match (``query`` is not cut), the knn leg its global top ``k``.
        """
        if request.inline_pipeline is not None:
            raise CapabilityError("Elasticsearch has no search pipelines to send with a request")
        if request.filter is not None:
            raise CapabilityError("Elasticsearch's hybrid request has no filter of its own: each leg carries it")
        if request.fusion is None:
            raise CapabilityError("an Elasticsearch hybrid request needs the fusion that it runs")
        body = request_fusion(request.fusion).body(request.text, dict(request.knn["knn"]), depth=request.depth)
        body["size"] = int(request.size)
        if request.from_:
            body["from"] = int(request.from_)
        if request.exclude:
            body["_source"] = {"excludes": list(request.exclude)}
        if request.explain:
            body["explain"] = True
        return body

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        raise CapabilityError("Elasticsearch has no server-side MMR here (ext.mmr is OpenSearch's k-NN plugin)")

    # -- fallbacks -----------------------------------------------------------------------------------
    def refused_fusion(self, error: BackendError) -> str | None:
        """400 ``unknown retriever [rrf]`` (no rank-rrf module) or 403 ``current license is
        non-compliant for [...]`` (a licence below Enterprise): the retriever cannot run here."""
        reason = error.reason or ""
        if error.status == 400 and "unknown retriever [" in reason:
            return f"the cluster refused the retriever: {reason} (no rank-rrf module)"
        if error.status == 403 and ("license is non-compliant" in reason or "license" in reason.lower()):
            return f"the cluster refused the retriever: {reason} (its licence does not cover it)"
        return None

    # -- answers -------------------------------------------------------------------------------------
    def explained_leg_scores(
        self, hit: responses.RawHit, raw_scores: Sequence[float | None], *, weights: Sequence[float] | None = None
    ) -> list[float | None]:
        """Per-leg scores from the hit's explanation: the rrf retriever's ``1 / (k + rank)`` terms, the
        linear retriever's normalised scores, or (the sum) each leg's raw score."""
        return responses.elasticsearch_leg_scores(
            hit.explanation, LEGS, score=hit.score, weights=weights or (1.0,) * len(LEGS), matched=hit.matched_queries
        )


def _hidden_or(client: Any, action: str, call: Callable[[], Any]) -> Mapping[str, Any] | None:
    """``call()``'s answer, or None where the cluster hides it (403, 404, 410: a restricted user, Serverless)."""
    from adapter.engines.elasticsearch.client import translate_errors

    try:
        with translate_errors(action, client):
            answer: Mapping[str, Any] = call()
            return answer
    except BackendError as exc:
        if exc.status in (403, 404, 410):
            return None
        raise


ELASTICSEARCH = ElasticsearchEngine()
ENGINE = ELASTICSEARCH  # what the registry finds (adapter.engines.registry)
