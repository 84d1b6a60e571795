"""An on-disk embedding cache keyed by (embedder fingerprint, text hash), in SQLite.

Re-ingesting unchanged text then costs a lookup instead of a model call. The key includes the
fingerprint, so a different model (or prefix, or normalisation) never reads another's vectors.
Only document vectors are cached (:func:`embed_documents`); queries go to the model.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .embedders import Embedder


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


@dataclass(frozen=True)
class CachedVectors:
    """Vectors for a batch of texts, and where they came from."""

    vectors: np.ndarray  # (len(texts), dimension) float32
    from_cache: int  # texts answered by the cache
    embedded: int  # distinct texts sent to the model


def embed_documents(embedder: Embedder, texts: Sequence[str], cache: EmbeddingCache | None = None) -> CachedVectors:
    """Document vectors for ``texts``, through ``cache`` when given. Identical texts in one batch
    are embedded once; fresh vectors are stored under the embedder's fingerprint."""
    if cache is None:
        vectors = embedder.embed_documents(list(texts)) if texts else np.zeros((0, embedder.dimension), dtype=np.float32)
        return CachedVectors(np.asarray(vectors, dtype=np.float32), 0, len(texts))
    fp = embedder.fingerprint.key
    keys = [text_key(t) for t in texts]
    found = cache.get_many(fp, keys)
    missing = [i for i, k in enumerate(keys) if k not in found]
    todo: list[str] = []
    if missing:
        todo = list(dict.fromkeys(keys[i] for i in missing))
        first = {keys[i]: i for i in reversed(missing)}
        fresh = dict(zip(todo, embedder.embed_documents([texts[first[k]] for k in todo])))
        cache.put_many(fp, list(fresh.items()))
        found.update(fresh)
    out = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    for i, k in enumerate(keys):
        out[i] = found[k]
    return CachedVectors(out, len(texts) - len(missing), len(todo))
