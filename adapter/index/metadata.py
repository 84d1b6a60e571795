"""The metadata mapping, declared by the adapter's ingest. Pure.

An index's ``metadata`` object is ``dynamic: strict``: a document with a metadata key the mapping
does not have is refused, so other writers (LlamaIndex's ``_node_content``, ``doc_id``, ...) cannot
grow the mapping. The adapter's ingest declares each key it has not seen yet, with the type
dynamic mapping gave it before (``metadata_strings`` made every string a keyword), before the
rows that carry it:

=================  ============================================
value              declared as
=================  ============================================
string             ``keyword`` (filters, facets, sort)
integer            ``long``
float              ``float``
boolean            ``boolean``
mapping            ``object`` with its keys declared the same way
list               the type of its first non-null element
null, empty list   nothing yet (declared when a value comes)
=================  ============================================

A later value of another type is refused by the server for its row alone, as with dynamic mapping.
Unlike dynamic mapping, a string that looks like a date stays a ``keyword`` (ISO dates still
sort and range-filter correctly as keywords).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from adapter.index.documents import METADATA_FIELD


def value_mapping(value: Any) -> dict[str, Any] | None:
    """The mapping a metadata value gets, or None when it says nothing yet (null, empty list)."""
    if value is None:
        return None
    if isinstance(value, bool):  # before int: bool is an int
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "long"}
    if isinstance(value, float):
        return {"type": "float"}
    if isinstance(value, str):
        return {"type": "keyword"}
    if isinstance(value, Mapping):
        props = {str(k): m for k, m in ((k, value_mapping(v)) for k, v in value.items()) if m is not None}
        return {"type": "object", "properties": props} if props else None
    if isinstance(value, (list, tuple)):
        for item in value:
            found = value_mapping(item)
            if found is not None:
                return found
        return None
    return {"type": "keyword"}  # anything else is sent as its string


def undeclared(declared: Mapping[str, Any], documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The properties to add to ``declared`` (the live ``metadata.properties``) so that every
    document's metadata fits; the first value seen of a new key decides its type. Empty: nothing to add."""
    added: dict[str, Any] = {}
    for metadata in documents:
        for key, value in metadata.items():
            _add(declared, added, str(key), value)
    return added


def _add(declared: Mapping[str, Any], added: dict[str, Any], key: str, value: Any) -> None:
    mapping = value_mapping(value)
    if mapping is None:
        return
    known = declared.get(key) or added.get(key)
    if known is None:
        added[key] = mapping
        return
    if mapping.get("type") == "object" and ("properties" in known or known.get("type") == "object"):
        inner = _object_value(value)
        sub_added: dict[str, Any] = {}
        for sub_key, sub_value in inner.items():
            _add(known.get("properties", {}), sub_added, str(sub_key), sub_value)
        if sub_added:
            target = added.setdefault(key, {"type": "object", "properties": {}})
            target.setdefault("properties", {}).update(sub_added)


def _object_value(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    for item in value if isinstance(value, (list, tuple)) else ():
        if isinstance(item, Mapping):
            return item
    return {}


def merge(declared: Mapping[str, Any], added: Mapping[str, Any]) -> dict[str, Any]:
    """``declared`` with ``added`` put in, as the server merges a put_mapping (fresh dicts)."""
    out = {k: dict(v) for k, v in declared.items()}
    for key, mapping in added.items():
        if key in out and "properties" in mapping:
            out[key]["properties"] = merge(out[key].get("properties", {}), mapping["properties"])
        else:
            out[key] = dict(mapping)
    return out


def put_body(added: Mapping[str, Any]) -> dict[str, Any]:
    """The put_mapping body that declares ``added`` under ``metadata``."""
    return {"properties": {METADATA_FIELD: {"properties": dict(added)}}}
