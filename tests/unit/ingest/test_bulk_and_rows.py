"""One bad id no longer drops a whole bulk request, and a row a reader cannot decode is reported with its line
(issue 10 items 1 and 3; against a real node: tests/integration/test_bad_input.py and tests/reliability/)."""

from __future__ import annotations

import pytest

from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_csv, read_jsonl
from adapter.testing import FakeClient, Reply, bulk_actions, bulk_answer
from tests.support.counting import INFO, CountingEmbedder


def no_pause(monkeypatch):
    import adapter.ingest.ingestor as ingest_module

    monkeypatch.setattr(ingest_module.time, "sleep", lambda s: None)


# -- 1. one bad id drops a whole bulk request ------------------------------------------------------
def server_error(kind, reason):
    """An error body as the server sends it."""
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}, "status": 400}


def rejects_long_ids(call):
    """Like the server: a bulk request holding an id over 512 bytes is refused as a whole (400)."""
    ids = [a[next(iter(a))]["_id"] for a, _ in bulk_actions(call)]
    long = [i for i in ids if len(i.encode()) > 512]
    if long:
        return Reply(
            400,
            server_error(
                "action_request_validation_exception",
                f"Validation Failed: 1: id [{long[0]}] is too long, must be no longer than 512 bytes",
            ),
        )
    return bulk_answer(call)


def test_an_id_over_512_utf8_bytes_is_reported_alone_and_the_rest_land(tmp_path):
    client = FakeClient({"POST */_bulk": rejects_long_ids, "POST */_refresh": {}})
    rows = [SourceDoc(f"d{i}", f"text {i}", line=i + 1) for i in range(1001)]
    # over in bytes, not characters
    rows[500] = SourceDoc("é" * 257, "too long an id: 514 bytes, 257 characters", line=501)
    report = Ingestor(client, INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    sent = {a["index"]["_id"] for call in client.calls_to("POST */_bulk") for a, _ in bulk_actions(call)}
    assert len(sent) == 1000 and "é" * 257 not in sent
    assert [(f.line, f.source) for f in report.failures] == [(501, "input")]
    assert "514 bytes" in report.failures[0].reason and "512" in report.failures[0].reason
    assert report.chunks == 1000


def test_a_request_rejected_as_a_whole_is_split_until_each_good_row_lands(tmp_path, monkeypatch):
    no_pause(monkeypatch)

    def bulk(call):  # the server refuses any request that holds the poisoned row
        ids = [a["index"]["_id"] for a, _ in bulk_actions(call)]
        if "poison" in ids:
            return Reply(400, server_error("illegal_argument_exception", "something about one row"))
        return bulk_answer(call)

    client = FakeClient({"POST */_bulk": bulk, "POST */_refresh": {}})
    rows = [SourceDoc(f"d{i}", f"text {i}", line=i + 1) for i in range(300)]
    rows[123] = SourceDoc("poison", "looks fine here", line=124)
    report = Ingestor(client, INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    landed = {a["index"]["_id"] for call in client.calls_to("POST */_bulk") for a, _ in bulk_actions(call)}
    assert [(f.id, f.line, f.status) for f in report.failures] == [("poison", 124, 400)]
    assert "something about one row" in report.failures[0].reason
    assert report.chunks == 299 and len(landed) == 300
    assert len(client.calls_to("POST */_bulk")) <= 2 * 9 + 1  # halving 300 rows down to one: a few requests per level


# -- 3. a non-UTF-8 byte loses the whole file --------------------------------------------------------
@pytest.mark.parametrize(
    "name, content, read, line",
    [
        (
            "d.jsonl",
            b'{"_id":"u1","text":"ok"}\n{"_id":"u2","text":"\xe9\xff"}\n{"_id":"u3","text":"also ok"}\n',
            read_jsonl,
            2,
        ),
        ("d.csv", b"_id,text\nu1,fine\nu2,caf\xe9\nu3,also fine\n", read_csv, 3),
    ],
    ids=["jsonl", "csv"],
)
def test_a_non_utf8_row_is_reported_with_its_line_and_the_good_rows_are_read(tmp_path, name, content, read, line):
    path = tmp_path / name
    path.write_bytes(content)
    rows = list(read(path, FieldMap()))
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["u1", "u3"]
    (bad,) = [r for r in rows if isinstance(r, RowError)]
    assert bad.line == line and "not UTF-8" in bad.reason and "0xe9" in bad.reason


def test_lone_surrogates_from_json_escapes_are_a_bad_row_not_a_crash_in_the_client(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id":"s1","text":"\\ud800 half a pair"}\n{"id":"s2","text":"fine"}\n')
    rows = list(read_jsonl(path, FieldMap()))
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["s2"]
    assert "not valid Unicode" in next(r for r in rows if isinstance(r, RowError)).reason


def test_the_json_error_names_the_column_once(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "text": "unterminated')
    (row,) = list(read_jsonl(path, FieldMap()))
    assert row.reason == "invalid JSON: Unterminated string starting at column 21"
