"""What a user writes under ``metadata`` is what the index holds at ``metadata.*`` and what they read
back: a row's ``metadata`` object is the metadata itself (parts-en, BEIR, the index contract's own
shape), never ``metadata.metadata.*``; the contract's fields in a row are lineage and a carried
vector, never metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapter.ingest.by_id import StoredDocument
from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_jsonl

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]


def rows(tmp_path, *records, fields=FieldMap()):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return list(read_jsonl(path, fields))


def test_parts_en_metadata_is_read_at_the_top_level():
    (first, *_) = read_jsonl(ROOT / "benchmarks" / "data" / "parts-en" / "corpus.jsonl", FieldMap())
    assert isinstance(first, SourceDoc) and first.id == "brg-6000-open"
    assert dict(first.metadata) == {"family": "bearing"}


def test_a_metadata_object_and_other_fields_merge_and_a_clash_is_refused(tmp_path):
    good, clash, bad = rows(
        tmp_path,
        {"id": "a", "text": "x", "lang": "es", "metadata": {"family": "bearing", "n": 2}},
        {"id": "b", "text": "x", "family": "seal", "metadata": {"family": "bearing"}},
        {"id": "c", "text": "x", "metadata": ["not", "an", "object"]},
    )
    assert dict(good.metadata) == {"lang": "es", "family": "bearing", "n": 2}
    assert isinstance(clash, RowError) and "'family' is given twice" in clash.reason
    assert isinstance(bad, RowError) and "metadata is an object" in bad.reason
    (named,) = rows(
        tmp_path,
        {"id": "a", "text": "x", "lang": "es", "metadata": {"family": "bearing"}},
        fields=FieldMap(metadata=("metadata",)),
    )
    assert dict(named.metadata) == {"family": "bearing"}


def test_a_document_read_back_in_the_contracts_shape_reads_as_the_same_entry(tmp_path):
    stored = StoredDocument(
        "d#1",
        "body",
        "T",
        {"family": "bearing", "size": {"bore": 10}},
        parent_id="d",
        chunk_index=1,
        embedded_by="fp-key",
        vector=(0.6, 0.8),
    )
    (row,) = rows(tmp_path, stored.as_row())
    assert isinstance(row, SourceDoc)
    assert (row.id, row.title, row.text, dict(row.metadata)) == (
        "d#1",
        "T",
        "body",
        {"family": "bearing", "size": {"bore": 10}},
    )
    assert (row.parent_id, row.chunk_index, row.vector, row.embedded_by) == ("d", 1, (0.6, 0.8), "fp-key")
    (again,) = rows(tmp_path, StoredDocument("e", "body").as_row())  # no vector asked for: the index's model embeds it
    assert dict(again.metadata) == {} and again.vector is None and again.parent_id == "e"


def test_a_beir_row_keeps_its_metadata_as_written(tmp_path):
    beir = {
        "_id": "4983",
        "title": "Microstructural development",
        "text": "Alterations of the architecture...",
        "metadata": {"url": "https://example.org/4983", "year": 1998},
    }
    (row,) = rows(tmp_path, beir)
    assert dict(row.metadata) == beir["metadata"] and row.parent_id is None


def test_contract_fields_that_do_not_fit_are_refused(tmp_path):
    found = rows(
        tmp_path,
        {"id": "a", "text": "x", "chunk_index": -1},
        {"id": "b", "text": "x", "embedding": "nope"},
        {"id": "c", "text": "x", "parent_id": {"x": 1}},
    )
    assert [r.reason.split(";")[0].split(",")[0] for r in found] == [
        "chunk_index must be a whole number >= 0",
        "field 'embedding' holds a str",
        "parent_id holds an object",
    ]


def test_an_entry_an_older_ingest_nested_reads_back_as_written():
    from adapter.index.documents import metadata_as_written

    assert metadata_as_written({"metadata": {"family": "bearing"}}) == {"family": "bearing"}
    assert metadata_as_written({"lang": "es", "metadata": {"family": "bearing"}}) == {"family": "bearing", "lang": "es"}
    assert metadata_as_written(None) == {} and metadata_as_written({"a": 1}) == {"a": 1}
