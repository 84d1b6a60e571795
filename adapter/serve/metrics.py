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
  ``hybrid_serve_embed_batch_size``: how many queries each model call embedded.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR"
ROUTES = ("/", "/search", "/api/compare", "/api/info", "/healthz", "/readyz", "/metrics", "/openapi.json")
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
        self.requests = Counter("hybrid_serve_requests", "HTTP requests answered", ["route", "method", "status"], registry=r)
        self.request_seconds = Histogram("hybrid_serve_request_seconds", "time to answer a request", ["route"], registry=r,
                                         buckets=LATENCY_BUCKETS)
        self.search_seconds = Histogram("hybrid_serve_search_seconds", "time of one search, by technique", ["technique"], registry=r,
                                        buckets=LATENCY_BUCKETS)
        self.fallbacks = Counter("hybrid_serve_fallbacks", "hybrid searches fused in the client because the server could not",
                                 ["technique"], registry=r)
        self.errors = Counter("hybrid_serve_errors", "requests refused or failed, by kind", ["kind"], registry=r)
        self.cluster_errors = Counter("hybrid_serve_cluster_errors", "the cluster's error answers, by status", ["status"], registry=r)
        self.in_flight = Gauge("hybrid_serve_in_flight", "searches running", registry=r, multiprocess_mode="livesum")
        self.queued = Gauge("hybrid_serve_queued", "searches waiting for a free slot", registry=r, multiprocess_mode="livesum")
        self.query_vectors = Counter("hybrid_serve_query_vectors", "query vectors, by where they came from", ["source"], registry=r)
        self.embed_batch = Histogram("hybrid_serve_embed_batch_size", "queries embedded per model call", registry=r, buckets=BATCH_BUCKETS)

    def exposition(self) -> tuple[bytes, str]:
        """The text ``/metrics`` answers, and its content type: this process's values, or every
        worker's added up in multiprocess mode."""
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
