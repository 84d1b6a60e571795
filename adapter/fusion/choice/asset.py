"""A fusion choice kept as a file (an adaptive policy, a learned fusion model: ``hybrid eval`` and
``hybrid adaptive`` write them): its versioned JSON and that JSON as text, one way for both. Pure."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Mapping, Self

from adapter.errors import InputError


class JsonAsset:
    """The file around a class's own ``to_json``/``from_json``: the header they write and check
    (``"schema"``, ``"kind"``) and the text (``dumps``/``loads``).

    A file of schema 1 to ``FILE_SCHEMA`` is read (``from_json`` reads each of them as it was meant);
    one is always written with ``FILE_SCHEMA``."""

    FILE: ClassVar[str]  # the file, in errors: "the policy file"
    FILE_HOLDS: ClassVar[str]  # what it holds, in errors: "an adaptive fusion policy"
    FILE_KIND: ClassVar[str]  # its "kind"
    FILE_SCHEMA: ClassVar[int]  # the "schema" this version writes

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        raise NotImplementedError

    @classmethod
    def header(cls) -> dict[str, Any]:
        """What ``to_json`` starts with."""
        return {"schema": cls.FILE_SCHEMA, "kind": cls.FILE_KIND}

    @classmethod
    def schema_of(cls, data: Any) -> int:
        """The schema ``data`` was written with, once it is this kind of file and of a schema this version
        reads; else :class:`~adapter.errors.InputError` saying which."""
        if not isinstance(data, Mapping) or data.get("kind") != cls.FILE_KIND:
            raise InputError(f'not {cls.FILE_HOLDS} (expected "kind": "{cls.FILE_KIND}")')
        schema: Any = data.get("schema")
        if schema not in range(1, cls.FILE_SCHEMA + 1):
            raise InputError(
                f"{cls.FILE_HOLDS}: schema {schema!r} is not supported (this version reads "
                f"{', '.join(map(str, range(1, cls.FILE_SCHEMA + 1)))})"
            )
        return int(schema)

    def dumps(self) -> str:
        """The JSON, indented, with a final newline (a file a person reads and git diffs)."""
        return json.dumps(self.to_json(), indent=2) + "\n"

    @classmethod
    def loads(cls, text: str) -> Self:
        """From :meth:`dumps`' text; not JSON, or not this kind of file: :class:`~adapter.errors.InputError`."""
        try:
            return cls.from_json(json.loads(text))
        except json.JSONDecodeError as exc:
            raise InputError(f"{cls.FILE} is not JSON: {exc}") from exc
