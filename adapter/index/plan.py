"""Plan and apply: what it takes to make the cluster hold one hybrid index as desired.

:func:`read_live` reads what the cluster holds (templates, the index behind the alias, search
pipelines); :func:`plan` compares that with the desired state and is pure; :func:`apply_plan`
sends the changes in order. ``hybrid init`` (:func:`adapter.index.init.init_index`) and
``hybrid plan | apply | diff`` (:mod:`adapter.cli.ops`) are built on these three.

A change the live index cannot take in place (vector dimension, space type, engine, analyzers,
the embedding fingerprint, shards) makes the plan a *rebuild*: nothing is applied, and
``hybrid reindex`` (:mod:`adapter.index.migrate`) builds the next version and swaps the alias.

What the cluster stores for an index's fusions is its engine's placement's
(:mod:`adapter.engines.placement`): OpenSearch's search pipelines belong to an index by name,
``<alias>-<name>``. With ``own_pipelines`` the plan also finds fusing pipelines of that name the
desired state does not list (made by hand, or dropped from the spec) and deletes them; a pipeline
whose name starts with another alias's or template's name plus ``-`` (``docs-es-rrf`` next to an
alias ``docs-es``) belongs to that one (:mod:`adapter.engines.opensearch.placement`). Elasticsearch
stores none: each search carries its fusion, the index's default recorded in ``_meta``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from adapter._enums import TextEnum
from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.errors import ConfigurationError, IndexMismatchError
from adapter.fusion import DEFAULT_WEIGHTS, ScoreNormalization
from adapter.index.analysis import AnalysisSupport, text_analysis
from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.catalog import alias_indices, index_version, orphaned_indices
from adapter.models.fingerprint import EmbeddingFingerprint

if TYPE_CHECKING:
    from adapter.index.spec import Spec

DEFAULT_PIPELINE_SETTING = "index.search.default_pipeline"

class ChangeKind(TextEnum):
    """What a change is made to."""

    ALIAS = "alias"
    COMPONENT_TEMPLATE = "component_template"
    INDEX_TEMPLATE = "index_template"
    PIPELINE = "pipeline"
    MAPPING = "mapping"
    MAPPING_META = "mapping _meta"
    SETTINGS = "settings"
    INDEX = "index"
    CLUSTER_SETTING = "cluster_setting"


class Action(TextEnum):
    """What a plan does to an object; once applied, what was done (``would ...`` in a dry run)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"
    REBUILD = "rebuild"  # the live index cannot take the change: a new version is needed
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"
    WOULD_CREATE = "would create"
    WOULD_UPDATE = "would update"
    WOULD_DELETE = "would delete"

    def applied(self, *, dry_run: bool = False) -> Action:
        """The planned action as done (or as a dry run says it would be)."""
        done = {Action.CREATE: (Action.CREATED, Action.WOULD_CREATE), Action.UPDATE: (Action.UPDATED, Action.WOULD_UPDATE),
                Action.DELETE: (Action.DELETED, Action.WOULD_DELETE)}
        return done[self][1 if dry_run else 0] if self in done else self


CREATE, UPDATE, DELETE, UNCHANGED = Action.CREATE, Action.UPDATE, Action.DELETE, Action.UNCHANGED


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    name: str
    action: Action
    diff: str = ""
    reason: str = ""  # why, when the diff does not say it (a deleted template, a re-attached alias)
    body: Any = field(default=None, compare=False, repr=False)  # what is sent


@dataclass(frozen=True)
class Desired:
    """What the cluster should hold for one alias: the index spec, the standard pipelines' weights,
    extra pipelines (name -> body, stored as ``<alias>-<name>``)."""

    alias: str
    spec: IndexSpec
    weights: tuple[float, float] = DEFAULT_WEIGHTS
    extra_pipelines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    label: str = "assets"  # how diffs name the desired side: "assets" (init) or the spec file

    @property
    def names(self) -> IndexNames:
        return IndexNames(self.alias)


@dataclass(frozen=True)
class LiveState:
    """What the cluster holds for one alias (read by :func:`read_live`)."""

    alias: str
    caps: Capabilities
    plain_index: bool = False  # an index (not an alias) has the alias's name
    indices: tuple[str, ...] = ()  # behind the alias, oldest first
    orphans: tuple[str, ...] = ()  # <alias>-vN indices while the alias is missing
    versions: tuple[str, ...] = ()  # every <alias>-vN index, oldest first
    index_body: Mapping[str, Any] | None = None  # GET <newest index>: mappings and settings
    components: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    index_template: Mapping[str, Any] | None = None
    pipelines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> body, those present
    owned_pipelines: tuple[str, ...] | None = None  # fusing pipelines named <alias>-*; None: not looked for

    @property
    def current(self) -> str | None:
        return self.indices[-1] if self.indices else None

    @property
    def next_index(self) -> str:
        newest = max((index_version(v) for v in self.versions), default=0)
        return IndexNames(self.alias).index(newest + 1)


@dataclass(frozen=True)
class Plan:
    alias: str
    index: str  # the index behind the alias (or the one that will be created)
    changes: tuple[Change, ...]
    rebuild: tuple[str, ...] = ()  # why the index needs a new one; empty: everything can change in place
    next_index: str = ""  # where a rebuild goes
    default_pipeline: str | None = None
    label: str = "assets"  # the desired side's name in messages
    default_fusion: str | None = None  # without search pipelines (Elasticsearch): what searches fuse by, from _meta
    notices: tuple[str, ...] = ()  # what differs from what was asked (an analyzer rebuilt, a fusion that will fall back)

    @property
    def drift(self) -> list[Change]:
        return [c for c in self.changes if c.action != UNCHANGED]

    @property
    def in_sync(self) -> bool:
        return not self.rebuild and not self.drift


# -- comparing ------------------------------------------------------------------------------------
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


def canonical_template(template: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in json.loads(json.dumps(template)).items() if k not in SERVER_STAMPS}
    inner = out.get("template")
    if isinstance(inner, dict) and "settings" in inner:
        inner["settings"] = canonical_settings(inner["settings"])
    return out


def _dump(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def json_diff(old: Any, new: Any, name: str, label: str = "assets") -> str:
    """A unified diff of two JSON values (None: the object does not exist on that side)."""
    before, after = ([] if v is None else _dump(v) for v in (old, new))
    return "\n".join(difflib.unified_diff(before, after, f"{name} (cluster)", f"{name} ({label})", lineterm=""))


def canonical_values(value: Any) -> Any:
    """Values as the server echoes them: booleans may come back as "true", 1 as 1.0."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [canonical_values(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical_values(v) for k, v in value.items()}
    return value


def covers(live: Any, wanted: Any) -> bool:
    """Whether the live mapping holds everything the wanted one says.

    The server adds to what it was given (dynamically mapped metadata keys, defaults) and drops
    the implicit ``"type": "object"``; those differences are not changes.
    """
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return False
        if wanted.get("type") == "object" and "type" not in live:
            wanted = {k: v for k, v in wanted.items() if k != "type"}
        return all(k in live and covers(live[k], v) for k, v in wanted.items())
    return bool(canonical_values(live) == canonical_values(wanted))


def _without_dynamic(mapping: Any) -> Any:
    """An object field's mapping without its ``dynamic`` parameter, which a put_mapping changes in place."""
    return {k: v for k, v in mapping.items() if k != "dynamic"} if isinstance(mapping, dict) else mapping


def dynamic_changes(live_props: Mapping[str, Any], wanted_props: Mapping[str, Any]) -> dict[str, Any]:
    """Object fields whose ``dynamic`` differs from the assets' (e.g. ``metadata``, strict since
    adapter 0.2), as the put_mapping that changes each in place."""
    out = {}
    for name, body in wanted_props.items():
        if name in live_props and isinstance(body, dict) and "dynamic" in body:
            if str(live_props[name].get("dynamic", "true")).lower() != str(body["dynamic"]).lower():
                out[name] = {"type": "object", "dynamic": body["dynamic"]}
    return out


def incompatibilities(live_mapping: Mapping[str, Any], live_settings: Mapping[str, Any], names: IndexNames, spec: IndexSpec, engine: Engine,
                      caps: Capabilities | None = None) -> list[str]:
    """Why an index with this mapping and these settings cannot become ``spec`` in place (empty: it can)."""
    wanted = engine.render_mapping(names, spec, caps)
    problems = []
    live_props = live_mapping.get("properties", {})
    for name, body in wanted["properties"].items():
        if name in live_props and not covers(_without_dynamic(live_props[name]), _without_dynamic(body)):
            problems.append(f"field {name!r}: cluster has {json.dumps(live_props[name])}, assets want {json.dumps(body)}")
    live_fp = live_mapping.get("_meta", {}).get("embedding")
    if live_fp and live_fp != spec.fingerprint.to_meta():
        live_model = EmbeddingFingerprint.from_meta(live_fp)
        diffs = live_model.differences(spec.fingerprint)
        if diffs:
            words = {"weights_sha256": "weights", "normalized": "normalisation", "query_prefix": "query prefix",
                     "passage_prefix": "passage prefix"}
            what = ", ".join(words.get(d.split(":", 1)[0], d.split(":", 1)[0]) for d in diffs)  # named, not their digests
            problems.append(f"embedding model: the index was embedded by {live_model.model} ({live_model.spec}, dimension "
                            f"{live_model.dimension}), the spec names {spec.fingerprint.model} ({spec.fingerprint.spec}, dimension "
                            f"{spec.fingerprint.dimension}); they differ in {what}")
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


# -- the desired pipelines --------------------------------------------------------------------------
def desired_pipelines(desired: Desired, caps: Capabilities, engine: Engine, *,
                      live_meta: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """What the cluster should store for the alias's fusions, as the engine places them
    (:mod:`adapter.engines.placement`): on OpenSearch one pipeline per fusion the cluster runs, the
    adaptive default (from the live index's calibration, ``live_meta``), then the extra ones; on
    Elasticsearch nothing."""
    spec = desired.spec
    return engine.placement.stored(desired.names, caps, weights=tuple(desired.weights), default_fusion=spec.default_fusion,
                                   default_pipeline=spec.default_pipeline, adaptive=(live_meta or {}).get("adaptive"),
                                   extra=desired.extra_pipelines)


def check_desired(desired: Desired, caps: Capabilities, engine: Engine) -> tuple[str, ...]:
    """Refuse what the cluster cannot run, before anything is read or written; returns notices
    for what will run differently from what was asked."""
    spec = desired.spec
    if not caps.hybrid:
        raise ConfigurationError(f"the cluster ({caps.engine} {caps.version}) lacks the neural-search plugin needed for hybrid search")
    engine.check_spec(spec, caps)
    ScoreNormalization(weights=desired.weights)  # validates them before anything is written
    notices = list(text_analysis(spec.analyzer, AnalysisSupport.of(caps)).notices)
    return (*notices, *engine.placement.check(spec, desired.extra_pipelines, caps))


# -- reading the cluster ----------------------------------------------------------------------------
def read_live(cluster: Cluster, alias: str, engine: Engine, *, pipelines: list[str] | None = None, own_pipelines: bool = False,
              components: list[str] | None = None, caps: Capabilities | None = None) -> LiveState:
    """What the cluster holds for ``alias``. ``pipelines``: the stored fusions to read; with
    ``own_pipelines`` every one is read (one request) and those named as the alias's are listed in
    ``owned_pipelines`` (engines that store none: none). ``components``: the component templates to read."""
    names = IndexNames(alias)
    caps = caps or cluster.probe()
    checking = f"checking {alias}"
    plain_index = cluster.index_exists(alias, action=checking) and not cluster.alias_exists(alias, action=checking)
    if plain_index:
        return LiveState(alias, caps, plain_index=True)
    indices = tuple(alias_indices(cluster, alias))
    orphans = () if indices else tuple(orphaned_indices(cluster, alias))
    versions = tuple(sorted(set(indices) | set(orphans) | set(versions_of(cluster, alias)), key=index_version))
    current = indices[-1] if indices else (orphans[-1] if orphans else None)
    body = cluster.get_index(current) if current else None
    comps = {name: cluster.get_component_template(name) for name in (components or [names.component(p) for p in ("text", "vector", "metadata")])}
    template = cluster.get_index_template(names.index_template)
    present, owned_names = engine.placement.read_stored(cluster, alias, list(pipelines or ()), own=own_pipelines)
    return LiveState(alias, caps, False, indices, orphans, versions, body, comps, template, present, owned_names)


def versions_of(cluster: Cluster, alias: str) -> list[str]:
    """Every ``<alias>-vN`` index, with or without the alias (an unfinished migration's target too)."""
    import re

    found = cluster.indices_matching(IndexNames(alias).pattern, action=f"listing the indices of {alias}")
    pattern = re.compile(rf"^{re.escape(alias)}-v\d+$")
    return [n for n in found if pattern.match(n)]


# -- planning (pure) --------------------------------------------------------------------------------
def plan(desired: Desired, live: LiveState, engine: Engine, *, reattach: bool = False, prune_pipelines: bool = False) -> Plan:
    """The changes that make ``live`` into ``desired``. Pure: reads nothing, writes nothing.

    Raises ConfigurationError where the cluster holds something in the way (a plain index with the
    alias's name; versioned indices whose alias was deleted, unless ``reattach``).

    The steps, in the order the changes are sent: the alias put back (:func:`_reattached`), the
    templates, the stored fusions (before the index: it names one of them as its default), then the
    index itself (:func:`_index_changes`).
    """
    notices = check_desired(desired, live.caps, engine)
    alias_changes, current = _reattached(desired, live, reattach)
    rebuild: tuple[str, ...] = ()
    if live.index_body is not None:
        body = live.index_body
        rebuild = tuple(incompatibilities(body["mappings"], body["settings"], desired.names, desired.spec, engine, live.caps))
    live_meta = (live.index_body or {}).get("mappings", {}).get("_meta") or {}
    index, index_changes = _index_changes(desired, live, engine, current, rebuild, live_meta)
    changes = (*alias_changes, *_template_changes(desired, live, engine),
               *_pipeline_changes(desired, live, engine, live_meta, prune=prune_pipelines), *index_changes)
    return Plan(desired.alias, index, changes, rebuild, live.next_index, engine.placement.default_pipeline(desired.names, desired.spec),
                desired.label, default_fusion=engine.placement.recorded_default(desired.spec), notices=notices)


def _compared(kind: ChangeKind, name: str, old: Any, new: Any, same: bool, label: str, body: Any = None, reason: str = "") -> Change:
    """One object's change: unchanged, created (``old`` is None: missing on the cluster) or updated (with its diff)."""
    if old is not None and same:
        return Change(kind, name, UNCHANGED)
    if old is None:
        return Change(kind, name, CREATE, reason=reason or "missing on the cluster", body=body)
    return Change(kind, name, UPDATE, json_diff(old, new, name, label), reason, body)


def _reattached(desired: Desired, live: LiveState, reattach: bool) -> tuple[tuple[Change, ...], str | None]:
    """What stands in the way (refused), and the alias put back on its newest orphan (with ``reattach``);
    returns those changes and the index the alias (will) name (None: none yet)."""
    alias, names = desired.alias, desired.names
    if live.plain_index:
        raise ConfigurationError(
            f"an index named {alias!r} already exists and is not an alias; the adapter keeps {alias!r} as an alias "
            f"over versioned indices ({names.index(1)}, ...). Pick another name or move that index away"
        )
    if live.indices or not live.orphans:
        return (), live.current
    orphan = live.orphans[-1]
    if not reattach:
        raise ConfigurationError(
            f"index {orphan} exists but no alias {alias!r} points to it (was the alias deleted by hand?), so "
            f"creating it again would fail. Re-attach the alias with `hybrid init --index {alias} --reattach-alias` "
            "(with the same options; --dry-run shows the plan), or delete that index to start over"
        )
    return (Change(ChangeKind.ALIAS, alias, CREATE, reason=f"the alias is missing: put it back on {orphan}", body=orphan),), orphan


def _template_changes(desired: Desired, live: LiveState, engine: Engine) -> tuple[Change, ...]:
    """The component templates and the index template, as the engine renders them."""
    names, spec, label = desired.names, desired.spec, desired.label
    wanted = {**{(ChangeKind.COMPONENT_TEMPLATE, n): b for n, b in engine.render_components(names, spec, live.caps).items()},
              (ChangeKind.INDEX_TEMPLATE, names.index_template): engine.render_index_template(names, spec, live.caps)}
    changes: list[Change] = []
    for (kind, name), body in wanted.items():
        old = live.components.get(name) if kind is ChangeKind.COMPONENT_TEMPLATE else live.index_template
        new = canonical_template(body)
        changes.append(_compared(kind, name, old and canonical_template(old), new,
                                 old is not None and canonical_template(old) == new, label, body))
    return tuple(changes)


def _pipeline_changes(desired: Desired, live: LiveState, engine: Engine, live_meta: Mapping[str, Any], *,
                      prune: bool) -> tuple[Change, ...]:
    """The stored fusions the engine places (:func:`desired_pipelines`); with ``prune``, those named
    as the alias's that the desired state does not list are deleted."""
    wanted = desired_pipelines(desired, live.caps, engine, live_meta=live_meta)
    changes = [_compared(ChangeKind.PIPELINE, name, live.pipelines.get(name), body,
                         live.pipelines.get(name) is not None and canonical_values(live.pipelines[name]) == canonical_values(body),
                         desired.label, body)
               for name, body in wanted.items()]
    if prune and live.owned_pipelines is not None:
        changes += [Change(ChangeKind.PIPELINE, name, DELETE, json_diff(live.pipelines.get(name), None, name, desired.label),
                           f"named {desired.alias}-*, not in the {desired.label}")
                    for name in live.owned_pipelines if name not in wanted]
    return tuple(changes)


def _index_changes(desired: Desired, live: LiveState, engine: Engine, current: str | None, rebuild: tuple[str, ...],
                   live_meta: Mapping[str, Any]) -> tuple[str, tuple[Change, ...]]:
    """The index behind the alias and its changes: a new one (none yet), else its mapping, ``_meta`` and
    default pipeline in place, or a rebuild (``rebuild``: why it cannot take them)."""
    names, spec, label = desired.names, desired.spec, desired.label
    if not current or live.index_body is None:
        index = names.index(1) if not live.versions else live.next_index
        return index, (Change(ChangeKind.INDEX, index, CREATE, reason=f"create {index} behind the alias {desired.alias}",
                              body={"aliases": {desired.alias: {}}}),)
    changes: list[Change] = []
    if not rebuild:  # else the new index gets them
        changes += _mapping_changes(desired, live.index_body, live.caps, engine, current, live_meta)
    default_pipeline = engine.placement.default_pipeline(names, spec)
    if default_pipeline is not None:
        setting = {DEFAULT_PIPELINE_SETTING: default_pipeline}
        live_default = canonical_settings(live.index_body["settings"]).get(DEFAULT_PIPELINE_SETTING)
        changes.append(_compared(ChangeKind.SETTINGS, current, {DEFAULT_PIPELINE_SETTING: live_default}, setting,
                                 live_default == default_pipeline, label, setting,
                                 "" if live_default else "the index has no default search pipeline"))
    changes.append(Change(ChangeKind.INDEX, current, Action.REBUILD, reason="; ".join(rebuild)) if rebuild
                   else Change(ChangeKind.INDEX, current, UNCHANGED))
    return current, tuple(changes)


def _mapping_changes(desired: Desired, index_body: Mapping[str, Any], caps: Capabilities, engine: Engine, current: str,
                     live_meta: Mapping[str, Any]) -> tuple[Change, ...]:
    """Fields the live index lacks (or whose ``dynamic`` differs), and its ``_meta``: both change in
    place. The fingerprint was checked by :func:`incompatibilities`; keys of ``_meta`` the assets do
    not own (the adaptive calibration) are kept."""
    live_props = index_body["mappings"].get("properties", {})
    wanted_mapping = engine.render_mapping(desired.names, desired.spec, caps)
    wanted_props, meta = wanted_mapping["properties"], wanted_mapping.get("_meta", desired.spec.meta)
    added = {f: b for f, b in wanted_props.items() if f not in live_props}
    added.update(dynamic_changes(live_props, wanted_props))
    owned_meta = {k: live_meta.get(k) for k in meta}
    return (_compared(ChangeKind.MAPPING, current, {}, added, not added, desired.label, {"properties": added}),
            _compared(ChangeKind.MAPPING_META, current, owned_meta, meta, owned_meta == meta, desired.label,
                      {"_meta": {**live_meta, **meta}}))


# -- applying ---------------------------------------------------------------------------------------
def rebuild_error(plan_: Plan, hint: str) -> IndexMismatchError:
    return IndexMismatchError(
        f"the {plan_.label} {'ask' if plan_.label == 'assets' else 'asks'} for changes that index {plan_.index!r} cannot take in place: " + "; ".join(plan_.rebuild)
        + f". Such a change needs a new index ({plan_.next_index}) and re-embedding every document; {hint}"
    )


def _send(cluster: Cluster, change: Change, action: str, shard_wait: float | None = None) -> None:
    kind, name, body = change.kind, change.name, change.body
    if kind is ChangeKind.ALIAS:
        cluster.put_alias(body, name, action=action)
    elif kind is ChangeKind.COMPONENT_TEMPLATE:
        cluster.put_component_template(name, body, action=action)
    elif kind is ChangeKind.INDEX_TEMPLATE:
        cluster.put_index_template(name, body, action=action)
    elif kind is ChangeKind.PIPELINE and change.action is DELETE:
        cluster.engine.placement.delete(cluster, name, action=action)
    elif kind is ChangeKind.PIPELINE:
        cluster.engine.placement.put(cluster, name, body, action=action)
    elif kind in (ChangeKind.MAPPING, ChangeKind.MAPPING_META):
        cluster.put_mapping(name, body, action=action)
    elif kind is ChangeKind.SETTINGS:
        cluster.put_index_settings(name, body, action=action)
    elif kind is ChangeKind.INDEX:
        cluster.create_index(name, body, shard_wait=shard_wait, action=action)
    else:
        raise AssertionError(f"no sender for {kind}")


def apply_plan(client: ClusterLike, plan_: Plan, *, dry_run: bool = False, rebuild_hint: str = "",
               shard_wait: float | None = None) -> tuple[Change, ...]:
    """Send every change of ``plan_`` in order; returns them with what was done (``created``, ...).
    ``shard_wait``: how long a new index's creation waits for its primaries (None: the server's 30 s).

    A plan that needs a new index is refused (IndexMismatchError) before anything is sent.
    """
    if plan_.rebuild:
        raise rebuild_error(plan_, rebuild_hint)
    cluster = cluster_for(client)
    done: list[Change] = []
    for change in plan_.changes:
        if change.action == UNCHANGED:
            done.append(change)
            continue
        action = change.action.applied(dry_run=dry_run)
        if not dry_run:
            _send(cluster, change, f"{change.action} {change.kind} {change.name}", shard_wait)
        done.append(Change(change.kind, change.name, action, change.diff, change.reason, change.body))
    return tuple(done)


def desired_from_spec(spec: Spec) -> Desired:
    """The desired state an :class:`adapter.index.spec.Spec` (with its fingerprint resolved) describes."""
    w_text, w_dense = spec.weights
    return Desired(spec.alias, spec.index_spec(), (w_text, w_dense), spec.pipelines, label=spec.origin or "spec")


def plan_spec(client: ClusterLike, spec: Spec, engine: Engine | None = None) -> tuple[Plan, LiveState]:
    """Read the cluster and plan ``spec`` against it (pipelines named as the alias's but not in the
    spec are deleted; an alias deleted by hand is put back)."""
    cluster = cluster_for(client, engine)
    engine, caps = cluster.engine, cluster.probe()
    desired = desired_from_spec(spec)
    desired = replace(desired, spec=desired.spec.for_cluster(caps))
    wanted = list(desired_pipelines(desired, caps, engine)) if caps.hybrid else []
    # Pipelines named as the alias's but not in the spec are pruned; an engine that stores no
    # fusions (Elasticsearch) has none to read.
    live = read_live(cluster, spec.alias, engine, pipelines=wanted, own_pipelines=True, caps=caps)
    return plan(desired, live, engine, reattach=True, prune_pipelines=True), live
