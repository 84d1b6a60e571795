"""Prometheus metrics of searches and ingests (the ``metrics`` extra: ``prometheus-client``).

Without ``prometheus-client`` every call here is a no-op. With it, the metrics are registered in
prometheus-client's default registry (``prometheus_client.REGISTRY``) when the first search or
ingest records one; the application exposes them as it exposes its own
(``prometheus_client.start_http_server(9464)``, or ``make_asgi_app()`` / ``make_wsgi_app()`` mounted
at ``/metrics``). The library (Searcher, AsyncSearcher, Ingestor, AsyncIngestor) records:

- ``hybrid_searches_total{technique, fused_by, outcome}``: searches ended (``outcome``: ``ok`` or
  ``error``; ``technique`` the one that ran, after any fallback, or the one asked when it raised);
- ``hybrid_search_seconds{technique}``: each search's wall-clock time (histogram);
- ``hybrid_search_fallbacks_total{technique}``: searches whose plan fell back (the result's notices say why);
- ``hybrid_search_retries_total{technique}``: attempts of a search planned again (alias moved, shards failed,
  node left, memory breaker: :mod:`adapter.search.recovery`);
- ``hybrid_search_partial_results_total{kind, outcome}``: answers that lacked part of the result (``kind``:
  ``shards``, a shard failed in a 200 or a document of the page could not be fetched; ``collapse``, a collapsed
  page with fewer groups than asked while the query matched more). ``outcome``: ``asked_again`` (the first time:
  the search asked once more), ``notice`` (used, the result says so), ``error`` (the search was asked not to
  allow partial results: :class:`~adapter.errors.PartialResultError`);
- ``hybrid_leg_requests_total{leg, outcome}`` and ``hybrid_leg_seconds{leg}``: each request a search sends
  (``leg``: ``bm25``, ``dense``, ``hybrid``, ``bm25+dense``, ``documents``, ``excerpts``, ``facets``, ``signals``);
- ``hybrid_ingest_rows_total{outcome}``: input rows of a finished ingest, ``accepted`` (documents sent to be
  written) or ``failed`` (bad input, refused by the cluster, not sent: its report's ``failed``);
  ``hybrid_ingest_entries_total``: index entries written (chunks; one per document when not chunking);
- ``hybrid_ingest_batches_total`` and ``hybrid_ingest_batch_seconds``: the batches the bulk senders took (each
  sent by the bulk helper in requests of ``bulk_batch_size``, with their splits and 5xx retries: the
  ``hybrid.ingest.batch`` span); ``hybrid_ingest_retries_total{kind}``: items asked again (``429``, ``5xx``).

Labels take a few fixed values each (no index name, no query): safe for any number of indices.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Protocol

try:
    import prometheus_client as _prometheus
except ImportError:  # the metrics extra is not installed: every call is a no-op
    _prometheus = None  # type: ignore[assignment]

_LOCK = threading.Lock()
_METRICS: dict[str, Any] = {}


def enabled() -> bool:
    """Whether ``prometheus-client`` is installed (the metrics are recorded)."""
    return _prometheus is not None


def _made() -> dict[str, Any]:
    """The metrics, registered once (in prometheus-client's default registry)."""
    if _METRICS or _prometheus is None:
        return _METRICS
    with _LOCK:
        if not _METRICS:
            p = _prometheus
            _METRICS.update(
                searches=p.Counter("hybrid_searches", "Searches ended", ["technique", "fused_by", "outcome"]),
                search_seconds=p.Histogram("hybrid_search_seconds", "Wall-clock time of a search", ["technique"]),
                fallbacks=p.Counter("hybrid_search_fallbacks", "Searches whose plan fell back", ["technique"]),
                retries=p.Counter("hybrid_search_retries", "Attempts of a search planned again", ["technique"]),
                partial=p.Counter(
                    "hybrid_search_partial_results",
                    "Answers lacking part of the result: failed shards, short collapsed pages",
                    ["kind", "outcome"],
                ),
                legs=p.Counter("hybrid_leg_requests", "Requests a search sent, by leg", ["leg", "outcome"]),
                leg_seconds=p.Histogram("hybrid_leg_seconds", "Wall-clock time of a search's request, by leg", ["leg"]),
                rows=p.Counter(
                    "hybrid_ingest_rows", "Input rows of a finished ingest: accepted or failed", ["outcome"]
                ),
                entries=p.Counter("hybrid_ingest_entries", "Index entries an ingest wrote"),
                batches=p.Counter("hybrid_ingest_batches", "Batches the bulk senders of an ingest took"),
                batch_seconds=p.Histogram(
                    "hybrid_ingest_batch_seconds", "Wall-clock time of a senders' batch, with its retries"
                ),
                ingest_retries=p.Counter("hybrid_ingest_retries", "Ingest items asked again", ["kind"]),
            )
    return _METRICS


Record = Callable[[Mapping[str, Any]], None]


@contextlib.contextmanager
def search(technique: str) -> Iterator[Record]:
    """Around one search: call the yielded function with the ``hybrid.search`` span's end attributes
    (:mod:`adapter.observability.tracing`); a search that raises counts as an ``error`` of ``technique``."""
    m = _made()
    if not m:
        yield lambda end: None
        return
    started, ended = time.perf_counter(), list[Mapping[str, Any]]()
    try:
        yield ended.append
    except BaseException:
        m["searches"].labels(technique, "none", "error").inc()
        raise
    finally:
        m["search_seconds"].labels(ended[0]["hybrid.technique"] if ended else technique).observe(
            time.perf_counter() - started
        )
    end = ended[0] if ended else {}
    ran = str(end.get("hybrid.technique", technique))
    m["searches"].labels(ran, str(end.get("hybrid.fused_by", "none")), "ok").inc()
    if end.get("hybrid.fallback"):
        m["fallbacks"].labels(ran).inc()
    if end.get("hybrid.retries"):
        m["retries"].labels(ran).inc(int(end["hybrid.retries"]))


def partial_result(kind: str, outcome: str) -> None:
    """One answer that lacked part of the result (``kind``: ``shards`` or ``collapse``), and what the search did
    with it (``outcome``: ``asked_again``, ``notice`` or ``error``)."""
    m = _made()
    if m:
        m["partial"].labels(kind, outcome).inc()


@contextlib.contextmanager
def leg(name: str) -> Iterator[None]:
    """Around one request of a search."""
    m = _made()
    if not m:
        yield
        return
    started, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    finally:
        m["legs"].labels(name, outcome).inc()
        m["leg_seconds"].labels(name).observe(time.perf_counter() - started)


@contextlib.contextmanager
def ingest_batch() -> Iterator[None]:
    """Around one batch of an ingest's senders (its bulk requests, splits and retries)."""
    m = _made()
    if not m:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        m["batches"].inc()
        m["batch_seconds"].observe(time.perf_counter() - started)


class IngestCounts(Protocol):
    """What :func:`ingested` reads of an ingest's report (:class:`adapter.ingest.report.IngestReport`): a structural
    type, so this module, below the use cases, imports none of them."""

    @property
    def documents(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def chunks(self) -> int: ...
    @property
    def retried_429(self) -> int: ...
    @property
    def retried_5xx(self) -> int: ...


def ingested(report: IngestCounts) -> None:
    """What one finished ingest accepted, wrote, failed and asked again."""
    m = _made()
    if not m:
        return
    m["rows"].labels("accepted").inc(report.documents)
    m["rows"].labels("failed").inc(report.failed)
    m["entries"].inc(report.chunks)
    m["ingest_retries"].labels("429").inc(report.retried_429)
    m["ingest_retries"].labels("5xx").inc(report.retried_5xx)
