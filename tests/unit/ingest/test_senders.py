"""The ingestor keeps several bulk requests in flight (``bulk_concurrency``), failures counted once."""

import threading

import pytest

from adapter.index.catalog import IndexInfo
from adapter.errors import InputError
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.testing import FakeClient, bulk_actions, bulk_answer
from tests.support.embedders import FP, UnitEmbedder

pytestmark = pytest.mark.unit
INFO = IndexInfo("docs", "docs-v1", FP)


def docs(n):
    return [SourceDoc(f"d{i}", f"texto {i}") for i in range(n)]


def test_two_senders_have_two_bulk_requests_in_flight_at_once():
    # Each request waits until a second one arrives: one sender alone would wait forever (times out).
    both = threading.Barrier(2, timeout=20)
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def bulk(call):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        if len(bulk_actions(call)) == 2:  # the last request may be a lone one
            both.wait()
        with lock:
            in_flight[0] -= 1
        return bulk_answer(call)

    client = FakeClient({"POST */_bulk": bulk, "POST */_refresh": {}})
    report = Ingestor(
        client, INFO, UnitEmbedder(), progress=False, batch_size=2, bulk_batch_size=2, bulk_concurrency=2
    ).ingest(docs(8))
    assert report.failures == () and report.chunks == 8 and most[0] == 2
    sent = sorted(a[next(iter(a))]["_id"] for c in client.calls_to("POST */_bulk") for a, _ in bulk_actions(c))
    assert sent == sorted(f"d{i}" for i in range(8))  # every row once


def test_failures_of_every_sender_are_reported(tmp_path):
    client = FakeClient(
        {
            "POST */_bulk": lambda call: bulk_answer(call, lambda op, doc_id: 400 if doc_id in ("d1", "d6") else 201),
            "POST */_refresh": {},
        }
    )
    report = Ingestor(
        client,
        INFO,
        UnitEmbedder(),
        progress=False,
        batch_size=2,
        bulk_batch_size=2,
        bulk_concurrency=3,
        failures_path=tmp_path / "f.jsonl",
    ).ingest(docs(8))
    assert sorted(f.id for f in report.failures) == ["d1", "d6"] and report.chunks == 6


def test_bulk_concurrency_must_be_positive():
    with pytest.raises(InputError, match="bulk_concurrency must be at least 1"):
        Ingestor(FakeClient({}), INFO, UnitEmbedder(), bulk_concurrency=0)
