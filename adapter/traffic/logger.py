"""Logging searches and events to the UBI store without slowing a search.

:class:`UbiLogger` puts each record on a bounded queue (``put_nowait``: a search never waits) and
one daemon thread writes them in batches through :class:`~adapter.traffic.store.UbiStore`. When the
queue is full a record is dropped and counted (:attr:`UbiLogger.stats`), never blocking; when a
write fails its records are counted as failed and the thread goes on. Off unless built: the
library logs nothing by itself. Two ways in::

    logger = UbiLogger(cluster)                       # creates ubi_queries / ubi_events if missing
    logged = logger.wrap(searcher)                    # a Searcher that logs every search
    found = logged.search("error E-4012", client_id="browser-7")
    found.query_id                                    # give it to the page, for its click events

    query_id = logger.log_search(result, client_id="browser-7")   # or after any search of your own
    logger.log_event(event_json)                                  # a click from the page (validated)

``store_query_text=False`` keeps no query text (``user_query`` is empty; a hash groups the searches
of one query, see :func:`adapter.traffic.ubi.query_key`).
"""

from __future__ import annotations

import datetime
import logging
import queue
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapter.traffic import ubi
from adapter.traffic.store import UbiStore

if TYPE_CHECKING:
    from adapter.engines import ClusterLike
    from adapter.search.results import SearchResult
    from adapter.search.searcher import Searcher

log = logging.getLogger(__name__)

QUEUE_SIZE = 10_000
BATCH = 500
LINGER_S = 0.5  # how long the writer waits for a batch to fill before it writes what it has
POLL_S = 0.05  # how often a lingering writer looks at the queue (it sleeps between: a put does not wake it)


@dataclass(frozen=True)
class LoggerStats:
    """Records queued, written, dropped (the queue was full) and failed (the cluster refused them)."""

    queued: int
    written: int
    dropped: int
    failed: int


@dataclass(frozen=True)
class Logged:
    """A search and the ``query_id`` its UBI record has (what the page's events must carry)."""

    result: SearchResult
    query_id: str


def now() -> str:
    """UTC, ISO 8601 with milliseconds and a Z (OpenSearch's date needs the zone)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_query_id() -> str:
    return str(uuid.uuid4())


def fusion_label(fusion: Any) -> str | None:
    """A fusion's name with its weights, as reports show it (``min_max-arithmetic_mean@0.3,0.7``)."""
    if fusion is None:
        return None
    weights = getattr(fusion, "weights", None)
    return f"{fusion.name}@{','.join(f'{w:g}' for w in weights)}" if weights else str(fusion.name)


class UbiLogger:
    """Writes UBI query records and events in the background (see the module docstring)."""

    def __init__(
        self,
        cluster: ClusterLike | UbiStore,
        *,
        store_query_text: bool = True,
        queue_size: int = QUEUE_SIZE,
        batch: int = BATCH,
        linger_s: float = LINGER_S,
        ensure: bool = True,
    ) -> None:
        self.store = cluster if isinstance(cluster, UbiStore) else UbiStore(cluster)
        self.store_query_text = store_query_text
        if ensure:
            self.store.ensure()
        self._queue: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue(maxsize=queue_size)
        self._batch, self._linger = batch, linger_s
        self._lock = threading.Condition()
        self._counts = {"queued": 0, "written": 0, "dropped": 0, "failed": 0}
        self._pending = 0
        self._hurry = 0  # callers waiting in flush(): the writer stops lingering
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hybrid-ubi-writer", daemon=True)
        self._thread.start()

    # -- what callers use ----------------------------------------------------------------------------
    def wrap(self, searcher: Searcher) -> LoggedSearcher:
        return LoggedSearcher(searcher, self)

    def log_search(
        self,
        result: SearchResult,
        *,
        client_id: str,
        query_id: str | None = None,
        index: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        interleaving: Mapping[str, Any] | None = None,
        hit_ids: Sequence[str] | None = None,
    ) -> str:
        """Queue the query record of ``result`` (the page shown: ``hit_ids``, default its hits) and
        return its ``query_id`` (``query_id`` when given, else a new UUID)."""
        query_id = query_id or new_query_id()
        own: dict[str, Any] = {"technique": result.technique.value, "fusion": fusion_label(result.fusion)}
        if index:
            own["index"] = index
        if interleaving:
            own["interleaving"] = dict(interleaving)
        record = ubi.query_record(
            query_id=query_id,
            client_id=client_id,
            user_query=result.query,
            hit_ids=result.ids if hit_ids is None else hit_ids,
            timestamp=now(),
            hybrid=own,
            store_text=self.store_query_text,
            extra=attributes,
        )
        self._put("query", record)
        return query_id

    def log_query(self, record: Mapping[str, Any], *, validate: bool = True) -> bool:
        """Queue a query record built elsewhere (:func:`adapter.traffic.ubi.query_record`, an import);
        checked against the query schema first. False when the queue was full and it was dropped."""
        if validate:
            ubi.validate("query", record)
        ubi.parse_query(record)
        return self._put("query", dict(record))

    def log_event(self, event: Mapping[str, Any], *, validate: bool = True) -> bool:
        """Queue one UBI event (a ``POST /events`` body), checked against the event schema first
        (:class:`~adapter.errors.InputError` names what is wrong; nothing is queued then). False when
        the queue was full and it was dropped."""
        if validate:
            ubi.validate("event", event)
        ubi.parse_event(event)  # the fields the reports read, checked with or without jsonschema
        return self._put("event", ubi.stored_event(event))

    @property
    def stats(self) -> LoggerStats:
        with self._lock:
            return LoggerStats(**self._counts)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued record was written or failed (False: ``timeout`` ran out first)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._hurry += 1
            try:
                while self._pending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._lock.wait(left)
            finally:
                self._hurry -= 1
        return True

    def close(self, timeout: float = 30.0) -> bool:
        """Write what is queued, then stop the thread."""
        done = self.flush(timeout)
        self._closed = True
        self._thread.join(timeout=max(self._linger * 2, 1.0))
        return done

    # -- the writer ----------------------------------------------------------------------------------
    def _put(self, kind: str, record: dict[str, Any]) -> bool:
        with self._lock:
            self._pending += 1
        try:
            self._queue.put_nowait((kind, record))
        except queue.Full:
            with self._lock:
                self._pending -= 1
                self._counts["dropped"] += 1
                self._lock.notify_all()
            return False
        with self._lock:
            self._counts["queued"] += 1
        return True

    def _take(self) -> list[tuple[str, dict[str, Any]]]:
        """A batch: wait up to ``linger`` for the first record, then up to ``linger`` more for the batch to
        fill (unless a flush or close waits), then take what is there. Records arriving one search at a
        time were each their own ``_bulk`` and woke this thread once per search: +0.4 ms on ``hybrid
        serve --ubi``'s p50 on a 2-core machine. Sleeping in ``POLL_S`` steps, a put never wakes it."""
        try:
            items = [self._queue.get(timeout=self._linger)]
        except queue.Empty:
            return []
        until = time.monotonic() + self._linger
        while self._queue.qsize() < self._batch - 1 and not (self._closed or self._hurry):
            left = until - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(POLL_S, left))
        while len(items) < self._batch:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return items

    def _run(self) -> None:
        while not (self._closed and self._queue.empty()):
            items = self._take()
            if items:
                self._write(items)

    def _write(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        queries = [r for kind, r in items if kind == "query"]
        events = [r for kind, r in items if kind == "event"]
        try:
            report = self.store.write(queries, events)
            written, failed = report.written, len(report.failed)
            if failed:
                log.warning("UBI store refused %d of %d records (first: %s)", failed, len(items), report.failed[0])
        except Exception as exc:  # the thread must outlive any failure: count it and go on
            written, failed = 0, len(items)
            log.warning("writing %d UBI records failed: %s", len(items), exc)
        with self._lock:
            self._counts["written"] += written
            self._counts["failed"] += failed
            self._pending -= len(items)
            self._lock.notify_all()


class LoggedSearcher:
    """A :class:`~adapter.search.searcher.Searcher` whose searches leave a UBI query record."""

    def __init__(self, searcher: Searcher, logger: UbiLogger) -> None:
        self.searcher = searcher
        self.logger = logger

    def search(self, query: str, *, client_id: str, query_id: str | None = None, **kwargs: Any) -> Logged:
        """``Searcher.search(query, **kwargs)``, then its record queued; returns both."""
        result = self.searcher.search(query, **kwargs)
        return Logged(
            result, self.logger.log_search(result, client_id=client_id, query_id=query_id, index=self.searcher.alias)
        )
