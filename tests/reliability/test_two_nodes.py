"""Two nodes, 3 shards + 1 replica: ingest and search go on while the data node is stopped and
started again. Nothing is lost (count and a checksum per document), no search fails, and none
reaches its caller partial: a shard that fails (a node stopping loses its search contexts) leaves
a 200 with fewer hits, which the searcher asks for again; one still partial would carry a notice."""

from __future__ import annotations

import threading
import time

import pytest

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
from tests.support.nodes import own_node

DOCS = 3_000
PHASES = 3  # a third before the stop, a third while node 2 is down, a third after its restart
TECHNIQUES = ("hybrid", "bm25", "dense", "client-rrf")
QUERIES = ("reembolso del pedido", "error E-00042", "tarjeta y pago", "devolución de la factura")


@pytest.fixture(scope="module")
def cluster():
    node = own_node("two-nodes", nodes=2)
    node.up()
    yield node
    node.down()


class ShardCheckingClient:
    """The client, counting answers in which some shard failed (a partial result)."""

    def __init__(self, client) -> None:
        self._client = client
        self.partial: list[dict] = []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def _check(self, resp):
        for r in resp.get("responses", [resp]):
            shards = r.get("_shards") or {}
            if shards.get("failed"):
                self.partial.append(shards)
        return resp

    def search(self, *args, **kwargs):
        return self._check(self._client.search(*args, **kwargs))

    def msearch(self, *args, **kwargs):
        return self._check(self._client.msearch(*args, **kwargs))


def test_ingest_and_search_go_on_while_a_node_stops_and_restarts(cluster, embedder, tmp_path):
    client = connect_to(cluster)  # node 1: the cluster manager, which stays up
    alias = make_index(client, "rel-two-nodes", embedder, shards=3)
    index = next(iter(client.indices.get_alias(name=alias)))
    assert client.indices.get_settings(index=index)[index]["settings"]["index"]["number_of_shards"] == "3"
    # 1 replica each
    assert (
        client.cluster.health(index=alias, wait_for_status="green", params={"timeout": "90s"}, request_timeout=100)[
            "status"
        ]
        == "green"
    )
    src = corpus(tmp_path / "docs.jsonl", DOCS)
    expected = expected_checksums(src, embedder)

    # Rows come in three phases, each released by the main thread at the right moment.
    gates = [threading.Event() for _ in range(PHASES)]
    rows = list(read_source(src))
    per_phase = DOCS // PHASES

    def paced():
        for phase, gate in enumerate(gates):
            gate.wait(timeout=600)
            yield from rows[phase * per_phase : (phase + 1) * per_phase if phase < PHASES - 1 else DOCS]

    ingested: dict = {}
    ingest = threading.Thread(
        target=lambda: ingested.update(
            report=Ingestor.open(client, alias, embedder, batch_size=50, bulk_batch_size=50, progress=False).ingest(
                paced(), total=DOCS
            )
        )
    )

    checked = ShardCheckingClient(connect_to(cluster))
    searcher = Searcher.open(checked, alias, embedder)
    searches = {t: 0 for t in TECHNIQUES}
    during_outage = 0
    errors: list[str] = []
    partial_results: list[str] = []  # notices of answers still partial when asked again
    stop = threading.Event()
    outage = threading.Event()

    def search_loop(worker: int) -> None:
        nonlocal during_outage
        i = worker
        while not stop.is_set():
            technique = TECHNIQUES[i % len(TECHNIQUES)]
            try:
                result = searcher.search(QUERIES[i % len(QUERIES)], technique=technique, k=10)
                partial_results.extend(n for n in result.notices if n.startswith("partial result"))
            except Exception as exc:  # every error is counted, none may happen
                errors.append(f"{technique}: {exc!r}")
            searches[technique] += 1
            during_outage += outage.is_set()
            i += 1

    def wait_for_count(n: int) -> None:
        deadline = time.monotonic() + 300
        while client.count(index=alias)["count"] < n:
            assert time.monotonic() < deadline, f"ingest stalled below {n} documents"
            time.sleep(0.5)

    workers = [threading.Thread(target=search_loop, args=(w,)) for w in range(2)]
    ingest.start()
    gates[0].set()
    wait_for_count(1)  # searchers start on a non-empty index
    for w in workers:
        w.start()
    wait_for_count(per_phase)

    started = time.monotonic()
    cluster.stop_node(1)
    stopped_seconds = time.monotonic() - started
    outage.set()
    health = client.cluster.health(index=alias)
    assert health["number_of_nodes"] == 1 and health["status"] != "red", health
    gates[1].set()  # a third of the corpus written while node 2 is down
    wait_for_count(2 * per_phase)
    outage_seconds = time.monotonic() - started

    started = time.monotonic()
    cluster.start_node(1)
    outage.clear()
    restart_seconds = time.monotonic() - started
    gates[2].set()
    ingest.join(timeout=600)
    assert not ingest.is_alive(), "the ingest did not finish"
    green = client.cluster.health(index=alias, wait_for_status="green", params={"timeout": "120s"}, request_timeout=130)
    stop.set()
    for w in workers:
        w.join(timeout=60)

    report = ingested["report"]
    assert report.failures == () and report.documents == DOCS
    assert green["status"] == "green" and green["number_of_nodes"] == 2
    assert client.count(index=alias)["count"] == DOCS
    assert indexed_checksums(client, alias) == expected  # every document, exactly
    assert errors == []
    assert partial_results == []  # the answers with a failed shard (checked.partial) were asked for again
    assert during_outage > 0 and all(searches.values())
    write_figures(
        "two-nodes",
        {
            "documents": DOCS,
            "shards": 3,
            "replicas": 1,
            "searches": sum(searches.values()),
            "searches_during_outage": during_outage,
            "search_errors": len(errors),
            "partial_answers_asked_again": len(checked.partial),
            "partial_results": len(partial_results),
            "ingest_failures": len(report.failures),
            "retried_429": report.retried_429,
            "retried_5xx": report.retried_5xx,
            "stop_seconds": round(stopped_seconds, 1),
            "outage_seconds": round(outage_seconds, 1),
            "restart_seconds": round(restart_seconds, 1),
            "checksums_equal": True,
        },
    )
