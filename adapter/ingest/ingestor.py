"""``hybrid ingest``: embed documents in Python and bulk-index them, with indexing overlapping embedding.

The main thread reads, chunks and embeds in batches; sender threads (``bulk_concurrency``, default
2, so that one request is indexed while the next is serialised and sent) feed the batches to the
port's bulk (:meth:`adapter.engines.port.Cluster.bulk`: the client's ``streaming_bulk``, which
retries 429s with backoff; the client retries 502/503/504 and timeouts; per-document 5xx failures
get one more round). Every per-item failure is collected
with its reason and written to a failures file: nothing is dropped silently. Ids are stable (the
document id, or ``<id>#<n>`` for chunks), so re-ingesting replaces instead of duplicating.
"""

from __future__ import annotations

import contextvars
import json
import os
import queue
import secrets
import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TextIO, TypeVar

from adapter import aio
from adapter.observability import metrics, telemetry, tracing
from adapter.engines import BulkCounts, BulkOptions, Cluster, ClusterLike, Engine, cluster_for, responses
from adapter.engines.capabilities import Capabilities
from adapter.errors import BackendError, ClusterUnavailableError, HybridError, InputError, Terminated, WriteBlockedError
from adapter.index import metadata as metadata_mapping
from adapter.index.catalog import IndexInfo, read_index_info
from adapter.index.documents import CHUNK_FIELD, PARENT_FIELD, DocumentLayout, build_document, embedding_text, id_problem
from adapter.ingest.by_id import Documents, stored_id
from adapter.ingest.by_id import Selection as DocumentSelection
from adapter.ingest import rounds
from adapter.ingest.partition import Partition, PartitionProgress, Selection
from adapter.ingest.report import FailureSource, IngestInterrupted, IngestReport, ItemFailure
from adapter.ingest.sources import DEFAULT_MAX_CHARS, Chunking, RowError, SourceDoc, chunk_id, oversize, visible
from adapter.models.cache import EmbeddingCache, embed_documents
from adapter.models.embedders import Embedder, check_fingerprint, check_vectors

_DONE = object()
T = TypeVar("T")
STALE_PAGE = 1_000  # stale chunk ids fetched per search page


@dataclass(frozen=True)
class _Entry:
    id: str
    parent_id: str
    chunk_index: int
    title: str
    text: str
    extra: dict[str, str]
    metadata: dict[str, Any]
    vector: tuple[float, ...] | None = None  # carried by the row (its model checked before it is used)
    embedded_by: str | None = None


def _entries(doc: SourceDoc, chunking: Chunking | None, layout: DocumentLayout) -> list[_Entry]:
    # A source field named like one of the index's extra text fields is text, not metadata.
    extra = {**{f: str(doc.metadata[f]) for f in layout.extra_fields if f in doc.metadata}, **doc.extra}
    metadata = {k: v for k, v in doc.metadata.items() if k not in extra}
    if _as_written(doc):  # a chunk a framework made, or a row with its vector: one entry, never split again
        return [_Entry(doc.id, doc.parent_id or doc.id, doc.chunk_index or 0, doc.title, doc.text, extra, metadata,
                       doc.vector, doc.embedded_by)]
    if chunking is None:
        return [_Entry(doc.id, doc.id, 0, doc.title, doc.text, extra, metadata)]
    pieces = chunking.split(doc.text) or [""]  # a title-only document is one entry: its title
    return [_Entry(chunk_id(doc.id, i), doc.id, i, doc.title, piece, extra, metadata) for i, piece in enumerate(pieces)]


def _as_written(doc: SourceDoc) -> bool:
    return doc.parent_id is not None or doc.chunk_index is not None or doc.vector is not None


def _carried_problem(entry: _Entry, key: str, dimension: int) -> str | None:
    """Why a carried vector cannot be used (another model's, or none named, or the wrong size), or None."""
    if entry.vector is None:
        return None
    if entry.embedded_by != key:
        said = f"embedded_by {entry.embedded_by!r}" if entry.embedded_by else "no embedded_by"
        return (f"the row carries its own vector with {said}, but the index's model has the fingerprint key {key!r}: a vector "
                "from another model would silently ruin dense and hybrid search. Drop the vector (the index's model embeds "
                "the text) or compute it with the index's model and give its key as embedded_by")
    if len(entry.vector) != dimension:
        return f"the row's vector has {len(entry.vector)} numbers, the index's model gives {dimension}"
    return _vector_values_problem(entry.vector)


FLOAT32_MAX = 3.4028234663852886e38  # the largest float32: the servers store vectors as float32


def _vector_values_problem(vector: Sequence[float]) -> str | None:
    """Why a carried vector's values cannot be stored or scored (checked in the client, as query vectors are), or None:
    a value that is not a number or past float32's range (it arrives as Infinity), a squared norm that overflows
    float32 (every similarity NaN), or all zeros (no direction: cosine is undefined for it)."""
    import numpy as np

    try:
        wide = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        return "the row's vector holds values that are not numbers"
    bad = np.flatnonzero(~np.isfinite(wide) | (np.abs(wide) > FLOAT32_MAX))
    if bad.size:
        return (f"the row's vector has {bad.size} values that are not finite 32-bit floats, as the server stores them (first "
                f"at position {int(bad[0])}: {float(wide[bad[0]]):g})")
    if not wide.any():
        return "the row's vector is all zeros: it has no direction, so no similarity can be computed from it"
    if float(np.dot(wide, wide)) > FLOAT32_MAX:
        return "the row's vector's values are too large: its squared norm overflows 32-bit floats, in which the server scores"
    return None


def _with_carried(entries: Sequence[_Entry], fresh: Any) -> list[Any]:
    """One vector per entry, in order: its carried one, else the next freshly computed one."""
    computed = iter(fresh)
    return [e.vector if e.vector is not None else next(computed) for e in entries]


def _batches(rows: Iterable[SourceDoc | RowError], size: int) -> Iterator[list[SourceDoc | RowError]]:
    batch: list[SourceDoc | RowError] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# Tries of a row its bulk request got a 429 for (a full write queue), with backoff 1, 2, 4 ... 30 s:
# 8 give about two minutes of patience (5, 31 s, left rows failed under 8 ingests into one write
# thread; tests/reliability/test_backpressure.py). Rows still refused after them are failures, listed.
BULK_MAX_RETRIES = 8


class FailureLog:
    """Failures as they happen: each is written to the failures file at once and counted; the report
    keeps the first :attr:`KEEP` (memory stays flat however many rows fail).

    The file is written only when asked: a ``path``, or ``default_file`` (what ``hybrid ingest`` does), whose
    name is ``ingest-failures-<alias>-<time>-<pid>-<random>.jsonl`` in the working folder, created exclusively: two
    ingests started in the same second never share one. It is created on the first failure, private to its user
    (0600). Without either, failures are only counted and kept (a library's report and exceptions carry them).
    """

    KEEP = 1_000

    def __init__(self, path: str | Path | None, alias: str, *, tag: str | None = None, default_file: bool = False) -> None:
        self._path = Path(path) if path else None
        self._writes = self._path is not None or default_file
        self._alias = alias if tag is None else f"{alias}-{tag}"  # the default name's; a partition's tag: part-2-of-3
        self._fh: Any = None
        self._lock = threading.Lock()
        self.kept: list[ItemFailure] = []
        self.count = 0
        self.unconfirmed = 0  # not sent, or sent without an answer: a re-run completes them
        self.index_failed = 0  # entries the cluster refused (they were counted as written)
        self._closed = False

    @property
    def path(self) -> str | None:
        return str(self._path) if self._fh is not None else None

    def add(self, failure: ItemFailure) -> None:
        with self._lock:
            if self._closed:  # a sender an interrupt left behind answering late: its rows are listed already
                return
            if self._fh is None and self._writes:
                self._fh = self._open()
            if self._fh is not None:
                self._fh.write(json.dumps({"id": failure.id, "line": failure.line, "status": failure.status,
                                           "stage": failure.source or "index", "reason": failure.reason}) + "\n")
            self.count += 1
            if failure.source == FailureSource.NOT_SENT or (failure.source is None and failure.status is None):
                self.unconfirmed += 1
            if failure.source is None:
                self.index_failed += 1
            if len(self.kept) < self.KEEP:
                self.kept.append(failure)

    @property
    def where(self) -> str:
        """Where the failures are listed, for messages."""
        if self.path is not None:
            return f"listed in {self.path}"
        first = "listed" if self.count <= self.KEEP else f"the first {self.KEEP} listed"
        return f"{first} in .failures of the report or of this error; no failures file was asked for"

    def _open(self) -> TextIO:
        if self._path is not None:
            return open(os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            path = Path(f"ingest-failures-{self._alias}-{stamp}-{os.getpid()}-{secrets.token_hex(3)}.jsonl")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            self._path = path
            return open(fd, "w", encoding="utf-8")

    def close(self) -> str | None:
        with self._lock:
            if self._fh is not None and not self._closed:
                self._fh.close()
            self._closed = True
        return self.path


class _Indexer(threading.Thread):
    """Sends queued action batches through the port's bulk while the main thread embeds.

    Batches waiting in the queue are merged up to ``batch_size`` actions per request. The actions
    of a request are kept until it finishes so that items the cluster failed with a 5xx can be
    sent once more after a pause.
    """

    def __init__(self, cluster: Cluster, index: str, *, batch_size: int, max_retries: int, failures: FailureLog,
                 sources: dict[str, int | None], retry_pause: float = 2.0, work: queue.Queue[Any] | None = None,
                 counts: BulkCounts | None = None, stop: threading.Event | None = None, name: str = "hybrid-bulk") -> None:
        super().__init__(daemon=True, name=name)
        # The creator's context (its X-Opaque-Id, its span), which a thread does not inherit.
        self.context = contextvars.copy_context()
        self.cluster = cluster
        self.index = index
        self.action = f"bulk indexing into {index}"
        self.counts = counts or BulkCounts()  # 429s the helper retried without saying
        self.batch_size = batch_size  # bulk actions per request
        self.max_retries = max_retries
        self.retry_pause = retry_pause
        self.queue: queue.Queue[Any] = work if work is not None else queue.Queue(maxsize=8)
        self.stop = stop or threading.Event()  # set by any sender of a pool that failed or lost the cluster
        self.failures = failures
        self.sources = sources  # entry id -> input line, until its request is answered
        self.waiting = 0.0
        self.busy = 0.0
        self.error: BaseException | None = None
        self.lost = False  # a request got no answer: the cluster is gone, stop sending
        self.unsent: list[str] = []  # ids of entries never sent (or not confirmed) because of that
        self.retried_5xx = 0
        self.splits = 0
        self.answered = 0  # entries whose request was answered (written, or failed into the failures file)

    def _send(self, actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        options = BulkOptions(batch_size=self.batch_size, max_retries=self.max_retries, initial_backoff=1, max_backoff=30)
        return list(self.cluster.bulk(actions, options, counts=self.counts, action=self.action))

    def _send_splitting(self, actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send ``actions``; a request the server refused as a whole (a 4xx for the request, such as
        one id over the length limit) is split in halves and sent again, down to single rows, so
        one bad row fails alone and every good row around it lands."""
        failed = self._send(actions)
        for f in failed:  # 401/403 refuse every request alike: splitting would only repeat it (the port's error, raised)
            if responses.bulk_request_refused(f) and responses.bulk_status(f) in (401, 403):
                raise next(iter(f.values()))["exception"]
        refused = {responses.bulk_item(f)[0] for f in failed if responses.bulk_request_refused(f)}
        if not refused or len(actions) == 1:
            return failed
        out = [f for f in failed if responses.bulk_item(f)[0] not in refused]
        again = [a for a in actions if a["_id"] in refused]
        if len(again) == 1:
            return out + self._send(again)
        self.splits += 1
        telemetry.INGEST.warning("%s: a request of %d rows was refused as a whole; sending it again in halves to find the bad row",
                                 self.action, len(again))
        half = len(again) // 2
        return out + self._send_splitting(again[:half]) + self._send_splitting(again[half:])

    def _send_with_5xx_retry(self, actions: list[dict[str, Any]]) -> None:
        before = (self.counts.rejected_429, self.retried_5xx)
        with tracing.span("hybrid.ingest.batch", {"hybrid.index": self.index, "hybrid.rows": len(actions)}) as span, metrics.ingest_batch():
            failed = self._send_failing(actions)
            tracing.annotate(span, {"hybrid.failed": len(failed), "hybrid.retries": self.counts.rejected_429 + self.retried_5xx - sum(before)})
        for f in failed:
            self.failures.add(_failure(f, self.sources))
        if any(responses.bulk_unanswered(f) for f in failed):
            self.lost = True

    def _send_failing(self, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send ``actions``, the rows failed with a 5xx once more after a pause: the rows that failed."""
        failed = self._send_splitting(actions)
        server_errors = {responses.bulk_item(f)[0] for f in failed if (responses.bulk_status(f) or 0) >= 500}
        if server_errors:
            telemetry.INGEST.warning("%s: %d rows failed with a server error (5xx); sending them once more in %.1f s", self.action,
                                     len(server_errors), self.retry_pause)
            aio.pause(self.retry_pause)
            self.retried_5xx += len(server_errors)
            failed = [f for f in failed if responses.bulk_item(f)[0] not in server_errors]
            failed += self._send_splitting([a for a in actions if a["_id"] in server_errors])
        return failed

    def run(self) -> None:
        self.context.run(self._run)

    def _run(self) -> None:
        done = False
        while not done:
            started = time.perf_counter()
            item = self.queue.get()
            self.waiting += time.perf_counter() - started
            if item is _DONE:
                break
            actions = list(item)
            while len(actions) < self.batch_size:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is _DONE:
                    done = True
                    break
                actions += more
            if self.error is not None or self.lost or self.stop.is_set():
                self.unsent += [a["_id"] for a in actions]  # drain the queue so the producer never blocks
                continue
            t0 = time.perf_counter()
            try:
                self._send_with_5xx_retry(actions)
            except BaseException as exc:  # surfaced by the main thread
                self.error = exc
                self.unsent += [a["_id"] for a in actions]  # not confirmed written: listed in the failures file
            else:
                for a in actions:  # answered: the line is no longer needed (memory stays flat)
                    self.sources.pop(a["_id"], None)
                self.answered += len(actions)
            if self.error is not None or self.lost:
                self.stop.set()
            self.busy += time.perf_counter() - t0


class _Senders:
    """``threads`` senders on one queue, so several bulk requests are in flight at once (a shard
    indexes one request on one write thread: a single sender leaves the other cores idle; measured
    in docs/BENCHMARKS.md, Scale). Reads like one :class:`_Indexer`: failures, counts, errors summed."""

    def __init__(self, cluster: Cluster, index: str, *, batch_size: int, max_retries: int, failures: FailureLog,
                 sources: dict[str, int | None], threads: int) -> None:
        work: queue.Queue[Any] = queue.Queue(maxsize=8 * threads)
        self.counts, stop = BulkCounts(), threading.Event()
        self.threads = [
            _Indexer(cluster, index, batch_size=batch_size, max_retries=max_retries, failures=failures, sources=sources,
                     work=work, counts=self.counts, stop=stop, name=f"hybrid-bulk-{i}")
            for i in range(threads)
        ]
        self.queue = work

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        """No more batches: each sender takes one end mark, sends what it holds and stops."""
        for _ in self.threads:
            self.queue.put(_DONE)
        for t in self.threads:
            t.join()

    def abandon(self, wait: float) -> None:
        """Stop now (an interrupt): the batches queued are dropped (their rows stay unconfirmed), the requests in
        flight get up to ``wait`` seconds to be answered; a sender still waiting then is left behind (a daemon)."""
        self.threads[0].stop.set()
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        for _ in self.threads:
            self.queue.put_nowait(_DONE)
        deadline = time.monotonic() + wait
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def written(self) -> int:
        """Entries answered by the cluster (each written, or listed as failed)."""
        return sum(t.answered for t in self.threads)

    @property
    def lost(self) -> bool:
        return any(t.lost for t in self.threads)

    @property
    def stopped(self) -> bool:
        """A sender lost the cluster or failed: nothing more is sent."""
        return self.lost or self.error is not None

    @property
    def error(self) -> BaseException | None:
        return next((t.error for t in self.threads if t.error is not None), None)

    @property
    def unsent(self) -> list[str]:
        return [doc_id for t in self.threads for doc_id in t.unsent]

    @property
    def busy(self) -> float:
        """Seconds the busiest sender spent in bulk calls."""
        return max(t.busy for t in self.threads)

    @property
    def retried_5xx(self) -> int:
        return sum(t.retried_5xx for t in self.threads)

    @property
    def splits(self) -> int:
        return sum(t.splits for t in self.threads)


class _InlineSenders(_Senders):
    """One sender on the ingesting code's own thread, for an asyncio client (:mod:`adapter.aio`: its
    requests wait on the event loop, which a sender thread cannot reach): the queued batches are sent
    once they fill a bulk request, and at the end; the other tasks of the loop run meanwhile."""

    def __init__(self, cluster: Cluster, index: str, *, batch_size: int, max_retries: int, failures: FailureLog,
                 sources: dict[str, int | None], threads: int) -> None:
        super().__init__(cluster, index, batch_size=batch_size, max_retries=max_retries, failures=failures, sources=sources, threads=1)
        self.batch_size, self.held = batch_size, 0
        self.queue = self  # type: ignore[assignment]  # put() is the queue's: the ingestor's steps stay the same

    def start(self) -> None:
        """Nothing to start: the batches are sent in :meth:`put` and :meth:`finish`."""

    def put(self, actions: list[dict[str, Any]]) -> None:
        self.threads[0].queue.put(actions)
        self.held += len(actions)
        if self.held >= self.batch_size:
            self.finish()

    def finish(self) -> None:
        """Send what is held: the sender's own loop, up to its end mark."""
        self.threads[0].queue.put(_DONE)
        self.threads[0].run()
        self.held = 0


NOT_SENT = "not sent: the connection to the cluster was lost before this row's turn"
INTERRUPTED = "not confirmed written: the ingest was interrupted (Ctrl-C or SIGTERM) before this row's request was answered"
INTERRUPT_WAIT = 1.0  # seconds an interrupted ingest waits for its requests in flight (the issue: stopped within 2 s)


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM while streaming (``__cause__``), with the tally so far."""

    def __init__(self, tally: _Tally) -> None:
        super().__init__("interrupted")
        self.tally = tally


def _interruptible(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own while this one waits in short steps: a signal's handler (Ctrl-C,
    SIGTERM) runs in the main thread between two steps, not after a model call that stays in C code for
    a minute (a whole long document through e5). Interrupted, the call is left to finish in its daemon thread."""
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals reach the main thread only: nothing to wait for
    done: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            done.append((True, context.run(work)))
        except BaseException as exc:  # handed to the waiting thread
            done.append((False, exc))

    thread = threading.Thread(target=run, daemon=True, name="hybrid-embed")
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    ok, value = done[0]
    if not ok:
        raise value
    result: T = value
    return result


def _unsent(doc_id: str, sources: dict[str, int | None], reason: str = NOT_SENT) -> ItemFailure:
    return ItemFailure(doc_id, reason, line=sources.get(doc_id), source=FailureSource.NOT_SENT)


def _failure(info: dict[str, Any], sources: dict[str, int | None], stage: FailureSource | None = None) -> ItemFailure:
    doc_id, status, reason = responses.bulk_item(info)
    return ItemFailure(doc_id, reason, line=sources.get(doc_id) if doc_id is not None else None, status=status, source=stage)


@dataclass(frozen=True)
class _Doc:
    """One admitted document: its entries (one, or its chunks) and the input line it came from."""

    id: str
    line: int | None
    entries: tuple[_Entry, ...]
    trims: bool = True  # its older, longer self's chunks beyond these are deleted (not a chunk given as it is)


@dataclass(frozen=True)
class _Admitted:
    """One batch of rows sorted before embedding: the documents to index, and the rows that failed."""

    docs: tuple[_Doc, ...]
    failures: tuple[ItemFailure, ...]
    chunking: bool

    @property
    def entries(self) -> tuple[_Entry, ...]:
        return tuple(e for d in self.docs for e in d.entries)

    @property
    def lines(self) -> tuple[tuple[str, int | None], ...]:
        """Entry id -> the input line it came from."""
        return tuple((e.id, d.line) for d in self.docs for e in d.entries)

    @property
    def chunk_counts(self) -> tuple[tuple[str, int], ...]:
        """Document id -> its entries now (chunking only: older chunks beyond them are deleted at the end)."""
        return tuple((d.id, len(d.entries)) for d in self.docs if d.trims) if self.chunking else ()

    @property
    def documents(self) -> int:
        return len(self.docs)

    def refusing(self, refused: Mapping[str, str], stage: FailureSource) -> _Admitted:
        """These documents (id -> reason) out, each of their entries a failure at ``stage``."""
        failed = tuple(ItemFailure(e.id, refused[d.id], line=d.line, status=400, source=stage)
                       for d in self.docs if d.id in refused for e in d.entries)
        return _Admitted(tuple(d for d in self.docs if d.id not in refused), self.failures + failed, self.chunking)


@dataclass(frozen=True)
class _Embedded:
    """The vectors of one batch's entries, and where they came from."""

    vectors: Any
    embedded: int  # texts the model saw
    from_cache: int
    rejected: int  # cache entries that failed their integrity check (embedded again)
    seconds: float

    @classmethod
    def none(cls) -> _Embedded:
        return cls((), 0, 0, 0, 0.0)


@dataclass(frozen=True)
class _Tally:
    """What an ingest has done so far; each batch makes a new one."""

    documents: int = 0
    chunks: int = 0  # entries handed to the senders
    embedded: int = 0
    from_cache: int = 0
    rejected: int = 0
    embed_seconds: float = 0.0

    def plus(self, admitted: _Admitted, embedded: _Embedded) -> _Tally:
        return _Tally(self.documents + admitted.documents, self.chunks + len(admitted.entries), self.embedded + embedded.embedded,
                      self.from_cache + embedded.from_cache, self.rejected + embedded.rejected,
                      self.embed_seconds + embedded.seconds)


@dataclass
class _Run:
    """The shell state of one ingest: the failures file, the senders and what they still need to know
    (each entry's input line until its request is answered), the progress bar."""

    failures: FailureLog
    sources: dict[str, int | None]
    senders: _Senders
    bar: Any
    chunk_counts: dict[str, int]
    read: int = 0  # input rows read (an interrupted run's report says where it stopped)

    @classmethod
    def start(cls, ingestor: Ingestor, total: int | None, partition: Partition | None = None) -> _Run:
        from adapter._progress import Bar

        path, default = ingestor.failures_path, ingestor.write_failures
        if partition is None:
            failures = FailureLog(path, ingestor.alias, default_file=default)
        else:  # one failures file per partition: <name>.part-2-of-3.jsonl, or a default name of its own
            failures = FailureLog(partition.failures_path(path) if path else None, ingestor.alias,
                                  tag=f"part-{partition.number}-of-{partition.count}", default_file=default)
        sources: dict[str, int | None] = {}
        kind = _InlineSenders if aio.is_blocking(getattr(ingestor.cluster, "client", None)) else _Senders  # the port's client
        senders = kind(ingestor.cluster, ingestor.info.index, batch_size=ingestor.bulk_batch_size,
                           max_retries=ingestor.max_retries, failures=failures, sources=sources,
                           threads=ingestor.bulk_concurrency)
        senders.start()
        return cls(failures, sources, senders, Bar(f"ingest {ingestor.alias}", total=total, enabled=ingestor.progress), {})

    def record(self, admitted: _Admitted) -> None:
        """The batch's failures into the file; its entries' lines for the senders (before they are queued)."""
        for failure in admitted.failures:
            self.failures.add(failure)
        self.sources.update(admitted.lines)
        self.chunk_counts.update(admitted.chunk_counts)


def _report(tally: _Tally, run: _Run, failures_file: str | None, seconds: float,
            partition: PartitionProgress | None = None) -> IngestReport:
    failures, senders = run.failures, run.senders
    return IngestReport(
        documents=tally.documents,
        chunks=tally.chunks - failures.index_failed,
        failures=tuple(failures.kept),
        embedded=tally.embedded,
        cache_hits=tally.from_cache,
        seconds_total=seconds,
        seconds_embedding=tally.embed_seconds,
        seconds_indexing=senders.busy,
        failures_file=failures_file,
        cache_rejected=tally.rejected,
        retried_429=senders.counts.rejected_429,
        retried_5xx=senders.retried_5xx,
        split_requests=senders.splits,
        failed=failures.count,
        partition=partition,
    )


class Ingestor:
    """Ingest documents into one hybrid index. Use :meth:`open`; the constructor takes what it reads.

    ``cache`` (an :class:`~adapter.models.cache.EmbeddingCache`) answers document vectors already
    computed by the same embedder; the report counts cache hits and model calls.
    ``bulk_concurrency`` bulk requests of up to ``bulk_batch_size`` actions are in flight at once
    (one sender reached 0.52x opensearch-py's ``parallel_bulk``, two 1.15x: docs/BENCHMARKS.md).

    Rows that do not land are in the report (``failures``: the first 1,000; ``failed``: how many) and, when an
    error stops the ingest, on that error (``exc.failures``). A failures file (JSONL, every row) is written only
    when asked: to ``failures_path``, or with ``write_failures=True`` to
    ``ingest-failures-<alias>-<time>-<pid>-<random>.jsonl`` in the working folder (``hybrid ingest`` does).
    """

    def __init__(
        self,
        client: ClusterLike,
        info: IndexInfo,
        embedder: Embedder,
        *,
        cache: EmbeddingCache | None = None,
        batch_size: int = 64,
        bulk_batch_size: int = 500,
        bulk_concurrency: int = 2,
        chunking: Chunking | None = None,
        strict: bool = False,
        progress: bool = True,
        max_retries: int = BULK_MAX_RETRIES,
        failures_path: str | Path | None = None,
        write_failures: bool = False,
        refresh: bool = True,
        max_chars: int | None = DEFAULT_MAX_CHARS,
        caps: Capabilities | None = None,
        engine: Engine | None = None,
        bulk_chunk_size: int | None = None,
    ) -> None:
        if bulk_chunk_size is not None:  # the old name: a 'chunk' is a piece of a text, bulk actions come in batches
            warnings.warn("Ingestor(bulk_chunk_size=...) is deprecated: it is bulk_batch_size", FutureWarning, stacklevel=2)
            bulk_batch_size = bulk_chunk_size
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        if bulk_concurrency < 1:
            raise InputError(f"bulk_concurrency must be at least 1, got {bulk_concurrency}")
        check_fingerprint(info.alias, info.fingerprint, embedder)
        self.cluster = cluster_for(client, engine)  # the port, every request goes through it (a user's raw client: wrapped here)
        self.info = info
        self.embedder = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.bulk_batch_size = bulk_batch_size  # bulk actions per request (batch_size: texts per model call)
        self.bulk_concurrency = bulk_concurrency
        self.chunking = chunking
        self.strict = strict
        self.progress = progress
        self.max_retries = max_retries
        self.failures_path = Path(failures_path) if failures_path else None
        self.write_failures = write_failures  # without failures_path: a file of a default name (the CLI's); else none
        self.refresh = refresh
        self.max_chars = max_chars  # the size policy: an entry whose text is longer is refused before it is embedded
        self._caps = caps  # probed when first needed (only to delete stale chunks)
        self.engine = self.cluster.engine
        self._declared = dict(info.metadata_fields)  # metadata keys the mapping has (adapter.index.metadata)

    @classmethod
    def open(cls, client: ClusterLike, alias: str, embedder: Embedder | None = None, *, allowed_models: Sequence[str] | None = None,
             **options: Any) -> Ingestor:
        """An ingestor for the hybrid index behind ``alias`` (reads the index once). Without
        ``embedder``, the one the index records (when on the allow-list, ``allowed_models``;
        :func:`adapter.models.embedders.load_index_embedder`), as :meth:`Searcher.open` does."""
        cluster = cluster_for(client, options.pop("engine", None))
        info = read_index_info(cluster, alias)
        if embedder is None:
            from adapter.models.embedders import load_index_embedder

            embedder = load_index_embedder(info.fingerprint.spec, allowed=allowed_models, index=alias)
        return cls(cluster, info, embedder, **options)

    @property
    def alias(self) -> str:
        return self.info.alias

    def documents(self) -> Documents:
        """:class:`adapter.ingest.by_id.Documents` on the same index: get and delete by id."""
        return Documents(self.cluster, self.info, refresh=self.refresh)

    def update(self, doc_id: str, *, text: str | None = None, title: str | None = None,
               metadata: Mapping[str, Any] | None = None, replace_metadata: bool = False) -> IngestReport:
        """Change one stored entry. Only what is given changes: ``metadata`` keys are merged into the
        stored ones (``replace_metadata``: replace them). The vector is computed again only when the
        text or the title changed (or the stored one is another model's); otherwise the stored vector
        is written back as it is. Lineage (``parent_id``, ``chunk_index``) is kept. Raises
        :class:`InputError` when there is no entry ``doc_id``."""
        if text is not None and not visible(text):  # what ingest refuses as a row, update refuses too
            raise InputError(f"the new text of {doc_id!r} has no visible character; give text to index (or delete the entry)")
        found = self.documents().get([doc_id], with_vectors=True)
        if not found:
            raise InputError(f"there is no document {doc_id!r} in {self.alias} to update (add it with ingest)")
        old, fp = found[0], self.embedder.fingerprint
        new_text, new_title = old.text if text is None else text, old.title if title is None else title
        meta = dict(metadata or {}) if replace_metadata else {**old.metadata, **(metadata or {})}
        same = new_text == old.text and new_title == old.title and old.embedded_by == fp.key and old.vector is not None
        row = SourceDoc(old.id, new_text, new_title, meta, 1, dict(old.extra), parent_id=old.parent_id, chunk_index=old.chunk_index,
                        vector=old.vector if same else None, embedded_by=fp.key if same else None)
        return self.ingest([row], total=1)

    def update_where(self, selection: DocumentSelection, metadata: Mapping[str, Any]) -> IngestReport:
        """Merge ``metadata`` into every entry ``selection`` matches (text, title, lineage and vector kept:
        nothing is embedded again unless a stored vector is another model's). New keys are declared as
        ingest declares them; an entry whose new metadata the mapping refuses is a failure of the report,
        the others are written. Its ``chunks`` is how many entries were written."""
        if not isinstance(metadata, Mapping):
            raise InputError(f"metadata must be a mapping, got {type(metadata).__name__}")
        key = self.embedder.fingerprint.key

        def rows() -> Iterator[SourceDoc]:
            for line, old in enumerate(self.documents().find(selection, with_vectors=True), 1):
                same = old.embedded_by == key and old.vector is not None
                yield SourceDoc(old.id, old.text, old.title, {**old.metadata, **metadata}, line, dict(old.extra),
                                parent_id=old.parent_id, chunk_index=old.chunk_index,
                                vector=old.vector if same else None, embedded_by=key if same else None)

        return self.ingest(list(rows()))

    def ingest(self, rows: Iterable[SourceDoc | RowError], *, total: int | None = None,
               partition: Partition | None = None) -> IngestReport:
        """Embed and index ``rows``; bad rows are reported, good rows still land (unless strict).

        ``partition``: only the rows of that partition (:mod:`adapter.ingest.partition`), as one run of a round
        the index records (:mod:`adapter.ingest.rounds`): a run with another partition count than an unfinished
        round's is refused before anything is written (:class:`InputError`), and the report says which
        partitions are still to run.

        Raises :class:`ClusterUnavailableError` when the cluster stops answering, after writing
        every row not confirmed written to the failures file (a re-run completes them).

        The steps: refuse a strict input with bad rows (:meth:`_strict_rows`); per batch, admit the
        rows (:meth:`_admit`), embed what was admitted (:meth:`_embed`) and queue it for the senders
        (:meth:`_queue`); then settle what the senders could not confirm (:meth:`_settle`), delete
        the chunks a shorter text left behind and refresh (:meth:`_finish`), and report. Every
        request carries one X-Opaque-Id; the ``hybrid.ingest`` span holds a span per bulk request.
        """
        started = time.perf_counter()
        selection = Selection(partition) if partition is not None else None
        if selection is not None:
            rows, total = selection(rows), None  # how many rows are this partition's is known only at the end
        rows = self._strict_rows(rows)
        if partition is not None:
            rounds.begin(self.cluster, self.info.index, partition)
        with telemetry.request_id() as rid, tracing.span("hybrid.ingest", {"hybrid.index": self.alias, "hybrid.request_id": rid}) as span:
            run = _Run.start(self, total, partition)
            try:
                tally = self._stream(rows, run)
                self._settle(run)
                self._finish(run, tally)
            except _Interrupted as stop:
                raise self._interrupted(stop, run, time.perf_counter() - started) from stop.__cause__
            except HybridError as exc:  # the rows it kept from landing travel with it, file or no file
                exc.failures = tuple(run.failures.kept)
                raise
            finally:
                failures_file = run.failures.close()
            progress = self._finish_partition(selection) if selection is not None else None
            report = _report(tally, run, failures_file, time.perf_counter() - started, progress)
            tracing.annotate(span, {"hybrid.documents": report.documents, "hybrid.chunks": report.chunks, "hybrid.failed": report.failed,
                                    "hybrid.retries": report.retried_429 + report.retried_5xx})
        metrics.ingested(report)
        return report

    def _interrupted(self, stop: _Interrupted, run: _Run, seconds: float) -> IngestInterrupted:
        """Every row read and not confirmed written (the batch in the model, the batches queued or in flight)
        listed in the failures file, and the report of what landed, for the caller to print."""
        for doc_id, line in list(run.sources.items()):  # answered entries leave it; what is left is unconfirmed
            run.failures.add(ItemFailure(doc_id, INTERRUPTED, line=line, source=FailureSource.NOT_SENT))
        failures_file = run.failures.close()
        report = replace(_report(stop.tally, run, failures_file, seconds), chunks=run.senders.written - run.failures.index_failed,
                         interrupted=True, rows_read=run.read)
        return IngestInterrupted(report)

    def _finish_partition(self, selection: Selection) -> PartitionProgress:
        """Every row of the partition written or listed: mark it done in the round's record."""
        ledger = rounds.finish(self.cluster, self.info.index, selection.partition)
        return PartitionProgress(selection.partition, selection.kept, selection.others, ledger)

    def _strict_rows(self, rows: Iterable[SourceDoc | RowError]) -> Iterable[SourceDoc | RowError]:
        """``rows`` as given; with ``strict``, read whole and refused when any row is bad, before anything is sent."""
        if not self.strict:
            return rows
        rows = list(rows)
        bad = [r for r in rows if isinstance(r, RowError)] + [
            RowError(r.line, problem, r.id) for r in rows if isinstance(r, SourceDoc)
            for problem in [self._too_big(_entries(r, self.chunking, self.info.layout))] if problem]
        if bad:
            listing = "; ".join(f"line {r.line}: {r.reason}" for r in bad[:20])
            raise InputError(f"{len(bad)} bad rows and --strict is set, so nothing was written: {listing}")
        return rows

    def _stream(self, rows: Iterable[SourceDoc | RowError], run: _Run) -> _Tally:
        """Admit, embed and queue ``rows`` batch by batch; the senders index while the next batch embeds."""
        tally = _Tally()
        try:
            for batch in _batches(rows, self.batch_size):
                run.read += len(batch)
                admitted = self._declare(self._admit(batch, stopped=run.senders.stopped))
                run.record(admitted)
                embedded = self._embed(admitted.entries) if admitted.entries else _Embedded.none()
                if admitted.entries:
                    self._queue(admitted.entries, embedded.vectors, run)
                tally = tally.plus(admitted, embedded)
                run.bar.update(len(batch))
        except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C, SIGTERM: stop now, and say what landed
            run.senders.abandon(INTERRUPT_WAIT)
            raise _Interrupted(tally) from exc
        except BaseException:
            run.senders.finish()
            raise
        else:
            run.senders.finish()
        finally:
            run.bar.close()
        return tally

    def _admit(self, batch: Sequence[SourceDoc | RowError], *, stopped: bool) -> _Admitted:
        """Sort one batch of rows: the entries to embed and index, and the rows that fail before embedding
        (bad input; or every row once the senders stopped, listed so that the failures file is complete)."""
        docs: list[_Doc] = []
        failures: list[ItemFailure] = []
        for row in batch:
            if isinstance(row, RowError):
                failures.append(ItemFailure(row.id, row.reason, line=row.line, source=FailureSource.INPUT))
                continue
            if stopped:
                failures.append(ItemFailure(row.id, NOT_SENT, line=row.line, source=FailureSource.NOT_SENT))
                continue
            if isinstance(row.id, str) and row.id != stored_id(row.id):  # the readers' rule for every row, so that
                row = replace(row, id=stored_id(row.id))  # get, delete and update find it by the id as written
            doc_entries = _entries(row, self.chunking, self.info.layout)
            problem = self._entries_problem(doc_entries)
            if problem:
                failures.append(ItemFailure(row.id, problem, line=row.line, source=FailureSource.INPUT))
                continue
            docs.append(_Doc(row.id, row.line, tuple(doc_entries), trims=not _as_written(row)))
        return _Admitted(tuple(docs), tuple(failures), self.chunking is not None)

    def _declare(self, admitted: _Admitted) -> _Admitted:
        """Declare the metadata keys the batch brings and the mapping lacks, before anything is sent (a strict
        metadata mapping refuses undeclared keys; adapter.index.metadata). A document whose keys the mapping
        cannot take (over the total-fields or depth limit, a name the server refuses) fails alone with the
        server's reason, and the others' keys are declared: one such row used to sink its whole batch."""
        if not self.info.metadata_strict or not admitted.docs:
            return admitted  # an index made before metadata was strict maps new keys itself, per row
        refused = self._declare_docs(admitted.docs)
        return admitted.refusing(refused, FailureSource.MAPPING) if refused else admitted

    def _declare_docs(self, docs: Sequence[_Doc]) -> dict[str, str]:
        """Declare what ``docs`` bring; when the server refuses it (400), halve them until the documents it refuses
        are found, alone. Returns the refused documents' ids and reasons."""
        index = self.info.index
        added = metadata_mapping.undeclared(self._declared, (d.entries[0].metadata for d in docs))
        if not added:
            return {}
        keys = sorted(added)
        try:
            self.cluster.put_mapping(index, metadata_mapping.put_body(added),
                                     action=f"declaring metadata {', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''} in {index}")
        except BackendError as exc:
            if exc.status != 400:
                return {}  # not the rows' doing: they are sent, and the server answers for each of them
            if len(docs) == 1:
                return {docs[0].id: f"the index's mapping cannot take this row's metadata ({len(keys)} new keys): {exc.reason}"}
            half = len(docs) // 2
            return {**self._declare_docs(docs[:half]), **self._declare_docs(docs[half:])}
        self._declared = metadata_mapping.merge(self._declared, added)
        return {}

    def _embed(self, entries: Sequence[_Entry]) -> _Embedded:
        """The entries' vectors (through the cache), checked against the index's fingerprint; a carried
        vector (checked in :meth:`_entries_problem`) is used as it is."""
        fp = self.embedder.fingerprint
        t0 = time.perf_counter()
        texts = [embedding_text(e.title, e.text) for e in entries if e.vector is None]
        if aio.bridged():  # AsyncIngestor: on a worker thread, the loop's other tasks going on meanwhile
            found = aio.offload(embed_documents, self.embedder, texts, self.cache)
        else:  # on a thread of its own, so that Ctrl-C and SIGTERM are handled at once
            found = _interruptible(lambda: embed_documents(self.embedder, texts, self.cache))
        seconds = time.perf_counter() - t0
        check_vectors(found.vectors, fp, what=f"vectors from {fp.model}")
        return _Embedded(_with_carried(entries, found.vectors), found.embedded, found.from_cache, found.rejected, seconds)

    def _queue(self, entries: Sequence[_Entry], vectors: Any, run: _Run) -> None:
        """Hand the entries' bulk actions to the senders."""
        index, layout = self.info.index, self.info.layout
        stamp = self.embedder.fingerprint.key if self.info.stamps_entries else None
        run.senders.queue.put([self._action(index, layout, e, v, stamp) for e, v in zip(entries, vectors)])

    def _settle(self, run: _Run) -> None:
        """List every row the senders did not confirm written, then raise what stopped them, if anything did."""
        senders, failures = run.senders, run.failures
        if isinstance(senders.error, WriteBlockedError):  # a flood-stage block: retrying would only wait
            raise self._write_blocked(senders.error, run) from senders.error
        if senders.error is not None:
            try:
                raise senders.error  # the port's error (it translated the client's)
            except BaseException as exc:
                for doc_id in senders.unsent:
                    failures.add(_unsent(doc_id, run.sources, f"not confirmed written: {exc}"))
                raise
        for doc_id in senders.unsent:
            failures.add(_unsent(doc_id, run.sources))
        if failures.unconfirmed:
            # The bulk helper reports a request that got no answer as items with status "N/A".
            raise ClusterUnavailableError(
                f"lost the connection to {self.cluster.describe()} while indexing into {self.info.index}: "
                f"{failures.unconfirmed} rows were not confirmed written ({failures.where}, with every other "
                "failure). Run the same ingest again once the cluster answers: ids are stable, so it completes them "
                "without duplicates"
            )

    def _write_blocked(self, error: WriteBlockedError, run: _Run) -> WriteBlockedError:
        """The flood-stage block named with how to lift it, after listing the rows it kept out."""
        for doc_id in run.senders.unsent:
            run.failures.add(_unsent(doc_id, run.sources, f"not written: {error.reason}"))
        blocked = error.index or self.info.index
        return WriteBlockedError(
            f"{error}. Free disk space on the data nodes; the block is lifted once usage drops below the high "
            f"watermark (or: PUT {blocked}/_settings {{\"index.blocks.read_only_allow_delete\": null}}). Then run the same "
            f"ingest again: {run.failures.count} rows were not written ({run.failures.where})",
            index=blocked, status=error.status, reason=error.reason)

    def _finish(self, run: _Run, tally: _Tally) -> None:
        """Delete the chunks shorter texts left behind, then refresh so that what landed is searchable."""
        index, failures = self.info.index, run.failures
        if run.chunk_counts:
            for failure in self._delete_stale_chunks(index, run.chunk_counts):
                failures.add(failure)
        if not self.refresh or tally.chunks <= failures.index_failed:  # nothing landed (a closed index): nothing to refresh
            return
        try:
            self.cluster.refresh([index])
        except BackendError as exc:
            if not failures.count:
                raise
            raise type(exc)(f"{exc}; besides, {failures.count} rows did not land ({failures.where})",
                            status=exc.status, reason=exc.reason) from exc

    def _entries_problem(self, entries: list[_Entry]) -> str | None:
        """Why a document's entries cannot be written (checked before anything is embedded), or None."""
        if not entries:
            return "no words left to index after chunking"
        fp = self.embedder.fingerprint
        return (next((p for p in map(id_problem, (e.id for e in entries)) if p), None) or self._too_big(entries)
                or metadata_mapping.metadata_problem(entries[0].metadata)
                or next((p for e in entries for p in [_carried_problem(e, fp.key, fp.dimension)] if p), None))

    def _too_big(self, entries: list[_Entry]) -> str | None:
        if self.max_chars is None:
            return None
        for n, e in enumerate(entries):
            size = len(e.title) + len(e.text) + sum(len(v) for v in e.extra.values())
            if size > self.max_chars:
                return oversize(size, self.max_chars, f"chunk {n} of its text" if self.chunking is not None else "its text")
        return None

    @staticmethod
    def _action(index: str, layout: DocumentLayout, e: _Entry, vector: Any, stamp: str | None) -> dict[str, Any]:
        """``stamp``: the fingerprint key written as ``embedded_by`` (indexes whose mapping has the field)."""
        return {
            "_op_type": "index",
            "_index": index,
            "_id": e.id,
            "_source": build_document(layout, text=e.text, vector=vector, parent_id=e.parent_id, chunk_index=e.chunk_index,
                                      title=e.title, extra=e.extra, metadata=e.metadata, embedded_by=stamp),
        }

    @property
    def caps(self) -> Capabilities:
        if self._caps is None:
            self._caps = self.cluster.probe()
        return self._caps

    def _delete_stale_chunks(self, index: str, counts: dict[str, int]) -> list[ItemFailure]:
        """Delete chunks beyond a document's new chunk count (left from an older, longer text).

        With ``_delete_by_query`` (the reindex module: 3.x zips, the managed service, Elasticsearch's
        full distribution) one request per 500 documents. Elsewhere (2.19's minimal zip, Elasticsearch's
        integ-test zip) they are found with searches paged by ``search_after`` over (parent_id,
        chunk_index), so any number of stale chunks is found, and removed with bulk deletes. Deletes
        that fail are returned as failures, never dropped.
        """
        self.cluster.refresh([index])
        items = list(counts.items())
        queries = [
            {"bool": {"should": [
                {"bool": {"filter": [{"term": {PARENT_FIELD: doc_id}}, {"range": {CHUNK_FIELD: {"gte": n}}}]}}
                for doc_id, n in items[start : start + 500]
            ], "minimum_should_match": 1}}
            for start in range(0, len(items), 500)
        ]
        if self.caps.delete_by_query:
            return self._delete_by_query(index, queries)
        return self._delete_found(index, queries)

    def _delete_by_query(self, index: str, queries: list[dict[str, Any]]) -> list[ItemFailure]:
        failures: list[ItemFailure] = []
        for query in queries:
            resp = self.cluster.delete_by_query(index, query, action=f"deleting stale chunks in {index}")
            for f in resp.get("failures") or []:
                cause = f.get("cause") or {}
                failures.append(ItemFailure(f.get("id"), f"{cause.get('type')}: {cause.get('reason')}", status=f.get("status"),
                                            source=FailureSource.DELETE_STALE))
            if resp.get("version_conflicts"):
                failures.append(ItemFailure(None, f"{resp['version_conflicts']} stale chunks were written by someone else while being "
                                                  "deleted (version conflicts) and were left in place; run the ingest again",
                                            source=FailureSource.DELETE_STALE))
        return failures

    def _delete_found(self, index: str, queries: list[dict[str, Any]]) -> list[ItemFailure]:
        stale: list[str] = []
        for query in queries:
            body: dict[str, Any] = {
                "query": query,
                "_source": False,
                "size": STALE_PAGE,
                "sort": [{PARENT_FIELD: "asc"}, {CHUNK_FIELD: "asc"}],
            }
            while True:
                page = self.cluster.search(index, body, action=f"finding stale chunks in {index}")["hits"]["hits"]
                stale += [h["_id"] for h in page]
                if len(page) < STALE_PAGE:
                    break
                body["search_after"] = page[-1]["sort"]
        if not stale:
            return []
        actions = ({"_op_type": "delete", "_index": index, "_id": i} for i in stale)
        failed = list(self.cluster.bulk(actions, BulkOptions(max_retries=self.max_retries, raise_on_exception=True),
                                        action=f"deleting stale chunks in {index}"))
        # A chunk already gone is what we wanted.
        return [_failure(info, {}, stage=FailureSource.DELETE_STALE) for info in failed if responses.bulk_status(info) != 404]
