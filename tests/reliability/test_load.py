"""Load: 32 concurrent searchers, mixed techniques, for a bounded time against our own node;
and a dead or unanswering node fails fast with a clear message."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from adapter.engines import connect
from adapter.errors import ClusterUnavailableError
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import read_source
from tests.reliability.conftest import connect_to, corpus, make_index, write_figures
from tests.support.faults import black_hole

SEARCHERS = 32
SECONDS = 20.0
TECHNIQUES = ("bm25", "dense", "hybrid", "client-rrf")
QUERIES = (
    "reembolso del pedido",
    "error E-00042",
    "tarjeta y pago",
    "devolución de la factura",
    "clave de la cuenta",
    "envío",
)


def test_32_concurrent_searchers_for_a_bounded_time_make_no_errors(node, embedder, tmp_path):
    client = connect_to(node)
    alias = make_index(client, "rel-load", embedder)
    report = Ingestor.open(client, alias, embedder, progress=False).ingest(
        read_source(corpus(tmp_path / "d.jsonl", 2_000))
    )
    assert report.failures == ()
    # One client shared by every thread, as an application would (its pool is thread-safe), one connection each.
    shared = connect(node.url, pool_maxsize=SEARCHERS)
    searcher = Searcher.open(shared, alias, embedder)
    latencies: dict[str, list[float]] = {t: [] for t in TECHNIQUES}
    errors: list[str] = []
    stop = time.monotonic() + SECONDS
    lock = threading.Lock()

    def run(worker: int) -> None:
        i = worker
        while time.monotonic() < stop:
            technique = TECHNIQUES[i % len(TECHNIQUES)]
            t0 = time.perf_counter()
            try:
                result = searcher.search(QUERIES[i % len(QUERIES)], technique=technique, k=10)
                assert result.hits
            except Exception as exc:  # every error is counted, none may happen
                with lock:
                    errors.append(f"{technique}: {exc!r}")
            else:
                with lock:
                    latencies[technique].append((time.perf_counter() - t0) * 1000)
            i += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(w,)) for w in range(SEARCHERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    elapsed = time.perf_counter() - started
    assert errors == []
    every = [ms for values in latencies.values() for ms in values]
    figures = {
        "searchers": SEARCHERS,
        "seconds": round(elapsed, 1),
        "searches": len(every),
        "errors": len(errors),
        "throughput_per_s": round(len(every) / elapsed, 1),
        "p50_ms": round(float(np.percentile(every, 50)), 1),
        "p99_ms": round(float(np.percentile(every, 99)), 1),
        "by_technique": {
            t: {
                "searches": len(v),
                "p50_ms": round(float(np.percentile(v, 50)), 1),
                "p99_ms": round(float(np.percentile(v, 99)), 1),
            }
            for t, v in latencies.items()
        },
        "documents": 2_000,
    }
    write_figures("load", figures)
    assert all(latencies[t] for t in TECHNIQUES)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_node_fails_fast_with_a_clear_message(embedder):
    port = _free_port()  # nothing listens: what a killed node leaves
    started = time.perf_counter()
    with pytest.raises(
        ClusterUnavailableError, match=rf"cannot reach OpenSearch at http://127.0.0.1:{port}.*is it running"
    ):
        Searcher.open(connect(f"http://127.0.0.1:{port}"), "anything", embedder)
    refused = time.perf_counter() - started
    listener, held, hole = black_hole()  # a host that never answers the connection
    try:
        started = time.perf_counter()
        with pytest.raises(ClusterUnavailableError, match=rf"cannot reach OpenSearch at http://127.0.0.1:{hole}"):
            Searcher.open(connect(f"http://127.0.0.1:{hole}", connect_timeout=1.0), "anything", embedder)
        unanswered = time.perf_counter() - started
    finally:
        for sock in (*held, listener):
            sock.close()
    assert refused < 2.0 and unanswered < 4 * 1.0 + 2.0  # four attempts (1 + 3 retries) of the connect timeout
    write_figures(
        "dead-node",
        {"refused_seconds": round(refused, 2), "unanswered_seconds_connect_timeout_1s": round(unanswered, 1)},
    )
