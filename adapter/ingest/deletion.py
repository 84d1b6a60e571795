"""The one rule for deletes, for every entrance: ``hybrid delete``, :meth:`adapter.ingest.by_id.Documents.delete`,
LangChain's ``delete``, Haystack's ``delete_by_filter`` and LlamaIndex's ``delete_nodes`` / ``clear``. Pure.

A delete empties an index only when its caller says so (``all=True``, ``hybrid delete --all``). Without it:

- a filter that is empty or normalises to "everything" (``{}``, Haystack's ``AND`` of no conditions,
  LlamaIndex's ``MetadataFilters(filters=[])``, a ``match_all``) is refused before anything is counted;
- a filter that matches every entry of the index (counted first) is refused, nothing deleted;
- a filter on a field the index does not map is an error (it matches nothing, or, negated, everything:
  either way not what its writer meant), whatever ``all`` says.

Deletes by id and by parent document name what they delete, so they are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping

from adapter.errors import InputError

ALL_HINT = "to delete every entry, say so: all=True (hybrid delete --all)"


def _clauses(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def selects_everything(query: Mapping[str, Any] | None) -> bool:
    """Whether ``query`` matches every document whatever the index holds: ``match_all``, an empty
    query, or a ``bool`` whose required parts all match everything and whose exclusions match nothing
    (the server reads a ``bool`` with no clauses at all as ``match_all``, an empty ``should`` included)."""
    if not query:
        return True
    if len(query) != 1:
        return False
    ((kind, body),) = query.items()
    if kind == "match_all":
        return True
    if kind != "bool" or not isinstance(body, Mapping):
        return False
    required = _clauses(body.get("must")) + _clauses(body.get("filter"))
    should = _clauses(body.get("should"))
    if not all(selects_everything(q) for q in required):
        return False
    if not all(selects_nothing(q) for q in _clauses(body.get("must_not"))):
        return False
    if not should:
        return True
    optional = required and body.get("minimum_should_match") in (None, 0, "0")
    return bool(optional) or (
        str(body.get("minimum_should_match", 1)) == "1" and any(selects_everything(q) for q in should)
    )


def selects_nothing(query: Mapping[str, Any] | None) -> bool:
    """Whether ``query`` can match no document: ``match_none``, or a ``bool`` excluding everything."""
    if not query or len(query) != 1:
        return False
    ((kind, body),) = query.items()
    if kind == "match_none":
        return True
    if kind != "bool" or not isinstance(body, Mapping):
        return False
    return any(selects_everything(q) for q in _clauses(body.get("must_not"))) or any(
        selects_nothing(q) for q in _clauses(body.get("must")) + _clauses(body.get("filter"))
    )


@dataclass(frozen=True)
class DeleteScope:
    """A delete by filter as counted before it runs: ``matched`` of the index's ``total`` entries."""

    alias: str
    what: str  # the filter as its writer gave it, for the messages
    matched: int
    total: int

    @property
    def whole_index(self) -> bool:
        return self.total > 0 and self.matched >= self.total


def refuse_everything(query: Mapping[str, Any] | None, alias: str, what: str, *, everything: bool) -> None:
    """Raise :class:`InputError` when ``query`` selects every entry by its form and ``everything`` (``all=True``)
    was not said."""
    if not everything and selects_everything(query):
        raise InputError(
            f"the delete's filter ({what}) selects every entry of {alias}: nothing was deleted; {ALL_HINT}"
        )


def refuse_whole_index(scope: DeleteScope, *, everything: bool) -> None:
    """Raise :class:`InputError` when the filter matches every entry and ``everything`` was not said."""
    if not everything and scope.whole_index:
        raise InputError(
            f"the delete's filter ({scope.what}) matches all {scope.total} entries of {scope.alias}: deleting "
            f"them would empty the index, so nothing was deleted; {ALL_HINT}"
        )


def refuse_unknown_fields(asked: Iterable[str], mapped: Collection[str], index: str) -> None:
    """Raise :class:`InputError` naming each filter field (``metadata.<key>``, ``parent_id``, ...) the index does not
    map."""
    unknown = [f for f in dict.fromkeys(asked) if f != "_id" and f not in mapped]
    if unknown:
        metadata = sorted(f.split(".", 1)[1] for f in mapped if f.startswith("metadata.") and f.count(".") == 1)
        names = ", ".join(repr(f) for f in unknown)
        raise InputError(
            f"the delete's filter names {names}, which the mapping of {index} does not have: no entry has it, so "
            "the filter cannot mean what it says; nothing was deleted (metadata fields: "
            f"{', '.join(metadata) or 'none'})"
        )
