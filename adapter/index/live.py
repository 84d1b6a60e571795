"""The spec of a live index: every option ``hybrid init`` and the spec file set, read back from what
the cluster holds, so that ``hybrid plan --index X --write-spec FILE`` writes what the index has and
``hybrid diff FILE`` is clean, and so that ``init``, ``eval`` and the first ingest keep an existing
index's analyzer and embedder instead of a default's.

Each option is read as the inverse of its rendering: the value whose rendering the live index
holds (the analyzer's name as the text fields carry it, the vector options where the engine's
vector mapping puts them, the standard pipelines' weights where the placement stores them). One
rendering, read both ways, so a new option or engine needs nothing here.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any, Mapping

from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.errors import ConfigurationError, InputError
from adapter.fusion import DEFAULT_WEIGHTS, parse_fusion
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.analysis import AnalysisSupport, spec_analyzer
from adapter.index.assets import COMBINED_FIELD, KNN_METHODS, SPACE_TYPES, IndexNames, IndexSpec
from adapter.index.catalog import alias_indices, orphaned_indices
from adapter.index.plan import DEFAULT_PIPELINE_SETTING, canonical_settings, covers
from adapter.index.spec import Spec
from adapter.models.fingerprint import EmbeddingFingerprint

_ALTERNATE_WEIGHTS = (0.25, 0.75)  # any weights other than the default: where the two renderings differ, weights live


def live_spec(client: ClusterLike, alias: str, *, engine: Engine | None = None) -> Spec | None:
    """The :class:`~adapter.index.spec.Spec` of the newest index behind ``alias`` (or of its newest
    ``<alias>-vN`` when the alias was deleted), with its fingerprint pinned; None: no such index."""
    cluster = cluster_for(client, engine)
    indices = alias_indices(cluster, alias) or orphaned_indices(cluster, alias)
    if not indices:
        return None
    caps = cluster.probe()
    body = cluster.get_index(indices[-1], action=f"reading {indices[-1]}")
    stored, owned = cluster.engine.placement.read_stored(cluster, alias, [], own=True) if caps.hybrid else ({}, ())
    return spec_of(alias, body, caps, cluster.engine, stored={n: b for n, b in stored.items() if n in (owned or ())})


def live_analyzer(cluster: Cluster, alias: str) -> str | None:
    """The analyzer (as ``--analyzer`` names it) of the index behind ``alias``; None: no such index."""
    spec = live_spec(cluster, alias)
    return spec.analyzer if spec is not None else None


def spec_of(
    alias: str,
    body: Mapping[str, Any],
    caps: Capabilities,
    engine: Engine,
    *,
    stored: Mapping[str, Mapping[str, Any]] | None = None,
) -> Spec:
    """The spec of one index (``body``: ``GET <index>``'s answer for it; ``stored``: the fusions stored
    as the alias's, name -> body). Pure."""
    mappings = body.get("mappings") or {}
    meta = mappings.get("_meta") or {}
    if not meta.get("embedding"):
        raise ConfigurationError(f"{alias} has no _meta.embedding fingerprint; was it created by `hybrid init`?")
    fingerprint = EmbeddingFingerprint.from_meta(meta["embedding"])
    settings = canonical_settings(body.get("settings") or {})
    props = mappings.get("properties") or {}
    text_fields = tuple(meta.get("text_fields") or ("title", "text"))
    query_fields = list(meta.get("query_fields") or text_fields)
    layout = "combined" if [f.split("^")[0] for f in query_fields] == [COMBINED_FIELD] else "fields"
    boosts = {f.split("^")[0]: float(f.split("^")[1]) for f in query_fields if "^" in f}
    support = AnalysisSupport.of(caps)
    field_analyzer = (props.get(text_fields[-1]) or {}).get("analyzer", "default")
    base = IndexSpec(
        fingerprint,
        analyzer=spec_analyzer(field_analyzer, support),
        text_fields=text_fields,
        vector_field=str(meta.get("vector_field", "embedding")),
        text_layout=layout,
        title_boost=boosts.get(text_fields[0], 1.0) if layout == "fields" else 1.0,
        shards=int(settings.get("index.number_of_shards", 1)),
        replicas=settings.get("index.auto_expand_replicas", IndexSpec.replicas),
    )
    base = _vector_options(engine, IndexNames(alias), base, props.get(base.vector_field) or {}, caps)
    default, extra = _default_and_extra(alias, meta, settings, dict(stored or {}), base, caps, engine)
    return Spec(
        alias=alias,
        embedder=fingerprint.spec,
        fingerprint=fingerprint,
        analyzer=base.analyzer,
        text_fields=base.text_fields,
        title_boost=base.title_boost,
        text_layout=base.text_layout,
        vector_field=base.vector_field,
        space_type=base.space_type,
        knn_method=base.knn_method,
        m=base.m,
        ef_construction=base.ef_construction,
        shards=base.shards,
        replicas=base.replicas,
        weights=_weights(IndexNames(alias), base, caps, engine, dict(stored or {})),
        default=default,
        extra_pipelines=tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in extra.items())),
    )


def _leaf_paths(value: Any, prefix: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Every leaf by its path (keys and list positions); a list of plain values is one leaf (the weights)."""
    items: Any = None
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value):
        items = enumerate(value)
    if items is None:
        return {prefix: value}
    out: dict[tuple[Any, ...], Any] = {}
    for key, sub in items:
        out.update(_leaf_paths(sub, (*prefix, key)))
    return out


def _where_differs(a: Any, b: Any) -> tuple[Any, ...] | None:
    """The first leaf path where two renderings differ."""
    left, right = _leaf_paths(a), _leaf_paths(b)
    return next((p for p in left if left[p] != right.get(p)), None)


def _at(value: Any, path: tuple[Any, ...] | None) -> Any:
    if path is None:
        return None
    for key in path:
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
        else:
            return None
    return value


def _vector_options(
    engine: Engine, names: IndexNames, base: IndexSpec, live_field: Mapping[str, Any], caps: Capabilities
) -> IndexSpec:
    """``base`` with the HNSW parameters, space type and k-NN method whose rendering the live vector field holds."""

    def field(spec: IndexSpec) -> Any:
        return engine.render_mapping(names, spec, caps)["properties"][spec.vector_field]

    def read(value: Any, default: int) -> int:
        return int(value) if isinstance(value, (int, float, str)) and str(value).isdigit() else default

    m = read(_at(live_field, _where_differs(field(base), field(replace(base, m=base.m + 1)))), base.m)
    ef = read(
        _at(live_field, _where_differs(field(base), field(replace(base, ef_construction=base.ef_construction + 1)))),
        base.ef_construction,
    )
    spec = replace(base, m=m, ef_construction=ef)
    for space, method in itertools.product(SPACE_TYPES, KNN_METHODS):
        try:
            candidate = replace(spec, space_type=space, knn_method=method)
        except ConfigurationError:  # a space type the embedder cannot use
            continue
        if covers(live_field, field(candidate)):
            return candidate
    return spec


def _weights(
    names: IndexNames, spec: IndexSpec, caps: Capabilities, engine: Engine, stored: Mapping[str, Mapping[str, Any]]
) -> tuple[float, float]:
    """The standard pipelines' weights, read where the placement renders them (default: none stored)."""

    def rendered(weights: tuple[float, float]) -> dict[str, Any]:
        return engine.placement.stored(names, caps, weights=weights, default_fusion=spec.default_fusion)

    a, b = rendered(DEFAULT_WEIGHTS), rendered(_ALTERNATE_WEIGHTS)
    for name in a:
        path = _where_differs(a[name], b.get(name))
        value = _at(stored.get(name), path) if path is not None else None
        if isinstance(value, list) and len(value) == 2 and all(isinstance(w, (int, float)) for w in value):
            return float(value[0]), float(value[1])
    return DEFAULT_WEIGHTS


def _default_and_extra(
    alias: str,
    meta: Mapping[str, Any],
    settings: Mapping[str, str],
    stored: dict[str, Any],
    spec: IndexSpec,
    caps: Capabilities,
    engine: Engine,
) -> tuple[str, dict[str, Any]]:
    """The index's default (a fusion name, adaptive, or an extra pipeline's name) and its extra pipelines:
    the fusions stored as the alias's that are not a standard one."""
    standard = set(engine.placement.stored(IndexNames(alias), caps, weights=DEFAULT_WEIGHTS, default_fusion=ADAPTIVE))
    prefix = f"{alias}-"
    extra = {
        name[len(prefix) :]: body for name, body in stored.items() if name not in standard and name.startswith(prefix)
    }
    pipeline = settings.get(DEFAULT_PIPELINE_SETTING) or ""
    if pipeline.startswith(prefix) and pipeline[len(prefix) :] in extra:
        return pipeline[len(prefix) :], extra
    recorded = meta.get("default_fusion")
    if isinstance(recorded, str):
        if recorded == ADAPTIVE:
            return ADAPTIVE, extra
        try:
            return parse_fusion(recorded).name, extra
        except InputError:  # an edited _meta: the default the spec file would have
            pass
    return spec.default_fusion, extra
