"""User Behavior Insights (UBI) records: the query record a search leaves, the events a user's
clicks send, the stores' index mappings, and reading both back. Pure.

The field names are the UBI specification's, version 1.0 (o19s/ubi ``schema/1.0.0``: a query has
``query_id``, ``client_id``, ``user_query``, ``query_attributes``; an event has ``action_name``,
``query_id``, ``client_id``, ``timestamp``, ``message_type``, ``message``, and
``event_attributes.object.object_id`` / ``object_id_field`` and ``event_attributes.position``), with
the fields OpenSearch's UBI plugin stores beside them in ``ubi_queries`` (``timestamp``,
``query_response_id``, ``query_response_hit_ids``). ``adapter/schemas/ubi-query.schema.json`` and
``ubi-event.schema.json`` are the JSON Schemas that :func:`validate` checks against.

One difference from the specification's JSON Schema, on purpose: ``event_attributes.position.ordinal``
is written as an integer, the 0-based position on the page, because the UBI plugin maps it as an
``integer`` and the Search Relevance Workbench's click models read it so (ranks 0 .. max_rank - 1).
The 1.0 JSON Schema draws it as ``{"index": n}``; an event sent that way is accepted and stored as
the integer.

The adapter's own query attributes live under ``query_attributes.hybrid``: the index searched, the
fusion that ran, and for an interleaved page the two fusions and each position's team.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from adapter.errors import AssetError, InputError
from adapter.traffic.interleave import Interleaving, Team

QUERIES_INDEX = "ubi_queries"
EVENTS_INDEX = "ubi_events"
SPEC_VERSION = "1.0.0"
HYBRID = "hybrid"  # the key of the adapter's own query attributes
APPLICATION = "hybrid-search"
CLICK = "click"
IMPRESSION = "impression"
MAX_ID = 100  # the specification's maxLength of query_id and client_id
SCHEMAS = {"query": "ubi-query.schema.json", "event": "ubi-event.schema.json"}


# -- the stores' mappings ------------------------------------------------------------------------
def queries_mapping() -> dict[str, Any]:
    """``ubi_queries`` as the UBI plugin maps it (its ``queries-mapping.json``), but for
    ``query_attributes``: stored and not indexed (``enabled: false``), which every engine takes
    (the plugin's ``flat_object`` is OpenSearch's alone) and which no attribute can bloat."""
    return {
        "dynamic": False,
        "properties": {
            "timestamp": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
            "query_id": {"type": "keyword", "ignore_above": MAX_ID},
            "query_response_id": {"type": "keyword", "ignore_above": MAX_ID},
            "query_response_hit_ids": {"type": "keyword"},
            "user_query": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
            "query_attributes": {"type": "object", "enabled": False},
            "client_id": {"type": "keyword", "ignore_above": MAX_ID},
            "application": {"type": "keyword", "ignore_above": 100},
        },
    }


def events_mapping() -> dict[str, Any]:
    """``ubi_events`` as the UBI plugin maps it (``events-mapping.json``), with ``query_id`` mapped
    (the plugin leaves it to dynamic mapping) and ``event_attributes`` not dynamic: a client's own
    attributes are kept in ``_source`` but add no field to the mapping (the plugin warns that dynamic
    attributes bloat the index)."""
    keyword = {"type": "keyword", "ignore_above": 100}
    return {
        "dynamic": False,
        "properties": {
            "application": {"type": "keyword", "ignore_above": 256},
            "action_name": keyword,
            "query_id": keyword,
            "client_id": keyword,
            "session_id": keyword,
            "user_id": keyword,
            "message": {"type": "keyword", "ignore_above": 1024},
            "message_type": keyword,
            "timestamp": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
            "event_attributes": {
                "dynamic": False,
                "properties": {
                    "position": {
                        "properties": {
                            "ordinal": {"type": "integer"},
                            "x": {"type": "integer"},
                            "y": {"type": "integer"},
                            "page_depth": {"type": "integer"},
                            "scroll_depth": {"type": "integer"},
                        }
                    },
                    "object": {
                        "properties": {
                            "internal_id": {"type": "keyword"},
                            "object_id": {"type": "keyword", "ignore_above": 256},
                            "object_id_field": keyword,
                        }
                    },
                },
            },
        },
    }


def index_body(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The create-index body: one shard (a log read whole, never searched under load), a replica
    where a second node can hold it."""
    return {"settings": {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}}, "mappings": dict(mapping)}


# -- values --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryRecord:
    """One search as ``ubi_queries`` holds it."""

    query_id: str
    client_id: str
    user_query: str
    hit_ids: tuple[str, ...]
    timestamp: str
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What groups searches of one query: its text, trimmed and lower-cased; where the text
        was not stored, the key written in its place (``query_attributes.hybrid.query_key``)."""
        text = normalized_query(self.user_query)
        return text or str(self.hybrid.get("query_key") or "")

    @property
    def hybrid(self) -> Mapping[str, Any]:
        value = self.attributes.get(HYBRID)
        return value if isinstance(value, Mapping) else {}

    @property
    def interleaving(self) -> tuple[str, str, Interleaving] | None:
        """(baseline, candidate, the page) for an interleaved search; None otherwise."""
        spec = self.hybrid.get("interleaving")
        if not isinstance(spec, Mapping):
            return None
        teams = spec.get("teams")
        if not isinstance(teams, list) or len(teams) != len(self.hit_ids):
            raise InputError(
                f"query {self.query_id}: query_attributes.hybrid.interleaving.teams must hold one team per hit id"
            )
        try:
            page = Interleaving(self.hit_ids, tuple(Team(t) for t in teams))
        except ValueError as exc:
            raise InputError(f"query {self.query_id}: {exc}") from exc
        return str(spec.get("baseline")), str(spec.get("candidate")), page


@dataclass(frozen=True)
class Event:
    """One user action as ``ubi_events`` holds it (the fields the adapter reads)."""

    action: str
    query_id: str | None
    client_id: str | None
    object_id: str | None
    position: int | None  # 0-based, see the module docstring
    timestamp: str


def normalized_query(text: str) -> str:
    return " ".join(text.split()).lower()


def query_key(text: str) -> str:
    """A stand-in for a query's text that groups its searches without storing it: SHA-256 of the
    normalised text. A short query can be guessed back from it by trying candidates (say so to
    whoever asks for no query text); it is not an anonymisation."""
    return "sha256:" + hashlib.sha256(normalized_query(text).encode("utf-8")).hexdigest()


# -- building records ----------------------------------------------------------------------------
def query_record(
    *,
    query_id: str,
    client_id: str,
    user_query: str,
    hit_ids: Sequence[str],
    timestamp: str,
    hybrid: Mapping[str, Any] | None = None,
    store_text: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``ubi_queries`` document of one search. ``store_text`` False writes an empty
    ``user_query`` and the text's :func:`query_key` in ``query_attributes.hybrid.query_key``."""
    _check_id("query_id", query_id)
    _check_id("client_id", client_id)
    own = dict(hybrid or {})
    if not store_text:
        own["query_key"] = query_key(user_query)
    return {
        "query_id": query_id,
        "client_id": client_id,
        "user_query": user_query if store_text else "",
        "timestamp": timestamp,
        "query_response_id": query_id,
        "query_response_hit_ids": [str(h) for h in hit_ids],
        "query_attributes": {**(extra or {}), HYBRID: own},
        "application": APPLICATION,
    }


def interleaving_attributes(baseline: str, candidate: str, page: Interleaving) -> dict[str, Any]:
    return {"baseline": baseline, "candidate": candidate, "teams": [t.value for t in page.teams]}


def click_event(
    *,
    query_id: str,
    client_id: str,
    object_id: str,
    position: int,
    timestamp: str,
    action: str = CLICK,
    object_id_field: str = "_id",
) -> dict[str, Any]:
    """An event on one hit of a page (``position`` 0-based), as a page or the simulator sends it."""
    return {
        "action_name": action,
        "query_id": query_id,
        "client_id": client_id,
        "timestamp": timestamp,
        "message_type": "CLICK_THROUGH" if action == CLICK else action.upper(),
        "application": APPLICATION,
        "event_attributes": {
            "object": {"object_id": object_id, "object_id_field": object_id_field},
            "position": {"ordinal": position},
        },
    }


def _check_id(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value or len(value) > MAX_ID:
        raise InputError(f"{name} must be a string of 1 to {MAX_ID} characters (UBI 1.0), got {value!r}")


# -- reading records -----------------------------------------------------------------------------
def parse_query(doc: Mapping[str, Any]) -> QueryRecord:
    """A ``ubi_queries`` document (the plugin's or the adapter's) as a :class:`QueryRecord`."""
    query_id = doc.get("query_id")
    if not isinstance(query_id, str) or not query_id:
        raise InputError(f"a ubi_queries document without a query_id: {_short(doc)}")
    hits = doc.get("query_response_hit_ids") or []
    if isinstance(hits, str):  # a keyword field holding one value comes back as a string
        hits = [hits]
    attributes = doc.get("query_attributes")
    return QueryRecord(
        query_id,
        str(doc.get("client_id") or ""),
        str(doc.get("user_query") or ""),
        tuple(str(h) for h in hits),
        str(doc.get("timestamp") or ""),
        attributes if isinstance(attributes, Mapping) else {},
    )


def parse_event(doc: Mapping[str, Any]) -> Event:
    """A ``ubi_events`` document (or a ``POST /events`` body) as an :class:`Event`; the position's
    ordinal may be an integer or the 1.0 JSON Schema's ``{"index": n}``."""
    action = doc.get("action_name")
    if not isinstance(action, str) or not action:
        raise InputError(f"an event without an action_name: {_short(doc)}")
    attributes = _mapping(doc.get("event_attributes"))
    obj = _mapping(attributes.get("object"))
    object_id = obj.get("object_id")
    return Event(
        action,
        _opt_str(doc.get("query_id")),
        _opt_str(doc.get("client_id")),
        None if object_id is None else str(object_id),
        ordinal(attributes),
        str(doc.get("timestamp") or ""),
    )


def ordinal(attributes: Mapping[str, Any]) -> int | None:
    position = attributes.get("position")
    if not isinstance(position, Mapping):
        return None
    value = position.get("ordinal")
    if isinstance(value, Mapping):
        value = value.get("index")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"event_attributes.position.ordinal must be a position (an integer >= 0), got {value!r}")
    return value


def stored_event(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An event as the adapter stores it: the ordinal as an integer (see the module docstring)."""
    attributes = doc.get("event_attributes")
    if not isinstance(attributes, Mapping) or not isinstance(attributes.get("position"), Mapping):
        return dict(doc)
    position = dict(attributes["position"])
    if isinstance(position.get("ordinal"), Mapping):
        position["ordinal"] = ordinal(attributes)
    return {**doc, "event_attributes": {**attributes, "position": position}}


def with_team(event: Mapping[str, Any], team: str) -> dict[str, Any]:
    """``event`` with the interleaving team of the hit it names (``event_attributes.hybrid.team``: ``baseline`` or
    ``candidate``), so ``ubi_events`` answers "clicks per team" without the query records. The reports still credit
    clicks from the page the query record holds."""
    attributes = _mapping(event.get("event_attributes"))
    own = _mapping(attributes.get(HYBRID))
    return {**event, "event_attributes": {**attributes, HYBRID: {**own, "team": team}}}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _short(doc: Mapping[str, Any]) -> str:
    text = json.dumps(doc, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


# -- the JSON Schemas ----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _schema_text(kind: str) -> str:
    path = resources.files("adapter") / "schemas" / SCHEMAS[kind]
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AssetError(f"adapter/schemas/{SCHEMAS[kind]} is missing from the package") from None


def schema(kind: str) -> dict[str, Any]:
    """A fresh parsed copy of the ``query`` or ``event`` JSON Schema."""
    if kind not in SCHEMAS:
        raise InputError(f"unknown UBI schema {kind!r}; expected one of {', '.join(SCHEMAS)}")
    parsed: dict[str, Any] = json.loads(_schema_text(kind))
    return parsed


def validate(kind: str, document: Any) -> None:
    """Raise :class:`InputError` naming every place ``document`` breaks the UBI ``kind`` schema
    (``query`` or ``event``). Needs ``jsonschema`` (the ``serve`` and ``test`` extras bring it)."""
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        raise InputError("validating UBI records needs jsonschema: pip install jsonschema") from None
    validator = jsonschema.Draft202012Validator(
        schema(kind), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:20]]
        raise InputError(f"not a valid UBI {kind} ({SCHEMAS[kind]}, UBI {SPEC_VERSION}):\n" + "\n".join(lines))
