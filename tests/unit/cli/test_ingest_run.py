"""``hybrid ingest``'s run, its cluster and model faked: what it prints and the exit code it returns."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from adapter.cli import build_parser
from adapter.cli import ingest as cli_ingest
from adapter.errors import InputError
from adapter.ingest.report import IngestReport, ItemFailure

pytestmark = pytest.mark.unit


def _run(monkeypatch, tmp_path, report: IngestReport, *extra: str):
    from adapter.ingest import rounds
    from adapter.ingest.ingestor import Ingestor

    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n', encoding="utf-8")
    opened = {}
    info = SimpleNamespace(index="docs-1", alias="docs")

    def open_(cluster, index, embedder, **kwargs):
        opened.update(kwargs, index=index)
        return SimpleNamespace(cluster=cluster, info=info, ingest=lambda rows, total, partition: report)

    ended = []
    monkeypatch.setattr(cli_ingest, "connect", lambda args: "cluster")
    monkeypatch.setattr(cli_ingest, "embedder_for", lambda args, cluster, **encode: "embedder")
    monkeypatch.setattr(cli_ingest, "_first_documents_choose", lambda cluster, args, rows, partitioned: rows)
    monkeypatch.setattr(cli_ingest, "_next_steps", lambda info: print("next steps"))
    monkeypatch.setattr(Ingestor, "open", open_)
    monkeypatch.setattr(rounds, "end", lambda cluster, index: ended.append(index))
    args = build_parser().parse_args(["ingest", "--index", "docs", str(path), "--no-cache", *extra])
    return cli_ingest.run(args), opened, ended


def report(**kw) -> IngestReport:
    return IngestReport(**{"documents": 2, "chunks": 2, "failures": (), "embedded": 2, "cache_hits": 0,
                           "seconds_total": 2.0, "seconds_embedding": 1.5, "seconds_indexing": 0.5, **kw})  # fmt: skip


def test_a_complete_ingest_prints_its_summary_and_ends_the_round(monkeypatch, tmp_path, capsys):
    code, opened, ended = _run(monkeypatch, tmp_path, report(), "--max-chars", "0")
    assert code == 0 and ended == ["docs-1"] and opened["max_chars"] is None and opened["cache"] is None
    assert capsys.readouterr().out == (
        "documents: 2  chunks: 2  failures: 0\n"
        "embedded: 2  from cache: 0\n"
        "time: 2.0s (1.0 docs/s); embedding 1.5s, indexing 0.5s (overlapping)\n"
        "every row landed\n"
        "next steps\n"
    )


def test_an_ingest_with_failures_retries_and_cache_rejections_says_so(monkeypatch, tmp_path, capsys):
    failures = (ItemFailure("b", "mapper_parsing_exception", line=2), ItemFailure(None, "bad json", line=3))
    r = report(failures=failures, failed=2, cache_rejected=1, retried_429=3, retried_5xx=1, split_requests=2,
               failures_file="f.jsonl")  # fmt: skip
    code, opened, _ = _run(monkeypatch, tmp_path, r)
    assert code == 3 and opened["max_chars"] == cli_ingest_default_max_chars()
    assert capsys.readouterr().out == (
        "documents: 2  chunks: 2  failures: 2  (4 rows: the progress bar's, each landed or failed)\n"
        "embedded: 2  from cache: 0\n"
        "cache: 1 entries failed their integrity check and were embedded again\n"
        "retries: 3 items refused with 429 (write queue full) and retried, 1 sent again after a 5xx, "
        "2 requests refused as a whole and split\n"
        "time: 2.0s (1.0 docs/s); embedding 1.5s, indexing 0.5s (overlapping)\n"
        "NOT every row landed: 2 failed (exit code 3)\n"
        "  line 2: b: mapper_parsing_exception\n"
        "  line 3: bad json\n"
        "all failures written to f.jsonl\n"
    )


def cli_ingest_default_max_chars():
    from adapter.ingest.sources import DEFAULT_MAX_CHARS

    return DEFAULT_MAX_CHARS


def test_an_empty_input_and_a_negative_max_chars_are_refused(monkeypatch, tmp_path):
    with pytest.raises(InputError, match="holds no rows: nothing was written"):
        _run(monkeypatch, tmp_path, report(documents=0, chunks=0))
    with pytest.raises(InputError, match=r"^--max-chars must be 0 \(no limit\) or more, got -1$"):
        _run(monkeypatch, tmp_path, report(), "--max-chars", "-1")
