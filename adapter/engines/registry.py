"""The engines the adapter knows, found by name. Pure: an entry names modules, imported when first needed.

Each entry says where an engine lives (its package, whose ``ENGINE`` is the
:class:`~adapter.engines.engine.Engine`), which client library's objects it speaks to (so a user's
raw client finds its engine), how to connect to a URL, and how to recognise the engine from the
``GET /`` answer another engine's client got there. Everything else that decides by engine asks
the engine itself: where a fusion runs (:mod:`adapter.engines.placement`), which fusions its server
runs (:mod:`adapter.engines.render`), its capabilities.

The shipped engines are registered below. A third engine registers itself from its own package
(``register(EngineEntry("fake", ...))``, as ``tests/support/fake_engine`` does), or, shipped with the
adapter, with one more line here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from adapter.errors import ConfigurationError, HybridError

if TYPE_CHECKING:
    from adapter.engines.engine import Engine
    from adapter.engines.port import Cluster, ClusterCore


@dataclass(frozen=True)
class EngineEntry:
    """One engine: ``module`` is imported on first use and its ``ENGINE`` is the engine.

    ``client_packages``: the top-level packages of its client library (a raw client of one of them
    is this engine's). ``connect`` (``"module:function"``): opens a :class:`~adapter.engines.port.Cluster`
    at a URL, ``function(url, **options)``. ``recognises`` (``"module:function"``): whether the
    answer to ``GET /`` (``{"status": 405, "error": ...}`` where the root is refused) comes from this
    engine; engines without one are reached only when named. ``asks``: how the default engine's port
    reads that answer. ``translates`` (``"module:function"``): ``function(exc, action, client)``, its
    client library's exception as the adapter's (None: not one of its exceptions), for code that holds
    a raw client (:func:`adapter.engines.translate_errors`; a port translates by itself). ``connect_async``
    (``"module:function"``): its asyncio client at a URL, ``function(url, **options)`` (None: it has none)."""

    name: str
    title: str  # for people: "OpenSearch"
    module: str
    client_packages: tuple[str, ...] = ()
    connect: str | None = None
    recognises: str | None = None
    # "module:function": the GET / answer its port got (None: not asked), to recognise another engine
    asks: str | None = None
    translates: str | None = None
    connect_async: str | None = None


DEFAULT = "opensearch"  # the engine of a client no entry claims, and the one that asks a URL which engine runs there
_ENTRIES: dict[str, EngineEntry] = {}


def register(entry: EngineEntry) -> None:
    """Add ``entry`` (or replace the entry of that name)."""
    _ENTRIES[entry.name] = entry


def names() -> tuple[str, ...]:
    """Every registered engine's name, in registration order."""
    return tuple(_ENTRIES)


def entry(name: str) -> EngineEntry:
    """The entry named ``name`` (ConfigurationError: no such engine)."""
    found = _ENTRIES.get(str(name))
    if found is None:
        raise ConfigurationError(f"unknown engine {name!r}; the adapter knows {', '.join(_ENTRIES)}")
    return found


def title(name: str) -> str:
    """The engine's name for people (an unregistered engine: its own name)."""
    found = _ENTRIES.get(str(name))
    return found.title if found else str(name)


def engine_named(name: str) -> Engine:
    """The engine named ``name`` (its module imported on first use)."""
    engine: Engine = importlib.import_module(entry(name).module).ENGINE
    return engine


def loaded(name: str) -> bool:
    """Whether ``name`` is registered, importing its module (which registers its fusion renderers)."""
    if str(name) not in _ENTRIES:
        return False
    importlib.import_module(_ENTRIES[str(name)].module)
    return True


def name_of_client(client: Any) -> str:
    """The engine a raw client speaks for: the entry claiming its library's package, else the
    default. Test doubles (:mod:`adapter.testing`) name theirs with an ``engine_name`` attribute; an
    asyncio client bridged by :class:`adapter.aio.Blocking` is the client it wraps (``async_client``)."""
    if isinstance(getattr(type(client), "async_client", None), property):
        client = client.async_client
    if hasattr(type(client), "engine_name"):
        return str(client.engine_name)
    package = type(client).__module__.split(".")[0]
    return next((e.name for e in _ENTRIES.values() if package in e.client_packages), DEFAULT)


def library_of(client: object) -> tuple[str, ...]:
    """The packages of the registered client library that made ``client`` (its class or a base of it), so the
    asyncio bridge knows the client's namespaces by them; () where no entry claims it."""
    for cls in type(client).__mro__:
        package = cls.__module__.split(".")[0]
        found = next((e for e in _ENTRIES.values() if package in e.client_packages), None)
        if found is not None:
            return found.client_packages
    return ()


def translated(exc: BaseException, action: str, client: Any = None) -> HybridError | None:
    """``exc`` as the adapter's error, by the registered engine whose client library raised it (None: none did)."""
    for found in _ENTRIES.values():
        if found.translates is not None:
            error: HybridError | None = _function(found.translates)(exc, action, client)
            if error is not None:
                return error
    return None


def _function(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


def connect(name: str, url: str | None, **options: Any) -> Cluster:
    """The port of engine ``name`` at ``url`` (ConfigurationError: the engine connects to no URL)."""
    found = entry(name)
    if found.connect is None:
        raise ConfigurationError(f"the {found.title} engine does not connect to a URL")
    cluster: Cluster = _function(found.connect)(url, **options)
    return cluster


def connect_async(name: str, url: str | None, **options: Any) -> Any:
    """Engine ``name``'s asyncio client at ``url`` (ConfigurationError: the engine has none)."""
    found = entry(name)
    if found.connect_async is None:
        raise ConfigurationError(f"the {found.title} engine has no asyncio client")
    return _function(found.connect_async)(url, **options)


def root_answer(cluster: ClusterCore) -> Mapping[str, Any] | None:
    """The ``GET /`` answer ``cluster``'s engine reads to tell which engine runs there (None: it does not ask)."""
    asks = entry(cluster.name).asks
    answer: Mapping[str, Any] | None = _function(asks)(cluster) if asks else None
    return answer


def recognised(root: Mapping[str, Any]) -> str | None:
    """The engine whose ``GET /`` answer ``root`` is, among those that can tell (None: none says so)."""
    for found in _ENTRIES.values():
        if found.recognises is not None and _function(found.recognises)(root):
            return found.name
    return None


register(
    EngineEntry(
        "opensearch",
        "OpenSearch",
        "adapter.engines.opensearch",
        ("opensearchpy",),
        connect="adapter.engines.opensearch.client:connect_cluster",
        asks="adapter.engines.opensearch.client:root_answer",
        translates="adapter.engines.opensearch.client:translate",
        connect_async="adapter.engines.opensearch.async_client:connect_async",
    )
)
register(
    EngineEntry(
        "elasticsearch",
        "Elasticsearch",
        "adapter.engines.elasticsearch",
        ("elasticsearch", "elastic_transport"),
        connect="adapter.engines.elasticsearch.client:connect_cluster",
        recognises="adapter.engines.elasticsearch.client:recognises",
        translates="adapter.engines.elasticsearch.client:translate_raised",
        connect_async="adapter.engines.elasticsearch.async_client:connect_elasticsearch_async",
    )
)
