"""An on-disk embedding cache keyed by (embedder fingerprint, text hash), in SQLite.

Re-ingesting unchanged text then costs a lookup instead of a model call. The key includes the
fingerprint, so a different model (or prefix, or normalisation) never reads another's vectors.
Only document vectors are cached (:func:`embed_documents`); queries go to the model.

The cache is not trusted blindly. Each entry carries an HMAC-SHA256 over its key (fingerprint,
text hash), shape, dtype and bytes, keyed by a secret of the user's (``cache.key`` beside the
cache, 0600, or ``HYBRID_CACHE_KEY_FILE``); an entry that fails the check is embedded again and
counted. What that protects against: anyone who can write the cache file but cannot read the key
(another user of a shared or group-writable cache, a cache file copied from elsewhere) cannot plant
a vector that passes. What it does not: a process running as the user (it can read the key), or
root. New caches are created 0600 in a 0700 folder. Entries from before the key (an unkeyed
digest only) are signed once, when a cache only its owner can write is first opened with the key
(trust on first use); a later row without a valid HMAC is embedded again. The unkeyed digest is
still written, so older versions of the adapter keep reading the same file.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from adapter.errors import ConfigurationError
from adapter.models.embedders import Embedder

DTYPE = "float32"


def default_cache_path() -> Path:
    """``HYBRID_EMBEDDING_CACHE``, else ``embeddings.sqlite`` in ``HYBRID_CACHE_DIR`` (the folder the
    local nodes use), else in ``$XDG_CACHE_HOME/opensearch-hybrid`` (``~/.cache``)."""
    base = os.environ.get("HYBRID_EMBEDDING_CACHE")
    if base:
        return Path(base)
    folder = os.environ.get("HYBRID_CACHE_DIR")
    if folder:
        return Path(folder) / "embeddings.sqlite"
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


def entry_mac(key: bytes, fp: str, h: str, vector: bytes, dimension: int, dtype: str = DTYPE) -> str:
    """The keyed digest of an entry: HMAC-SHA256 with the user's key over what :func:`entry_digest` covers."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in (fp, h, dtype, str(dimension)):
        mac.update(part.encode("utf-8") + b"\0")
    mac.update(vector)
    return mac.hexdigest()


def default_key_path(cache_path: Path) -> Path:
    value = os.environ.get("HYBRID_CACHE_KEY_FILE")
    return Path(value) if value else cache_path.parent / "cache.key"


def load_or_create_key(path: Path) -> bytes:
    """The user's cache key (32 random bytes, hex in a 0600 file), made on first use."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with open(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        text = path.read_text().strip()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read the embedding cache's key {path} ({exc}); point HYBRID_CACHE_KEY_FILE at a "
            "file of your own, or pass --no-cache"
        ) from exc
    if mode & 0o077:
        raise ConfigurationError(
            f"the embedding cache's key {path} is readable by others (mode {mode:o}): anyone who reads "
            f"it can plant vectors that pass the check. `chmod 600 {path}`, or delete it to make a new one "
            "(the cache's entries are then embedded again once)"
        )
    try:
        return bytes.fromhex(text)
    except ValueError as exc:
        raise ConfigurationError(
            f"the embedding cache's key {path} is not what the adapter writes; delete it to make a new one"
        ) from exc


def _only_owner_writes(path: Path) -> bool:
    st = os.stat(path)
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


@dataclass(frozen=True)
class Lookup:
    """What the cache answered for some keys: verified vectors, and keys whose entry failed its check."""

    found: dict[str, np.ndarray]
    rejected: tuple[str, ...] = ()


class EmbeddingCache:
    """Document vectors on disk. Every entry carries its dimension, dtype and an HMAC bound to its
    key under the user's secret (:func:`entry_mac`; see the module docstring for what it protects
    against); an entry that fails the check is not used (the caller re-embeds it and the write
    replaces it). ``key_path``: the key file (default ``cache.key`` beside the cache, or
    ``HYBRID_CACHE_KEY_FILE``)."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, key_path: str | os.PathLike[str] | None = None
    ) -> None:
        self.path = Path(path) if path else default_cache_path()
        if not self.path.parent.is_dir():
            self.path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(
                os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            )  # SQLite's -wal/-shm take its mode
        self._key = load_or_create_key(Path(key_path) if key_path else default_key_path(self.path))
        with self._readable():
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (fp TEXT, h TEXT, v BLOB, PRIMARY KEY (fp, h))")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(vectors)")}
            for name, kind in (("dim", "INTEGER"), ("dtype", "TEXT"), ("digest", "TEXT"), ("mac", "TEXT")):
                if name not in columns:  # a cache from before the integrity check or the key: same rows, new columns
                    with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                        self._db.execute(f"ALTER TABLE vectors ADD COLUMN {name} {kind}")
            self._sign_entries_from_before_the_key()

    def _sign_entries_from_before_the_key(self) -> None:
        """Once per cache file and key: sign the rows that carry only the unkeyed digest, if only the
        owner can write the file (then nobody else could have planted them: trust on first use)."""
        marker = f"signed-with:{hashlib.sha256(self._key).hexdigest()[:16]}"
        if self._db.execute("SELECT 1 FROM meta WHERE k = ?", (marker,)).fetchone():
            return
        if _only_owner_writes(self.path):
            last = -1
            while True:  # a few thousand rows at a time: memory stays small for a big cache
                with self._db:
                    rows = self._db.execute(
                        "SELECT rowid, fp, h, v, dim, dtype, digest FROM vectors WHERE mac IS NULL AND rowid > ? "
                        "ORDER BY rowid LIMIT 2000",
                        (last,),
                    ).fetchall()
                    signed = [
                        (entry_mac(self._key, fp, h, v, dim), rowid)
                        for rowid, fp, h, v, dim, dtype, digest in rows
                        if isinstance(v, bytes) and dtype == DTYPE and digest == entry_digest(fp, h, v, dim)
                    ]
                    self._db.executemany("UPDATE vectors SET mac = ? WHERE rowid = ?", signed)
                if len(rows) < 2000:
                    break
                last = rows[-1][0]
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", (marker, "1"))

    @contextlib.contextmanager
    def _readable(self) -> Iterator[None]:
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
                rows = self._db.execute(
                    f"SELECT h, v, dim, dtype, mac FROM vectors WHERE fp = ? AND h IN ({marks})", [fp, *chunk]
                ).fetchall()
            for h, blob, dim, dtype, mac in rows:
                ok = (
                    isinstance(blob, bytes)
                    and len(blob) == expected
                    and dim == dimension
                    and dtype == DTYPE
                    and isinstance(mac, str)
                    and hmac.compare_digest(mac, entry_mac(self._key, fp, h, blob, dimension))
                )
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
            rows.append(
                (fp, h, blob, dim, DTYPE, entry_digest(fp, h, blob, dim), entry_mac(self._key, fp, h, blob, dim))
            )
        with self._readable(), self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (fp, h, v, dim, dtype, digest, mac) VALUES (?, ?, ?, ?, ?, ?, ?)", rows
            )

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
        vectors = (
            embedder.embed_documents(list(texts)) if texts else np.zeros((0, embedder.dimension), dtype=np.float32)
        )
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
