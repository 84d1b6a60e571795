"""The engine seam: everything that differs between search engines and their versions.

An :class:`Engine` renders the index mapping and the fusion assets, builds the request bodies that
differ by engine (the vector leg, the hybrid request), probes what a cluster can do, and reads the
engine-specific parts of answers (hybrid score explanations), and owns the few calls whose client
API differs (bulk indexing). Searching, ingesting, ``init`` and evaluation call it and stay
engine-neutral. Members: OpenSearch (:mod:`adapter.engines.opensearch`: search pipelines) and
Elasticsearch (:mod:`adapter.engines.elasticsearch`: fusion inside the request, by retrievers or
the ``query`` + ``knn`` sum). :func:`engine_for` picks the engine from the client.

The shared query DSL (``match``/``multi_match``, ``bool`` filters, paging) lives in
:mod:`adapter.queries`; shared answer parsing in :mod:`adapter.responses`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from ..errors import BackendError
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
    # ``caps``: the cluster the assets are for (its analyzers, version); None renders for a full
    # distribution of the engine's current release.
    def check_spec(self, spec: IndexSpec, caps: Capabilities) -> None:
        """Raise :class:`~adapter.errors.ConfigurationError` if this cluster cannot hold ``spec``."""
        ...

    def render_components(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, dict[str, Any]]:
        """Component templates keyed by cluster name."""
        ...

    def render_index_template(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]: ...

    def render_mapping(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        """The mapping an index created from the templates ends up with."""
        ...

    def render_pipeline(self, fusion: Fusion, caps: Capabilities) -> dict[str, Any]:
        """The search pipeline body that runs ``fusion`` on this cluster (only where
        ``caps.search_pipelines``)."""
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
        """The one request that runs both legs and fuses them on the server (by the pipeline given
        with it or named in the URL; or, without search pipelines, by ``fusion`` itself).
        ``filter`` (sent only where ``caps.hybrid_filter``): one filter for every leg; ``fusion``
        on OpenSearch (only where ``caps.in_query_fusion``): fused in the query, no pipeline."""
        ...

    def server_mmr(self, body: dict[str, Any], *, field: str, diversity: float, candidates: int) -> dict[str, Any]:
        """``body`` (a vector query) reranked by the server's MMR (called only where ``caps.server_mmr_enabled``)."""
        ...

    # -- fallbacks ------------------------------------------------------------------------------------
    def server_fallback(self, fusion: Fusion, caps: Capabilities) -> Fusion | None:
        """A server-side fusion to run instead of ``fusion``, which the cluster cannot run (None:
        fall back to client-side RRF)."""
        ...

    def refused_fusion(self, error: BackendError) -> str | None:
        """Why the cluster refused a server-side fusion it was thought to run (a retriever it lacks,
        a licence that does not cover it); None when ``error`` is anything else."""
        ...

    # -- the calls whose client API differs (I/O) ----------------------------------------------------
    def streaming_bulk(self, client, actions: Iterable[dict], **options) -> Iterator[tuple[bool, dict]]:
        """``(ok, item)`` per action, as the client's ``helpers.streaming_bulk`` with
        ``raise_on_error=False`` yields them; an action whose request got no answer is failed with
        the status ``"N/A"``, never dropped."""
        ...

    # -- answers (pure) -------------------------------------------------------------------------------
    def explained_leg_scores(self, hit: RawHit, raw_scores: Sequence[float | None], *,
                             weights: Sequence[float] | None = None) -> list[float | None]:
        """Per-leg normalised scores of one hit from the server's explanation, in leg order
        (``raw_scores``: the hit's raw score in each leg run on its own, None where it missed;
        ``weights``: the fusion's). For a score sum, each leg's raw score."""
        ...


def engine_name(client) -> str:
    """``elasticsearch`` for an elasticsearch-py client, else ``opensearch``. Test doubles
    (:mod:`adapter.testing`) say which engine they stand for with ``engine_name``."""
    if hasattr(type(client), "engine_name"):
        return client.engine_name
    return "elasticsearch" if type(client).__module__.split(".")[0] == "elasticsearch" else "opensearch"


def engine_for(client) -> Engine:
    """The engine that speaks to ``client``: its dialect follows the client's library."""
    if engine_name(client) == "elasticsearch":
        from .elasticsearch import ELASTICSEARCH

        return ELASTICSEARCH
    from .opensearch import OPENSEARCH

    return OPENSEARCH
