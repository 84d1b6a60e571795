"""What an index's metadata holds: its keys and their types, the distinct values of a key, how many
there are, and a key's smallest and largest value, over the whole index or the entries a selection
matches. Each is one search (aggregations or sorts, no documents read) through the engine port; the
values containing a search term on a number, boolean or date key read that key's values first (no
script: a cluster may have no painless).

Values come back in the type the mapping gives the key (``long``: int, ``float``: the float as
written, not float32's widened double; ``boolean``: bool; ``keyword``: str), so a key declared from
its first value (:mod:`adapter.index.metadata`) answers in that value's type. The facets of the
Haystack document store (``get_metadata_fields_info``, ``count_unique_metadata_by_filter``,
``get_metadata_field_min_max``, ``get_metadata_field_unique_values``) are these.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from adapter.engines import Cluster
from adapter.errors import InputError
from adapter.index.catalog import IndexInfo
from adapter.index.documents import METADATA_FIELD

_INTEGERS = {"long", "integer", "short", "byte", "unsigned_long"}
_FLOATS = {"float", "half_float", "scaled_float", "double"}
PAGE = 1_000  # distinct values fetched per composite page while walking to an offset
_STRINGS = {"keyword", "constant_keyword", "wildcard", "text"}  # kinds a `wildcard` query reads
MAX_TERMS = 65_536  # index.max_terms_count's default: the most values one `terms` query may name


def metadata_types(mapping: Mapping[str, Any]) -> dict[str, str]:
    """``{key: type}`` for every metadata key a ``GET <index>/_mapping`` answer declares; a key inside an
    object key is dotted (``author.name``), as filters address it. Pure."""
    out: dict[str, str] = {}

    def walk(prefix: str, properties: Mapping[str, Any]) -> None:
        for name, body in properties.items():
            if not isinstance(body, Mapping):
                continue
            if "properties" in body:
                walk(f"{prefix}{name}.", body["properties"] or {})
            else:
                out[f"{prefix}{name}"] = str(body.get("type", "object"))

    for body in mapping.values():
        if isinstance(body, Mapping):
            props = ((body.get("mappings") or {}).get("properties") or {}).get(METADATA_FIELD) or {}
            walk("", props.get("properties") or {})
    return out


def typed(value: Any, kind: str) -> Any:
    """A value as the server answers it in an aggregation or sort (numbers widened to double,
    booleans as 0/1 or "true"), back in the key's type. Pure."""
    if value is None:
        return None
    if kind in _INTEGERS:
        return int(value)
    if kind in ("float", "half_float"):
        return float(
            str(np.float32(value))
        )  # the float32 the index keeps, as its shortest decimal: 0.6, not 0.6000000238
    if kind in _FLOATS:
        return float(value)
    if kind == "boolean":
        return value in (True, 1, "true")
    return value


class MetadataFacets:
    """The metadata facets of the index behind ``info`` (:func:`adapter.index.catalog.read_index_info`)."""

    def __init__(self, cluster: Cluster, info: IndexInfo) -> None:
        self.cluster, self.info = cluster, info

    def types(self) -> dict[str, str]:
        """Every metadata key the mapping declares, with its type (keys of deleted entries stay declared)."""
        return metadata_types(
            self.cluster.get_mapping(self.info.index, action=f"reading the mapping of {self.info.alias}")
        )

    def present(self, query: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The metadata keys at least one entry (of those ``query`` matches) has a value for, with their types."""
        types = self.types()
        if not types:
            return {}
        aggs = {"present": {"filters": {"filters": {k: {"exists": {"field": _field(k)}} for k in types}}}}
        answer = self._aggregate(query, aggs, "finding the metadata keys in use")
        buckets = answer["present"]["buckets"]
        return {k: t for k, t in types.items() if buckets.get(k, {}).get("doc_count", 0) > 0}

    def distinct_counts(self, keys: Sequence[str], query: Mapping[str, Any] | None = None) -> dict[str, int]:
        """How many distinct values each of ``keys`` has among the entries ``query`` matches (a
        cardinality aggregation: exact up to 3,000 values, approximate above). A key the index does
        not declare is an :class:`InputError`."""
        self._known(keys)
        if not keys:
            return {}
        aggs = {f"k{i}": {"cardinality": {"field": _field(k)}} for i, k in enumerate(keys)}
        answer = self._aggregate(query, aggs, "counting distinct metadata values")
        return {k: int(answer[f"k{i}"]["value"]) for i, k in enumerate(keys)}

    def bounds(self, key: str) -> tuple[Any, Any]:
        """``(smallest, largest)`` value of ``key`` over the index (of a list: its elements), in the key's
        type; ``(None, None)`` when no entry has it or the index does not declare it."""
        kind = self.types().get(key)
        if kind is None:
            return None, None
        bodies = [
            {
                "size": 1,
                "_source": False,
                "query": {"exists": {"field": _field(key)}},
                "sort": [{_field(key): {"order": order, "mode": "min" if order == "asc" else "max"}}],
            }
            for order in ("asc", "desc")
        ]
        from adapter.engines import responses

        answers = responses.msearch_responses(
            self.cluster.msearch(self.info.alias, bodies, action=f"reading the range of {key}"),
            f"reading the range of {key}",
        )
        ends = [a["hits"]["hits"][0]["sort"][0] if a["hits"]["hits"] else None for a in answers]
        return typed(ends[0], kind), typed(ends[1], kind)

    def values(
        self,
        key: str,
        query: Mapping[str, Any] | None = None,
        *,
        contains: str | None = None,
        offset: int = 0,
        size: int = 10,
    ) -> tuple[list[Any], int]:
        """``(values, total)``: the distinct values of ``key`` in ascending order from ``offset`` (at most
        ``size``) among the entries ``query`` matches whose value contains ``contains`` (case-insensitive,
        on the value, never the text), and how many such values there are (a cardinality: exact up to
        3,000). A key the index does not declare has none."""
        for name, n, low in (("offset", offset, 0), ("size", size, 1)):
            if isinstance(n, bool) or not isinstance(n, int) or n < low:
                raise InputError(f"{name} must be an integer >= {low}, got {n!r}")
        kind = self.types().get(key)
        if kind is None:
            return [], 0
        clauses = [dict(query)] if query else []
        if contains:
            matching = self._containing(key, kind, query, contains)
            if matching is None:
                return [], 0
            clauses.append(matching)
        where = {"bool": {"filter": clauses}} if clauses else None
        after = self._skip(key, where, offset)
        if offset and after is None:
            return [], self._aggregate(
                where, {"total": {"cardinality": {"field": _field(key)}}}, f"counting values of {key}"
            )["total"]["value"]
        answer = self._aggregate(
            where,
            {**_composite(key, size, after), "total": {"cardinality": {"field": _field(key)}}},
            f"reading the values of {key}",
        )
        return [typed(b["key"]["v"], kind) for b in answer["values"]["buckets"]], int(answer["total"]["value"])

    def _containing(self, key: str, kind: str, query: Mapping[str, Any] | None, term: str) -> dict[str, Any] | None:
        """The clause for entries whose value of ``key`` contains ``term`` (case-insensitive), with no script
        (a cluster may have no painless: Elasticsearch's test distribution has none). A string key asks a
        case-insensitive ``wildcard``; a number, boolean or date has no text to match on the server, so its
        distinct values (among those ``query`` matches) are read and the ones whose text, as the key's type
        writes it (``0.6``, ``true``), contains ``term`` are asked by ``terms``. None: no value contains it."""
        if kind in _STRINGS:
            return {"wildcard": {_field(key): {"value": f"*{wildcard_escape(term)}*", "case_insensitive": True}}}
        where = dict(query) if query else None
        found = [v for v in (typed(raw, kind) for raw in self._walk(key, where)) if term.lower() in _text(v).lower()]
        if not found:
            return None
        chunks = [{"terms": {_field(key): found[i : i + MAX_TERMS]}} for i in range(0, len(found), MAX_TERMS)]
        return chunks[0] if len(chunks) == 1 else {"bool": {"should": chunks, "minimum_should_match": 1}}

    def _walk(self, key: str, where: Mapping[str, Any] | None) -> list[Any]:
        """Every distinct value of ``key`` (as the server answers it) among the entries ``where`` matches, a
        composite page of :data:`PAGE` at a time."""
        values: list[Any] = []
        after: dict[str, Any] | None = None
        while True:
            page = self._aggregate(where, _composite(key, PAGE, after), f"reading the values of {key}")["values"]
            values += [b["key"]["v"] for b in page["buckets"]]
            after = page.get("after_key")
            if len(page["buckets"]) < PAGE or after is None:
                return values

    def _skip(self, key: str, where: Mapping[str, Any] | None, offset: int) -> dict[str, Any] | None:
        """The composite cursor after the first ``offset`` values (None: there are not that many)."""
        after: dict[str, Any] | None = None
        while offset > 0:
            step = min(PAGE, offset)
            page = self._aggregate(where, _composite(key, step, after), f"paging the values of {key}")["values"]
            if len(page["buckets"]) < step:
                return None
            after, offset = page.get("after_key"), offset - step
        return after

    def _known(self, keys: Sequence[str]) -> None:
        unknown = sorted(set(keys) - set(self.types()))
        if unknown:
            raise InputError(f"no entry of {self.info.alias} was ever written with the metadata keys {unknown}")

    def _aggregate(self, query: Mapping[str, Any] | None, aggs: Mapping[str, Any], action: str) -> dict[str, Any]:
        body = {
            "size": 0,
            "track_total_hits": False,
            "query": dict(query) if query else {"match_all": {}},
            "aggs": dict(aggs),
        }
        answer: dict[str, Any] = self.cluster.search(self.info.alias, body, action=f"{action} of {self.info.alias}")
        return answer.get("aggregations") or {}


def wildcard_escape(term: str) -> str:
    """``term`` as literal text inside a ``wildcard`` pattern (``*``, ``?`` and ``\\`` escaped). Pure."""
    return "".join("\\" + c if c in "*?\\" else c for c in term)


def _text(value: Any) -> str:
    """A value's text as its type writes it: booleans ``true``/``false`` (as JSON and painless do), not Python's."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _field(key: str) -> str:
    return f"{METADATA_FIELD}.{key}"


def _composite(key: str, size: int, after: Mapping[str, Any] | None) -> dict[str, Any]:
    composite: dict[str, Any] = {"size": size, "sources": [{"v": {"terms": {"field": _field(key)}}}]}
    if after is not None:
        composite["after"] = dict(after)
    return {"values": {"composite": composite}}
