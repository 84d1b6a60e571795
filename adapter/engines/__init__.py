"""The engine seam: everything that differs between search engines and their versions.

Each engine is a package with two faces:

- an :class:`~adapter.engines.engine.Engine` (pure): it renders the index mapping and templates,
  builds the request bodies that differ by engine (the vector leg, the hybrid request), holds the
  engine's capability rules, reads the engine-specific parts of answers (hybrid score
  explanations), and says where a server-side fusion runs (its
  :class:`~adapter.engines.placement.FusionPlacement`);
- a :class:`~adapter.engines.port.Cluster` (I/O, the port): every cluster operation the shell
  needs, over that engine's client, plus the facets only some engines have (search pipelines).

Searching, ingesting, ``init``, migrations and evaluation call both and stay engine-neutral; none
of them imports a client library or asks which engine it talks to. Engines are found by name in
:mod:`adapter.engines.registry`: OpenSearch (:mod:`adapter.engines.opensearch`: search pipelines)
and Elasticsearch (:mod:`adapter.engines.elasticsearch`: fusion inside the request, by retrievers or
the ``query`` + ``knn`` sum). :func:`open_cluster` gives the shell the port of whichever engine
answers at a URL; :func:`cluster_for` puts the port over a user's raw client (the public edge).

The shared query DSL (``match``/``multi_match``, ``bool`` filters, paging) lives in
:mod:`adapter.engines.dsl`; shared answer parsing in :mod:`adapter.engines.responses`.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Iterator, TypeAlias

from adapter.engines import registry
from adapter.engines.capabilities import EngineName
from adapter.engines.engine import Engine, HybridRequest
from adapter.engines.port import BulkCounts, BulkOptions, Cluster, SearchPipelines, recording
from adapter.errors import ConfigurationError, InputError

if TYPE_CHECKING:
    import adapter.engines.port
    from adapter.aio import Blocking
    import elasticsearch
    import opensearchpy
    from elasticsearch import Elasticsearch
    from opensearchpy import OpenSearch

# What a public entrance takes: the port, or a user's raw client of a shipped engine's library
# (:func:`cluster_for` puts the port over it, once, at that entrance). Full dotted names: a module
# that uses the alias can resolve it without importing the client libraries (pdoc imports them then).
RawClient: TypeAlias = "opensearchpy.OpenSearch | elasticsearch.Elasticsearch"
ClusterLike: TypeAlias = "adapter.engines.port.Cluster | opensearchpy.OpenSearch | elasticsearch.Elasticsearch"
# What the asyncio entrances (AsyncSearcher, AsyncIngestor) take: a user's asyncio client.
AsyncRawClient: TypeAlias = "opensearchpy.AsyncOpenSearch | elasticsearch.AsyncElasticsearch"


def engine_name(client: Any) -> str:
    """The name of the engine ``client`` speaks for: a port's own, else the registered engine whose
    client library made it (:func:`adapter.engines.registry.name_of_client`)."""
    if isinstance(client, Cluster):
        return client.engine.name
    return registry.name_of_client(client)


def engine_for(client: ClusterLike) -> Engine:
    """The engine that speaks to ``client``: its dialect follows the client's library (a port:
    its own engine)."""
    if isinstance(client, Cluster):
        return client.engine
    return registry.engine_named(registry.name_of_client(client))


def cluster_for(client: ClusterLike, engine: Engine | None = None) -> Cluster:
    """The port for ``client``: itself when it is one, else ``engine`` (by default the one its
    library speaks for: :func:`engine_for`) over it. Called where a user's raw client comes in."""
    if isinstance(client, Cluster):
        return client
    if isinstance(client, (str, bytes)):  # a URL where a client belongs: name the way, not an AttributeError
        raise InputError(
            f"this takes a client, not the address {str(client)[:80]!r}: open one with adapter.connect(url) "
            "(or connect_elasticsearch(url)) and pass it"
        )
    return (engine or engine_for(client)).cluster(client)


def describe_url(client: ClusterLike) -> str:
    """The cluster's address without credentials, for messages."""
    return cluster_for(client).describe()


@contextlib.contextmanager
def translate_errors(action: str, client: Any = None) -> Iterator[None]:
    """Re-raise a client library's exceptions in this block as the adapter's, chained (for code
    holding a raw client: tests, scripts; the shell goes through the port, which translates by itself).
    The registered engine whose client library raised it reads it (:func:`adapter.engines.registry.translated`)."""
    try:
        yield
    except Exception as exc:
        translated = registry.translated(exc, action, client)
        if translated is None:
            raise
        raise translated from exc


# -- asyncio clients ---------------------------------------------------------------------------------


def bridge(client: AsyncRawClient) -> Blocking:
    """A user's asyncio client as the sync port's client (:class:`adapter.aio.Blocking`): its namespaces are the
    attributes its client library made (the registered engine's packages: :func:`adapter.engines.registry.library_of`);
    a client no engine claims is read by its shape. What :class:`~adapter.AsyncSearcher` and
    :class:`~adapter.AsyncIngestor` put their port over."""
    from adapter.aio import Blocking

    packages = registry.library_of(client)
    if not packages:
        return Blocking(client)
    return Blocking(client, lambda value: type(value).__module__.split(".")[0] in packages)


def open_async_client(engine: str, url: str | None = None, **options: Any) -> AsyncRawClient:
    """Engine ``engine``'s asyncio client at ``url`` (``AsyncOpenSearch``, ``AsyncElasticsearch``; the ``async``
    extra), ``options`` as its sync client takes them (credentials, ``verify_certs``, ``timeout``)."""
    client: AsyncRawClient = registry.connect_async(engine, url, **options)
    return client


# -- connecting -------------------------------------------------------------------------------------


def open_cluster(url: str | None = None, *, engine: str | None = None, **options: Any) -> Cluster:
    """The port of the engine at ``url``: what the shell (the CLI, ``hybrid serve``, Ray Data) works
    with. ``engine`` (or ``HYBRID_ENGINE``) names it; otherwise the default engine's client asks
    ``GET /`` once and the registered engine that recognises the answer connects
    (:mod:`adapter.engines.registry`). ``options`` are the connection's (:func:`connect`)."""
    name = engine or os.environ.get("HYBRID_ENGINE")
    if name:
        if name not in registry.names():
            raise ConfigurationError(f"engine must be one of {', '.join(registry.names())}, got {name!r}")
        return registry.connect(name, url, **options)
    cluster = registry.connect(registry.DEFAULT, url, **options)
    root = registry.root_answer(cluster)
    other = registry.recognised(root) if root is not None else None
    return cluster if other in (None, registry.DEFAULT) else registry.connect(str(other), url, **options)


def connect(url: str | None = None, **options: Any) -> OpenSearch:
    """An opensearch-py client (:func:`adapter.engines.opensearch.client.connect`): a user's raw
    client, which every public entrance takes as it takes a port."""
    from adapter.engines.opensearch.client import connect as connect_opensearch

    return connect_opensearch(url, **options)


def connect_cluster(url: str | None = None, *, engine: str | None = None, **options: Any) -> OpenSearch | Elasticsearch:
    """A client for the engine at ``url``: opensearch-py for OpenSearch (:func:`connect`),
    elasticsearch-py for Elasticsearch (:func:`~adapter.engines.elasticsearch.client.connect_elasticsearch`,
    the ``elasticsearch`` extra): the raw client of :func:`open_cluster`'s port. ``engine`` (or
    ``HYBRID_ENGINE``) names it; otherwise one ``GET /`` decides. A client that signs for Amazon's
    services (SigV4) is OpenSearch's and asks nothing."""
    cluster = open_cluster(url, engine=engine, **options)
    client: OpenSearch | Elasticsearch | None = getattr(cluster, "client", None)
    if client is None:
        raise ConfigurationError(f"{cluster.name} has no client library: use open_cluster() for its port")
    return client


__all__ = [
    "AsyncRawClient",
    "BulkCounts",
    "BulkOptions",
    "Cluster",
    "ClusterLike",
    "Engine",
    "EngineName",
    "HybridRequest",
    "RawClient",
    "SearchPipelines",
    "bridge",
    "cluster_for",
    "connect",
    "connect_cluster",
    "describe_url",
    "engine_for",
    "engine_name",
    "open_async_client",
    "open_cluster",
    "recording",
    "translate_errors",
]
