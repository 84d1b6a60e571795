"""Ray Data: embed and index tens of millions of documents over a cluster's CPUs or GPUs (extra ``ray``).

One machine embeds MiniLM at a few dozen documents a second per core; a corpus of tens of millions
needs many cores or GPUs. :func:`index_dataset` runs the two halves of ``hybrid ingest`` as Ray
Data stages over any ``ray.data.Dataset`` of ``{id, text[, title]}`` rows (``read_json``,
``read_parquet``, ...):

1. ``map_batches`` with embedder actors (``embed_concurrency`` of them, each with ``embed_cpus``
   CPUs or ``embed_gpus`` GPUs): each loads the model once and adds a vector to every row;
2. ``map_batches`` with writer actors, each an :class:`~adapter.ingest.ingestor.Ingestor` (the adapter's
   bulk writer: retries, splitting, failures with reasons) fed the vectors of stage 1: the index
   contract, the fingerprint check and the failure reporting are the same as ``hybrid ingest``'s.

Ray schedules the stages as a stream, so GPUs embed while CPUs send. Give actors fractional CPUs or
leave cores free: on a small machine a pool that takes every CPU starves Ray's read tasks and the
pipeline stalls.

    import ray
    from adapter.integrations.ray_data import index_dataset

    ray.init()
    summary = index_dataset(ray.data.read_json("s3://bucket/corpus/"), url="https://...", alias="docs",
                            embedder="minilm", embed_gpus=1, embed_concurrency=8, write_concurrency=4)
    summary.failures  # every row that did not land, with its reason (written to failures_path too, when given)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter._optional import require
from adapter.ingest.report import FailureSource, ItemFailure
from adapter.models.embedders import Embedder
from adapter.models.fingerprint import EmbeddingFingerprint

# a spec for load_embedder, or a function that builds one (runs in each actor)
EmbedderSource = str | Callable[[], Embedder]
VECTOR = "__vector"


def _load(source: EmbedderSource) -> Embedder:
    from adapter.models.embedders import load_embedder

    return load_embedder(source) if isinstance(source, str) else source()


def _column(batch: Mapping[str, Any], name: str, n: int) -> list[str]:
    values = batch.get(name)
    return ["" if v is None else str(v) for v in values] if values is not None else [""] * n


class EmbedActor:
    """Stage 1: the embedder, loaded once per actor; adds each row's vector (title + text, as ingest embeds)."""

    def __init__(self, source: EmbedderSource) -> None:
        self.embedder = _load(source)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from adapter.index.documents import embedding_text

        n = len(batch["id"])
        texts = [embedding_text(t, x) for t, x in zip(_column(batch, "title", n), _column(batch, "text", n))]
        return {**batch, VECTOR: np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)}


class _Given:
    """The vectors stage 1 computed, by embedding text, under the fingerprint of the embedder that made them."""

    def __init__(self, fingerprint: EmbeddingFingerprint, vectors: Mapping[str, np.ndarray]) -> None:
        self.fingerprint = fingerprint
        self.dimension = fingerprint.dimension
        self.normalized = fingerprint.normalized
        self._vectors = vectors

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        raise TypeError("the Ray writer stage embeds no queries")


class WriteActor:
    """Stage 2: one client and the index's contract per actor; each batch goes through an Ingestor."""

    def __init__(
        self,
        url: str,
        alias: str,
        fingerprint: dict[str, Any],
        client_options: Mapping[str, Any] | None = None,
        bulk_batch_size: int = 500,
    ) -> None:
        from adapter.engines import open_cluster
        from adapter.index.catalog import read_index_info

        self.cluster = open_cluster(url, **dict(client_options or {}))
        self.info = read_index_info(self.cluster, alias)
        self.fingerprint = EmbeddingFingerprint(**fingerprint)
        self.bulk_batch_size = bulk_batch_size

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from adapter.index.documents import embedding_text
        from adapter.ingest.ingestor import Ingestor
        from adapter.ingest.sources import SourceDoc

        n = len(batch["id"])
        titles, texts = _column(batch, "title", n), _column(batch, "text", n)
        rows = [SourceDoc(str(i), x, t) for i, t, x in zip(batch["id"], titles, texts)]
        vectors = {
            embedding_text(t, x): np.asarray(v, dtype=np.float32) for t, x, v in zip(titles, texts, batch[VECTOR])
        }
        # The failures go back to the driver in the report (a batch has fewer than its 1,000), no file here.
        ingestor = Ingestor(
            self.cluster,
            self.info,
            _Given(self.fingerprint, vectors),
            progress=False,
            refresh=False,
            bulk_batch_size=self.bulk_batch_size,
        )
        report = ingestor.ingest(rows)
        failures = [
            json.dumps(
                {"id": f.id, "reason": f.reason, "status": f.status, "stage": f.source.value if f.source else "index"}
            )
            for f in report.failures
        ]
        return {"written": np.array([report.chunks]), "failures": np.array([json.dumps(failures)])}


@dataclass(frozen=True)
class RaySummary:
    """What :func:`index_dataset` did: rows written, every failure with its reason, where they were written."""

    written: int
    failures: tuple[ItemFailure, ...]
    failures_file: str | None

    @property
    def complete(self) -> bool:
        return not self.failures


def index_dataset(
    dataset: Any,
    *,
    url: str,
    alias: str,
    embedder: EmbedderSource,
    batch_size: int = 256,
    embed_concurrency: int = 1,
    embed_cpus: float = 1.0,
    embed_gpus: float = 0.0,
    write_concurrency: int = 1,
    write_cpus: float = 0.5,
    client_options: Mapping[str, Any] | None = None,
    failures_path: str | Path | None = None,
    refresh: bool = True,
) -> RaySummary:
    """Embed ``dataset`` (rows with ``id``, ``text`` and optionally ``title``) and index it into ``alias``.

    ``embedder`` is a spec (``"minilm"``) or a function that builds the embedder in each actor; it
    must match the index's fingerprint (checked here before Ray starts any work, and by each
    writer). Returns a :class:`RaySummary`; rows that did not land are listed in it, and also written to
    ``failures_path`` (JSONL) when it is given and there are any: a library writes no file unasked.
    """
    require("ray", "Ray Data ingest (adapter.integrations.ray_data)")
    from adapter.engines import open_cluster
    from adapter.index.catalog import read_index_info
    from adapter.models.embedders import check_fingerprint

    cluster = open_cluster(url, **dict(client_options or {}))
    info = read_index_info(cluster, alias)
    probe = _load(embedder)
    check_fingerprint(alias, info.fingerprint, probe)
    embed_resources: dict[str, Any] = {"num_gpus": embed_gpus} if embed_gpus else {"num_cpus": embed_cpus}
    embedded = dataset.map_batches(
        EmbedActor,
        fn_constructor_kwargs={"source": embedder},
        batch_size=batch_size,
        concurrency=embed_concurrency,
        **embed_resources,
    )
    written = embedded.map_batches(
        WriteActor,
        batch_size=batch_size,
        concurrency=write_concurrency,
        num_cpus=write_cpus,
        fn_constructor_kwargs={
            "url": url,
            "alias": alias,
            "fingerprint": probe.fingerprint.to_meta(),
            "client_options": dict(client_options or {}),
        },
    )
    total, failures = _collected(written)
    items = _item_failures(failures)
    path = _write_failures(failures, failures_path) if items else None
    if refresh:
        cluster.refresh([info.index], action=f"refreshing {info.index}")
    return RaySummary(total, items, path)


def _collected(written: Any) -> tuple[int, list[dict[str, Any]]]:
    """The writers' rows summed on the driver: entries written, and every failure as the writers sent it."""
    total, failures = 0, []
    for row in written.iter_rows():
        total += int(row["written"])
        failures += [json.loads(f) for f in json.loads(row["failures"])]
    return total, failures


def _item_failures(failures: list[dict[str, Any]]) -> tuple[ItemFailure, ...]:
    """The writers' failures as the ingest reports them (the stage "index": a failure of the write itself)."""
    return tuple(
        ItemFailure(
            f["id"],
            f["reason"],
            status=f["status"],
            source=None if f["stage"] == "index" else FailureSource(f["stage"]),
        )
        for f in failures
    )


def _write_failures(failures: list[dict[str, Any]], failures_path: str | Path | None) -> str | None:
    """The failures as JSONL at ``failures_path`` when one is given (a library writes no file unasked)."""
    if failures_path is None:
        return None
    path = str(failures_path)
    with open(path, "w", encoding="utf-8") as fh:
        for f in failures:
            fh.write(json.dumps(f) + "\n")
    return path
