"""``/metrics``: what ``hybrid serve`` did, in Prometheus' text format (prometheus-client).

One :class:`Metrics` per app, on its own registry (a process may hold several apps: the tests do).
With several workers (``hybrid serve --workers N``) each process writes its values to files in
``PROMETHEUS_MULTIPROC_DIR`` and ``/metrics`` adds them up (prometheus-client's multiprocess mode),
so any worker answers for all of them.

- ``hybrid_serve_requests_total{route,method,status}``: every answer, refusals included;
- ``hybrid_serve_request_seconds{route}``: how long each took;
- ``hybrid_serve_search_seconds{technique}``: each search (a compare's columns each count);
- ``hybrid_serve_fallbacks_total{technique}``: hybrid searches the server could not fuse (fused here);
- ``hybrid_serve_errors_total{kind}``: input, unauthorized, host, media_type, too_large, overloaded,
  deadline, cluster, unavailable, internal;
- ``hybrid_serve_cluster_errors_total{status}``: the cluster's error answers (``unreachable``: none);
- ``hybrid_serve_in_flight`` and ``hybrid_serve_queued``: searches running and waiting;
- ``hybrid_serve_query_vectors_total{source}``: query vectors from the cache or the model, and
  ``hybrid_serve_embed_batch_size``: how many queries each model call embedded;
- with ``--ubi``: ``hybrid_serve_ubi_records_total{state}``: UBI records (searches and events)
  ``queued``, ``written``, ``dropped`` (the queue was full) and ``failed`` (the cluster refused them);
- with ``--interleave``: ``hybrid_serve_interleaving_searches{outcome}``: the interleaved searches
  this server answered, by the candidate's ``win``, ``loss`` or ``tie`` so far (a gauge: a tie
  becomes a win when its click arrives). Both are brought up to date when ``/metrics`` is read and
  after each search; with several workers each adds its own, and a click counts in the tally only on
  the worker that served its page (``hybrid traffic report`` reads every record from the store).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR"
ROUTES = ("/", "/search", "/api/compare", "/events", "/api/info", "/healthz", "/readyz", "/metrics", "/openapi.json")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


def route_of(path: str) -> str:
    """The route a path belongs to, from a fixed set (a label never grows with what clients send)."""
    if path in ROUTES:
        return path
    for prefix in ("/static", "/report"):
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return "other"


class Metrics:
    """The app's instruments and their exposition."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "hybrid_serve_requests", "HTTP requests answered", ["route", "method", "status"], registry=r
        )
        self.request_seconds = Histogram(
            "hybrid_serve_request_seconds", "time to answer a request", ["route"], registry=r, buckets=LATENCY_BUCKETS
        )
        self.search_seconds = Histogram(
            "hybrid_serve_search_seconds",
            "time of one search, by technique",
            ["technique"],
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.fallbacks = Counter(
            "hybrid_serve_fallbacks",
            "hybrid searches fused in the client because the server could not",
            ["technique"],
            registry=r,
        )
        self.errors = Counter("hybrid_serve_errors", "requests refused or failed, by kind", ["kind"], registry=r)
        self.cluster_errors = Counter(
            "hybrid_serve_cluster_errors", "the cluster's error answers, by status", ["status"], registry=r
        )
        self.in_flight = Gauge("hybrid_serve_in_flight", "searches running", registry=r, multiprocess_mode="livesum")
        self.queued = Gauge(
            "hybrid_serve_queued", "searches waiting for a free slot", registry=r, multiprocess_mode="livesum"
        )
        self.query_vectors = Counter(
            "hybrid_serve_query_vectors", "query vectors, by where they came from", ["source"], registry=r
        )
        self.embed_batch = Histogram(
            "hybrid_serve_embed_batch_size", "queries embedded per model call", registry=r, buckets=BATCH_BUCKETS
        )
        self._traffic: tuple[Callable[[], Any], Callable[[], Any]] | None = None
        self._seen = {"queued": 0, "written": 0, "dropped": 0, "failed": 0}
        self._syncing = threading.Lock()

    def watch_traffic(self, stats: Callable[[], Any], tally: Callable[[], Any]) -> None:
        """Export the UBI logger's counts (``stats()``: a LoggerStats) and the interleaving tally (``tally()``)."""
        r = self.registry
        self.ubi_records = Counter(
            "hybrid_serve_ubi_records",
            "UBI records (searches and events) by what became of them",
            ["state"],
            registry=r,
        )
        self.interleaving = Gauge(
            "hybrid_serve_interleaving_searches",
            "interleaved searches by the candidate's outcome so far",
            ["outcome"],
            registry=r,
            multiprocess_mode="livesum",
        )
        for state in self._seen:
            self.ubi_records.labels(state)
        self._traffic = (stats, tally)
        self.sync_traffic()

    def sync_traffic(self, *, wait: bool = False) -> None:
        """The logger's counts since the last call added to the counters; the tally's gauges set.
        A search's call is skipped when another thread is at it (its values are as new)."""
        if self._traffic is None or not self._syncing.acquire(blocking=wait):
            return
        try:
            self._sync(*self._traffic)
        finally:
            self._syncing.release()

    def _sync(self, stats_of: Callable[[], Any], tally_of: Callable[[], Any]) -> None:
        stats, tally = stats_of(), tally_of()
        for state, seen in self._seen.items():
            now = getattr(stats, state)
            if now > seen:
                self.ubi_records.labels(state).inc(now - seen)
                self._seen[state] = now
        for outcome in ("win", "loss", "tie"):
            self.interleaving.labels(outcome).set(
                getattr(tally, {"win": "wins", "loss": "losses", "tie": "ties"}[outcome])
            )

    def exposition(self) -> tuple[bytes, str]:
        """The text ``/metrics`` answers, and its content type: this process's values, or every
        worker's added up in multiprocess mode."""
        self.sync_traffic(wait=True)
        registry: Any = self.registry
        if os.environ.get(MULTIPROCESS):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST

    @staticmethod
    def process_ended() -> None:
        """A worker's last word in multiprocess mode: its live gauges stop counting."""
        if os.environ.get(MULTIPROCESS):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
