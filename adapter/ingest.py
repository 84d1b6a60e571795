"""``hybrid ingest``: embed documents in Python and bulk-index them, with indexing overlapping embedding.

The main thread reads, chunks and embeds in batches; a second thread feeds the batches to
opensearch-py's ``streaming_bulk`` (which retries 429s with backoff; the client retries 502/503/504
and timeouts; per-document 5xx failures get one more round). Every per-item failure is collected
with its reason and written to a failures file: nothing is dropped silently. Ids are stable (the
document id, or ``<id>#<n>`` for chunks), so re-ingesting replaces instead of duplicating.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .admin import index_fingerprint, read_index_meta
from .client import translate_errors
from .embedders import Embedder, check_fingerprint, check_vectors
from .errors import InputError
from .sources import Chunking, RowError, SourceDoc, chunk_id
from .types import IngestReport, ItemFailure

_DONE = object()


@dataclass(frozen=True)
class _Entry:
    id: str
    parent_id: str
    chunk_index: int
    title: str
    text: str
    metadata: dict[str, Any]

    @property
    def embed_text(self) -> str:
        # The title gives a chunk its context; BEIR-style "title + text" for whole documents.
        return f"{self.title}\n{self.text}" if self.title else self.text


def _entries(doc: SourceDoc, chunking: Chunking | None) -> list[_Entry]:
    if chunking is None:
        return [_Entry(doc.id, doc.id, 0, doc.title, doc.text, dict(doc.metadata))]
    return [
        _Entry(chunk_id(doc.id, i), doc.id, i, doc.title, piece, dict(doc.metadata))
        for i, piece in enumerate(chunking.split(doc.text))
    ]


def _batches(rows: Iterable[SourceDoc | RowError], size: int) -> Iterator[list[SourceDoc | RowError]]:
    batch: list[SourceDoc | RowError] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Indexer(threading.Thread):
    """Sends queued action batches with ``streaming_bulk`` while the main thread embeds.

    Batches waiting in the queue are merged up to ``chunk_size`` actions per request. The actions
    of a request are kept until it finishes so that items the cluster failed with a 5xx can be
    sent once more after a pause.
    """

    def __init__(self, client, *, chunk_size: int, max_retries: int, retry_pause: float = 2.0) -> None:
        super().__init__(daemon=True, name="hybrid-bulk")
        self.client = client
        self.chunk_size = chunk_size
        self.max_retries = max_retries
        self.retry_pause = retry_pause
        self.queue: queue.Queue = queue.Queue(maxsize=8)
        self.failed: list[dict] = []
        self.waiting = 0.0
        self.busy = 0.0
        self.error: BaseException | None = None

    def _send(self, actions: Sequence[dict]) -> list[dict]:
        from opensearchpy.helpers import streaming_bulk

        return [
            info
            for ok, info in streaming_bulk(
                self.client, actions, chunk_size=self.chunk_size, max_retries=self.max_retries,
                initial_backoff=1, max_backoff=30, raise_on_error=False, raise_on_exception=False,
                yield_ok=False,
            )
            if not ok
        ]

    def _send_with_5xx_retry(self, actions: list[dict]) -> None:
        failed = self._send(actions)
        server_errors = {next(iter(f.values())).get("_id") for f in failed if (next(iter(f.values())).get("status") or 0) >= 500}
        if server_errors:
            time.sleep(self.retry_pause)
            self.failed += [f for f in failed if next(iter(f.values())).get("_id") not in server_errors]
            self.failed += self._send([a for a in actions if a["_id"] in server_errors])
        else:
            self.failed += failed

    def run(self) -> None:
        done = False
        while not done:
            started = time.perf_counter()
            item = self.queue.get()
            self.waiting += time.perf_counter() - started
            if item is _DONE:
                break
            actions = list(item)
            while len(actions) < self.chunk_size:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is _DONE:
                    done = True
                    break
                actions += more
            if self.error is not None:
                continue  # drain the queue so the producer never blocks
            t0 = time.perf_counter()
            try:
                self._send_with_5xx_retry(actions)
            except BaseException as exc:  # surfaced by the main thread
                self.error = exc
            self.busy += time.perf_counter() - t0


def _failure(info: dict, sources: dict[str, int | None]) -> ItemFailure:
    op = next(iter(info.values()))
    error = op.get("error")
    if isinstance(error, dict):
        reason = f"{error.get('type')}: {error.get('reason')}"
        cause = error.get("caused_by")
        if isinstance(cause, dict) and cause.get("reason"):
            reason += f" (caused by {cause.get('type')}: {cause['reason']})"
    else:
        reason = str(error or op.get("exception") or op)
    doc_id = op.get("_id")
    return ItemFailure(doc_id, reason, line=sources.get(doc_id), status=op.get("status"))


class Ingestor:
    """Ingest documents into the hybrid index behind ``alias``."""

    def __init__(
        self,
        client,
        alias: str,
        embedder: Embedder,
        *,
        batch_size: int = 64,
        bulk_chunk_size: int = 500,
        chunking: Chunking | None = None,
        strict: bool = False,
        progress: bool = True,
        max_retries: int = 5,
        failures_path: str | Path | None = None,
        refresh: bool = True,
    ) -> None:
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        self.client = client
        self.alias = alias
        self.embedder = embedder
        self.batch_size = batch_size
        self.bulk_chunk_size = bulk_chunk_size
        self.chunking = chunking
        self.strict = strict
        self.progress = progress
        self.max_retries = max_retries
        self.failures_path = Path(failures_path) if failures_path else None
        self.refresh = refresh

    def _check_index(self) -> tuple[str, str]:
        index, mapping = read_index_meta(self.client, self.alias)
        check_fingerprint(self.alias, index_fingerprint(mapping, index), self.embedder)
        return index, mapping.get("_meta", {}).get("vector_field", "embedding")

    def ingest(self, rows: Iterable[SourceDoc | RowError], *, total: int | None = None) -> IngestReport:
        """Embed and index ``rows``; bad rows are reported, good rows still land (unless strict)."""
        from tqdm.auto import tqdm

        index, vector_field = self._check_index()
        started = time.perf_counter()
        failures: list[ItemFailure] = []
        if self.strict:
            rows = list(rows)
            bad = [r for r in rows if isinstance(r, RowError)]
            if bad:
                listing = "; ".join(f"line {r.line}: {r.reason}" for r in bad[:20])
                raise InputError(f"{len(bad)} bad rows and --strict is set, so nothing was written: {listing}")
        fp = self.embedder.fingerprint
        indexer = _Indexer(self.client, chunk_size=self.bulk_chunk_size, max_retries=self.max_retries)
        indexer.start()
        sources: dict[str, int | None] = {}
        documents = chunks = 0
        embed_seconds = 0.0
        hits_before = getattr(self.embedder, "hits", 0)
        misses_before = getattr(self.embedder, "misses", None)
        embedded = 0
        shrink: dict[str, int] = {}
        bar = tqdm(total=total, unit="doc", desc=f"ingest {self.alias}", disable=not self.progress)
        try:
            for batch in _batches(rows, self.batch_size):
                entries: list[_Entry] = []
                for row in batch:
                    if isinstance(row, RowError):
                        failures.append(ItemFailure(row.id, row.reason, line=row.line, source="input"))
                        continue
                    doc_entries = _entries(row, self.chunking)
                    if not doc_entries:
                        failures.append(ItemFailure(row.id, "no words left to index after chunking", line=row.line, source="input"))
                        continue
                    documents += 1
                    entries += doc_entries
                    if self.chunking is not None:
                        shrink[row.id] = len(doc_entries)
                    for entry in doc_entries:
                        sources[entry.id] = row.line
                if entries:
                    t0 = time.perf_counter()
                    vectors = self.embedder.embed_documents([e.embed_text for e in entries])
                    embed_seconds += time.perf_counter() - t0
                    check_vectors(vectors, fp, what=f"vectors from {fp.model}")
                    embedded += len(entries)
                    chunks += len(entries)
                    actions = [
                        {
                            "_op_type": "index",
                            "_index": index,
                            "_id": e.id,
                            "_source": {
                                "title": e.title,
                                "text": e.text,
                                "parent_id": e.parent_id,
                                "chunk_index": e.chunk_index,
                                "metadata": e.metadata,
                                vector_field: v.tolist(),
                            },
                        }
                        for e, v in zip(entries, vectors)
                    ]
                    if indexer.error is not None:
                        break
                    indexer.queue.put(actions)
                bar.update(len(batch))
        finally:
            indexer.queue.put(_DONE)
            indexer.join()
            bar.close()
        if indexer.error is not None:
            with translate_errors(f"bulk indexing into {index}", self.client):
                raise indexer.error
        failures += [_failure(info, sources) for info in indexer.failed]
        if shrink:
            self._delete_stale_chunks(index, shrink)
        if self.refresh:
            with translate_errors(f"refreshing {index}", self.client):
                self.client.indices.refresh(index=index)
        hits = getattr(self.embedder, "hits", 0) - hits_before
        if misses_before is not None:
            embedded = self.embedder.misses - misses_before  # texts that really went to the model
        elapsed = time.perf_counter() - started
        report = IngestReport(
            documents=documents,
            chunks=chunks - sum(1 for f in failures if f.source != "input"),
            failures=tuple(failures),
            embedded=embedded,
            cache_hits=hits,
            seconds_total=elapsed,
            seconds_embedding=embed_seconds,
            seconds_indexing=indexer.busy,
            failures_file=self._write_failures(failures),
        )
        return report

    def _delete_stale_chunks(self, index: str, counts: dict[str, int]) -> None:
        """Delete chunks beyond a document's new chunk count (left from an older, longer text).

        Found with a search and removed with bulk deletes, which every flavour of OpenSearch has
        (``_delete_by_query`` lives in the reindex module, absent from some clusters).
        """
        from opensearchpy.helpers import bulk

        items = list(counts.items())
        stale: list[str] = []
        for start in range(0, len(items), 500):
            should = [
                {"bool": {"filter": [{"term": {"parent_id": doc_id}}, {"range": {"chunk_index": {"gte": n}}}]}}
                for doc_id, n in items[start : start + 500]
            ]
            body = {"query": {"bool": {"should": should, "minimum_should_match": 1}}, "_source": False, "size": 10_000}
            with translate_errors(f"finding stale chunks in {index}", self.client):
                self.client.indices.refresh(index=index)
                hits = self.client.search(index=index, body=body)["hits"]["hits"]
            stale += [h["_id"] for h in hits]
        if stale:
            with translate_errors(f"deleting stale chunks in {index}", self.client):
                bulk(self.client, ({"_op_type": "delete", "_index": index, "_id": i} for i in stale), raise_on_error=False)

    def _write_failures(self, failures: list[ItemFailure]) -> str | None:
        if not failures:
            return None
        path = self.failures_path or Path(f"ingest-failures-{self.alias}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for f in failures:
                fh.write(json.dumps({"id": f.id, "line": f.line, "status": f.status, "stage": f.source or "index", "reason": f.reason}) + "\n")
        return str(path)
