"""Old spellings, kept working with a warning: a renamed dataclass field (a FutureWarning) and a renamed
command-line option (a line on stderr). Pure: nothing of the shell.

Users have scripts with the old keyword and attribute (IndexSpec's ``engine`` is ``knn_method``,
NodeConfig's ``distribution``) and the old option (``--engine``); one shim serves each class, one
argparse action each option. The option's action lives here, not in cli/, so ``hybrid local``'s parser
(in local/, below the front ends) takes it without importing a front end.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any


def keep_old_field_name(cls: type[Any], old: str, new: str, *, keyword_warning: str, attribute_warning: str) -> None:
    """Let ``cls(old=...)`` set ``new`` and ``obj.old`` read it, each warning with its message."""
    dataclass_init = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        value = kwargs.pop(old, None)
        if value is not None:
            # stacklevel 2: the warning names the caller's line (cls(...) calls this directly)
            warnings.warn(keyword_warning, FutureWarning, stacklevel=2)
            kwargs.setdefault(new, value)
        dataclass_init(self, *args, **kwargs)

    def read(self: Any) -> Any:
        warnings.warn(attribute_warning, FutureWarning, stacklevel=2)
        return getattr(self, new)

    setattr(cls, "__init__", init)
    setattr(cls, old, property(read))


class Renamed(argparse.Action):
    """An option's old spelling (users' scripts still say it): sets the new one's value and says so on
    stderr. ``argparse.add_argument("--old", action=Renamed, dest=new.dest, new="--new")``."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=f"deprecated: {new}", **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"warning: {option_string} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)
