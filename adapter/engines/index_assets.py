"""The index assets every engine renders alike, around its own vector field. Pure.

An engine's component templates are the shared text and metadata components (:mod:`adapter.index.assets`)
with its own vector component. Where its placement records the index's default fusion in ``_meta``
(:meth:`~adapter.engines.placement.FusionPlacement.recorded_default`: an engine without search pipelines),
the index template names no default pipeline and carries that ``_meta``, and so does the mapping.
:class:`IndexAssets` gives an engine the three :class:`~adapter.engines.engine.Engine` methods from its
vector component and its placement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapter.index.assets import (
    IndexNames,
    IndexSpec,
    merged_mapping,
    render_index_template,
    render_metadata_component,
    render_text_component,
)

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.placement import FusionPlacement

DEFAULT_PIPELINE_SETTING = "index.search.default_pipeline"


def components(
    names: IndexNames, spec: IndexSpec, caps: Capabilities | None, vector: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The component templates keyed by cluster name: the shared text and metadata ones and ``vector``."""
    return {
        names.component("text"): render_text_component(spec, caps),
        names.component("vector"): vector,
        names.component("metadata"): render_metadata_component(),
    }


def _recorded_meta(spec: IndexSpec, placement: FusionPlacement) -> dict[str, Any] | None:
    recorded = placement.recorded_default(spec)
    return None if recorded is None else {**spec.meta, "default_fusion": recorded}


def index_template(names: IndexNames, spec: IndexSpec, placement: FusionPlacement) -> dict[str, Any]:
    """The index template; with the default fusion in ``_meta`` where no default pipeline carries it."""
    body = render_index_template(names, spec)
    meta = _recorded_meta(spec, placement)
    if meta is not None:
        body["template"]["settings"].pop(DEFAULT_PIPELINE_SETTING)
        body["template"]["mappings"]["_meta"] = meta
    return body


def mapping(components: dict[str, dict[str, Any]], spec: IndexSpec, placement: FusionPlacement) -> dict[str, Any]:
    """The mapping an index made from ``components`` ends up with (``_meta`` as :func:`index_template` puts it)."""
    merged = merged_mapping(components, spec)
    meta = _recorded_meta(spec, placement)
    return merged if meta is None else {**merged, "_meta": meta}


class IndexAssets:
    """The engine's component templates, index template and mapping, from its own
    :meth:`render_vector_component` and its :attr:`placement` (a base class of the shipped engines and the fake)."""

    placement: FusionPlacement

    def render_vector_component(self, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        """The component template of the engine's vector field."""
        raise NotImplementedError

    def render_components(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, dict[str, Any]]:
        return components(names, spec, caps, self.render_vector_component(spec, caps))

    def render_index_template(
        self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None
    ) -> dict[str, Any]:
        return index_template(names, spec, self.placement)

    def render_mapping(self, names: IndexNames, spec: IndexSpec, caps: Capabilities | None = None) -> dict[str, Any]:
        return mapping(self.render_components(names, spec, caps), spec, self.placement)
