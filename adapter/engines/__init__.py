"""The engine seam: everything that differs between search engines and their versions.

Each engine is a package with two faces:

- an :class:`Engine` (pure): it renders the index mapping and the fusion assets, builds the request
  bodies that differ by engine (the vector leg, the hybrid request), holds the engine's capability
  rules, and reads the engine-specific parts of answers (hybrid score explanations);
- a :class:`~adapter.engines.port.Cluster` (I/O, the port): every cluster operation the shell
  needs, over that engine's client (:func:`cluster_for`).

Searching, ingesting, ``init``, migrations and evaluation call both and stay engine-neutral; none
of them imports a client library. Members: OpenSearch (:mod:`adapter.engines.opensearch`: search
pipelines) and Elasticsearch (:mod:`adapter.engines.elasticsearch`: fusion inside the request, by
retrievers or the ``query`` + ``knn`` sum). :func:`engine_for` picks the engine from the client;
:func:`connect_cluster` builds the client for whichever engine answers at a URL.

The shared query DSL (``match``/``multi_match``, ``bool`` filters, paging) lives in
:mod:`adapter.engines.dsl`; shared answer parsing in :mod:`adapter.engines.responses`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Protocol, Sequence

from adapter.engines.capabilities import EngineName
from adapter.engines.port import BulkCounts, BulkOptions, Cluster, recording
from adapter.errors import ClusterUnavailableError, ConfigurationError, HybridError

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from opensearchpy import OpenSearch

    from adapter.engines.capabilities import Capabilities
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
    ``caps.in_query_fusion``); None: a pipeline fuses."""

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


class Engine(Protocol):
    name: str
    highlight_offset_option: str  # the highlight option capping how much of a field is analysed

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
    def explained_leg_scores(self, hit: RawHit, raw_scores: Sequence[float | None], *,
                             weights: Sequence[float] | None = None) -> list[float | None]:
        """Per-leg normalised scores of one hit from the server's explanation, in leg order
        (``raw_scores``: the hit's raw score in each leg run on its own, None where it missed;
        ``weights``: the fusion's). For a score sum, each leg's raw score."""
        ...


def engine_name(client: Any) -> str:
    """``elasticsearch`` for an elasticsearch-py client, else ``opensearch``. Test doubles
    (:mod:`adapter.testing`) say which engine they stand for with ``engine_name``."""
    if hasattr(type(client), "engine_name"):
        return str(client.engine_name)
    return "elasticsearch" if type(client).__module__.split(".")[0] == "elasticsearch" else "opensearch"


def engine_for(client: Any) -> Engine:
    """The engine that speaks to ``client``: its dialect follows the client's library (a port:
    its own engine)."""
    if isinstance(client, Cluster):
        return client.engine
    if engine_name(client) == "elasticsearch":
        from adapter.engines.elasticsearch import ELASTICSEARCH

        return ELASTICSEARCH
    from adapter.engines.opensearch import OPENSEARCH

    return OPENSEARCH


def cluster_for(client: Any, engine: Engine | None = None) -> Cluster:
    """The port for ``client``: itself when it is one, else ``engine`` (by default the one its
    library speaks for: :func:`engine_for`) over it."""
    if isinstance(client, Cluster):
        return client
    return (engine or engine_for(client)).cluster(client)


def describe_url(client: Any) -> str:
    """The cluster's address without credentials, for messages."""
    return cluster_for(client).describe()


@contextlib.contextmanager
def translate_errors(action: str, client: Any = None) -> Iterator[None]:
    """Re-raise a client library's exceptions in this block as the adapter's, chained (for code
    holding a client: tests, scripts; the shell goes through the port, which translates by itself).
    The exception's library decides which engine reads it."""
    try:
        yield
    except Exception as exc:
        from adapter.engines.elasticsearch import client as elasticsearch_client
        from adapter.engines.opensearch import client as opensearch_client

        translated: HybridError | None
        if elasticsearch_client.is_client_error(exc):
            where = describe_url(client) if client is not None else "the cluster"
            translated = elasticsearch_client.translate(exc, action, where)
        else:
            translated = opensearch_client.translate(exc, action, client)
        if translated is None:
            raise
        raise translated from exc


# -- connecting -------------------------------------------------------------------------------------


def connect(url: str | None = None, **options: Any) -> OpenSearch:
    """An opensearch-py client (:func:`adapter.engines.opensearch.client.connect`)."""
    from adapter.engines.opensearch.client import connect as connect_opensearch

    return connect_opensearch(url, **options)


def connect_cluster(url: str | None = None, *, engine: str | None = None, **options: Any) -> OpenSearch | Elasticsearch:
    """A client for the engine at ``url``: opensearch-py for OpenSearch (:func:`connect`),
    elasticsearch-py for Elasticsearch (:func:`~adapter.engines.elasticsearch.client.connect_elasticsearch`,
    the ``elasticsearch`` extra). ``engine`` (or ``HYBRID_ENGINE``) names it; otherwise one
    ``GET /`` decides. A client that signs for Amazon's services (SigV4) is OpenSearch's and asks nothing."""
    engine = engine or os.environ.get("HYBRID_ENGINE")
    if engine not in (None, "opensearch", "elasticsearch"):
        raise ConfigurationError(f"engine must be opensearch or elasticsearch, got {engine!r}")
    if engine == "elasticsearch":
        from adapter.engines.elasticsearch.client import connect_elasticsearch

        return connect_elasticsearch(url, **_shared(options))
    client = connect(url, **options)
    from adapter.engines.opensearch.client import sigv4_service

    if engine is None and sigv4_service(client) is None:
        from adapter.engines.elasticsearch.client import connect_elasticsearch, speaks_elasticsearch
        from adapter.engines.opensearch.client import translate_errors as opensearch_errors

        try:
            with opensearch_errors("asking the cluster which engine it runs", client):
                elastic = speaks_elasticsearch(client)
        except ClusterUnavailableError:
            return client  # the first real call says so, as before
        if elastic:
            return connect_elasticsearch(url, **_shared(options))
    return client


def _shared(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of :func:`connect` that the Elasticsearch client takes too."""
    aws = [k for k in ("aws_region", "aws_service") if options.get(k)]
    if aws:
        raise ConfigurationError(f"{', '.join(aws)}: SigV4 signing is for Amazon OpenSearch Service, not Elasticsearch")
    keep = ("username", "password", "verify_certs", "timeout", "pool_maxsize")
    return {k: v for k, v in options.items() if k in keep and v is not None}


__all__ = ["BulkCounts", "BulkOptions", "Cluster", "Engine", "EngineName", "HybridRequest", "cluster_for", "connect", "connect_cluster",
           "describe_url", "engine_for", "engine_name", "recording", "translate_errors"]
