"""What an engine is: its dialect (pure) and the way to its port. Pure.

An :class:`Engine` renders the index mapping and templates, builds the request bodies that differ by
engine (the vector leg, the hybrid request), holds the engine's capability rules and reads the
engine-specific parts of answers; its :attr:`~Engine.placement` says where a server-side fusion runs
(:mod:`adapter.engines.placement`); :meth:`Engine.cluster` puts the port
(:class:`~adapter.engines.port.Cluster`) over a client of its library. Which measured default fusion its
clusters get, an engine may declare (:class:`MeasuredDefault`); one that does not gets the default
measured for fusion in the client (:func:`measured_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence, runtime_checkable

from adapter.fusion.choice.selection import ClusterKind

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.placement import FusionPlacement
    from adapter.engines.port import Cluster
    from adapter.engines.responses import RawHit
    from adapter.errors import BackendError
    from adapter.fusion import Fusion
    from adapter.index.assets import IndexNames, IndexSpec


@dataclass(frozen=True)
class HybridRequest:
    """What :meth:`Engine.hybrid_body` turns into the one request that runs both legs and fuses them.

    ``text`` and ``knn`` are the legs' queries (``knn`` as the engine's :meth:`Engine.knn_query`
    built it); ``depth`` the candidates each leg brings; ``size`` / ``from_`` the page of fused
    hits; ``exclude`` the source fields left out; ``explain`` asks for the server's explanation.
    ``inline_pipeline`` (OpenSearch): a temporary search pipeline sent with the request.
    ``filter`` (only where ``caps.hybrid_filter``): one filter for every leg. ``fusion``: what
    the request itself fuses by (Elasticsearch; OpenSearch's in-query fusion where
    ``caps.in_query_fusion``); None: a pipeline fuses. ``empty_shard``: the request also searches
    the engine's :attr:`Engine.empty_shard_index`, where no field is mapped. ``leg_scores``: each leg named
    after itself, so that the answer can carry each hit's raw score per leg (sent with ``named_scores``)."""

    text: dict[str, Any]
    knn: dict[str, Any]
    caps: Capabilities
    depth: int
    size: int
    from_: int = 0
    exclude: Sequence[str] = ()
    explain: bool = False
    inline_pipeline: dict[str, Any] | None = None
    filter: Mapping[str, Any] | None = None
    fusion: Fusion | None = None
    empty_shard: bool = False
    leg_scores: bool = False


class Engine(Protocol):
    """One search engine's dialect (pure) and the way to its port. Found by name through
    :mod:`adapter.engines.registry`; what only some engines have is a facet: search pipelines
    (:class:`~adapter.engines.port.SearchPipelines` on the port, the pipeline placement here)."""

    name: str
    highlight_offset_option: str  # the highlight option capping how much of a field is analysed
    # An empty index searched beside a one-shard index's hybrid, so that the server fuses before it
    # fetches and fetches only the page (None: the engine's hybrid fetches the page alone already).
    empty_shard_index: str | None

    @property
    def placement(self) -> FusionPlacement:
        """Where a server-side fusion runs, and where an index keeps its default one."""
        ...

    # -- the port ---------------------------------------------------------------------------------------
    def cluster(self, client: Any) -> Cluster:
        """The port over ``client`` (this engine's client library, or a test double of it)."""
        ...

    # -- index and fusion assets (pure) ---------------------------------------------------------------
    # ``caps``: the cluster the assets are for (its analyzers, version); None renders for a full
    # distribution of the engine's current release.
    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        """Raise :class:`~adapter.errors.ConfigurationError` if this cluster cannot hold ``spec``."""
        ...

    def render_components(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, dict[str, Any]]:
        """Component templates keyed by cluster name."""
        ...

    def render_index_template(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, Any]: ...

    def render_mapping(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        """The mapping an index created from the templates ends up with."""
        ...

    # -- request bodies (pure) ------------------------------------------------------------------------
    def knn_query(
        self, vector: Sequence[float], *, field: str, k: int, filters: Mapping[str, Any] | None
    ) -> dict[str, Any]: ...

    def hybrid_body(self, request: HybridRequest) -> dict[str, Any]:
        """The one request that runs both legs and fuses them on the server (by the pipeline given
        with it or named in the URL; or, without search pipelines, by ``request.fusion`` itself)."""
        ...

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        """``body`` (a vector query) reranked by the server's MMR (called only where ``caps.server_mmr_enabled``)."""
        ...

    # -- fallbacks ------------------------------------------------------------------------------------
    def refused_fusion(self, error: BackendError) -> str | None:
        """Why the cluster refused a server-side fusion it was thought to run (a retriever it lacks,
        a licence that does not cover it); None when ``error`` is anything else."""
        ...

    # -- answers (pure) -------------------------------------------------------------------------------
    def explained_leg_scores(
        self, hit: RawHit, raw_scores: Sequence[float | None], *, weights: Sequence[float] | None = None
    ) -> list[float | None]:
        """Per-leg normalised scores of one hit from the server's explanation, in leg order
        (``raw_scores``: the hit's raw score in each leg run on its own, None where it missed;
        ``weights``: the fusion's). For a score sum, each leg's raw score."""
        ...


@runtime_checkable
class MeasuredDefault(Protocol):
    """What an engine declares where its clusters have a default fusion measured on them
    (:mod:`adapter.fusion.choice.defaults`): the vocabulary it was measured on."""

    def measured_kind(self, caps: Capabilities) -> ClusterKind:
        """The measured vocabulary of the cluster ``caps`` describes (OpenSearch: 3.x or 2.x, by z_score)."""
        ...


def measured_kind(engine: Engine, caps: Capabilities) -> ClusterKind:
    """Which measured default applies to ``caps``' cluster: the one ``engine`` declares, else the default
    measured for fusion in the client (an engine that runs no fusion on its server, or a new one, does not
    inherit what another engine's server was measured on)."""
    return engine.measured_kind(caps) if isinstance(engine, MeasuredDefault) else ClusterKind.CLIENT
