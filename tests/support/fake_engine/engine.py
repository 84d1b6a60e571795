"""The fake engine's dialect: pure, as every engine's is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from adapter.index.assets import (
    IndexNames,
    IndexSpec,
    merged_mapping,
    render_index_template,
    render_metadata_component,
    render_text_component,
)
from adapter.engines.capabilities import Capabilities
from adapter.engines import HybridRequest
from adapter.engines.placement import IN_REQUEST
from adapter.errors import CapabilityError, ConfigurationError
from adapter.fusion import LEGS
from adapter.engines.dsl import filter_clauses
from adapter.engines.capabilities import EngineName

NAME = EngineName("fake")  # a third engine names itself: the enum stays open


@dataclass(frozen=True)
class FakeCapabilities(Capabilities):
    """Single legs, no search pipelines, no server-side fusion: hybrid queries are fused in the client. It names
    only the shared flags it has (the rest are False); an engine with flags of its own adds them here."""


def fake_capabilities(version: str = "1.0.0") -> FakeCapabilities:
    return FakeCapabilities(
        version=version, distribution="fake", plugins=(), engine=NAME, hybrid=True, delete_by_query=True
    )


class FakeEngine:
    name = NAME.value
    highlight_offset_option = "max_analyzer_offset"
    placement = IN_REQUEST  # no search pipelines: a fusion would go in the request; it runs none, so the client fuses
    empty_shard_index: str | None = None  # its hybrid fetches the page alone
    # No measured_kind: nothing was measured on it, so it gets the default measured for fusion in the client
    # (adapter.engines.engine.measured_kind), not Elasticsearch's, whose placement it shares.

    def cluster(self, client: Any) -> Any:
        from .cluster import FakeCluster

        if isinstance(client, FakeCluster):
            return client
        raise ConfigurationError("the fake engine holds its cluster in memory: use FakeCluster() as the client")

    # -- assets ---------------------------------------------------------------------------------------
    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        if spec.knn_method != "lucene":
            raise ConfigurationError(f"the fake engine has one k-NN method, not {spec.knn_method!r}")

    def render_components(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, dict[str, Any]]:
        vector = {
            "template": {
                "mappings": {
                    "properties": {
                        spec.vector_field: {
                            "type": "fake_vector",
                            "dims": spec.fingerprint.dimension,
                            "similarity": spec.space_type,
                        }
                    }
                }
            }
        }
        return {
            names.component("text"): render_text_component(spec, caps),
            names.component("vector"): vector,
            names.component("metadata"): render_metadata_component(),
        }

    def render_index_template(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, Any]:
        body = render_index_template(names, spec)
        body["template"]["settings"].pop("index.search.default_pipeline")
        body["template"]["mappings"]["_meta"] = self._meta(spec)
        return body

    def render_mapping(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        return {**merged_mapping(self.render_components(names, spec, caps), spec), "_meta": self._meta(spec)}

    def _meta(self, spec: IndexSpec) -> dict[str, Any]:
        return {**spec.meta, "default_fusion": spec.default_fusion}  # no default pipeline to carry it

    # -- requests -------------------------------------------------------------------------------------
    def knn_query(
        self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "fake_knn": {
                "field": field,
                "vector": [float(x) for x in vector],
                "k": int(k),
                "filter": filter_clauses(filters),
            }
        }

    def hybrid_body(self, request: HybridRequest) -> dict[str, Any]:
        # The fake registers no fusion renderer (adapter.engines.render), so the searcher fuses its
        # hybrid queries in the client, by the same formula; never asked for this.
        raise CapabilityError("the fake engine runs no fusion server-side")

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        raise CapabilityError("the fake engine has no server-side MMR")

    # -- fallbacks and answers ------------------------------------------------------------------------
    def refused_fusion(self, error: Any) -> str | None:
        return None

    def explained_leg_scores(
        self, hit: Any, raw_scores: Sequence[float | None], *, weights: Sequence[float] | None = None
    ) -> list[float | None]:
        return list(raw_scores)[: len(LEGS)]


FAKE = FakeEngine()
ENGINE = FAKE  # what the registry finds
