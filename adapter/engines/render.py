"""Server-side renderers: how a search engine runs a fusion method itself. Pure.

Each engine keeps a :class:`Renderers` registry (in ``adapter.engines.<engine>.fusion``) and
registers, for each method it can run, a factory that binds a fusion to its renderer: an object
that says whether a given cluster runs it (:meth:`ServerFusion.supports`) and renders it in the
engine's own form (a search-pipeline processor, a retriever...). The shell asks through
:func:`renderer`; a fusion with no renderer on a cluster's engine is fused in the client. A fusion
method (:mod:`adapter.fusion`) names no engine: which engines run it is which engines registered a
renderer for it (:func:`servers`), found through :mod:`adapter.engines.registry`. So this lives with
the engines, above the fusions, which import nothing from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar

from adapter.engines import registry
from adapter.fusion.base import Fusion, methods

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
_ENGINES: dict[str, Renderers[Any]] = {}


class Renderers(Generic[R]):
    """The renderers of one engine, by fusion method."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        # Factories by exact method: each takes only its own method's fusions (register's F).
        self._factories: dict[type[Fusion], Callable[[Any], R]] = {}
        _ENGINES[engine] = self

    def register(self, method: type[F], factory: Callable[[F], R]) -> None:
        self._factories[method] = factory

    def get(self, fusion: Fusion) -> R | None:
        factory = self._factories.get(type(fusion))
        return None if factory is None else factory(fusion)

    @property
    def methods(self) -> frozenset[type[Fusion]]:
        return frozenset(self._factories)


def _renderers(engine: str) -> Renderers[Any] | None:
    """The engine's renderers (its module, imported through the registry, registers them)."""
    if engine not in _ENGINES and not registry.loaded(engine):
        return None
    return _ENGINES.get(engine)


def renderer(engine: str, fusion: Fusion) -> ServerFusion | None:
    """How ``engine`` runs ``fusion`` (None: it does not; fuse in the client)."""
    found = _renderers(engine)
    return None if found is None else found.get(fusion)


def servers(method: type[Fusion]) -> tuple[str, ...]:
    """The registered engines that can run ``method`` server-side (empty: it is fused in the client everywhere)."""
    return tuple(e for e in registry.names() if (r := _renderers(e)) is not None and method in r.methods)


def title(engine: str) -> str:
    """The engine's name for people (``OpenSearch``)."""
    return registry.title(engine)


def server_support(fusion: Fusion, caps: Capabilities) -> str | None:
    """None when the cluster ``caps`` describes runs ``fusion`` server-side; else why not."""
    found = renderer(caps.engine, fusion)
    if found is None:
        where = servers(type(fusion))
        by = f"only by {' and '.join(title(e) for e in sorted(where))}" if where else "by no search engine"
        return f"{fusion.name} is run server-side {by}, not by {title(caps.engine)}: it is fused in the client"
    return found.supports(caps)


def client_only(weights: tuple[float, ...] | None = None) -> list[Fusion]:
    """One fusion of each method no search engine runs server-side (with ``weights`` where the
    method takes them): what ``hybrid eval`` scores as ``client-<name>``."""
    return [f for method in methods() if not servers(method) for f in method.variants(weights, ())]
