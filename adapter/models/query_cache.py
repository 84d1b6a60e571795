"""A bounded, process-wide cache of query vectors, keyed by the embedder's fingerprint and the text.

Applications see the same queries again (a page of results, then the next; popular searches; a
retry). Embedding one costs 18-65 ms on a CPU (docs/BENCHMARKS.md, "Query embedding"), a cached
vector microseconds. The key is the model's fingerprint (weights digest, prefixes, dimension) and the
exact text, so two models never share an entry, and the vector is the model's own: nothing is
approximated. ``HYBRID_QUERY_CACHE_SIZE`` sets the number of entries (default 4,096, about 6 MB at
384 dimensions; 0 turns it off). Vectors come back read-only: a caller cannot change the cached copy.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Callable

import numpy as np

SIZE_ENV = "HYBRID_QUERY_CACHE_SIZE"
DEFAULT_SIZE = 4096


class QueryVectorCache:
    """Least recently used first out, at most ``size`` vectors; safe across threads."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = max(0, int(size))
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, model: str, text: str, embed: Callable[[str], np.ndarray]) -> np.ndarray:
        """The vector of ``text`` under the model whose fingerprint key is ``model``: cached, else ``embed(text)``
        (outside the lock: concurrent misses embed in parallel, and the last one stored wins; both are the same)."""
        if self.size == 0:
            return np.asarray(embed(text), dtype=np.float32)
        key = (model, text)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        vector = np.array(embed(text), dtype=np.float32)  # a copy of our own
        vector.flags.writeable = False
        with self._lock:
            self._entries[key] = vector
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


def _size_from_environment() -> int:
    value = os.environ.get(SIZE_ENV, "").strip()
    try:
        return int(value) if value else DEFAULT_SIZE
    except ValueError:
        return DEFAULT_SIZE


QUERY_VECTORS = QueryVectorCache(_size_from_environment())
