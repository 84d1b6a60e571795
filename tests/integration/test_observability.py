"""What ops see of the adapter's traffic on a real node: the logs of `hybrid -v`/`-vv`/`-q`, one
X-Opaque-Id per search in the node's ``_tasks`` and search slow log, and the User-Agent."""

from __future__ import annotations

import threading
import time

import pytest

from adapter.observability import telemetry
from adapter.engines import cluster_for, connect_cluster
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.search import Searcher
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401  (fixture)
from tests.support.faults import FaultProxy

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
QUERY = "¿cómo devuelvo un pedido?"


@pytest.fixture
def indexed(client, index_name, support_docs_path):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False).ingest(read_source(support_docs_path))
    return index_name


def test_verbose_logs_each_request_quiet_logs_none(cli, indexed, opensearch_url):
    code, out, err = cli(
        "-vv", "search", QUERY, "--index", indexed, "--url", opensearch_url, "--embedder", "test:hashing"
    )
    assert code == 0, err
    requests = [line for line in err.splitlines() if line.startswith("DEBUG adapter.requests: ")]
    # (on OpenSearch the hybrid goes to the index and the empty shard beside it: /<index>,hybrid-empty-shard/_search)
    searches = [
        line for line in requests if f"/{indexed}/_search" in line or f"/{indexed}," in line or "/_msearch" in line
    ]
    assert searches, err
    for line in searches:  # method, path, status, the server's took, the time, the search's id
        assert line.split()[2] in ("POST", "GET") and " 200 took=" in line and " ms id=hybrid-" in line, line
    summary = [line for line in err.splitlines() if line.startswith("DEBUG adapter.search: searched ")]
    # One search: one id on all its requests (the CLI may ask more after it, under another id: why BM25 matched nothing)
    own = err[: err.index(summary[0])] if summary else err
    assert len({line.rsplit("id=", 1)[1] for line in searches if line in own}) == 1, err
    # hybrid, or client where the cluster cannot fuse (Elasticsearch without a licence for retrievers)
    assert len(summary) == 1 and " technique=" in summary[0] and " fused_by=" in summary[0]
    code, _, err = cli("search", QUERY, "--index", indexed, "--url", opensearch_url, "--embedder", "test:hashing")
    assert code == 0 and "adapter." not in err  # by default: warnings only, and there were none
    code, _, err = cli("-q", "search", QUERY, "--index", indexed, "--url", opensearch_url, "--embedder", "test:hashing")
    assert code == 0 and err == ""


def test_each_search_has_its_opaque_id_in_the_nodes_tasks(client, indexed):
    """Searches run in a loop while ``_tasks`` is read: a running search task carries the id it was sent with."""
    searcher = Searcher.open(client, indexed, TEST_EMBEDDER)
    stop, seen = threading.Event(), set()

    def search(n: int) -> None:
        while not stop.is_set():
            with telemetry.request_id(f"t-opaque-{n}"):
                searcher.search(QUERY, technique="client-rrf", depth=100)

    threads = [threading.Thread(target=search, args=(n,), daemon=True) for n in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    try:
        while not seen and time.monotonic() < deadline:
            tasks = client.tasks.list(actions="*search*", detailed=True)
            for node in tasks.get("nodes", {}).values():
                for task in node.get("tasks", {}).values():
                    opaque = (task.get("headers") or {}).get("X-Opaque-Id", "")
                    if opaque.startswith("t-opaque-"):
                        seen.add(opaque)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert seen and seen <= {f"t-opaque-{n}" for n in range(3)}


@pytest.mark.local_node
def test_the_search_slow_log_names_the_search(client, indexed, local_cluster):
    cluster = cluster_for(client)
    index = cluster.aliased_indices(indexed)[0]
    cluster.put_index_settings(index, {"index.search.slowlog.threshold.query.warn": "0ms"})
    searcher = Searcher.open(client, indexed, TEST_EMBEDDER)
    with telemetry.request_id() as rid:
        searcher.search(QUERY, technique="bm25")
    logs = local_cluster.node_dir / "node-1" / "logs"
    deadline = time.monotonic() + 30
    found = []
    while not found and time.monotonic() < deadline:  # the node writes its log asynchronously
        found = [p.name for p in logs.glob("*index_search_slowlog*") if rid in p.read_text(errors="replace")]
        time.sleep(0.5)
    assert found, f"{rid} not in the search slow log of {logs}"


def test_the_user_agent_names_the_adapter_and_its_version(opensearch_url, target):
    from adapter import __version__

    with FaultProxy(opensearch_url) as proxy:
        cluster_for(connect_cluster(proxy.url, engine=target.engine)).indices_matching("t-none-*")
    agents = {v for h in proxy.headers for k, v in h.items() if k.lower() == "user-agent"}
    client_library = "elasticsearch-py/" if target.engine == "elasticsearch" else "opensearch-py/"
    assert agents and all(a.startswith(f"opensearch-hybrid-adapter/{__version__} ({client_library}") for a in agents), (
        agents
    )


def test_prometheus_metrics_count_searches_legs_fallbacks_and_ingest_rows(client, index_name, support_docs_path):
    """The metrics extra: each search, each of its requests by leg, each fallback and each ingested row
    counted in prometheus-client's default registry, equal to what the results and the report say."""
    from prometheus_client import REGISTRY

    from adapter.fusion import parse_fusion
    from adapter.ingest.sources import RowError

    def value(name, **labels):
        return REGISTRY.get_sample_value(name, labels) or 0.0

    names = (
        "hybrid_searches_total",
        "hybrid_leg_requests_total",
        "hybrid_search_fallbacks_total",
        "hybrid_ingest_rows_total",
        "hybrid_ingest_batches_total",
        "hybrid_search_seconds_count",
    )
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    rows = [*read_source(support_docs_path), RowError(99, "not JSON", None)]
    before = {n: sum(s.value for m in REGISTRY.collect() for s in m.samples if s.name == n) for n in names}
    before_failed = value("hybrid_ingest_rows_total", outcome="failed")
    report = Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False, bulk_batch_size=5).ingest(rows)
    searcher = Searcher.open(client, index_name, TEST_EMBEDDER)
    bm25_before = value("hybrid_leg_requests_total", leg="bm25", outcome="ok")
    results = [searcher.search(QUERY, technique=t) for t in ("bm25", "dense", "hybrid", "client-rrf")]
    # A fusion no engine runs in the server: it falls back to the client, and says so.
    results.append(searcher.search(QUERY, fusion=parse_fusion("dbsf")))
    after = {n: sum(s.value for m in REGISTRY.collect() for s in m.samples if s.name == n) for n in names}
    delta = {n: after[n] - before[n] for n in names}
    assert delta["hybrid_searches_total"] == delta["hybrid_search_seconds_count"] == len(results)
    assert delta["hybrid_leg_requests_total"] == sum(r.requests for r in results)
    assert value("hybrid_leg_requests_total", leg="bm25", outcome="ok") - bm25_before == 1
    assert delta["hybrid_search_fallbacks_total"] == sum(
        1 for r in results if r.notices and r.fused_by_label.startswith("client")
    )
    assert delta["hybrid_search_fallbacks_total"] >= 1
    assert delta["hybrid_ingest_rows_total"] == report.documents + report.failed == 13
    assert value("hybrid_ingest_rows_total", outcome="failed") - before_failed == 1
    # the 12 rows are one batch of the senders (sent in bulk requests of 5)
    assert delta["hybrid_ingest_batches_total"] == 1
