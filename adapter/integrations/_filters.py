"""Haystack's filter grammar (``haystack.utils.filters``, 2.x) as one query clause on an adapter
index. Pure: no framework imported.

Comparisons (``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``not in``) on ``meta.<key>``
(stored at ``metadata.<key>``), ``id`` or ``content``, joined by ``AND``, ``OR`` and ``NOT`` (NOT of
the AND of its conditions), with Haystack's meanings, those of its in-memory store:

- ``== None``: the field is missing; ``!= None``: it is present; ``!= v`` also matches documents
  without the field (``not in`` likewise);
- ``>``, ``>=``, ``<``, ``<=`` take a number or an ISO 8601 date (compared as text: the adapter
  stores strings as ``keyword``, and ISO dates of one format sort as text); against None they match
  nothing; another string or a list is an error;
- ``in`` and ``not in`` take a list (a tuple or a single value is an error);
- ``content`` is the index's body text, analysed: ``==`` holds where the text contains the value as
  a phrase (``match_phrase``: an index of analysed text has no exact copy to compare), ``!=`` where
  it does not, ``in`` / ``not in`` any / none of the phrases; ``== None`` matches nothing (every
  entry has text); ranges on it are an error.

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


CONTENT = "content"


def haystack_clause(filters: Mapping[str, Any], *, content_field: str = "text") -> Clause:
    """One clause that selects what ``filters`` selects, with the fields it names; ``content`` is
    ``content_field`` (the index's body field, ``IndexInfo.layout.body_field``)."""
    fields: list[str] = []
    body = _node(filters, fields, content_field)
    return Clause(body, tuple(dict.fromkeys(fields)))


def _node(node: Any, fields: list[str], content_field: str = "text") -> dict[str, Any]:
    if not isinstance(node, Mapping):
        raise FilterGrammarError(f"a filter is a mapping, got {type(node).__name__}")
    if "field" in node:
        if node["field"] == CONTENT:
            return _content(node, fields, content_field)
        return _comparison(node, fields)
    if "operator" not in node:
        raise FilterGrammarError("a logical filter needs 'operator' (AND, OR, NOT)")
    if "conditions" not in node:
        raise FilterGrammarError("a logical filter needs 'conditions'")
    parts = [_node(c, fields, content_field) for c in node["conditions"]]
    op = str(node["operator"]).upper()
    if op == "AND":
        return {"bool": {"filter": parts}}
    if op == "OR":  # of no conditions: nothing (Haystack's any([])); the server reads an empty bool as match_all
        return {"bool": {"should": parts, "minimum_should_match": 1}} if parts else _NOTHING
    if op == "NOT":
        return {"bool": {"must_not": [{"bool": {"filter": parts}}]}}
    raise FilterGrammarError(f"unknown logical operator {node['operator']!r}: AND, OR or NOT")


def _field(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise FilterGrammarError(f"a condition's field is a name, got {name!r}")
    if name == "id":
        return "_id"
    if name.startswith("meta."):
        return f"{METADATA_FIELD}.{name[len('meta.') :]}"
    raise FilterGrammarError(f"field {name!r}: filters address meta.<key>, id or content")


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


def _content(node: Mapping[str, Any], fields: list[str], content_field: str) -> dict[str, Any]:
    for key in ("operator", "value"):
        if key not in node:
            raise FilterGrammarError(f"a condition needs {key!r}: {dict(node)}")
    op, value = node["operator"], node["value"]
    fields.append(content_field)
    if op in ("in", "not in"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FilterGrammarError(f"{op!r} on 'content' takes a list of strings, got {value!r}")
        any_of = (
            {"bool": {"should": [_phrase(content_field, v) for v in value], "minimum_should_match": 1}}
            if value
            else _NOTHING
        )
        return any_of if op == "in" else {"bool": {"must_not": [any_of]}}
    if op not in ("==", "!="):
        raise FilterGrammarError(
            f"operator {op!r} on 'content': the text is compared with ==, !=, in or not in "
            "(as a phrase of the analysed text), never ordered"
        )
    if value is None:
        return _NOTHING if op == "==" else {"match_all": {}}
    if not isinstance(value, str):
        raise FilterGrammarError(f"{op!r} on 'content' takes a string, got {type(value).__name__}")
    return _phrase(content_field, value) if op == "==" else {"bool": {"must_not": [_phrase(content_field, value)]}}


def _phrase(field: str, value: str) -> dict[str, Any]:
    return {"match_phrase": {field: {"query": value}}}


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


# LlamaIndex's operators (``FilterOperator`` values) in Haystack's grammar; the rest are built below.
_LLAMA_SAME = {
    "==": "==",
    "!=": "!=",
    ">": ">",
    ">=": ">=",
    "<": "<",
    "<=": "<=",
    "in": "in",
    "nin": "not in",
    "any": "in",
}


def llamaindex_clause(filters: Any) -> Clause:
    """LlamaIndex ``MetadataFilters`` (read by their attributes: no framework imported) as one clause,
    with the meanings of LlamaIndex's own in-memory store (``build_metadata_filter_fn``): ``and``,
    ``or``, ``not`` (none of its filters holds), nested filters; ``==``, ``!=`` and ``nin`` (both
    match an entry without the key), ranges, ``in``, ``any``, ``all``, ``contains`` (a list value
    holds it), ``is_empty`` (missing, ``""`` or ``[]``). ``text_match`` is refused: metadata is stored
    as exact values, a substring search would need another mapping."""
    return haystack_clause(_llama_node(filters))


def _llama_node(filters: Any) -> dict[str, Any]:
    condition = str(getattr(filters.condition, "value", filters.condition) or "and").lower()
    parts = [_llama_node(f) if hasattr(f, "filters") else _llama_leaf(f) for f in filters.filters]
    if condition == "and":
        return {"operator": "AND", "conditions": parts}
    if condition == "or":
        return {"operator": "OR", "conditions": parts}
    if condition == "not":
        return {"operator": "NOT", "conditions": [{"operator": "OR", "conditions": parts}]}
    raise FilterGrammarError(f"unknown filter condition {condition!r}: and, or, not")


def _llama_leaf(item: Any) -> dict[str, Any]:
    op, field, value = str(getattr(item.operator, "value", item.operator)), f"meta.{item.key}", item.value
    if op in _LLAMA_SAME:
        return {"field": field, "operator": _LLAMA_SAME[op], "value": value}
    if op == "contains":
        return {"field": field, "operator": "==", "value": value}
    if op == "all":
        if not isinstance(value, list):
            raise FilterGrammarError(f"'all' on {item.key!r} takes a list, got {type(value).__name__}")
        return {"operator": "AND", "conditions": [{"field": field, "operator": "==", "value": v} for v in value]}
    if op == "is_empty":
        return {
            "operator": "OR",
            "conditions": [
                {"field": field, "operator": "==", "value": None},
                {"field": field, "operator": "==", "value": ""},
            ],
        }
    raise FilterGrammarError(
        f"operator {op!r} on {item.key!r} is not supported: metadata is stored as exact values "
        "(==, !=, ranges, in, nin, any, all, contains, is_empty)"
    )
