"""Haystack's filter grammar (``haystack.utils.filters``, 2.x) as one query clause on an adapter
index. Pure: no framework imported.

Comparisons (``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``not in``) on ``meta.<key>``
(stored at ``metadata.<key>``) or ``id``, joined by ``AND``, ``OR`` and ``NOT`` (NOT of the AND of
its conditions), with Haystack's meanings, those of its in-memory store:

- ``== None``: the field is missing; ``!= None``: it is present; ``!= v`` also matches documents
  without the field (``not in`` likewise);
- ``>``, ``>=``, ``<``, ``<=`` take a number or an ISO 8601 date (compared as text: the adapter
  stores strings as ``keyword``, and ISO dates of one format sort as text); against None they match
  nothing; another string or a list is an error;
- ``in`` and ``not in`` take a list (a tuple or a single value is an error).

A malformed filter (no ``operator``, ``conditions``, ``field`` or ``value``; an unknown operator)
raises :class:`FilterGrammarError` (the store turns it into Haystack's ``FilterError``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from adapter.engines.dsl import Clause
from adapter.errors import InputError
from adapter.index.documents import METADATA_FIELD

_RANGE = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
_NOTHING: dict[str, Any] = {"bool": {"must_not": [{"match_all": {}}]}}


class FilterGrammarError(InputError):
    """A filter that does not follow Haystack's grammar."""


def haystack_clause(filters: Mapping[str, Any]) -> Clause:
    """One clause that selects what ``filters`` selects, with the fields it names."""
    fields: list[str] = []
    body = _node(filters, fields)
    return Clause(body, tuple(dict.fromkeys(fields)))


def _node(node: Any, fields: list[str]) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        raise FilterGrammarError(f"a filter is a mapping, got {type(node).__name__}")
    if "field" in node:
        return _comparison(node, fields)
    if "operator" not in node:
        raise FilterGrammarError("a logical filter needs 'operator' (AND, OR, NOT)")
    if "conditions" not in node:
        raise FilterGrammarError("a logical filter needs 'conditions'")
    parts = [_node(c, fields) for c in node["conditions"]]
    op = str(node["operator"]).upper()
    if op == "AND":
        return {"bool": {"filter": parts}}
    if op == "OR":
        return {"bool": {"should": parts, "minimum_should_match": 1}}
    if op == "NOT":
        return {"bool": {"must_not": [{"bool": {"filter": parts}}]}}
    raise FilterGrammarError(f"unknown logical operator {node['operator']!r}: AND, OR or NOT")


def _field(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise FilterGrammarError(f"a condition's field is a name, got {name!r}")
    if name == "id":
        return "_id"
    if name.startswith("meta."):
        return f"{METADATA_FIELD}.{name[len('meta.'):]}"
    raise FilterGrammarError(f"field {name!r}: filters address meta.<key> or id")


def _comparison(node: Mapping[str, Any], fields: list[str]) -> dict[str, Any]:
    for key in ("operator", "value"):
        if key not in node:
            raise FilterGrammarError(f"a condition needs {key!r}: {dict(node)}")
    field, op, value = _field(node["field"]), node["operator"], node["value"]
    fields.append(field)
    if op == "==":
        return {"bool": {"must_not": [{"exists": {"field": field}}]}} if value is None else {"term": {field: value}}
    if op == "!=":
        return {"exists": {"field": field}} if value is None else {"bool": {"must_not": [{"term": {field: value}}]}}
    if op in _RANGE:
        return _range(field, op, value)
    if op in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterGrammarError(f"{op!r} on {node['field']!r} takes a list, got {type(value).__name__}")
        terms = {"terms": {field: value}}
        return terms if op == "in" else {"bool": {"must_not": [terms]}}
    raise FilterGrammarError(f"unknown operator {op!r}: ==, !=, >, >=, <, <=, in, not in")


def _range(field: str, op: str, value: Any) -> dict[str, Any]:
    if value is None:
        return _NOTHING
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise FilterGrammarError(f"{op!r} compares numbers or ISO dates, got the string {value!r}") from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FilterGrammarError(f"{op!r} compares numbers or ISO dates, got {type(value).__name__}")
    return {"range": {field: {_RANGE[op]: value}}}
