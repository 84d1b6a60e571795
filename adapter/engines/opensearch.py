"""OpenSearch: ``knn_vector`` mappings, the ``hybrid`` query fused by search pipelines.

Pure apart from :meth:`OpenSearchEngine.probe`, which asks the cluster for its version and plugins.
The version comes from ``_nodes`` rather than ``GET /``, which reports 7.10.2 when
``compatibility.override_main_response_version`` is on. Serverless (``aoss``) has neither and is
not asked.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping, Sequence

from .. import responses
from ..assets import (
    IndexNames,
    IndexSpec,
    load_asset,
    merged_mapping,
    render_index_template,
    render_metadata_component,
    render_text_component,
)
from ..capabilities import Capabilities, version_tuple
from ..errors import ConfigurationError
from ..fusions import RRF, Fusion, fusion_from_processor
from ..fusions import LEGS
from ..queries import filter_clauses, named_query, search_body

NEURAL_PLUGINS = ("opensearch-knn", "opensearch-neural-search")


def capabilities_from(root: Mapping[str, Any], nodes: Mapping[str, Any] | None) -> Capabilities:
    """Derive capabilities from ``GET /`` and ``GET _nodes/plugins`` (None where the cluster hides it)."""
    distribution = root.get("version", {}).get("distribution", "opensearch")
    if nodes is None:  # a managed cluster that hides _nodes: its version, plugins assumed
        return Capabilities.opensearch(root.get("version", {}).get("number", "0"), distribution=distribution)
    node_list = list(nodes.get("nodes", {}).values())
    versions = sorted({n.get("version", "0") for n in node_list}, key=version_tuple)
    version = versions[0] if versions else root.get("version", {}).get("number", "0")
    plugin_sets = [{p.get("name") for p in n.get("plugins", [])} for n in node_list]
    plugins = set.intersection(*plugin_sets) if plugin_sets else set()
    native = not any(n.get("attributes", {}).get("knn_native") == "false" for n in node_list)
    return Capabilities.opensearch(
        version,
        neural_search=all(p in plugins for p in NEURAL_PLUGINS),
        native_engines=native and "opensearch-knn" in plugins,
        plugins=plugins,
        distribution=distribution,
    )


class OpenSearchEngine:
    name = "opensearch"

    def __init__(self) -> None:
        self._probed: dict[str, Capabilities] = {}
        self._lock = threading.Lock()

    # -- capabilities ------------------------------------------------------------------------------
    def probe(self, client, *, refresh: bool = False, serverless: bool | None = None) -> Capabilities:
        """What the cluster runs, cached per cluster. Serverless (``serverless``, by default read from
        the client's SigV4 service) answers neither ``GET /`` nor ``_nodes``: nothing is asked."""
        from opensearchpy.exceptions import AuthorizationException, NotFoundError

        from ..client import describe_url, is_serverless, translate_errors

        if serverless if serverless is not None else is_serverless(client):
            return Capabilities.serverless_collection()
        with translate_errors("probing the cluster", client):
            root = client.info()
        key = root.get("cluster_uuid") or root.get("cluster_name") or describe_url(client)
        with self._lock:
            if not refresh and key in self._probed:
                return self._probed[key]
        try:
            with translate_errors("listing plugins", client):
                nodes = client.nodes.info(metric="plugins")
        except Exception as exc:  # a managed cluster that hides _nodes (404/403)
            if isinstance(exc.__cause__, (NotFoundError, AuthorizationException)):
                nodes = None
            else:
                raise
        caps = capabilities_from(root, nodes)
        with self._lock:
            self._probed[key] = caps
        return caps

    # -- assets --------------------------------------------------------------------------------------
    def render_vector_component(self, spec: IndexSpec) -> dict[str, Any]:
        vector = load_asset("mappings", "component-vector")
        props = vector["template"]["mappings"]["properties"]
        field = props.pop("embedding")
        field["dimension"] = spec.fingerprint.dimension
        field["method"].update(engine=spec.engine, space_type=spec.space_type)
        field["method"]["parameters"] = {"m": spec.m, "ef_construction": spec.ef_construction}
        props[spec.vector_field] = field
        return vector

    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        if spec.engine != "lucene" and not caps.native_engines:
            raise ConfigurationError(
                f"engine {spec.engine!r} needs the k-NN native libraries, which this cluster does not have "
                "(node attribute knn_native=false); use engine 'lucene'"
            )

    def render_components(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, dict[str, Any]]:
        return {
            names.component("text"): render_text_component(spec, caps),
            names.component("vector"): self.render_vector_component(spec),
            names.component("metadata"): render_metadata_component(),
        }

    def render_index_template(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        return render_index_template(names, spec)

    def render_mapping(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        return merged_mapping(self.render_components(names, spec, caps), spec)

    def render_pipeline(self, fusion: Fusion, caps: Capabilities) -> dict[str, Any]:
        """A search pipeline running ``fusion`` on this cluster, with ``hybrid_score_explanation``
        where the cluster has it. RRF's rank constant sits where the cluster's version reads it."""
        body = load_asset("pipelines", "rrf" if isinstance(fusion, RRF) else "normalization")
        template = body["phase_results_processors"][0]
        if isinstance(fusion, RRF):
            processor = fusion.processor(template, legacy=version_tuple(caps.version) < (3, 1, 0))
        else:
            processor = fusion.processor(template)
        body["phase_results_processors"] = [processor]
        if caps.explanation:
            body["response_processors"] = load_asset("pipelines", "explanation")["response_processors"]
        return body

    def pipeline_fusion(self, body: Mapping[str, Any]) -> Fusion | None:
        return fusion_from_processor((body or {}).get("phase_results_processors", []))

    # -- requests ------------------------------------------------------------------------------------
    def knn_query(self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A k-NN leg. Filters go inside the knn clause: a pre-filter that still returns k hits."""
        body: dict[str, Any] = {"vector": [float(x) for x in vector], "k": int(k)}
        clauses = filter_clauses(filters)
        if clauses:
            body["filter"] = {"bool": {"filter": clauses}}
        return {"knn": {field: body}}

    def hybrid_body(
        self,
        text: dict[str, Any],
        knn: dict[str, Any],
        *,
        caps: Capabilities,
        depth: int,
        size: int,
        from_: int = 0,
        exclude: Sequence[str] = (),
        explain: bool = False,
        inline_pipeline: dict[str, Any] | None = None,
        fusion: Fusion | None = None,
    ) -> dict[str, Any]:
        """One ``hybrid`` query (text leg first, vector leg second), each sub-query named after its
        leg so explanations can say which leg matched. ``pagination_depth`` (2.19+) fixes the
        candidates per leg, so pages of one query are cut from the same fused list."""
        hybrid: dict[str, Any] = {"queries": [named_query(q, leg) for q, leg in zip((text, knn), LEGS)]}
        if caps.pagination_depth:
            hybrid["pagination_depth"] = int(depth)
        body = search_body({"hybrid": hybrid}, size=size, from_=from_, exclude_source=exclude, explain=explain)
        if inline_pipeline is not None:
            body["search_pipeline"] = inline_pipeline  # a temporary pipeline, defined in the request
        return body

    # -- fallbacks -----------------------------------------------------------------------------------
    def server_fallback(self, fusion: Fusion, caps: Capabilities) -> Fusion | None:
        return None  # what a pipeline cannot run here, client-side RRF does

    def refused_fusion(self, error) -> str | None:
        return None  # capabilities come from the plugins' versions; a refusal is a real error

    # -- bulk ----------------------------------------------------------------------------------------
    def streaming_bulk(self, client, actions, **options):
        from opensearchpy.helpers import streaming_bulk

        return streaming_bulk(client, actions, **options)

    # -- answers -------------------------------------------------------------------------------------
    def explained_leg_scores(self, hit: responses.RawHit, raw_scores: Sequence[float | None], *,
                             weights: Sequence[float] | None = None) -> list[float | None]:
        return responses.hybrid_leg_scores(hit.explanation, LEGS, matched=hit.matched_queries, raw_scores=raw_scores)


OPENSEARCH = OpenSearchEngine()
