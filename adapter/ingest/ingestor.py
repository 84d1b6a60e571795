"""``hybrid ingest``: embed documents in Python and bulk-index them, with indexing overlapping embedding.

The main thread reads, chunks and embeds in batches; sender threads (``bulk_concurrency``, default
2, so that one request is indexed while the next is serialised and sent) feed the batches to the
port's bulk (:meth:`adapter.engines.port.Cluster.bulk`: the client's ``streaming_bulk``, which
retries 429s with backoff; the client retries 502/503/504 and timeouts; per-document 5xx failures
get one more round). Every per-item failure is collected
with its reason and written to a failures file: nothing is dropped silently. Ids are stable (the
document id, or ``<id>#<n>`` for chunks), so re-ingesting replaces instead of duplicating.

:class:`Ingestor` composes the steps, each a module of this package: rows into entries and batches
(:mod:`~adapter.ingest.entries`), admission (:mod:`~adapter.ingest.admission`), the metadata keys
declared (:mod:`~adapter.ingest.declare`), embedding (:mod:`~adapter.ingest.embedding`), bulk
writing (:mod:`~adapter.ingest.bulk`, :mod:`~adapter.ingest.senders`), the failures
(:mod:`~adapter.ingest.failures`), the tally and the report (:mod:`~adapter.ingest.progress`), and
the stale chunks deleted (:mod:`~adapter.ingest.stale`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from adapter import aio
from adapter.engines import ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.errors import BackendError, HybridError, InputError, Terminated
from adapter.index.catalog import IndexInfo, read_index_info
from adapter.index.documents import DocumentLayout, build_document
from adapter.ingest import rounds
from adapter.ingest.admission import Admission
from adapter.ingest.bulk import BulkTarget
from adapter.ingest.by_id import Documents
from adapter.ingest.by_id import Selection as DocumentSelection
from adapter.ingest.declare import MetadataDeclarer
from adapter.ingest.embedding import Embedded, embed
from adapter.ingest.entries import Entry, batches
from adapter.ingest.failures import INTERRUPTED, FailureLog
from adapter.ingest.partition import Partition, PartitionProgress, Selection
from adapter.ingest.progress import INTERRUPT_WAIT, Interrupted, Run, Tally, report_of, settle
from adapter.ingest.report import FailureSource, IngestInterrupted, IngestReport, ItemFailure
from adapter.ingest.senders import BULK_MAX_RETRIES, InlineSenders, Senders
from adapter.ingest.sources import DEFAULT_MAX_CHARS, Chunking, RowError, SourceDoc, visible
from adapter.ingest.stale import delete_stale_chunks
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder, check_fingerprint
from adapter.observability import metrics, telemetry, tracing


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
            warnings.warn(
                "Ingestor(bulk_chunk_size=...) is deprecated: it is bulk_batch_size", FutureWarning, stacklevel=2
            )
            bulk_batch_size = bulk_chunk_size
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        if bulk_concurrency < 1:
            raise InputError(f"bulk_concurrency must be at least 1, got {bulk_concurrency}")
        check_fingerprint(info.alias, info.fingerprint, embedder)
        # the port, every request goes through it (a user's raw client: wrapped here)
        self.cluster = cluster_for(client, engine)
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
        fp = embedder.fingerprint
        self.admission = Admission(chunking, info.layout, fp.key, fp.dimension, max_chars)
        self.declarer = MetadataDeclarer(self.cluster, info.index, info.metadata_fields, strict=info.metadata_strict)

    @classmethod
    def open(
        cls,
        client: ClusterLike,
        alias: str,
        embedder: Embedder | None = None,
        *,
        allowed_models: Sequence[str] | None = None,
        **options: Any,
    ) -> Ingestor:
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

    def update(
        self,
        doc_id: str,
        *,
        text: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        replace_metadata: bool = False,
    ) -> IngestReport:
        """Change one stored entry. Only what is given changes: ``metadata`` keys are merged into the
        stored ones (``replace_metadata``: replace them). The vector is computed again only when the
        text or the title changed (or the stored one is another model's); otherwise the stored vector
        is written back as it is. Lineage (``parent_id``, ``chunk_index``) is kept. Raises
        :class:`InputError` when there is no entry ``doc_id``."""
        if text is not None and not visible(text):  # what ingest refuses as a row, update refuses too
            raise InputError(
                f"the new text of {doc_id!r} has no visible character; give text to index (or delete the entry)"
            )
        found = self.documents().get([doc_id], with_vectors=True)
        if not found:
            raise InputError(f"there is no document {doc_id!r} in {self.alias} to update (add it with ingest)")
        old, fp = found[0], self.embedder.fingerprint
        new_text, new_title = old.text if text is None else text, old.title if title is None else title
        meta = dict(metadata or {}) if replace_metadata else {**old.metadata, **(metadata or {})}
        same = new_text == old.text and new_title == old.title and old.embedded_by == fp.key and old.vector is not None
        row = SourceDoc(
            old.id,
            new_text,
            new_title,
            meta,
            1,
            dict(old.extra),
            parent_id=old.parent_id,
            chunk_index=old.chunk_index,
            vector=old.vector if same else None,
            embedded_by=fp.key if same else None,
        )
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
                yield SourceDoc(
                    old.id,
                    old.text,
                    old.title,
                    {**old.metadata, **metadata},
                    line,
                    dict(old.extra),
                    parent_id=old.parent_id,
                    chunk_index=old.chunk_index,
                    vector=old.vector if same else None,
                    embedded_by=key if same else None,
                )

        return self.ingest(list(rows()))

    def ingest(
        self, rows: Iterable[SourceDoc | RowError], *, total: int | None = None, partition: Partition | None = None
    ) -> IngestReport:
        """Embed and index ``rows``; bad rows are reported, good rows still land (unless strict).

        ``partition``: only the rows of that partition (:mod:`adapter.ingest.partition`), as one run of a round
        the index records (:mod:`adapter.ingest.rounds`): a run with another partition count than an unfinished
        round's is refused before anything is written (:class:`InputError`), and the report says which
        partitions are still to run.

        Raises :class:`ClusterUnavailableError` when the cluster stops answering, after writing
        every row not confirmed written to the failures file (a re-run completes them).

        The steps: refuse a strict input with bad rows (:meth:`_strict_rows`); per batch, admit the
        rows (:class:`~adapter.ingest.admission.Admission`), declare their metadata keys, embed what was
        admitted (:func:`adapter.ingest.embedding.embed`) and queue it for the senders
        (:meth:`_queue`); then settle what the senders could not confirm (:func:`adapter.ingest.progress.settle`),
        delete the chunks a shorter text left behind and refresh (:meth:`_finish`), and report. Every
        request carries one X-Opaque-Id; the ``hybrid.ingest`` span holds a span per bulk request.
        """
        started = time.perf_counter()
        selection = Selection(partition) if partition is not None else None
        if selection is not None:
            rows, total = selection(rows), None  # how many rows are this partition's is known only at the end
        rows = self._strict_rows(rows)
        if partition is not None:
            rounds.begin(self.cluster, self.info.index, partition)
        with (
            telemetry.request_id() as rid,
            tracing.span("hybrid.ingest", {"hybrid.index": self.alias, "hybrid.request_id": rid}) as span,
        ):
            run = self._start(total, partition)
            try:
                tally = self._stream(rows, run)
                settle(run, where=self.cluster.describe(), index=self.info.index)
                self._finish(run, tally)
            except Interrupted as stop:
                raise self._interrupted(stop, run, time.perf_counter() - started) from stop.__cause__
            except HybridError as exc:  # the rows it kept from landing travel with it, file or no file
                exc.failures = tuple(run.failures.kept)
                raise
            finally:
                failures_file = run.failures.close()
            progress = self._finish_partition(selection) if selection is not None else None
            report = report_of(tally, run, failures_file, time.perf_counter() - started, progress)
            tracing.annotate(
                span,
                {
                    "hybrid.documents": report.documents,
                    "hybrid.chunks": report.chunks,
                    "hybrid.failed": report.failed,
                    "hybrid.retries": report.retried_429 + report.retried_5xx,
                },
            )
        metrics.ingested(report)
        return report

    def _interrupted(self, stop: Interrupted, run: Run, seconds: float) -> IngestInterrupted:
        """Every row read and not confirmed written (the batch in the model, the batches queued or in flight)
        listed in the failures file, and the report of what landed, for the caller to print."""
        for doc_id, line in list(run.sources.items()):  # answered entries leave it; what is left is unconfirmed
            run.failures.add(ItemFailure(doc_id, INTERRUPTED, line=line, source=FailureSource.NOT_SENT))
        failures_file = run.failures.close()
        report = replace(
            report_of(stop.tally, run, failures_file, seconds),
            chunks=run.senders.written - run.failures.index_failed,
            interrupted=True,
            rows_read=run.read,
        )
        return IngestInterrupted(report)

    def _finish_partition(self, selection: Selection) -> PartitionProgress:
        """Every row of the partition written or listed: mark it done in the round's record."""
        ledger = rounds.finish(self.cluster, self.info.index, selection.partition)
        return PartitionProgress(selection.partition, selection.kept, selection.others, ledger)

    def _strict_rows(self, rows: Iterable[SourceDoc | RowError]) -> Iterable[SourceDoc | RowError]:
        """``rows`` as given; with ``strict``, read whole and refused when any row is bad, before anything is sent."""
        return self.admission.strict(rows) if self.strict else rows

    def _start(self, total: int | None, partition: Partition | None) -> Run:
        """The run's failures file (one per partition: ``<name>.part-2-of-3.jsonl``, or a default name of its
        own), its senders, started (on the caller's thread for an asyncio client), and its progress bar."""
        from adapter._progress import Bar

        path, default = self.failures_path, self.write_failures
        if partition is None:
            failures = FailureLog(path, self.alias, default_file=default)
        else:
            failures = FailureLog(
                partition.failures_path(path) if path else None,
                self.alias,
                tag=f"part-{partition.number}-of-{partition.count}",
                default_file=default,
            )
        sources: dict[str, int | None] = {}
        kind = InlineSenders if aio.is_blocking(getattr(self.cluster, "client", None)) else Senders  # the port's client
        target = BulkTarget(self.cluster, self.info.index, self.bulk_batch_size, self.max_retries, failures, sources)
        senders = kind(target, threads=self.bulk_concurrency)
        senders.start()
        return Run(failures, sources, senders, Bar(f"ingest {self.alias}", total=total, enabled=self.progress), {})

    def _stream(self, rows: Iterable[SourceDoc | RowError], run: Run) -> Tally:
        """Admit, embed and queue ``rows`` batch by batch; the senders index while the next batch embeds."""
        tally = Tally()
        try:
            for batch in batches(rows, self.batch_size):
                run.read += len(batch)
                admitted = self.declarer.declare(self.admission.admit(batch, stopped=run.senders.stopped))
                run.record(admitted)
                embedded = embed(self.embedder, self.cache, admitted.entries) if admitted.entries else Embedded.none()
                if admitted.entries:
                    self._queue(admitted.entries, embedded.vectors, run)
                tally = tally.plus(admitted, embedded)
                run.bar.update(len(batch))
        except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C, SIGTERM: stop now, and say what landed
            run.senders.abandon(INTERRUPT_WAIT)
            raise Interrupted(tally) from exc
        except BaseException:
            run.senders.finish()
            raise
        else:
            run.senders.finish()
        finally:
            run.bar.close()
        return tally

    def _queue(self, entries: Sequence[Entry], vectors: Any, run: Run) -> None:
        """Hand the entries' bulk actions to the senders."""
        index, layout = self.info.index, self.info.layout
        stamp = self.embedder.fingerprint.key if self.info.stamps_entries else None
        run.senders.queue.put([self._action(index, layout, e, v, stamp) for e, v in zip(entries, vectors)])

    def _finish(self, run: Run, tally: Tally) -> None:
        """Delete the chunks shorter texts left behind, then refresh so that what landed is searchable."""
        index, failures = self.info.index, run.failures
        if run.chunk_counts:
            for failure in delete_stale_chunks(
                self.cluster, self.caps, index, run.chunk_counts, max_retries=self.max_retries
            ):
                failures.add(failure)
        # nothing landed (a closed index): nothing to refresh
        if not self.refresh or tally.chunks <= failures.index_failed:
            return
        try:
            self.cluster.refresh([index])
        except BackendError as exc:
            if not failures.count:
                raise
            raise type(exc)(
                f"{exc}; besides, {failures.count} rows did not land ({failures.where})",
                status=exc.status,
                reason=exc.reason,
            ) from exc

    @staticmethod
    def _action(index: str, layout: DocumentLayout, e: Entry, vector: Any, stamp: str | None) -> dict[str, Any]:
        """``stamp``: the fingerprint key written as ``embedded_by`` (indexes whose mapping has the field)."""
        return {
            "_op_type": "index",
            "_index": index,
            "_id": e.id,
            "_source": build_document(
                layout,
                text=e.text,
                vector=vector,
                parent_id=e.parent_id,
                chunk_index=e.chunk_index,
                title=e.title,
                extra=e.extra,
                metadata=e.metadata,
                embedded_by=stamp,
            ),
        }

    @property
    def caps(self) -> Capabilities:
        if self._caps is None:
            self._caps = self.cluster.probe()
        return self._caps
