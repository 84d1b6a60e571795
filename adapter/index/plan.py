"""The plan: what it takes to make the cluster hold one hybrid index as desired, as a pure diff.

:func:`plan` compares the desired state (:class:`Desired`, as its engine renders it for the cluster:
:class:`Rendered`) with what the cluster holds (:class:`LiveState`) and returns a :class:`Plan`. It
reads nothing and writes nothing: reading the cluster, rendering and sending the changes are the use
case's (:mod:`adapter.admin.planning`), which ``hybrid init`` (:func:`adapter.admin.init.init_index`),
``hybrid plan | apply | diff`` (:mod:`adapter.cli.ops`) and ``hybrid reindex``
(:mod:`adapter.admin.migrate`) are built on.

A change the live index cannot take in place (vector dimension, space type, engine, analyzers,
the embedding fingerprint, shards) makes the plan a *rebuild*: nothing is applied, and
``hybrid reindex`` builds the next version and swaps the alias.

What the cluster stores for an index's fusions is its engine's placement's
(:mod:`adapter.engines.placement`): OpenSearch's search pipelines belong to an index by name,
``<alias>-<name>``. With ``prune_pipelines`` the plan also deletes fusing pipelines of that name the
desired state does not list (made by hand, or dropped from the spec); a pipeline whose name starts
with another alias's or template's name plus ``-`` (``docs-es-rrf`` next to an alias ``docs-es``)
belongs to that one (:mod:`adapter.engines.opensearch.placement`). Elasticsearch stores none: each
search carries its fusion, the index's default recorded in ``_meta``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from adapter._enums import TextEnum
from adapter.errors import ConfigurationError, IndexMismatchError
from adapter.fusion import DEFAULT_WEIGHTS
from adapter.index.assets import IndexNames, IndexSpec
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
        done = {
            Action.CREATE: (Action.CREATED, Action.WOULD_CREATE),
            Action.UPDATE: (Action.UPDATED, Action.WOULD_UPDATE),
            Action.DELETE: (Action.DELETED, Action.WOULD_DELETE),
        }
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
class Rendered:
    """The desired state as the engine renders it for one cluster (:func:`adapter.admin.desired.render`):
    what the diff compares the live objects with, so that it needs no engine."""

    mapping: Mapping[str, Any]  # the index's mapping (properties, _meta)
    components: Mapping[str, Mapping[str, Any]]  # component template name -> body
    index_template: Mapping[str, Any]
    pipelines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # the stored fusions, name -> body
    default_pipeline: str | None = None  # the index's default search pipeline (None: the engine stores none)
    default_fusion: str | None = None  # without search pipelines: what searches fuse by, recorded in _meta
    notices: tuple[str, ...] = ()  # what will run differently from what was asked

    @property
    def settings(self) -> dict[str, str]:
        """The index settings the component templates give, as the server reports them."""
        out: dict[str, str] = {}
        for body in self.components.values():
            out.update(canonical_settings(body["template"].get("settings", {})))
        return out


@dataclass(frozen=True)
class LiveState:
    """What the cluster holds for one alias (read by :func:`adapter.admin.live_state.read_live`)."""

    alias: str
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
        newest = max((IndexNames.version_of(v) for v in self.versions), default=0)
        return IndexNames(self.alias).index(newest + 1)

    @property
    def meta(self) -> Mapping[str, Any]:
        """The newest index's ``_meta`` (empty: no index yet)."""
        return (self.index_body or {}).get("mappings", {}).get("_meta") or {}


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
    # what differs from what was asked (an analyzer rebuilt, a fusion that will fall back)
    notices: tuple[str, ...] = ()

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
        out[prefix] = (
            json.dumps(value)
            if isinstance(value, list)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )


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


def incompatibilities(
    live_mapping: Mapping[str, Any], live_settings: Mapping[str, Any], rendered: Rendered, spec: IndexSpec
) -> list[str]:
    """Why an index with this mapping and these settings cannot become ``spec`` (as ``rendered``) in place
    (empty: it can)."""
    problems = []
    live_props = live_mapping.get("properties", {})
    for name, body in rendered.mapping["properties"].items():
        if name in live_props and not covers(_without_dynamic(live_props[name]), _without_dynamic(body)):
            problems.append(
                f"field {name!r}: cluster has {json.dumps(live_props[name])}, assets want {json.dumps(body)}"
            )
    problems += _model_change(live_mapping.get("_meta", {}).get("embedding"), spec.fingerprint)
    live = canonical_settings(live_settings)
    for key, value in rendered.settings.items():
        if key.startswith("index.analysis.") and live.get(key) != value:
            problems.append(f"setting {key}: cluster has {live.get(key)!r}, assets want {value!r}")
    if live.get("index.number_of_shards") not in (None, str(spec.shards)):
        problems.append(
            f"number_of_shards: cluster has {live.get('index.number_of_shards')}, assets want {spec.shards}"
        )
    return problems


def _model_change(live_fp: Mapping[str, Any] | None, wanted: EmbeddingFingerprint) -> list[str]:
    """The embedding model, when the live index's differs from the spec's (named, not by their digests)."""
    if not live_fp or live_fp == wanted.to_meta():
        return []
    live_model = EmbeddingFingerprint.from_meta(live_fp)
    diffs = live_model.differences(wanted)
    if not diffs:
        return []
    words = {
        "weights_sha256": "weights",
        "normalized": "normalisation",
        "query_prefix": "query prefix",
        "passage_prefix": "passage prefix",
    }
    what = ", ".join(words.get(d.split(":", 1)[0], d.split(":", 1)[0]) for d in diffs)
    return [
        f"embedding model: the index was embedded by {live_model.model} ({live_model.spec}, dimension "
        f"{live_model.dimension}), the spec names {wanted.model} ({wanted.spec}, dimension "
        f"{wanted.dimension}); they differ in {what}"
    ]


# -- planning -----------------------------------------------------------------------------------------
def plan(
    desired: Desired, rendered: Rendered, live: LiveState, *, reattach: bool = False, prune_pipelines: bool = False
) -> Plan:
    """The changes that make ``live`` into ``desired`` (as ``rendered`` for the cluster). Pure: reads
    nothing, writes nothing.

    Raises ConfigurationError where the cluster holds something in the way (a plain index with the
    alias's name; versioned indices whose alias was deleted, unless ``reattach``).

    The steps, in the order the changes are sent: the alias put back (:func:`_reattached`), the
    templates, the stored fusions (before the index: it names one of them as its default), then the
    index itself (:func:`_index_changes`).
    """
    alias_changes, current = _reattached(desired, live, reattach)
    rebuild: tuple[str, ...] = ()
    if live.index_body is not None:
        body = live.index_body
        rebuild = tuple(incompatibilities(body["mappings"], body["settings"], rendered, desired.spec))
    index, index_changes = _index_changes(desired, rendered, live, current, rebuild)
    changes = (
        *alias_changes,
        *_template_changes(desired, rendered, live),
        *_pipeline_changes(desired, rendered, live, prune=prune_pipelines),
        *index_changes,
    )
    return Plan(
        desired.alias,
        index,
        changes,
        rebuild,
        live.next_index,
        rendered.default_pipeline,
        desired.label,
        default_fusion=rendered.default_fusion,
        notices=rendered.notices,
    )


def _compared(
    kind: ChangeKind, name: str, old: Any, new: Any, same: bool, label: str, body: Any = None, reason: str = ""
) -> Change:
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
    return (
        Change(ChangeKind.ALIAS, alias, CREATE, reason=f"the alias is missing: put it back on {orphan}", body=orphan),
    ), orphan


def _template_changes(desired: Desired, rendered: Rendered, live: LiveState) -> tuple[Change, ...]:
    """The component templates and the index template, as the engine renders them."""
    wanted = {
        **{(ChangeKind.COMPONENT_TEMPLATE, n): b for n, b in rendered.components.items()},
        (ChangeKind.INDEX_TEMPLATE, desired.names.index_template): rendered.index_template,
    }
    changes: list[Change] = []
    for (kind, name), body in wanted.items():
        old = live.components.get(name) if kind is ChangeKind.COMPONENT_TEMPLATE else live.index_template
        new = canonical_template(body)
        changes.append(
            _compared(
                kind,
                name,
                old and canonical_template(old),
                new,
                old is not None and canonical_template(old) == new,
                desired.label,
                body,
            )
        )
    return tuple(changes)


def _pipeline_changes(desired: Desired, rendered: Rendered, live: LiveState, *, prune: bool) -> tuple[Change, ...]:
    """The stored fusions the engine places; with ``prune``, those named as the alias's that the
    desired state does not list are deleted."""
    wanted = rendered.pipelines
    changes = [
        _compared(
            ChangeKind.PIPELINE,
            name,
            live.pipelines.get(name),
            body,
            live.pipelines.get(name) is not None and canonical_values(live.pipelines[name]) == canonical_values(body),
            desired.label,
            body,
        )
        for name, body in wanted.items()
    ]
    if prune and live.owned_pipelines is not None:
        changes += [
            Change(
                ChangeKind.PIPELINE,
                name,
                DELETE,
                json_diff(live.pipelines.get(name), None, name, desired.label),
                f"named {desired.alias}-*, not in the {desired.label}",
            )
            for name in live.owned_pipelines
            if name not in wanted
        ]
    return tuple(changes)


def _index_changes(
    desired: Desired, rendered: Rendered, live: LiveState, current: str | None, rebuild: tuple[str, ...]
) -> tuple[str, tuple[Change, ...]]:
    """The index behind the alias and its changes: a new one (none yet), else its mapping, ``_meta`` and
    default pipeline in place, or a rebuild (``rebuild``: why it cannot take them)."""
    if not current or live.index_body is None:
        index = desired.names.index(1) if not live.versions else live.next_index
        return index, (
            Change(
                ChangeKind.INDEX,
                index,
                CREATE,
                reason=f"create {index} behind the alias {desired.alias}",
                body={"aliases": {desired.alias: {}}},
            ),
        )
    changes: list[Change] = []
    if not rebuild:  # else the new index gets them
        changes += _mapping_changes(desired, rendered, live.index_body, current, live.meta)
    default_pipeline = rendered.default_pipeline
    if default_pipeline is not None:
        setting = {DEFAULT_PIPELINE_SETTING: default_pipeline}
        live_default = canonical_settings(live.index_body["settings"]).get(DEFAULT_PIPELINE_SETTING)
        changes.append(
            _compared(
                ChangeKind.SETTINGS,
                current,
                {DEFAULT_PIPELINE_SETTING: live_default},
                setting,
                live_default == default_pipeline,
                desired.label,
                setting,
                "" if live_default else "the index has no default search pipeline",
            )
        )
    changes.append(
        Change(ChangeKind.INDEX, current, Action.REBUILD, reason="; ".join(rebuild))
        if rebuild
        else Change(ChangeKind.INDEX, current, UNCHANGED)
    )
    return current, tuple(changes)


def _mapping_changes(
    desired: Desired, rendered: Rendered, index_body: Mapping[str, Any], current: str, live_meta: Mapping[str, Any]
) -> tuple[Change, ...]:
    """Fields the live index lacks (or whose ``dynamic`` differs), and its ``_meta``: both change in
    place. The fingerprint was checked by :func:`incompatibilities`; keys of ``_meta`` the assets do
    not own (the adaptive calibration) are kept."""
    live_props = index_body["mappings"].get("properties", {})
    wanted_props, meta = rendered.mapping["properties"], rendered.mapping.get("_meta", desired.spec.meta)
    added = {f: b for f, b in wanted_props.items() if f not in live_props}
    added.update(dynamic_changes(live_props, wanted_props))
    owned_meta = {k: live_meta.get(k) for k in meta}
    return (
        _compared(ChangeKind.MAPPING, current, {}, added, not added, desired.label, {"properties": added}),
        _compared(
            ChangeKind.MAPPING_META,
            current,
            owned_meta,
            meta,
            owned_meta == meta,
            desired.label,
            {"_meta": {**live_meta, **meta}},
        ),
    )


# -- refusing -----------------------------------------------------------------------------------------
def rebuild_error(plan_: Plan, hint: str) -> IndexMismatchError:
    return IndexMismatchError(
        f"the {plan_.label} {'ask' if plan_.label == 'assets' else 'asks'} for changes that index {plan_.index!r} "
        "cannot take in place: "
        + "; ".join(plan_.rebuild)
        + f". Such a change needs a new index ({plan_.next_index}) and re-embedding every document; {hint}"
    )


def desired_from_spec(spec: Spec) -> Desired:
    """The desired state an :class:`adapter.index.spec.Spec` (with its fingerprint resolved) describes."""
    w_text, w_dense = spec.weights
    return Desired(spec.alias, spec.index_spec(), (w_text, w_dense), spec.pipelines, label=spec.origin or "spec")
