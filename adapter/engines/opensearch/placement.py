"""OpenSearch fuses in search pipelines: stored per fusion, named as the index's, or sent with the request.

The placement (:class:`~adapter.engines.placement.FusionPlacement`) of OpenSearch. A search runs a
fusion through its stored pipeline ``<alias>-<fusion>``, else through the index's default pipeline
when that runs exactly these weights (stored beats inline: docs/BENCHMARKS.md), else through a
pipeline sent with the request; a fusion the cluster cannot run is fused in the client. ``init``
stores one pipeline per fusion the cluster runs (plus the adaptive default and pipeline files), and
the index names its default one in ``index.search.default_pipeline``. Pure but for the pipeline
calls, which go through the port's :class:`~adapter.engines.port.SearchPipelines` facet.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from adapter.engines.placement import (
    FusionAsk,
    FusionPlacement,
    FusionPlan,
    Json,
    StoredFusions,
    fallback,
    spec_default,
)
from adapter.engines.opensearch.capabilities import OpenSearchCapabilities
from adapter.engines.port import Cluster, ClusterCore, SearchPipelines
from adapter.errors import CapabilityError, ConfigurationError, InputError, PipelineNotFoundError
from adapter.fusion import DEFAULT_FUSION, Fusion
from adapter.fusion.base import FusedBy
from adapter.fusion.choice.policy import corpus_fusion
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.assets import IndexNames

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.opensearch import OpenSearchEngine
    from adapter.index.assets import IndexSpec

NOT_A_FUSION = "has no normalization-processor or score-ranker-processor"


def pipelines_of(cluster: ClusterCore) -> SearchPipelines:
    """The port's pipeline facet (CapabilityError: this cluster's engine has none)."""
    facet = cluster.pipelines
    if facet is None:
        raise CapabilityError(f"{cluster.name} has no search pipelines")
    return facet


def owned(alias: str, pipeline: str, others: set[str]) -> bool:
    """Whether ``pipeline`` is named as one of ``alias``'s (and not as one of the ``others``')."""
    return pipeline.startswith(f"{alias}-") and not any(pipeline.startswith(f"{o}-") for o in others)


def _other_prefixes(cluster: Cluster, alias: str) -> set[str]:
    """Aliases and index templates named ``<alias>-...``: their pipelines are theirs, not this alias's."""
    found = cluster.aliases_matching(f"{alias}-*") | set(cluster.index_templates_matching(f"{alias}-*"))
    return {f for f in found if f.startswith(f"{alias}-")}


class InPipeline(FusionPlacement):
    """Fusion in search pipelines (see the module docstring)."""

    def __init__(self, engine: OpenSearchEngine) -> None:
        self.engine = engine  # renders and reads the pipeline bodies

    # -- searching ---------------------------------------------------------------------------------
    def plan(self, ask: FusionAsk, stored: StoredFusions) -> FusionPlan:
        pipeline = ask.pipeline or (None if ask.fusion is not None else ask.searcher_pipeline)
        if pipeline:
            found = stored.stored_fusion(pipeline)
            if found is None:
                raise PipelineNotFoundError(pipeline, f"create it with `hybrid init --index {ask.alias}`")
            return _checked(FusionPlan(found, FusedBy.SERVER_PIPELINE, pipeline=pipeline), ask)
        if not ask.caps.supports(ask.wanted)[0]:
            return _checked(FusionPlan(ask.wanted, FusedBy.SERVER_INLINE), ask)
        return self._server_side(ask, stored)

    def _server_side(self, ask: FusionAsk, stored: StoredFusions) -> FusionPlan:
        """A fusion this cluster runs: its stored pipeline, else the index's default one when it runs
        exactly these weights, else inline."""
        wanted = ask.wanted
        named = IndexNames(ask.alias).pipeline(wanted)
        found = stored.stored_fusion(named)
        if found is not None and (wanted.weights is None or found == wanted):
            return FusionPlan(found, FusedBy.SERVER_PIPELINE, pipeline=named)
        default = ask.index_pipeline
        if default and default != named and wanted.weights is not None and _runs_exactly(stored, default, wanted):
            return FusionPlan(wanted, FusedBy.SERVER_PIPELINE, pipeline=default)
        if ask.fusion is None and wanted == DEFAULT_FUSION:
            raise PipelineNotFoundError(named, f"create it with `hybrid init --index {ask.alias}`")
        # Parameters no stored pipeline has: send the pipeline with the request (server-side still).
        return FusionPlan(wanted, FusedBy.SERVER_INLINE, inline=self.engine.render_pipeline(wanted, ask.caps))

    def stored_fusion(self, cluster: Cluster, name: str) -> Fusion | None:
        body = pipelines_of(cluster).get_search_pipeline(name)
        if body is None:
            return None
        fusion = self.engine.pipeline_fusion(body)
        if fusion is None:
            raise InputError(
                f"search pipeline {name!r} does not fuse hybrid results (no normalization or score-ranker processor)"
            )
        return fusion

    def client_pipeline(self, ask: FusionAsk) -> str | None:
        return ask.pipeline or (ask.searcher_pipeline if ask.fusion is None else None)

    # -- the index's fusion assets -------------------------------------------------------------------
    def check(self, spec: IndexSpec, extra: Mapping[str, Mapping[str, Any]], caps: Capabilities) -> tuple[str, ...]:
        if spec.default_pipeline:
            if spec.default_pipeline not in extra:
                raise ConfigurationError(
                    f"the default pipeline {spec.default_pipeline!r} is not one of the extra pipelines "
                    f"({', '.join(extra) or 'none'})"
                )
            default = self.engine.pipeline_fusion(extra[spec.default_pipeline])
            if default is None:
                raise ConfigurationError(f"pipeline asset {spec.default_pipeline!r} {NOT_A_FUSION}")
        else:
            default = spec_default(spec)
        ok, why = caps.supports(default)
        if not ok:
            raise ConfigurationError(
                f"the default fusion {spec.default_pipeline or spec.default_fusion} cannot be the index's "
                f"default pipeline: {why}"
            )
        return ()

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
        """One pipeline per fusion the cluster runs, the adaptive default (what a bare hybrid query from
        any client gets: the weights of the index's policy and calibration for a query without
        per-query signals; ``hybrid calibrate`` updates it), then the pipeline files."""
        out = {
            names.pipeline(fusion): self.engine.render_pipeline(fusion, caps)
            for fusion in caps.fusions(weights=weights)
        }
        if default_fusion == ADAPTIVE and not default_pipeline:
            out[f"{names.alias}-{ADAPTIVE}"] = self.engine.render_pipeline(
                corpus_fusion(adaptive, z_score=caps.z_score), caps
            )
        for suffix, body in (extra or {}).items():
            if self.engine.pipeline_fusion(body) is None:
                raise ConfigurationError(f"pipeline asset {suffix!r} {NOT_A_FUSION}")
            out[f"{names.alias}-{suffix}"] = json.loads(json.dumps(body))
        return out

    def read_stored(
        self, cluster: Cluster, alias: str, wanted: list[str], *, own: bool
    ) -> tuple[dict[str, Json], tuple[str, ...] | None]:
        """With ``own`` every search pipeline is read (one request) and those named as the alias's
        (fusing ones: a pipeline of another kind is not the adapter's) are listed."""
        pipelines = pipelines_of(cluster)
        if not own:
            return {n: b for n in wanted if (b := pipelines.get_search_pipeline(n)) is not None}, None
        every = pipelines.search_pipelines()
        others = _other_prefixes(cluster, alias)
        owned_names = tuple(
            sorted(
                n for n, b in every.items() if owned(alias, n, others) and self.engine.pipeline_fusion(b) is not None
            )
        )
        return {n: b for n, b in every.items() if n in set(wanted) | set(owned_names)}, owned_names

    def put(self, cluster: Cluster, name: str, body: Mapping[str, Any], *, action: str | None = None) -> None:
        pipelines_of(cluster).put_search_pipeline(name, body, action=action)

    def delete(self, cluster: Cluster, name: str, *, action: str | None = None) -> None:
        pipelines_of(cluster).delete_search_pipeline(name, action=action)

    def default_pipeline(self, names: IndexNames, spec: IndexSpec) -> str | None:
        return names.default_pipeline(spec)

    def recorded_default(self, spec: IndexSpec) -> str | None:
        return None  # the default pipeline carries it

    def update_default(self, cluster: Cluster, pipeline: str | None, fusion: Fusion, caps: Capabilities) -> str | None:
        if not pipeline:
            return None
        self.put(cluster, pipeline, self.engine.render_pipeline(fusion, caps))
        return pipeline

    def asset(self, fusion: Fusion, caps: Capabilities) -> Json:
        return self.engine.render_pipeline(fusion, caps)

    # -- for people ------------------------------------------------------------------------------------
    def notes(self, caps: Capabilities) -> list[str]:
        notes = [
            f"{caps.engine} {caps.version}: hybrid is one `hybrid` query fused on the server by a search pipeline "
            "(stored, or sent with the request for a fusion no stored pipeline runs)."
        ]
        if not caps.rrf_weights:
            notes.append("RRF weights need OpenSearch 3.1+: weighted RRF is fused in the client here.")
        if not caps.z_score:
            notes.append("z_score needs OpenSearch 3.0+: it is fused in the client here.")
        if not (isinstance(caps, OpenSearchCapabilities) and caps.rrf_global_ranks):
            notes.append("Before 3.5, server RRF ranks each leg's hits within each shard (the index's shards matter).")
        return notes


def _checked(plan: FusionPlan, ask: FusionAsk) -> FusionPlan:
    ok, why = ask.caps.supports(plan.fusion)
    return plan if ok else fallback(plan.fusion, ask.refused or why, allowed=ask.allow_fallback)


def _runs_exactly(stored: StoredFusions, name: str, fusion: Fusion) -> bool:
    try:
        return stored.stored_fusion(name) == fusion
    except InputError:  # a default pipeline that does not fuse: not one to reuse
        return False
