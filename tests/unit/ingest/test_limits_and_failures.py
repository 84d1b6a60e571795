"""The ingest's size limit and its failures file: a document over the limit never reaches the model, the failures file
is private, one per run, and streamed (issue 20)."""

from __future__ import annotations

import os
import stat
import tracemalloc

import pytest

from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import RowError, SourceDoc
from adapter.testing import FakeClient, bulk_answer
from tests.support.counting import INFO, CountingEmbedder


# -- the ingest side: a fake cluster, a counting model -------------------------------------------------


def fake_cluster():
    return FakeClient({"POST */_bulk": lambda call: bulk_answer(call), "POST */_refresh": {}})


# -- 2, 3. a 105 MB document reached the model; no size policy ----------------------------------------------
def test_a_document_over_the_size_limit_is_refused_before_it_reaches_the_model(tmp_path):
    from adapter.ingest.sources import DEFAULT_MAX_CHARS

    model = CountingEmbedder()
    rows = [
        SourceDoc("small", "fine text", line=1),
        SourceDoc("huge", "word " * (DEFAULT_MAX_CHARS // 5 + 1), line=2),
        SourceDoc("titled", "short body", title="t" * DEFAULT_MAX_CHARS, line=3),
    ]
    report = Ingestor(fake_cluster(), INFO, model, progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    assert model.longest < 100 and model.texts == 1  # neither big one was embedded
    assert [(f.id, f.line, f.source) for f in report.failures] == [("huge", 2, "input"), ("titled", 3, "input")]
    reason = report.failures[0].reason
    assert f"{DEFAULT_MAX_CHARS + 5:,} characters" in reason and f"limit of {DEFAULT_MAX_CHARS:,}" in reason
    assert "--max-chars" in reason and "--chunk-size" in reason


def test_the_size_limit_is_configurable_and_can_be_lifted(tmp_path):
    model = CountingEmbedder()
    rows = [SourceDoc("a", "x" * 50, line=1), SourceDoc("b", "y" * 5000, line=2)]
    report = Ingestor(
        fake_cluster(), INFO, model, progress=False, max_chars=100, failures_path=tmp_path / "f.jsonl"
    ).ingest(rows)
    assert [f.id for f in report.failures] == ["b"] and "limit of 100" in report.failures[0].reason
    report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, max_chars=None).ingest(rows)
    assert report.complete


# -- 4. two concurrent ingests wrote the same failures file -------------------------------------------------
def test_two_ingests_in_the_same_second_write_failures_files_of_their_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import adapter.ingest.ingestor as ingest_module

    monkeypatch.setattr(ingest_module.time, "strftime", lambda *a: "20261201-120000")  # the same second for both
    first = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, write_failures=True).ingest(
        [RowError(1, "bad one", "x1")]
    )
    second = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, write_failures=True).ingest(
        [RowError(1, "bad two", "x2")]
    )
    assert first.failures_file != second.failures_file
    assert "bad one" in open(first.failures_file).read() and "bad two" in open(second.failures_file).read()


# -- 15. failures files were created 0644 ----------------------------------------------------------------------
def test_a_failures_file_is_private_to_its_user(tmp_path):
    path = tmp_path / "f.jsonl"
    report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=path).ingest(
        [RowError(1, "bad")]
    )
    assert report.failures_file == str(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- 7. memory grew with the number of bad rows -------------------------------------------------------------------
def test_failures_stream_to_the_file_and_memory_holds_counts(tmp_path):
    """50,000 bad rows grew the heap by 15 MiB before (a list of every failure); now by what one row takes."""
    n = 50_000
    rows = (RowError(i, f"invalid JSON: Expecting value at column {i % 80}", f"id-{i}") for i in range(1, n + 1))
    # lazy imports
    Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "warm.jsonl").ingest([])
    tracemalloc.start()
    try:
        report = Ingestor(
            fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl"
        ).ingest(rows)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.failed == n and not report.complete and len(report.failures) <= 1000
    with open(tmp_path / "f.jsonl") as fh:
        assert sum(1 for _ in fh) == n
    assert peak < 4 << 20, f"peak {peak / 2**20:.1f} MiB for {n:,} bad rows"


# -- 14. a document over http.max_content_length was reported as TransportError(413, '') -----------------------------
def test_a_row_refused_as_too_large_names_the_limit_and_its_size():
    from opensearchpy.exceptions import TransportError

    from adapter.engines import responses

    item = {
        "index": {
            "_id": "big",
            "status": 413,
            "error": "TransportError(413, '')",
            "exception": TransportError(413, ""),
            "data": {"text": "x" * (3 << 20)},
        }
    }
    doc_id, status, reason = responses.bulk_item(item)
    assert (doc_id, status) == ("big", 413)
    assert "http.max_content_length" in reason and "3.0 MB" in reason and "TransportError" not in reason


# -- issue 38, item 3: the framework components left nine ingest-failures-*.jsonl in one small app's folder ----------
def test_a_library_ingest_writes_no_failures_file_unasked_and_returns_its_failures(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [SourceDoc("ok", "fine text", line=1), RowError(2, "bad row", "x2"), SourceDoc("big", "y" * 500, line=3)]
    report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, max_chars=100).ingest(rows)
    assert [f.id for f in report.failures] == ["x2", "big"] and report.failed == 2 and report.failures_file is None
    assert list(tmp_path.iterdir()) == []


def test_an_error_that_stops_a_library_ingest_carries_the_rows_it_kept_from_landing(tmp_path, monkeypatch):
    from opensearchpy.exceptions import ConnectionError as OSConnectionError

    from adapter.errors import ClusterUnavailableError

    monkeypatch.chdir(tmp_path)
    client = FakeClient(
        {"POST */_bulk": OSConnectionError("N/A", "connection refused", Exception("refused")), "POST */_refresh": {}}
    )
    rows = [SourceDoc(f"d{i}", f"text {i}", line=i + 1) for i in range(3)]
    with pytest.raises(
        ClusterUnavailableError,
        match=r"3 rows were not confirmed written \(listed in \.failures of the report or of this error; no failures "
        r"file",
    ) as caught:
        Ingestor(client, INFO, CountingEmbedder(), progress=False, max_retries=0).ingest(rows)
    assert [(f.id, f.line) for f in caught.value.failures] == [("d0", 1), ("d1", 2), ("d2", 3)]
    assert list(tmp_path.iterdir()) == []
