"""The unit tests' counting model and index: a unit vector per text from its hash, no model files."""

from __future__ import annotations

import hashlib

import numpy as np

from adapter.index.catalog import IndexInfo
from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
INFO = IndexInfo("docs", "docs-v1", FP)


class CountingEmbedder:
    """A unit vector per text (from its hash); counts the texts the model embedded (``calls``, also
    ``texts``) and the longest one (``longest``)."""

    fingerprint = FP
    dimension = 4
    normalized = True

    def __init__(self) -> None:
        self.calls = 0
        self.longest = 0

    @property
    def texts(self) -> int:
        return self.calls

    def _one(self, text: str) -> np.ndarray:
        v = np.frombuffer(hashlib.sha256(text.encode()).digest()[:4], dtype=np.uint8).astype(np.float32) + 1.0
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += len(texts)
        self.longest = max([self.longest, *map(len, texts)])
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 4), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)
