import json

import pytest

from adapter.errors import InputError
from adapter.ingest.sources import (
    Chunking,
    FieldMap,
    RowError,
    SourceDoc,
    chunk_id,
    count_rows,
    read_csv,
    read_folder,
    read_jsonl,
    read_source,
)


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_reports_bad_rows_with_line_numbers_and_keeps_good_ones(tmp_path):
    path = write(
        tmp_path / "d.jsonl",
        [
            json.dumps({"id": "1", "title": "T", "text": "uno", "lang": "es"}),
            "{not json",
            json.dumps({"id": "2", "text": ""}),
            json.dumps({"id": "1", "text": "otra vez"}),
            json.dumps(["a", "list"]),
            json.dumps({"text": "sin id"}),
            json.dumps({"id": 3, "text": "tres"}),
        ],
    )
    rows = list(read_jsonl(path, FieldMap()))
    good = [r for r in rows if isinstance(r, SourceDoc)]
    bad = {r.line: r.reason for r in rows if isinstance(r, RowError)}
    assert [(d.id, d.title, d.text, dict(d.metadata), d.line) for d in good] == [
        ("1", "T", "uno", {"lang": "es"}, 1),
        ("3", "", "tres", {}, 7),
    ]
    assert bad[2].startswith("invalid JSON")
    assert "no text" in bad[3]
    assert "duplicate id '1' (first on line 1)" in bad[4]
    assert "expected a JSON object" in bad[5]
    assert "no value in id field" in bad[6]


def test_field_mapping_names_fields_the_input_lacks(tmp_path):
    path = write(tmp_path / "d.jsonl", [json.dumps({"_id": "a", "body": "x"})])
    with pytest.raises(InputError, match="names 'text' for text, but the input has only: _id, body"):
        list(read_jsonl(path, FieldMap()))
    rows = list(read_jsonl(path, FieldMap(text="body")))
    assert rows[0].id == "a" and rows[0].text == "x"
    with pytest.raises(InputError, match="metadata 'lang'"):
        list(read_jsonl(path, FieldMap(text="body", metadata=("lang",))))


def test_csv_reader(tmp_path):
    path = write(tmp_path / "d.csv", ["doc_id,title,text,cat", "a,T,hola,x", "b,,,y", "c,T,adiós,z,EXTRA"])
    rows = list(read_csv(path, FieldMap(metadata=("cat",))))
    assert isinstance(rows[0], SourceDoc) and rows[0].id == "a" and rows[0].metadata == {"cat": "x"}
    assert isinstance(rows[1], RowError) and rows[1].line == 3 and "no text" in rows[1].reason
    assert isinstance(rows[2], RowError) and "more cells" in rows[2].reason
    assert count_rows(path) == 3


def test_folder_reader_takes_txt_and_md(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("texto plano", encoding="utf-8")
    (tmp_path / "sub" / "b.md").write_text("# Título\n\ncuerpo", encoding="utf-8")
    (tmp_path / "c.md").write_text("   ", encoding="utf-8")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    rows = list(read_folder(tmp_path))
    docs = {r.id: r for r in rows if isinstance(r, SourceDoc)}
    assert docs["a.txt"].title == "a" and docs["sub/b.md"].title == "Título"
    assert docs["sub/b.md"].metadata == {"path": "sub/b.md", "format": "md"}
    assert [r.id for r in rows if isinstance(r, RowError)] == ["c.md"]
    assert count_rows(tmp_path) == 3


def test_read_source_picks_the_reader(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_source(tmp_path / "missing.jsonl")
    odd = tmp_path / "x.parquet"
    odd.write_bytes(b"")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_source(odd)


def test_chunking_windows_overlap_and_keep_original_text():
    words = [f"w{i}" for i in range(10)]
    text = " ".join(words)
    chunks = Chunking(size=4, overlap=1).split(text)
    assert chunks == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    assert Chunking(size=20, overlap=5).split("a  b\nc") == ["a  b\nc"]
    assert Chunking(size=3, overlap=0).split("   ") == []
    assert chunk_id("doc", 2) == "doc#2"
    with pytest.raises(InputError):
        Chunking(size=4, overlap=4)
    with pytest.raises(InputError):
        Chunking(size=0, overlap=0)


def test_a_title_only_row_is_a_document_and_a_row_with_neither_is_empty(tmp_path):
    # Classic collections (LISA: 3,495 of 5,999 documents, 232 of its 379 judged relevant) and
    # catalogues have rows with a title and no body: the title is what BM25 and the model read.
    path = write(
        tmp_path / "d.jsonl",
        [
            json.dumps({"id": "t", "title": "ONLINE CATALOGUES IN UNIVERSITY LIBRARIES", "text": ""}),
            json.dumps({"id": "n", "title": "  ", "text": ""}),
            json.dumps({"id": "m", "text": "  "}),
        ],
    )
    rows = list(read_jsonl(path, FieldMap()))
    assert isinstance(rows[0], SourceDoc) and (rows[0].title, rows[0].text) == (
        "ONLINE CATALOGUES IN UNIVERSITY LIBRARIES",
        "",
    )
    assert rows[1:] and all(isinstance(r, RowError) and r.empty and "no text" in r.reason for r in rows[1:])
    # Without a title field the same row has nothing to index.
    untitled = list(read_jsonl(path, FieldMap(title=None)))
    assert isinstance(untitled[0], RowError) and untitled[0].empty
