"""Server-side renderers: how a search engine runs a fusion method itself. Pure.

Each engine keeps a :class:`Renderers` registry (in ``adapter.engines.<engine>.fusion``) and
registers, for each method it can run, a factory that binds a fusion to its renderer: an object
that says whether a given cluster runs it (:meth:`ServerFusion.supports`) and renders it in the
engine's own form (a search-pipeline processor, a retriever...). The core asks through
:func:`renderer`; a fusion with no renderer on a cluster's engine is fused in the client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar

from adapter.fusion.base import Fusion

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.fusion.base import FusedBy

F = TypeVar("F", bound=Fusion)


class ServerFusion(Protocol):
    """One fusion as one engine runs it (bound to that fusion by its engine's factory)."""

    @property
    def fused_by(self) -> FusedBy:
        """Who fuses when this form runs: a search pipeline, a retriever, the summed request."""
        ...

    def supports(self, caps: Capabilities) -> str | None:
        """None when the cluster runs this fusion; else why not (for people)."""
        ...

    def without(self, caps: Capabilities) -> Capabilities:
        """``caps`` less this way of fusing (the cluster refused it: a module, a licence missing)."""
        ...

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        """What a result fused this way on this cluster must say (a known server limitation), if anything."""
        ...


R = TypeVar("R", bound=ServerFusion)
_ENGINES: dict[str, Callable[[Fusion], ServerFusion | None]] = {}
_TITLES: dict[str, str] = {}


class Renderers(Generic[R]):
    """The renderers of one engine, by fusion method."""

    def __init__(self, engine: str, title: str) -> None:
        self.engine = engine
        _TITLES[engine] = title
        # Factories by exact method: each takes only its own method's fusions (register's F).
        self._factories: dict[type[Fusion], Callable[[Any], R]] = {}
        _ENGINES[engine] = self.get

    def register(self, method: type[F], factory: Callable[[F], R]) -> None:
        if self.engine not in method.servers:
            raise ValueError(f"{method.__name__}.servers does not name {self.engine}; add it there too")
        self._factories[method] = factory

    def get(self, fusion: Fusion) -> R | None:
        factory = self._factories.get(type(fusion))
        return None if factory is None else factory(fusion)

    @property
    def methods(self) -> frozenset[type[Fusion]]:
        return frozenset(self._factories)


def _load(engine: str) -> None:
    """The engine's module (``adapter.engines.<engine>``) registers its renderers when imported."""
    if engine not in _ENGINES:
        importlib.import_module(f"adapter.engines.{engine}")


def renderer(engine: str, fusion: Fusion) -> ServerFusion | None:
    """How ``engine`` runs ``fusion`` (None: it does not; fuse in the client)."""
    if engine not in fusion.servers:
        return None
    _load(engine)
    return _ENGINES[engine](fusion)


def title(engine: str) -> str:
    """The engine's name for people (``OpenSearch``); an engine that renders no fusion (a port of its
    own outside ``adapter.engines``: tests/support/fake_engine) is named as it names itself."""
    try:
        _load(engine)
    except ModuleNotFoundError as exc:
        if exc.name != f"adapter.engines.{engine}":
            raise
    return _TITLES.get(engine, str(engine))


def server_support(fusion: Fusion, caps: Capabilities) -> str | None:
    """None when the cluster ``caps`` describes runs ``fusion`` server-side; else why not."""
    found = renderer(caps.engine, fusion)
    if found is None:
        where = f"only by {' and '.join(title(e) for e in sorted(fusion.servers))}" if fusion.servers else "by no search engine"
        return f"{fusion.name} is run server-side {where}, not by {title(caps.engine)}: it is fused in the client"
    return found.supports(caps)
