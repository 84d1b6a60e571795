"""Where an engine's server runs a fusion, and where an index keeps its default one: a strategy per engine. Pure.

Every engine has a :class:`FusionPlacement` (:attr:`adapter.engines.engine.Engine.placement`):

- in a search pipeline (OpenSearch: :class:`adapter.engines.opensearch.placement.InPipeline`): each
  fusion the cluster runs is a stored pipeline named ``<alias>-<fusion>``, the index names its
  default one in ``index.search.default_pipeline``, a fusion no pipeline holds is sent with the
  request;
- inside the request (:class:`InRequest`: Elasticsearch, and any engine that fuses nothing on the
  server): the request's body fuses (a retriever, the summed query), the index records its default
  fusion in ``_meta``, and nothing is stored.

Search planning, ``init`` / ``plan`` / ``apply``, calibration, evaluation and ``hybrid serve`` ask the
placement instead of asking which engine the cluster runs. Either way a fusion the cluster cannot run
is fused in the client (:func:`fallback`), with a notice.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from adapter.engines.render import renderer
from adapter.errors import CapabilityError, ConfigurationError
from adapter.fusion import Fusion, ScoreNormalization, parse_fusion
from adapter.fusion.base import FusedBy
from adapter.fusion.choice.values import ADAPTIVE

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.port import Cluster
    from adapter.index.assets import IndexNames, IndexSpec

Json = dict[str, Any]


@dataclass(frozen=True)
class FusionPlan:
    """How one hybrid request will be fused, decided before it is sent."""

    fusion: Fusion
    fused_by: FusedBy
    pipeline: str | None = None  # the stored pipeline (SERVER_PIPELINE)
    inline: dict[str, Any] | None = None  # the pipeline sent with the request (SERVER_INLINE)
    # SERVER_RETRIEVER / SERVER_SUM (Elasticsearch): the fusion itself is the request's body
    notice: str | None = None  # why the plan differs from what was asked (a fallback)


def fallback(fusion: Fusion, why: str, *, allowed: bool) -> FusionPlan:
    """The plan for a fusion this cluster cannot run (``why``): that same fusion computed in the
    client (every fusion has the server's formula there); a notice says so and why."""
    if not allowed:
        raise CapabilityError(f"{why}; fallback to client-side fusion is disabled")
    return FusionPlan(
        fusion,
        FusedBy.CLIENT,
        notice=(
            f"{why}: fell back to client-side {fusion.name} (both legs in one "
            "_msearch, fused in Python with the server's formula)"
        ),
    )


class StoredFusions(Protocol):
    """The cluster fact a placement may need while planning (the search's retrieve stage answers it)."""

    def stored_fusion(self, name: str) -> Fusion | None:
        """The fusion of a stored pipeline (None: no such pipeline; InputError: it fuses nothing)."""
        ...


@dataclass(frozen=True)
class FusionAsk:
    """What one hybrid search asks for, and what its searcher and index default to."""

    caps: Capabilities
    alias: str
    fusion: Fusion | None  # named by the caller (None: the searcher's default)
    pipeline: str | None  # a stored pipeline named by the caller
    default: Fusion  # the searcher's fixed default fusion
    searcher_pipeline: str | None  # the stored pipeline a search naming no fusion runs (given, or the index's default)
    index_pipeline: str | None  # the index's default search pipeline (its setting)
    allow_fallback: bool = True
    refused: str | None = None  # why the cluster refused this fusion when asked (the fallback's notice)

    @property
    def wanted(self) -> Fusion:
        return self.fusion or self.default


def spec_default(spec: IndexSpec) -> Fusion:
    """The fusion an index spec's ``default_fusion`` names (adaptive: min_max, its weights chosen per query)."""
    if spec.default_fusion == ADAPTIVE:
        return ScoreNormalization()
    parsed = parse_fusion(spec.default_fusion)
    if parsed is None:
        raise ConfigurationError(f"the index spec names no default fusion ({spec.default_fusion!r})")
    return parsed


class FusionPlacement(abc.ABC):
    """Where one engine runs server-side fusion (see the module docstring)."""

    # -- searching ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def plan(self, ask: FusionAsk, stored: StoredFusions) -> FusionPlan:
        """Where the fusion ``ask`` wants runs: on the server in this engine's way, else the client."""

    def client_pipeline(self, ask: FusionAsk) -> str | None:
        """The stored pipeline whose fusion a client-fused search (technique ``client``) runs, if any."""
        return ask.pipeline

    def stored_fusion(self, cluster: Cluster, name: str) -> Fusion | None:
        """The fusion the stored asset ``name`` runs (None: none of that name; InputError: it fuses nothing)."""
        return None

    # -- the index's fusion assets -------------------------------------------------------------------
    @abc.abstractmethod
    def check(self, spec: IndexSpec, extra: Mapping[str, Mapping[str, Any]], caps: Capabilities) -> tuple[str, ...]:
        """Refuse a spec (its default fusion, ``extra`` pipeline files) the cluster cannot keep;
        the notices about what will run differently from what was asked."""

    def stored(
        self,
        names: IndexNames,
        caps: Capabilities,
        *,
        weights: tuple[float, ...],
        default_fusion: str,
        default_pipeline: str | None = None,
        adaptive: Mapping[str, Any] | None = None,
        extra: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, Json]:
        """What the cluster stores for an index's fusions, by name (``weights``: the normalisations';
        ``default_fusion`` / ``default_pipeline``: the spec's; ``adaptive``: the live index's
        calibration; ``extra``: pipeline files by suffix)."""
        return {}

    def read_stored(
        self, cluster: Cluster, alias: str, wanted: list[str], *, own: bool
    ) -> tuple[dict[str, Json], tuple[str, ...] | None]:
        """The stored fusions ``wanted`` that exist (name -> body) and, with ``own``, every one named as
        ``alias``'s (None: not looked for)."""
        return {}, None

    def put(self, cluster: Cluster, name: str, body: Mapping[str, Any], *, action: str | None = None) -> None:
        raise CapabilityError(f"{cluster.name} stores no fusion assets ({name})")

    def delete(self, cluster: Cluster, name: str, *, action: str | None = None) -> None:
        raise CapabilityError(f"{cluster.name} stores no fusion assets ({name})")

    def default_pipeline(self, names: IndexNames, spec: IndexSpec) -> str | None:
        """The search pipeline the index names as its default (None: it names none)."""
        return None

    def recorded_default(self, spec: IndexSpec) -> str | None:
        """The default fusion the index records in ``_meta`` for searches to carry (None: a pipeline carries it)."""
        return spec.default_fusion

    def update_default(self, cluster: Cluster, pipeline: str | None, fusion: Fusion, caps: Capabilities) -> str | None:
        """Make the index's default pipeline (``pipeline``) run ``fusion``; the pipeline updated, if any."""
        return None

    def asset(self, fusion: Fusion, caps: Capabilities) -> Json:
        """What a user stores or passes to run ``fusion`` on this engine (``hybrid eval --tune``'s winner)."""
        weights = ",".join(f"{w:g}" for w in fusion.effective_weights)
        return {
            "description": f"no search pipelines on this engine: the fusion goes with each search request "
            f"(hybrid search --fusion {fusion.name} --weights {weights})",
            "fusion": fusion.name,
            "weights": list(fusion.effective_weights),
        }

    # -- for people ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def notes(self, caps: Capabilities) -> list[str]:
        """What differs on this cluster about where fusion runs (``hybrid serve``'s page)."""


class InRequest(FusionPlacement):
    """The request fuses, or the client does; nothing is stored (Elasticsearch; an engine without
    server-side fusion fuses every hybrid search in the client)."""

    def plan(self, ask: FusionAsk, stored: StoredFusions) -> FusionPlan:
        if ask.pipeline:
            raise CapabilityError(
                f"{ask.caps.engine} has no search pipelines ({ask.pipeline!r}); choose a fusion instead"
            )
        wanted = ask.wanted
        server = renderer(ask.caps.engine, wanted)
        ok, why = ask.caps.supports(wanted)
        if not ok or server is None:
            return fallback(wanted, ask.refused or why, allowed=ask.allow_fallback)
        return FusionPlan(wanted, server.fused_by)

    def check(self, spec: IndexSpec, extra: Mapping[str, Mapping[str, Any]], caps: Capabilities) -> tuple[str, ...]:
        if extra or spec.default_pipeline:
            raise ConfigurationError(f"{caps.engine} has no search pipelines: pipeline files cannot apply there")
        ok, why = caps.supports(spec_default(spec))
        return (
            f"{caps.engine} has no search pipelines: none are put; each hybrid search carries its fusion in the "
            f"request, by default {spec.default_fusion} (recorded in the index's _meta)"
            + ("" if ok else f", which is fused in the client here (both legs fetched, the same formula): {why}"),
        )

    def notes(self, caps: Capabilities) -> list[str]:
        return [
            f"{caps.engine} {caps.version} has no search pipelines: the fusion goes inside each request where its "
            "server runs it, else the legs are fused in the client."
        ]


IN_REQUEST = InRequest()
