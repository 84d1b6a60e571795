"""The query DSL every engine shares, as pure functions. User text only ever goes into
``match``-type queries (never a query-string query, never a script).

Leg order is fixed everywhere: the text leg (BM25) first, the vector leg (k-NN) second; weights
and explanations follow that order (:data:`adapter.fusion.LEGS`). The vector leg and the hybrid
request differ by engine and live in :mod:`adapter.engines`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from adapter.errors import InputError


@dataclass(frozen=True)
class SentRequest:
    """One request a search sent, exactly as sent: to reproduce it from any client (``--show-query``)."""

    method: str
    path: str  # e.g. /docs/_search
    params: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"search_pipeline": "docs-rrf"}
    body: Any = None  # the JSON body; for _msearch the list of header/body lines

    def as_text(self) -> str:
        """``POST /docs/_search?search_pipeline=...`` and the body (NDJSON for ``_msearch``)."""
        query = "&".join(f"{k}={v}" for k, v in self.params.items())
        head = f"{self.method} {self.path}" + (f"?{query}" if query else "")
        if isinstance(self.body, list):
            return head + "\n" + "\n".join(json.dumps(line, ensure_ascii=False) for line in self.body)
        return head + ("" if self.body is None else "\n" + json.dumps(self.body, indent=2, ensure_ascii=False))


TOP_LEVEL_FILTER_FIELDS = ("parent_id", "chunk_index")
MAX_QUERY_CHARS = 10_000


def clean_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InputError("the query is empty; give some text to search for")
    query = query.strip()
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    return query


@dataclass(frozen=True)
class TextLeg:
    """How the BM25 leg reads the text fields. ``fields`` may carry boosts (``title^2``)."""

    fields: tuple[str, ...] = ("title", "text")
    type: str = "most_fields"  # most_fields sums per-field BM25, like one field holding both
    operator: str = "or"

    def body(self, query: str) -> dict[str, Any]:
        if len(self.fields) == 1 and "^" not in self.fields[0]:
            return {"match": {self.fields[0]: {"query": query, "operator": self.operator}}}
        return {
            "multi_match": {"query": query, "fields": list(self.fields), "type": self.type, "operator": self.operator}
        }


def filter_field(key: str) -> str:
    """The index field a filter key addresses: ``metadata.<key>``, unless dotted or a top-level id field."""
    if not key or not isinstance(key, str):
        raise InputError(f"filter field names must be non-empty strings, got {key!r}")
    return key if ("." in key or key in TOP_LEVEL_FILTER_FIELDS) else f"metadata.{key}"


def query_words(query: str) -> int:
    """Distinct words in ``query``: each becomes one term clause per text field on the server."""
    return len({w.lower() for w in re.findall(r"\w+", query)})


def field_boosts(fields: Sequence[str]) -> list[tuple[str, float]]:
    """``("title^0.5", "text")`` -> ``[("title", 0.5), ("text", 1.0)]``."""
    out = []
    for spec in fields:
        name, _, boost = spec.partition("^")
        try:
            out.append((name, float(boost) if boost else 1.0))
        except ValueError:
            raise InputError(f"field boost must be a number: {spec!r}") from None
    return out


def termvectors_body(query: str, leg: TextLeg) -> dict[str, Any]:
    """``_termvectors`` of the query as an artificial document: its analysed terms in each query
    field, with their document frequencies (what BM25's idf is made of)."""
    names = [name for name, _ in field_boosts(leg.fields)]
    return {
        "doc": {name: query for name in names},
        "fields": names,
        "term_statistics": True,
        "field_statistics": True,
        "positions": False,
        "offsets": False,
        "payloads": False,
    }


@dataclass(frozen=True)
class Clause:
    """A filter clause the adapter built itself from a framework's filter grammar (OR, NOT, exists:
    what ``key=value`` filters cannot say; :mod:`adapter.integrations._filters`), given as the value
    of any key of ``filters``. It is never read from JSON, so user input cannot bring a raw clause."""

    body: Mapping[str, Any]
    fields: tuple[str, ...] = ()  # the index fields it reads (for the notice on fields the mapping lacks)


def filter_clauses(filters: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``{"lang": "es", "year": {"gte": 2020}, "tags": ["a", "b"]}`` -> term / range / terms clauses.

    Keys without a dot address ``metadata.<key>`` (except the top-level id fields); a
    :class:`Clause` value is sent as it is.
    """
    clauses: list[dict[str, Any]] = []
    for key, value in (filters or {}).items():
        if isinstance(value, Clause):
            clauses.append(dict(value.body))
            continue
        field = filter_field(key)
        if isinstance(value, Mapping):
            unknown = set(value) - {"gt", "gte", "lt", "lte"}
            if unknown:
                raise InputError(
                    f"range filter on {key!r} has unknown operators {sorted(unknown)}; use gt, gte, lt, lte"
                )
            clauses.append({"range": {field: dict(value)}})
        elif isinstance(value, (list, tuple, set)):
            clauses.append({"terms": {field: list(value)}})
        else:
            clauses.append({"term": {field: value}})
    return clauses


def named_query(query: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``query`` with ``_name`` set, so hits report it in ``matched_queries``.

    The name goes inside the query's clause; for field-keyed clauses (``knn``, ``match``) inside
    the field's options.
    """
    ((kind, clause),) = query.items()
    clause = dict(clause)
    if kind in ("knn", "match") and len(clause) == 1 and isinstance(next(iter(clause.values())), Mapping):
        ((field_name, options),) = clause.items()
        return {kind: {field_name: {**options, "_name": name}}}
    return {kind: {**clause, "_name": name}}


def text_query(query: str, leg: TextLeg, filters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    clauses = filter_clauses(filters)
    match = leg.body(query)
    return {"bool": {"must": [match], "filter": clauses}} if clauses else match


def search_body(
    query: dict[str, Any],
    *,
    size: int,
    from_: int = 0,
    exclude_source: Sequence[str] = (),
    explain: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"size": int(size), "query": query}
    if from_:
        body["from"] = int(from_)
    if exclude_source:
        body["_source"] = {"excludes": list(exclude_source)}
    if explain:
        body["explain"] = True
    return body


def msearch_lines(index: str, bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Header/body pairs for ``_msearch``. (2.19 accepts no named search pipeline in ``_msearch``.)"""
    lines: list[dict[str, Any]] = []
    for body in bodies:
        lines += [{"index": index}, body]
    return lines
