"""The engine seam: everything that differs between search engines and their versions.

An :class:`Engine` renders the index mapping and the fusion assets, builds the request bodies that
differ by engine (the vector leg, the hybrid request), probes what a cluster can do, and reads the
engine-specific parts of answers (hybrid score explanations). Searching, ingesting, ``init`` and
evaluation call it and stay engine-neutral. OpenSearch (:mod:`adapter.engines.opensearch`) is the
first member; another engine is a new module implementing this protocol plus its tests.

The shared query DSL (``match``/``multi_match``, ``bool`` filters, paging) lives in
:mod:`adapter.queries`; shared answer parsing in :mod:`adapter.responses`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from ..assets import IndexNames, IndexSpec
    from ..capabilities import Capabilities
    from ..fusions import Fusion
    from ..responses import RawHit


class Engine(Protocol):
    name: str

    # -- what the cluster can do (I/O) --------------------------------------------------------------
    def probe(self, client, *, refresh: bool = False) -> Capabilities:
        """The cluster's capabilities, cached per cluster."""
        ...

    # -- index and fusion assets (pure) ---------------------------------------------------------------
    def render_components(self, names: IndexNames, spec: IndexSpec) -> dict[str, dict[str, Any]]:
        """Component templates keyed by cluster name."""
        ...

    def render_index_template(self, names: IndexNames, spec: IndexSpec) -> dict[str, Any]: ...

    def render_mapping(self, names: IndexNames, spec: IndexSpec) -> dict[str, Any]:
        """The mapping an index created from the templates ends up with."""
        ...

    def render_pipeline(self, fusion: Fusion, caps: Capabilities) -> dict[str, Any]:
        """The search pipeline body that runs ``fusion`` on this cluster."""
        ...

    def pipeline_fusion(self, body: Mapping[str, Any]) -> Fusion | None:
        """The fusion a stored pipeline performs (None: it fuses nothing)."""
        ...

    # -- request bodies (pure) ------------------------------------------------------------------------
    def knn_query(self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None) -> dict[str, Any]: ...

    def hybrid_body(
        self,
        text: dict[str, Any],
        knn: dict[str, Any],
        *,
        caps: Capabilities,
        depth: int,
        size: int,
        from_: int,
        exclude: Sequence[str],
        explain: bool,
        inline_pipeline: dict[str, Any] | None,
        filter: Mapping[str, Any] | None = None,
        fusion: Fusion | None = None,
    ) -> dict[str, Any]:
        """``filter`` (sent only where ``caps.hybrid_filter``): one filter for every leg;
        ``fusion`` (only where ``caps.in_query_fusion``): fused in the query, no pipeline."""
        ...

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        """``body`` (a vector query) reranked by the server's MMR (called only where ``caps.server_mmr_enabled``)."""
        ...

    # -- answers (pure) -------------------------------------------------------------------------------
    def explained_leg_scores(self, hit: RawHit, raw_scores: Sequence[float | None]) -> list[float | None]:
        """Per-leg normalised scores of one hit from the server's explanation, in leg order
        (``raw_scores``: the hit's raw score in each leg run on its own, None where it missed)."""
        ...


def engine_for(client) -> Engine:
    """The engine that speaks to ``client`` (today: OpenSearch)."""
    from .opensearch import OPENSEARCH

    return OPENSEARCH
