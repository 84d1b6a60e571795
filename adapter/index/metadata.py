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
list               the type of its elements (nulls left out); integers
                   and floats: ``float``; other mixed plain values
                   (``[1, "a"]``, ``[true, 1]``): ``keyword``, which
                   takes them all, so they read back as written
null, empty list   ``keyword``, when no row of the batch gives the key a value
empty mapping      ``object``, its keys declared as they come
=================  ============================================

A strict mapping refuses even a null under an undeclared key (``strict_dynamic_mapping_exception``),
so a key whose values in a batch are all empty (a loader's missing author or page title) is declared
``keyword``, the type a later string needs; its row lands and reads back as written (the source is
kept verbatim). A later number or boolean under it is stored and read back as written too, but
filters and sorts as text. A later value of another type (an object under a keyword) is refused by
the server for its row alone, as with dynamic mapping. Unlike dynamic mapping, a string that looks
like a date stays a ``keyword`` (ISO dates still sort and range-filter correctly as keywords).

What the index cannot hold as written is refused at write time, for its row alone
(:func:`metadata_problem`): a key named ``metadata`` (the readers lift a ``metadata.metadata``
object's keys up, as metadata an old ingest wrote one level too deep) and a list that mixes objects
with plain values (no one field takes both).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from adapter.index.documents import METADATA_FIELD


def value_mapping(value: Any, *, empty: bool = False) -> dict[str, Any] | None:
    """The mapping a metadata value gets, or None when it says nothing yet (null, empty list or mapping).
    ``empty``: what such a value is declared as when nothing else says more (keyword; an object for a mapping)."""
    if value is None:
        return {"type": "keyword"} if empty else None
    if isinstance(value, (bool, int, float, str)):
        return {"type": _plain_type(value)}
    if isinstance(value, Mapping):
        return _object_mapping(value, empty)
    if isinstance(value, (list, tuple)):
        return _list_mapping(value, empty)
    return {"type": "keyword"}  # anything else is sent as its string


def _plain_type(value: bool | int | float | str) -> str:
    """The type of a boolean, number or string."""
    if isinstance(value, bool):  # before int: bool is an int
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "float"
    return "keyword"


def _object_mapping(value: Mapping[Any, Any], empty: bool) -> dict[str, Any] | None:
    """An object with its keys declared as :func:`value_mapping` declares them (None: no key says anything yet)."""
    props = {str(k): m for k, m in ((k, value_mapping(v, empty=empty)) for k, v in value.items()) if m is not None}
    return {"type": "object", "properties": props} if props or empty else None


def _list_mapping(value: list[Any] | tuple[Any, ...], empty: bool) -> dict[str, Any] | None:
    """The type of a list's elements: one plain type, ``float`` for integers and floats, ``keyword`` for other
    mixes; with objects, the first element that says something (None, or with ``empty`` the first object's, or a
    keyword, when none does)."""
    kinds = _kinds(value)
    if kinds and not kinds & {"object"}:
        if kinds <= {"long", "float"}:
            return {"type": "float" if "float" in kinds else "long"}
        return {"type": next(iter(kinds))} if len(kinds) == 1 else {"type": "keyword"}
    for item in value:
        found = value_mapping(item)
        if found is not None:
            return found
    if not empty:
        return None
    inner = next((i for i in value if isinstance(i, Mapping)), None)
    return value_mapping(inner, empty=True) if inner is not None else {"type": "keyword"}


def _kinds(values: Any) -> set[str]:
    """The mapping types of a list's non-null elements (a nested list's elements too; objects: ``object``)."""
    out: set[str] = set()
    for item in values:
        if isinstance(item, (list, tuple)):
            out |= _kinds(item)
        elif isinstance(item, Mapping):
            out.add("object")
        elif item is not None:
            found = value_mapping(item)
            out.add(found["type"] if found else "keyword")
    return out


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Why an entry's metadata would not read back as written, or None: a top-level key named
    ``metadata``, or a list (at any depth) that mixes objects with plain values."""
    if METADATA_FIELD in metadata:
        return (
            f"metadata key {METADATA_FIELD!r} is reserved: the index reads a metadata object under it as metadata "
            "written one level too deep by an old ingest and lifts its keys up, so it would not read back as written; "
            "rename the key"
        )
    return _mixed_objects(metadata, "")


def _mixed_objects(value: Any, path: str) -> str | None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            found = _mixed_objects(inner, f"{path}{key}" if not path else f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        kinds = _kinds(value)
        if "object" in kinds and len(kinds) > 1:
            return (
                f"metadata {path!r} is a list of objects and plain values ({', '.join(sorted(kinds))}): one index "
                "field holds one or the other; make every element an object, or none"
            )
        for item in value:
            found = _mixed_objects(item, path)
            if found:
                return found
    return None


def undeclared(declared: Mapping[str, Any], documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The properties to add to ``declared`` (the live ``metadata.properties``) so that every
    document's metadata fits; the first value seen of a new key decides its type, and a key with only empty
    values in ``documents`` (null, ``[]``, ``{}``) gets the type :func:`value_mapping` gives them. Empty:
    nothing to add."""
    documents = list(documents)
    added: dict[str, Any] = {}
    for empty in (False, True):  # values first; then what only empty values brought
        for metadata in documents:
            for key, value in metadata.items():
                _add(declared, added, str(key), value, empty)
    return added


def _add(declared: Mapping[str, Any], added: dict[str, Any], key: str, value: Any, empty: bool) -> None:
    mapping = value_mapping(value, empty=empty)
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
            _add(known.get("properties", {}), sub_added, str(sub_key), sub_value, empty)
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
