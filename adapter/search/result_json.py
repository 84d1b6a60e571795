"""A search result as the search contract says (:data:`adapter.index.contracts.SEARCH_SCHEMA_VERSION`,
``adapter/schemas/search.schema.json``): what ``hybrid search --json`` prints and ``hybrid serve``
answers. Pure: it walks values the searcher built; the contract's schema and version stay in
:mod:`adapter.index.contracts`, below the search layer, which this module writes under.
"""

from __future__ import annotations

import enum
from collections import abc
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

from adapter.index.contracts import SEARCH_SCHEMA_VERSION
from adapter.search.results import Hit

if TYPE_CHECKING:
    from adapter.engines.dsl import SentRequest
    from adapter.search.results import SearchResult


# The keys under which a request body carries the query vector (OpenSearch's knn clause,
# Elasticsearch's knn section and retrievers).
VECTOR_KEYS = frozenset({"vector", "query_vector"})


def search_result_json(result: SearchResult, *, with_vector: bool = False) -> dict[str, Any]:
    """``result`` as the search contract says (``hybrid search --json``, ``hybrid serve``). The query
    vector in the requests sent is replaced by a note of its length unless ``with_vector`` (it is
    ~8 KB of JSON per copy at 384 dimensions, and what a reader rarely wants).

    One walk over the result (:func:`_plain`), not ``asdict`` and then a second and third pass: that was
    a third of ``hybrid serve``'s CPU per search (py-spy, SciFact, k 10)."""
    data: dict[str, Any] = {"schema_version": SEARCH_SCHEMA_VERSION}
    for f in fields(result):
        value = getattr(result, f.name)
        data[f.name] = [_sent(sent) for sent in value] if f.name == "sent" and not with_vector else _plain(value)
    data["fusion"] = None if result.fusion is None else _fusion_json(result.fusion)
    return data  # result.choice (adaptive weights and why) is a plain dataclass: _plain walks it


def _sent(sent: SentRequest) -> dict[str, Any]:
    """One request sent, its body's query vectors left out (the vector is not walked at all)."""
    return {f.name: _plain(getattr(sent, f.name), drop_vectors=f.name == "body") for f in fields(sent)}


def _is_vector(key: Any, value: Any) -> bool:
    """A query vector: a non-empty list of numbers under one of :data:`VECTOR_KEYS`."""
    return (
        key in VECTOR_KEYS
        and isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(x, (int, float)) for x in value)
    )


def _fusion_json(fusion: Any) -> dict[str, Any]:
    return {"name": fusion.name, "kind": fusion.kind, **_plain(fusion)}


def _hit(hit: Hit) -> dict[str, Any]:
    """One hit; its ``source`` without the text fields the hit carries at its top level (``title``,
    ``text``): each was in the answer twice, a third of a 10-hit answer of short documents (since 4)."""
    data = {f.name: _plain(getattr(hit, f.name)) for f in fields(hit)}
    data["source"] = {k: v for k, v in data["source"].items() if not (k in _TOP_LEVEL_TEXTS and v == data[k])}
    return data


_TOP_LEVEL_TEXTS = ("title", "text")
# exact types: an enum's subclass of str or int is not one
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any, *, drop_vectors: bool = False) -> Any:
    """JSON types only, in one walk: dataclasses as dicts of their fields (as ``asdict``), enums by value,
    tuples as lists, mappings as dicts (what json.dumps writes). ``drop_vectors``: a query vector
    (:func:`_is_vector`) becomes a note of its length."""
    if type(value) in _JSON_SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Hit):
        return _hit(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), drop_vectors=drop_vectors) for f in fields(value)}
    if isinstance(value, (dict, abc.Mapping)):  # collections.abc's: typing.Mapping's isinstance is slow
        if drop_vectors:
            return {
                str(k): (
                    f"<{len(v)} numbers: the query vector, left out (with_vector / --with-vector shows it)>"
                    if _is_vector(k, v)
                    else _plain(v, drop_vectors=True)
                )
                for k, v in value.items()
            }
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, drop_vectors=drop_vectors) for v in value]
    return value
