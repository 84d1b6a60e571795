"""The versioned JSON contracts: ``hybrid search --json``, ``hybrid eval --json`` and the spec file.

Each is a JSON Schema (draft 2020-12) shipped in the package (``adapter/schemas/*.schema.json``,
read with :mod:`importlib.resources`, so an installed wheel has them; ``hybrid schema NAME`` prints
one). Every document carries its version (``schema_version``; the spec file's ``version``), an
integer:

- a new version **adds** keys; they are optional in the schema, so a document of an earlier
  version still validates, and their description says ``since N``;
- a key whose meaning changes gets a new name instead; removing one is a new version too;
- each change has a line in CHANGELOG.md.

Readers check the version and ignore keys they do not know. The objects the adapter builds are
closed in the schemas (``additionalProperties: false``), so a key added without a new version
fails the tests (``tests/unit/index/test_contracts.py``) rather than reaching users undocumented.

Pure: reads packaged files; :func:`validate` needs ``jsonschema`` (the ``test`` extra).
"""

from __future__ import annotations

import enum
import json
from collections import abc
from dataclasses import fields, is_dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from adapter.errors import AssetError, InputError
from adapter.search.results import Hit

if TYPE_CHECKING:
    from adapter.engines.dsl import SentRequest
    from adapter.search.results import SearchResult


class Contract(str, enum.Enum):
    """The documented JSON documents."""

    SEARCH = "search"  # hybrid search --json; adapter.index.contracts.search_result_json
    EVAL = "eval"  # hybrid eval --json; adapter.evaluation.EvalReport.as_json
    SPEC = "spec"  # the index spec file; adapter.index.spec

    @classmethod
    def parse(cls, value: str | Contract) -> Contract:
        try:
            return cls(value)
        except ValueError:
            raise InputError(f"unknown contract {value!r}; expected one of {', '.join(c.value for c in cls)}") from None


# The version each writer writes now (the newest in its schema's enum; a unit test keeps them equal).
SEARCH_SCHEMA_VERSION = 7
EVAL_SCHEMA_VERSION = 3
SPEC_SCHEMA_VERSION = 1
VERSIONS = {
    Contract.SEARCH: SEARCH_SCHEMA_VERSION,
    Contract.EVAL: EVAL_SCHEMA_VERSION,
    Contract.SPEC: SPEC_SCHEMA_VERSION,
}
# The key that holds the version (the spec file, written by hand, says `version`).
VERSION_KEYS = {Contract.SEARCH: "schema_version", Contract.EVAL: "schema_version", Contract.SPEC: "version"}


def schema_file(contract: str | Contract) -> str:
    return f"{Contract.parse(contract).value}.schema.json"


@lru_cache(maxsize=None)
def _schema_text(contract: Contract) -> str:
    path = resources.files("adapter") / "schemas" / schema_file(contract)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AssetError(f"adapter/schemas/{schema_file(contract)} is missing from the package") from None


def schema(contract: str | Contract) -> dict[str, Any]:
    """A fresh parsed copy of the contract's JSON Schema."""
    contract = Contract.parse(contract)
    try:
        parsed: dict[str, Any] = json.loads(_schema_text(contract))
        return parsed
    except json.JSONDecodeError as exc:
        raise AssetError(f"adapter/schemas/{schema_file(contract)} is not valid JSON: {exc}") from exc


def validate(contract: str | Contract, document: Any) -> None:
    """Raise :class:`InputError` listing every place ``document`` breaks the contract's schema.

    Needs ``jsonschema`` (the ``test`` extra, or ``jsonschema`` alone)."""
    contract = Contract.parse(contract)
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:
        raise InputError("validating a document needs jsonschema: pip install jsonschema") from None
    validator = jsonschema.Draft202012Validator(schema(contract))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:20]]
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise InputError(
            f"not a valid {contract.value} document ({schema_file(contract)}):\n" + "\n".join(lines) + more
        )


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
