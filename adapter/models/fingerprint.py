"""The identity of an embedder, kept with every index it wrote. Pure."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from adapter.errors import InputError


@dataclass(frozen=True)
class EmbeddingFingerprint:
    """What makes two embedders interchangeable. Stored in the index's ``_meta.embedding``.

    Vectors from embedders with different fingerprints must never be mixed in one index.
    """

    model: str  # hub name or local path, for people
    spec: str  # how the adapter loads it again (see adapter.models.embedders.load_embedder)
    weights_sha256: str  # digest of the weight files (or a revision id when weights are remote)
    dimension: int
    normalized: bool  # vectors are L2-normalised (dot product == cosine)
    query_prefix: str = ""
    passage_prefix: str = ""

    def to_meta(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> EmbeddingFingerprint:
        try:
            return cls(**{k: meta[k] for k in cls.__dataclass_fields__})
        except KeyError as exc:
            raise InputError(f"index _meta.embedding lacks {exc.args[0]!r}; was it created by `hybrid init`?") from None

    @property
    def key(self) -> str:
        """Identity for caches: everything that changes the vectors (not the model's path)."""
        ident = {k: v for k, v in asdict(self).items() if k not in ("model", "spec")}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def differences(self, other: EmbeddingFingerprint) -> list[str]:
        """Fields that differ in a way that changes vectors (model path and spec do not)."""
        diffs = []
        for name in ("weights_sha256", "dimension", "normalized", "query_prefix", "passage_prefix"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                diffs.append(f"{name}: {mine!r} != {theirs!r}")
        return diffs
