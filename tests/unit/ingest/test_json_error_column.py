"""A JSON syntax error names the column an editor shows (issue 39): the .json array reader cuts its buffer after each
element, mid-line, and counted the column from the cut (column 14 where json.loads and the editor say 39)."""

from __future__ import annotations

import json

import pytest

from adapter.ingest import sources
from adapter.ingest.sources import RowError, read_source

BROKEN = [
    '[{"id": "a", "text": "x"}, {"id": "b" "text": "y"}]\n',  # one line: the error after an element on the same line
    '[\n  {"id": "a", "text": "x"},\n  {"id": "b", "text": "y",}\n]\n',  # pretty-printed
    '[{"id": "a", "text": "x"},\n {"id": "b", "text": "y"}, {"id": "c" : "z"}]\n',  # second line, after an element
    '[{"id": "a", "text": "ñandú ü"}, {"id": "b", "text": tru}]\n',  # characters, not bytes
]


@pytest.mark.unit
@pytest.mark.parametrize("read", [64 * 1024, 7], ids=["whole", "7-char-reads"])
@pytest.mark.parametrize("text", BROKEN)
def test_the_column_is_the_one_json_loads_names(tmp_path, monkeypatch, text, read):
    monkeypatch.setattr(sources, "_ARRAY_READ", read)  # small reads: the buffer is refilled and cut many times
    path = tmp_path / "rows.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as truth:
        json.loads(text)
    errors = [r for r in read_source(path) if isinstance(r, RowError)]
    assert len(errors) == 1
    assert errors[0].line == truth.value.lineno and f"at column {truth.value.colno};" in errors[0].reason, errors[0]
