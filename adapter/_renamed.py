"""Old spellings of a renamed dataclass field, kept working with a FutureWarning. Pure.

Users have scripts with the old keyword and attribute (IndexSpec's ``engine`` is ``knn_method``,
NodeConfig's ``distribution``); one shim serves each class.
"""

from __future__ import annotations

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
