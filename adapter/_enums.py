"""Enums the CLI and the JSON contracts parse from text. Pure."""

from __future__ import annotations

import enum
from typing import TypeVar

from adapter.errors import InputError

E = TypeVar("E", bound=enum.Enum)


def parse_enum(enum_cls: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum_cls`` (case-insensitive), or an InputError listing the choices."""
    if isinstance(value, enum_cls):
        return value
    try:
        return enum_cls(str(value).strip().lower())
    except ValueError:
        raise InputError(
            f"unknown {what} {value!r}; expected one of: {', '.join(str(e.value) for e in enum_cls)}"
        ) from None


class TextEnum(str, enum.Enum):
    """An enum whose members are their words: ``str()``, f-strings and JSON give the value."""

    def __str__(self) -> str:
        return str(self.value)
