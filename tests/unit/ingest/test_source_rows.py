"""Rows as the readers see them: ids and titles that are not scalars, invisible text, JSON arrays, a row over the
limit skipped unread, a title-only first row (issues 20 and 32 item 6). Each test here failed before its fix."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_jsonl, read_source


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows_of(path, fields=FieldMap()):
    rows = list(read_source(path, fields))
    return [r for r in rows if isinstance(r, SourceDoc)], {r.line: r.reason for r in rows if isinstance(r, RowError)}


# -- 8. non-scalar ids and titles became Python reprs --------------------------------------------------
def test_ids_and_titles_that_are_not_scalars_are_refused_naming_the_type(tmp_path):
    path = write(
        tmp_path / "d.jsonl",
        [
            json.dumps({"id": {"x": 1}, "text": "an object as id"}),
            json.dumps({"id": True, "text": "a boolean as id"}),
            json.dumps({"id": [1, 2], "text": "a list as id"}),
            json.dumps({"id": 7, "text": "a number as id is fine"}),
            json.dumps({"id": "t1", "title": ["not", "text"], "text": "a list as title"}),
            json.dumps({"id": "t2", "title": 12, "text": "a number as title"}),
            json.dumps({"id": "t3", "title": "fine", "text": "ok"}),
        ],
    )
    good, bad = rows_of(path)
    assert [(d.id, d.title) for d in good] == [("7", ""), ("t3", "fine")]
    assert "id field 'id' holds an object" in bad[1] and "{'x': 1}" not in bad[1]
    assert "id field 'id' holds a boolean" in bad[2]
    assert "id field 'id' holds a list" in bad[3]
    assert "title field 'title' holds a list, not text" in bad[5]
    assert "title field 'title' holds a number, not text" in bad[6]


# -- 9. invisible text was indexed ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text", ["\u200b\u200b\u200b", "\x00\x00", "\u00a0\u200b", "\ufeff \u2060\u200d", "\u3000\u00ad"]
)
def test_text_with_no_visible_character_is_empty(tmp_path, text):
    path = write(
        tmp_path / "d.jsonl", [json.dumps({"id": "a", "text": text}), json.dumps({"id": "b", "text": "visible\u200b"})]
    )
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["b"]
    assert "no visible text in field 'text'" in bad[1]


def test_an_id_of_only_invisible_characters_is_no_id(tmp_path):
    path = write(
        tmp_path / "d.jsonl",
        [json.dumps({"id": "\u200b", "text": "some text"}), json.dumps({"id": "\u00a0", "text": "x"})],
    )
    good, bad = rows_of(path)
    assert good == [] and "no value in id field 'id'" in bad[1] and "no value in id field 'id'" in bad[2]


def test_an_invisible_title_is_no_title(tmp_path):
    path = write(tmp_path / "d.jsonl", [json.dumps({"id": "a", "title": "\u200b\u200b", "text": "body"})])
    good, _ = rows_of(path)
    assert good[0].title == ""


# -- 13. a pretty-printed JSON array gave 22 "invalid JSON" lines and 0 rows ------------------------------
def test_a_json_array_file_is_read_as_rows_with_their_lines(tmp_path):
    docs = [
        {"id": "a", "title": "A", "text": "first"},
        {"id": "b", "text": "second\nwith a newline"},
        "not an object",
        {"id": "c", "text": ""},
        {"id": "d", "text": "fourth"},
    ]
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(docs, indent=2), encoding="utf-8")
    good, bad = rows_of(path)
    assert [(d.id, d.text) for d in good] == [("a", "first"), ("b", "second\nwith a newline"), ("d", "fourth")]
    text = path.read_text().splitlines()
    assert good[0].line == 2 and all(text[d.line - 1].strip() == "{" for d in good)  # the line each object starts on
    assert len(bad) == 2 and any("expected a JSON object, got str" in r for r in bad.values())
    assert any("no text" in r for r in bad.values())


def test_a_broken_json_array_is_one_clear_error_for_the_rest_of_the_file(tmp_path):
    path = tmp_path / "docs.json"
    path.write_text(
        '[\n  {"id": "a", "text": "one"},\n  {"id": "b", "text": "two"\n  {"id": "c", "text": "three"}\n]\n',
        encoding="utf-8",
    )
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["a"]
    assert (
        len(bad) == 1
        and "invalid JSON" in next(iter(bad.values()))
        and "the rest of the file" in next(iter(bad.values()))
    )


def test_jsonl_named_json_still_reads_as_lines(tmp_path):
    path = write(
        tmp_path / "docs.json", [json.dumps({"id": "a", "text": "one"}), json.dumps({"id": "b", "text": "two"})]
    )
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["a", "b"] and bad == {}


# -- 19. missing ids printed as None ----------------------------------------------------------------------
def test_a_failure_without_an_id_is_printed_without_none():
    from adapter.cli.ingest import failure_line
    from adapter.ingest.report import ItemFailure

    assert failure_line(ItemFailure(None, "no value in id field 'id'", line=4)) == "line 4: no value in id field 'id'"
    assert failure_line(ItemFailure("d7", "refused", line=9)) == "line 9: d7: refused"
    assert failure_line(ItemFailure("d7", "refused")) == "d7: refused"


def test_a_row_over_the_limit_is_refused_by_the_reader_without_holding_it(tmp_path):
    """The reader skips a 30 MB line in pieces: it never holds the row, let alone parses it."""
    path = tmp_path / "d.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a", "text": "before"}) + "\n")
        fh.write('{"id": "big", "text": "' + "z" * (30 << 20) + '"}\n')
        fh.write(json.dumps({"id": "c", "text": "after"}) + "\n")
    tracemalloc.start()
    try:
        rows = list(read_jsonl(path, FieldMap()))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["a", "c"]
    bad = [r for r in rows if isinstance(r, RowError)]
    assert len(bad) == 1 and bad[0].line == 2 and "30.0 MiB" in bad[0].reason and "--max-chars" in bad[0].reason
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB while reading"


# -- item 6: the field mapping is not inferred from the first row alone --------------------------------------
def _jsonl(tmp_path, *rows) -> Path:
    import json

    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_title_only_row_on_line_1_is_a_document_as_on_line_2(tmp_path):
    """Before: line 1 without a `text` key aborted the whole ingest (exit 2, no failures file); on line 2 it was
    accepted."""
    from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl

    title_only = {"id": "crash", "title": "CrashLoopBackOff"}
    full = {"id": "oom", "title": "OOMKilled", "text": "Exit code 137."}
    for rows in ((title_only, full), (full, title_only)):
        docs = list(read_jsonl(_jsonl(tmp_path, *rows), FieldMap()))
        assert all(isinstance(d, SourceDoc) for d in docs) and {d.id for d in docs} == {"crash", "oom"}


def test_a_field_no_row_has_is_still_refused_before_any_row(tmp_path):
    from adapter.errors import InputError
    from adapter.ingest.sources import FieldMap, read_jsonl

    path = _jsonl(tmp_path, {"id": "a", "title": "A"}, {"id": "b", "title": "B", "body": "text"})
    with pytest.raises(
        InputError, match=r"lines 1-2: the field mapping names 'text' for text, but the input has only: id, title, body"
    ):
        list(read_jsonl(path, FieldMap()))
    with pytest.raises(InputError, match="names 'lang' for metadata"):
        list(read_jsonl(_jsonl(tmp_path, {"id": "a", "text": "x"}), FieldMap(metadata=("lang",))))
