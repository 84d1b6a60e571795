"""The unit tiers' embedder: fixed 4-d unit vectors under a fingerprint of its own, enough for request building and
ingest without a model (the integration tiers' is tests.conftest.HashingEmbedder, ``test:hashing``)."""

from __future__ import annotations

import numpy as np

from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
VECTOR = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


class UnitEmbedder:
    """Every text's vector is :data:`VECTOR`."""

    fingerprint = FP
    dimension = 4
    normalized = True

    def embed_documents(self, texts):
        return np.tile(VECTOR, (len(texts), 1))

    def embed_query(self, text):
        return VECTOR
