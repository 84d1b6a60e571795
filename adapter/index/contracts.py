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
from functools import lru_cache
from importlib import resources
from typing import Any

from adapter.errors import AssetError, InputError


class Contract(str, enum.Enum):
    """The documented JSON documents."""

    SEARCH = "search"  # hybrid search --json; adapter.search.result_json.search_result_json
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
