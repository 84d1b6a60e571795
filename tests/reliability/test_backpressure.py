"""Backpressure and faults between the client and the node, on our own node.

The node has one write thread and a write queue of one, so bulk requests into a 4-shard index
meet 429s (es_rejected_execution_exception); a fault-injecting proxy answers 5xx, resets
connections and delays answers. Every ingest must end with every row landed (or a clear error and a
re-run that completes it), every search with hits or a clear error, retries bounded.
"""

from __future__ import annotations

import threading
import time

import pytest

from adapter.errors import BackendError, ClusterUnavailableError
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import read_source
from tests.reliability.conftest import (
    connect_to,
    corpus,
    expected_checksums,
    indexed_checksums,
    make_index,
    write_figures,
)
from tests.support.faults import PASS, RESET, Delay, FaultProxy, Status


def ingestor(client, alias, embedder, tmp_path, **options):
    return Ingestor.open(
        client,
        alias,
        embedder,
        progress=False,
        failures_path=tmp_path / f"failures-{alias}.jsonl",
        **{"bulk_batch_size": 200, **options},
    )


def test_a_full_write_queue_costs_retries_not_documents(node, embedder, tmp_path):
    client = connect_to(node)
    alias = make_index(client, "rel-queue", embedder, shards=4)
    # Eight ingests at once: with 5 tries a row (31 s of backoff) 37 rows failed here, and CI's
    # machine failed rows with three; the default's 8 tries (about two minutes) landed every one.
    parts = [corpus(tmp_path / f"part{i}.jsonl", 1_500, prefix=f"p{i}") for i in range(8)]
    reports: list = [None] * len(parts)

    def run(i):  # ingests at once, as the workers of one pipeline would
        reports[i] = ingestor(client, alias, embedder, tmp_path).ingest(read_source(parts[i]))

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(parts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    seconds = time.perf_counter() - started
    assert reports and all(r is not None for r in reports)
    assert [r.failures for r in reports] == [()] * len(parts)
    retried = sum(r.retried_429 for r in reports)
    assert retried > 0, "the tiny write queue never refused a request: the test proved nothing"
    expected = {}
    for part in parts:
        expected.update(expected_checksums(part, embedder))
    assert indexed_checksums(client, alias) == expected
    write_figures(
        "backpressure",
        {
            "documents": len(expected),
            "concurrent_ingests": len(parts),
            "shards": 4,
            "write_threads": 1,
            "write_queue": 1,
            "items_refused_429_and_retried": retried,
            "failures": 0,
            "seconds": round(seconds, 1),
        },
    )


def every(k, action):
    """A policy: every k-th request gets ``action`` (searches and bulks alike)."""
    return lambda n, method, path: action if n % k == 0 else PASS


def test_5xx_answers_on_bulk_and_search_are_retried_within_bounds(node, embedder, tmp_path):
    alias = make_index(connect_to(node), "rel-5xx", embedder)
    src = corpus(tmp_path / "d.jsonl", 1_000)
    with FaultProxy(node.url, every(3, Status(503))) as proxy:
        client = connect_to(proxy)
        report = ingestor(client, alias, embedder, tmp_path).ingest(read_source(src))
        assert report.failures == ()
        searcher = Searcher.open(client, alias, embedder)
        for technique in ("bm25", "dense", "hybrid", "client-rrf"):
            assert searcher.search("reembolso pedido", technique=technique, k=5).hits
        faults = len(proxy.faults())
    assert faults > 0
    assert indexed_checksums(connect_to(node), alias) == expected_checksums(src, embedder)
    # Always 503: the client gives up after its bounded retries with the server's status, no traceback.
    with FaultProxy(node.url, lambda n, method, path: Status(503) if "_search" in path else PASS) as proxy:
        client = connect_to(proxy)
        searcher = Searcher.open(client, alias, embedder)
        started = time.perf_counter()
        with pytest.raises(BackendError, match="answered 503"):
            searcher.search("reembolso", technique="bm25")
        # 1 + 3 retries
        assert time.perf_counter() - started < 10 and len([f for f in proxy.faults() if "_search" in f[2]]) == 4
    write_figures("proxy-5xx", {"documents": 1_000, "injected_503": faults, "failures": 0})


def test_connection_resets_during_ingest_end_clearly_and_a_rerun_completes(node, embedder, tmp_path):
    alias = make_index(connect_to(node), "rel-reset", embedder)
    src = corpus(tmp_path / "d.jsonl", 2_000)
    bulks = {"n": 0}

    def reset_bulks_after_the_third(n, method, path):
        if "_bulk" in path:
            bulks["n"] += 1
            return RESET if bulks["n"] > 3 else PASS
        return PASS

    with FaultProxy(node.url, reset_bulks_after_the_third) as proxy:
        with pytest.raises(
            ClusterUnavailableError,
            match=r"lost the connection to http://127.0.0.1:\d+ .* rows were not confirmed written",
        ) as err:
            ingestor(connect_to(proxy), alias, embedder, tmp_path).ingest(read_source(src))
        resets = len(proxy.faults())
    listed = (tmp_path / f"failures-{alias}.jsonl").read_text().count("\n")
    assert str(tmp_path) in str(err.value) and listed >= 2_000 - 3 * 200
    report = ingestor(connect_to(node), alias, embedder, tmp_path).ingest(read_source(src))  # the re-run
    assert report.failures == ()
    assert indexed_checksums(connect_to(node), alias) == expected_checksums(src, embedder)
    write_figures(
        "proxy-reset",
        {
            "documents": 2_000,
            "connection_resets": resets,
            "rows_listed_unconfirmed": listed,
            "after_rerun": "all landed, checksums equal",
        },
    )


def test_resets_and_slow_answers_on_search_are_clear_errors_in_bounded_time(node, embedder, tmp_path):
    alias = make_index(connect_to(node), "rel-slow", embedder)
    ingestor(connect_to(node), alias, embedder, tmp_path).ingest(read_source(corpus(tmp_path / "d.jsonl", 200)))
    searching = lambda action: lambda n, method, path: action if ("_search" in path or "_msearch" in path) else PASS  # noqa: E731
    with FaultProxy(node.url, searching(RESET)) as proxy:
        searcher = Searcher.open(connect_to(proxy), alias, embedder)
        for technique in ("hybrid", "client-rrf"):
            with pytest.raises(ClusterUnavailableError, match=r"cannot reach OpenSearch at http://127.0.0.1:\d+"):
                searcher.search("reembolso", technique=technique)
    with FaultProxy(node.url, searching(Delay(3.0))) as proxy:
        searcher = Searcher.open(connect_to(proxy, timeout=1.0), alias, embedder)
        started = time.perf_counter()
        with pytest.raises(ClusterUnavailableError, match="ConnectionTimeout"):
            searcher.search("reembolso", technique="hybrid")
        waited = time.perf_counter() - started
    assert waited < 4 * 1.0 + 2  # four attempts of one second, then the error
    # One slow answer in three: the retries absorb it.
    with FaultProxy(
        node.url, lambda n, method, path: Delay(2.0) if "_search" in path and n % 3 == 0 else PASS
    ) as proxy:
        searcher = Searcher.open(connect_to(proxy, timeout=1.0), alias, embedder)
        assert all(searcher.search("reembolso pedido", technique="bm25").hits for _ in range(6))
    write_figures(
        "proxy-search",
        {
            "reset": "ClusterUnavailableError",
            "slow_answer_timeout_s": 1.0,
            "seconds_until_clear_error": round(waited, 1),
        },
    )
