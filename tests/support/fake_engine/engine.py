"""The fake engine's dialect: pure, as every engine's is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from adapter.index.assets import IndexSpec
from adapter.engines.index_assets import IndexAssets
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


class FakeEngine(IndexAssets):
    # Its components, index template and mapping come from its vector component and placement (IndexAssets): the
    # in-request placement records the default fusion in the index's _meta.
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

    def render_vector_component(self, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        return {
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
