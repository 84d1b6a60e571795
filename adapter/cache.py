"""An on-disk embedding cache keyed by (embedder fingerprint, text hash), in SQLite.

Re-ingesting unchanged text then costs a lookup instead of a model call. The key includes the
fingerprint, so a different model (or prefix, or normalisation) never reads another's vectors.
Only document vectors are cached (:func:`embed_documents`); queries go to the model. The cache
is not trusted blindly: each entry's digest binds its vector to its key, and an entry that fails
the check is embedded again and counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .embedders import Embedder
from .errors import ConfigurationError

DTYPE = "float32"


def default_cache_path() -> Path:
    base = os.environ.get("HYBRID_EMBEDDING_CACHE")
    if base:
        return Path(base)
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(root) / "opensearch-hybrid" / "embeddings.sqlite"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_digest(fp: str, key: str, vector: bytes, dimension: int, dtype: str = DTYPE) -> str:
    """The digest stored with an entry: over its key (fingerprint, text hash), shape, dtype and bytes.

    A vector moved to another key, cut short or altered no longer matches its digest.
    """
    sha = hashlib.sha256()
    for part in (fp, key, dtype, str(dimension)):
        sha.update(part.encode("utf-8") + b"\0")
    sha.update(vector)
    return sha.hexdigest()


@dataclass(frozen=True)
class Lookup:
    """What the cache answered for some keys: verified vectors, and keys whose entry failed its check."""

    found: dict[str, np.ndarray]
    rejected: tuple[str, ...] = ()


class EmbeddingCache:
    """Document vectors on disk. Every entry carries its dimension, dtype and a digest bound to its
    key (:func:`entry_digest`); an entry that fails the check is not used (the caller re-embeds it
    and the write replaces it). Entries written before the check existed have no digest and are
    treated the same way, once."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._readable():
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (fp TEXT, h TEXT, v BLOB, PRIMARY KEY (fp, h))")
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(vectors)")}
            for name, kind in (("dim", "INTEGER"), ("dtype", "TEXT"), ("digest", "TEXT")):
                if name not in columns:  # a cache from before the integrity check: same rows, new columns
                    with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                        self._db.execute(f"ALTER TABLE vectors ADD COLUMN {name} {kind}")

    @contextlib.contextmanager
    def _readable(self):
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise ConfigurationError(
                f"the embedding cache {self.path} is not a readable SQLite database ({exc}). It only saves model "
                "calls: move or delete it to start a fresh one, point --cache (or HYBRID_EMBEDDING_CACHE) elsewhere, "
                "or pass --no-cache"
            ) from exc

    def lookup(self, fp: str, keys: Sequence[str], dimension: int) -> Lookup:
        """Verified vectors for ``keys`` under fingerprint ``fp``; entries failing the check are listed."""
        found: dict[str, np.ndarray] = {}
        rejected: list[str] = []
        unique = list(dict.fromkeys(keys))
        expected = dimension * np.dtype(DTYPE).itemsize
        for i in range(0, len(unique), 500):
            chunk = unique[i : i + 500]
            marks = ",".join("?" * len(chunk))
            with self._readable():
                rows = self._db.execute(f"SELECT h, v, dim, dtype, digest FROM vectors WHERE fp = ? AND h IN ({marks})",
                                        [fp, *chunk]).fetchall()
            for h, blob, dim, dtype, digest in rows:
                ok = (isinstance(blob, bytes) and len(blob) == expected and dim == dimension and dtype == DTYPE
                      and digest == entry_digest(fp, h, blob, dimension))
                if ok:
                    found[h] = np.frombuffer(blob, dtype=DTYPE)
                else:
                    rejected.append(h)
        return Lookup(found, tuple(rejected))

    def put_many(self, fp: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = []
        for h, v in items:
            blob = np.asarray(v, dtype=DTYPE).tobytes()
            dim = int(np.asarray(v).size)
            rows.append((fp, h, blob, dim, DTYPE, entry_digest(fp, h, blob, dim)))
        with self._readable(), self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors (fp, h, v, dim, dtype, digest) VALUES (?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()


@dataclass(frozen=True)
class CachedVectors:
    """Vectors for a batch of texts, and where they came from."""

    vectors: np.ndarray  # (len(texts), dimension) float32
    from_cache: int  # texts answered by the cache
    embedded: int  # distinct texts sent to the model
    rejected: int = 0  # cache entries that failed their integrity check (re-embedded)


def embed_documents(embedder: Embedder, texts: Sequence[str], cache: EmbeddingCache | None = None) -> CachedVectors:
    """Document vectors for ``texts``, through ``cache`` when given. Identical texts in one batch
    are embedded once; fresh vectors are stored under the embedder's fingerprint. Cache entries
    that fail their integrity check are embedded again (and counted in ``rejected``)."""
    if cache is None:
        vectors = embedder.embed_documents(list(texts)) if texts else np.zeros((0, embedder.dimension), dtype=np.float32)
        return CachedVectors(np.asarray(vectors, dtype=np.float32), 0, len(texts))
    fp = embedder.fingerprint.key
    keys = [text_key(t) for t in texts]
    looked = cache.lookup(fp, keys, embedder.dimension)
    found = dict(looked.found)
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
    return CachedVectors(out, len(texts) - len(missing), len(todo), len(looked.rejected))
