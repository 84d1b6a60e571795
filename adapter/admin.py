"""``hybrid init``: apply templates, create the versioned index behind its alias, put pipelines
(where the engine has them: Elasticsearch fuses inside each request, so there it puts none).

Idempotent: each object is compared with what the cluster holds and only changed objects are sent;
the report says what was created, updated (with a diff) or left unchanged. A change the live index
cannot take (vector dimension, space type, engine, analyzers, the embedding fingerprint, shards)
is refused before anything is written: it needs a new index and re-embedding.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from .analysis import render_analysis
from .assets import IndexNames, IndexSpec
from .catalog import alias_indices, orphaned_indices, put_pipeline, read_pipeline
from .client import translate_errors
from .engines import Engine, engine_for
from .errors import BackendError, ConfigurationError, IndexMismatchError
from .fusions import DEFAULT_WEIGHTS, ScoreNormalization, parse_fusion
from .types import EmbeddingFingerprint


DEFAULT_PIPELINE_SETTING = "index.search.default_pipeline"


@dataclass(frozen=True)
class Change:
    kind: str  # component_template | index_template | index | pipeline | mapping | settings
    name: str
    action: str  # created | updated | unchanged | would create | would update
    diff: str = ""


@dataclass(frozen=True)
class InitReport:
    alias: str
    index: str
    changes: tuple[Change, ...]
    default_pipeline: str | None = None  # what a hybrid query without a pipeline is fused by
    default_fusion: str | None = None  # without search pipelines (Elasticsearch): what the adapter fuses by, from _meta
    notices: tuple[str, ...] = ()  # what differs from what was asked (an analyzer rebuilt, a fusion that will fall back)

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, sub, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, list) else str(value).lower() if isinstance(value, bool) else str(value)


def canonical_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """Settings as the server reports them: flat ``index.*`` keys with string values."""
    flat: dict[str, str] = {}
    _flatten("", settings, flat)
    return {(k if k.startswith("index.") else f"index.{k}"): v for k, v in flat.items()}


# Stamped by Elasticsearch 9 on every stored template: not part of what was sent.
SERVER_STAMPS = ("created_date_millis", "modified_date_millis", "created_date", "modified_date")


def _canonical_template(template: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in json.loads(json.dumps(template)).items() if k not in SERVER_STAMPS}
    inner = out.get("template")
    if isinstance(inner, dict) and "settings" in inner:
        inner["settings"] = canonical_settings(inner["settings"])
    return out


def _dump(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def json_diff(old: Any, new: Any, name: str) -> str:
    return "\n".join(difflib.unified_diff(_dump(old), _dump(new), f"{name} (cluster)", f"{name} (assets)", lineterm=""))


def _canonical_values(value: Any) -> Any:
    """Values as the server echoes them: booleans may come back as "true", 1 as 1.0."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_canonical_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _canonical_values(v) for k, v in value.items()}
    return value


def _covers(live: Any, wanted: Any) -> bool:
    """Whether the live mapping holds everything the wanted one says.

    The server adds to what it was given (dynamically mapped metadata keys, defaults) and drops
    the implicit ``"type": "object"``; those differences are not changes.
    """
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return False
        if wanted.get("type") == "object" and "type" not in live:
            wanted = {k: v for k, v in wanted.items() if k != "type"}
        return all(k in live and _covers(live[k], v) for k, v in wanted.items())
    return _canonical_values(live) == _canonical_values(wanted)


class _Applier:
    def __init__(self, client, dry_run: bool) -> None:
        self.client = client
        self.dry_run = dry_run
        self.changes: list[Change] = []

    def record(self, kind: str, name: str, existed: bool, same: bool, old: Any, new: Any, send) -> None:
        if existed and same:
            self.changes.append(Change(kind, name, "unchanged"))
            return
        action = "updated" if existed else "created"
        if self.dry_run:
            action = f"would {action[:-1]}"
        else:
            with translate_errors(f"putting {kind} {name}", self.client):
                send()
        self.changes.append(Change(kind, name, action, json_diff(old, new, name) if existed else ""))


def _get_or_none(client, action: str, call) -> dict | None:
    try:
        with translate_errors(action, client):
            return call()
    except BackendError as exc:
        if exc.status == 404:
            return None
        raise


def _get_component(client, name: str) -> dict | None:
    resp = _get_or_none(client, f"reading component template {name}", lambda: client.cluster.get_component_template(name=name))
    return resp["component_templates"][0]["component_template"] if resp and resp.get("component_templates") else None


def _get_index_template(client, name: str) -> dict | None:
    resp = _get_or_none(client, f"reading index template {name}", lambda: client.indices.get_index_template(name=name))
    return resp["index_templates"][0]["index_template"] if resp and resp.get("index_templates") else None


def _incompatibilities(live_mapping: Mapping, live_settings: Mapping, names: IndexNames, spec: IndexSpec, engine: Engine,
                       caps=None) -> list[str]:
    wanted = engine.render_mapping(names, spec, caps)
    problems = []
    live_props = live_mapping.get("properties", {})
    for field, body in wanted["properties"].items():
        if field in live_props and not _covers(live_props[field], body):
            problems.append(f"field {field!r}: cluster has {json.dumps(live_props[field])}, assets want {json.dumps(body)}")
    live_fp = live_mapping.get("_meta", {}).get("embedding")
    if live_fp and live_fp != spec.fingerprint.to_meta():
        diffs = EmbeddingFingerprint.from_meta(live_fp).differences(spec.fingerprint)
        if diffs:
            problems.append("embedding fingerprint: " + "; ".join(diffs))
    wanted_settings = {}
    for body in engine.render_components(names, spec, caps).values():
        wanted_settings.update(canonical_settings(body["template"].get("settings", {})))
    live = canonical_settings(live_settings)
    for key, value in wanted_settings.items():
        if key.startswith("index.analysis.") and live.get(key) != value:
            problems.append(f"setting {key}: cluster has {live.get(key)!r}, assets want {value!r}")
    if live.get("index.number_of_shards") not in (None, str(spec.shards)):
        problems.append(f"number_of_shards: cluster has {live.get('index.number_of_shards')}, assets want {spec.shards}")
    return problems


def init_index(
    client,
    alias: str,
    spec: IndexSpec,
    *,
    weights: tuple[float, float] = DEFAULT_WEIGHTS,
    extra_pipelines: Mapping[str, Mapping[str, Any]] | None = None,
    dry_run: bool = False,
    engine: Engine | None = None,
    reattach: bool = False,
) -> InitReport:
    """Make the cluster match the assets for index ``alias``; see the module docstring.

    An index ``<alias>-vN`` whose alias was deleted by hand is refused with a clear error unless
    ``reattach`` is set: then the alias is put back on the newest one (and the rest proceeds).
    """
    engine = engine or engine_for(client)
    names = IndexNames(alias)
    caps = engine.probe(client)
    if not caps.hybrid:
        raise ConfigurationError(f"the cluster ({caps.engine} {caps.version}) lacks the neural-search plugin needed for hybrid search")
    engine.check_spec(spec, caps)
    ScoreNormalization(weights=weights)  # validates them before anything is written
    notices = list(render_analysis(spec.analyzer, caps).notices)
    default = parse_fusion(spec.default_fusion)
    ok, why = caps.supports(default)
    if not ok and caps.search_pipelines:
        raise ConfigurationError(f"the default fusion {default.name} cannot be the index's default pipeline: {why}")
    if not caps.search_pipelines:
        if extra_pipelines:
            raise ConfigurationError(f"{caps.engine} has no search pipelines: --pipeline-file cannot apply there")
        instead = engine.server_fallback(default, caps) if not ok else None
        notices.append(f"{caps.engine} has no search pipelines: none are put; each hybrid search carries its fusion in the "
                       f"request, by default {default.name} (recorded in the index's _meta)"
                       + ("" if ok else f", which falls back to {instead.name if instead else 'client-rrf'} here: {why}"))

    with translate_errors(f"checking {alias}", client):
        plain_index = client.indices.exists(index=alias) and not client.indices.exists_alias(name=alias)
    if plain_index:
        raise ConfigurationError(
            f"an index named {alias!r} already exists and is not an alias; the adapter keeps {alias!r} as an alias "
            f"over versioned indices ({names.index(1)}, ...). Pick another name or move that index away"
        )
    apply = _Applier(client, dry_run)
    existing = alias_indices(client, alias)
    if not existing:
        orphans = orphaned_indices(client, alias)
        if orphans and not reattach:
            raise ConfigurationError(
                f"index {orphans[-1]} exists but no alias {alias!r} points to it (was the alias deleted by hand?), so "
                f"creating it again would fail. Re-attach the alias with `hybrid init --index {alias} --reattach-alias` "
                "(with the same options; --dry-run shows the plan), or delete that index to start over"
            )
        if orphans:
            orphan = orphans[-1]
            apply.record("alias", alias, False, False, None, None, lambda: client.indices.put_alias(index=orphan, name=alias))
            existing = [orphan]
    live = None
    if existing:
        current = existing[-1]
        with translate_errors(f"reading {current}", client):
            live = client.indices.get(index=current)[current]
        problems = _incompatibilities(live["mappings"], live["settings"], names, spec, engine, caps)
        if problems:
            raise IndexMismatchError(
                f"the assets ask for changes that index {current!r} cannot take in place: "
                + "; ".join(problems)
                + f". Such a change needs a new index ({names.index(IndexNames.version_of(current) + 1)}) and "
                "re-embedding every document; `hybrid init` does not do that"
            )

    for name, body in engine.render_components(names, spec, caps).items():
        old = _get_component(client, name)
        same = old is not None and _canonical_template(old) == _canonical_template(body)
        apply.record("component_template", name, old is not None, same, old and _canonical_template(old), _canonical_template(body),
                     lambda n=name, b=body: client.cluster.put_component_template(name=n, body=b))
    template = engine.render_index_template(names, spec, caps)
    old_t = _get_index_template(client, names.index_template)
    same_t = old_t is not None and _canonical_template(old_t) == _canonical_template(template)
    apply.record("index_template", names.index_template, old_t is not None, same_t, old_t and _canonical_template(old_t),
                 _canonical_template(template),
                 lambda: client.indices.put_index_template(name=names.index_template, body=template))

    # Pipelines before the index: the index names one of them as its default.
    pipelines: dict[str, dict[str, Any]] = {}
    for fusion in caps.fusions(weights=tuple(weights)) if caps.search_pipelines else ():
        pipelines[names.pipeline(fusion)] = engine.render_pipeline(fusion, caps)
    for suffix, body in (extra_pipelines or {}).items():
        if engine.pipeline_fusion(body) is None:
            raise ConfigurationError(f"pipeline asset {suffix!r} has no normalization-processor or score-ranker-processor")
        pipelines[f"{alias}-{suffix}"] = dict(body)
    for name, body in pipelines.items():
        old_p = read_pipeline(client, name)
        same_p = old_p is not None and _canonical_values(old_p) == _canonical_values(body)
        apply.record("pipeline", name, old_p is not None, same_p, old_p, body, lambda n=name, b=body: put_pipeline(client, n, b))

    default_pipeline = names.default_pipeline(spec) if caps.search_pipelines else None
    if existing:
        index = existing[-1]
        live_props = live["mappings"].get("properties", {})
        live_meta = live["mappings"].get("_meta", {})
        wanted_mapping = engine.render_mapping(names, spec, caps)
        wanted, meta = wanted_mapping["properties"], wanted_mapping["_meta"]
        added = {f: b for f, b in wanted.items() if f not in live_props}
        apply.record("mapping", index, True, not added, {}, added,
                     lambda: client.indices.put_mapping(index=index, body={"properties": added}))
        # _meta (query fields, schema) can change in place; the fingerprint was checked above.
        apply.record("mapping _meta", index, True, live_meta == meta, live_meta, meta,
                     lambda: client.indices.put_mapping(index=index, body={"_meta": meta}))
        if default_pipeline is not None:
            live_default = canonical_settings(live["settings"]).get(DEFAULT_PIPELINE_SETTING)
            apply.record("settings", index, True, live_default == default_pipeline, {DEFAULT_PIPELINE_SETTING: live_default},
                         {DEFAULT_PIPELINE_SETTING: default_pipeline},
                         lambda: client.indices.put_settings(index=index, body={DEFAULT_PIPELINE_SETTING: default_pipeline}))
        apply.changes.append(Change("index", index, "unchanged"))
    else:
        index = names.index(1)
        apply.record("index", index, False, False, None, None,
                     lambda: client.indices.create(index=index, body={"aliases": {alias: {}}}))
    return InitReport(alias, index, tuple(apply.changes), default_pipeline,
                      default_fusion=None if caps.search_pipelines else default.name, notices=tuple(notices))
