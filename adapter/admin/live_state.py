"""Reading what the cluster holds for one alias: the templates, the indices behind the alias (or
left without it), the newest index's body and the stored fusions, as one
:class:`~adapter.index.plan.LiveState` that the pure diff (:func:`adapter.index.plan.plan`) compares."""

from __future__ import annotations

import re

from adapter.engines import Cluster, Engine
from adapter.index.assets import IndexNames
from adapter.index.catalog import alias_indices, index_version, orphaned_indices
from adapter.index.plan import LiveState


def read_live(
    cluster: Cluster,
    alias: str,
    engine: Engine,
    *,
    pipelines: list[str] | None = None,
    own_pipelines: bool = False,
    components: list[str] | None = None,
) -> LiveState:
    """What the cluster holds for ``alias``. ``pipelines``: the stored fusions to read; with
    ``own_pipelines`` every one is read (one request) and those named as the alias's are listed in
    ``owned_pipelines`` (engines that store none: none). ``components``: the component templates to read."""
    names = IndexNames(alias)
    checking = f"checking {alias}"
    if cluster.index_exists(alias, action=checking) and not cluster.alias_exists(alias, action=checking):
        return LiveState(alias, plain_index=True)
    indices = tuple(alias_indices(cluster, alias))
    orphans = () if indices else tuple(orphaned_indices(cluster, alias))
    versions = tuple(sorted(set(indices) | set(orphans) | set(versions_of(cluster, alias)), key=index_version))
    current = indices[-1] if indices else (orphans[-1] if orphans else None)
    body = cluster.get_index(current) if current else None
    comps = {
        name: cluster.get_component_template(name)
        for name in (components or [names.component(p) for p in ("text", "vector", "metadata")])
    }
    template = cluster.get_index_template(names.index_template)
    present, owned_names = engine.placement.read_stored(cluster, alias, list(pipelines or ()), own=own_pipelines)
    return LiveState(alias, False, indices, orphans, versions, body, comps, template, present, owned_names)


def versions_of(cluster: Cluster, alias: str) -> list[str]:
    """Every ``<alias>-vN`` index, with or without the alias (an unfinished migration's target too)."""
    found = cluster.indices_matching(IndexNames(alias).pattern, action=f"listing the indices of {alias}")
    pattern = re.compile(rf"^{re.escape(alias)}-v\d+$")
    return [n for n in found if pattern.match(n)]
