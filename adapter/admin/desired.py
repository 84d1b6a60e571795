"""The desired state as one engine renders it for one cluster: checked against what the cluster can
run, then rendered (mapping, templates, stored fusions, the default pipeline) into the
:class:`~adapter.index.plan.Rendered` value that the pure diff compares with the live state."""

from __future__ import annotations

from typing import Any, Mapping

from adapter.engines import Engine
from adapter.engines.capabilities import Capabilities
from adapter.errors import ConfigurationError
from adapter.fusion import ScoreNormalization
from adapter.index.analysis import AnalysisSupport, text_analysis
from adapter.index.plan import Desired, Rendered


def desired_pipelines(
    desired: Desired, caps: Capabilities, engine: Engine, *, live_meta: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """What the cluster should store for the alias's fusions, as the engine places them
    (:mod:`adapter.engines.placement`): on OpenSearch one pipeline per fusion the cluster runs, the
    adaptive default (from the live index's calibration, ``live_meta``), then the extra ones; on
    Elasticsearch nothing."""
    spec = desired.spec
    return engine.placement.stored(
        desired.names,
        caps,
        weights=tuple(desired.weights),
        default_fusion=spec.default_fusion,
        default_pipeline=spec.default_pipeline,
        adaptive=(live_meta or {}).get("adaptive"),
        extra=desired.extra_pipelines,
    )


def pipelines_to_read(desired: Desired, caps: Capabilities, engine: Engine) -> list[str]:
    """The stored fusions whose live bodies the plan compares (none where the cluster cannot fuse)."""
    return list(desired_pipelines(desired, caps, engine)) if caps.hybrid else []


def check_desired(desired: Desired, caps: Capabilities, engine: Engine) -> tuple[str, ...]:
    """Refuse what the cluster cannot run, before anything is written; returns notices for what will
    run differently from what was asked."""
    spec = desired.spec
    if not caps.hybrid:
        raise ConfigurationError(
            f"the cluster ({caps.engine} {caps.version}) lacks the neural-search plugin needed for hybrid search"
        )
    engine.check_spec(spec, caps)
    ScoreNormalization(weights=desired.weights)  # validates them before anything is written
    notices = list(text_analysis(spec.analyzer, AnalysisSupport.of(caps)).notices)
    return (*notices, *engine.placement.check(spec, desired.extra_pipelines, caps))


def render(
    desired: Desired, caps: Capabilities, engine: Engine, *, live_meta: Mapping[str, Any] | None = None
) -> Rendered:
    """``desired`` checked (:func:`check_desired`: ConfigurationError for what the cluster cannot run) and
    rendered by ``engine`` for a cluster with ``caps``; ``live_meta``: the live index's ``_meta`` (its
    calibration decides the adaptive default's pipeline)."""
    notices = check_desired(desired, caps, engine)
    names, spec = desired.names, desired.spec
    return Rendered(
        engine.render_mapping(names, spec, caps),
        engine.render_components(names, spec, caps),
        engine.render_index_template(names, spec, caps),
        desired_pipelines(desired, caps, engine, live_meta=live_meta),
        engine.placement.default_pipeline(names, spec),
        engine.placement.recorded_default(spec),
        notices,
    )
