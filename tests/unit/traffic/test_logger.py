"""The background UBI writer: records reach the store, a full queue drops and counts, a search never waits."""

import threading
import time

import pytest

from adapter.errors import InputError
from adapter.fusion import RRF, ScoreNormalization
from adapter.search.results import Hit, SearchResult, Technique
from adapter.traffic import ubi
from adapter.traffic.logger import UbiLogger, fusion_label
from adapter.traffic.store import UbiStore
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit


def result(query="error E-4012", ids=("a", "b")):
    return SearchResult(query, Technique.HYBRID, tuple(Hit(d, 1.0, rank=i) for i, d in enumerate(ids, 1)), fusion=RRF())


def test_records_reach_the_store_and_the_indices_are_made():
    cluster = FakeCluster()
    logger = UbiLogger(cluster, linger_s=0.01)
    assert set(cluster.indices) == {"ubi_queries", "ubi_events"}
    query_id = logger.log_search(result(), client_id="browser-1", index="docs")
    event = ubi.click_event(
        query_id=query_id, client_id="browser-1", object_id="b", position=1, timestamp="2026-01-02T03:04:05Z"
    )
    assert logger.log_event(event)
    assert logger.flush(5) and logger.close()
    stored = cluster.indices["ubi_queries"].docs[query_id]
    ubi.validate("query", stored)
    assert stored["query_response_hit_ids"] == ["a", "b"] and stored["query_attributes"]["hybrid"] == {
        "technique": "hybrid",
        "fusion": "rrf",
        "index": "docs",
    }
    (clicked,) = cluster.indices["ubi_events"].docs.values()
    assert clicked == event and logger.stats.written == 2 and logger.stats.dropped == logger.stats.failed == 0


def test_no_query_text_is_stored_when_asked():
    cluster = FakeCluster()
    logger = UbiLogger(cluster, store_query_text=False, linger_s=0.01)
    query_id = logger.log_search(result("mi pedido 8821"), client_id="c")
    logger.close()
    stored = cluster.indices["ubi_queries"].docs[query_id]
    assert "8821" not in str(stored) and stored["query_attributes"]["hybrid"]["query_key"].startswith("sha256:")


def test_a_bad_event_is_refused_and_nothing_is_queued():
    logger = UbiLogger(FakeCluster(), linger_s=0.01)
    with pytest.raises(InputError, match="action_name"):
        logger.log_event({"timestamp": "2026-01-02T03:04:05Z"})
    logger.close()
    assert logger.stats.queued == 0


class StuckStore(UbiStore):
    """A store whose writes wait for a gate, as a slow cluster would."""

    def __init__(self):
        super().__init__(FakeCluster())
        self.gate = threading.Event()

    def write(self, queries=(), events=()):
        self.gate.wait(10)
        return super().write(queries, events)


def test_a_full_queue_drops_and_counts_without_blocking():
    store = StuckStore()
    logger = UbiLogger(store, queue_size=5, batch=1, linger_s=0.01)
    started = time.perf_counter()
    for _ in range(50):
        logger.log_search(result(), client_id="c")
    spent = time.perf_counter() - started
    stats = logger.stats
    # one record is held by the stuck writer, 5 wait in the queue; the rest were dropped
    assert stats.dropped >= 50 - 6 and stats.queued + stats.dropped == 50
    assert spent < 0.5, f"50 logged searches took {spent:.3f} s with the store stuck: logging blocked"
    assert not logger.flush(0.05)  # still pending
    store.gate.set()
    assert logger.flush(5) and logger.stats.written == stats.queued


class BrokenStore(UbiStore):
    def __init__(self):
        super().__init__(FakeCluster())

    def write(self, queries=(), events=()):
        raise RuntimeError("cluster gone")


def test_a_failing_store_is_counted_and_the_writer_goes_on():
    logger = UbiLogger(BrokenStore(), linger_s=0.01)
    logger.log_search(result(), client_id="c")
    assert logger.flush(5)
    logger.log_search(result(), client_id="c")
    assert logger.flush(5) and logger.stats.failed == 2 and logger._thread.is_alive()
    logger.close()


def test_fusion_labels_carry_weights():
    assert fusion_label(RRF()) == "rrf" and fusion_label(None) is None
    assert fusion_label(ScoreNormalization(weights=(0.3, 0.7))) == "min_max-arithmetic_mean@0.3,0.7"


class CountingStore(UbiStore):
    """A store that counts its writes (each one a _bulk request on a cluster)."""

    def __init__(self):
        super().__init__(FakeCluster())
        self.writes = []

    def write(self, queries=(), events=()):
        self.writes.append(len(queries) + len(events))
        return super().write(queries, events)


def test_records_trickling_in_are_written_together_not_one_bulk_each():
    # A service's searches arrive one at a time: each was its own _bulk request (and a wake-up of the
    # writer per search), +0.4 ms on hybrid serve's p50 on this machine; the linger gathers them.
    store = CountingStore()
    logger = UbiLogger(store, linger_s=0.3)
    for _ in range(20):
        logger.log_search(result(), client_id="c")
        time.sleep(0.005)
    assert logger.flush(5)
    assert sum(store.writes) == 20 and len(store.writes) <= 2, store.writes
    logger.close()


def test_flush_does_not_wait_out_the_linger():
    store = CountingStore()
    logger = UbiLogger(store, linger_s=5.0)
    logger.log_search(result(), client_id="c")
    started = time.perf_counter()
    assert logger.flush(10) and time.perf_counter() - started < 1.0
    assert logger.close(10) and store.writes == [1]
