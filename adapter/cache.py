"""An on-disk embedding cache keyed by (embedder fingerprint, text hash), in SQLite.

Re-ingesting unchanged text then costs a lookup instead of a model call. The key includes the
fingerprint, so a different model (or prefix, or normalisation) never reads another's vectors.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Sequence

import numpy as np

from .embedders import Embedder
from .types import EmbeddingFingerprint


def default_cache_path() -> Path:
    base = os.environ.get("HYBRID_EMBEDDING_CACHE")
    if base:
        return Path(base)
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(root) / "opensearch-hybrid" / "embeddings.sqlite"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (fp TEXT, h TEXT, v BLOB, PRIMARY KEY (fp, h))")

    def get_many(self, fp: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT h, v FROM vectors WHERE fp = ? AND h IN ({marks})", [fp, *chunk])
            for h, blob in rows:
                found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, fp: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (fp, h, v) VALUES (?, ?, ?)",
                [(fp, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    def close(self) -> None:
        self._db.close()


class CachedEmbedder:
    """Wraps an :class:`Embedder`; document vectors go through the cache, queries do not."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {str(self.cache.path)!r})"

    @property
    def fingerprint(self) -> EmbeddingFingerprint:
        return self.inner.fingerprint

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def normalized(self) -> bool:
        return self.inner.normalized

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        fp = self.fingerprint.key
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(fp, keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            # Identical texts in one batch are embedded once.
            todo = list(dict.fromkeys(keys[i] for i in missing))
            first = {keys[i]: i for i in reversed(missing)}
            vectors = self.inner.embed_documents([texts[first[k]] for k in todo])
            fresh = dict(zip(todo, vectors))
            self.cache.put_many(fp, list(fresh.items()))
            found.update(fresh)
            self.misses += len(todo)
        self.hits += len(texts) - len(missing)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)
