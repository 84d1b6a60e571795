"""Metadata as written, and documents by id (get, delete by ids / parent / filter, update), through
the CLI and the library, on every target: what a user writes under ``metadata`` is what they filter
on and read back; a document read back in the contract's shape ingests as the same entry; a
carried vector is used when its model is the index's and refused otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapter.errors import InputError
from adapter.ingest.by_id import Documents, Selection
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import Chunking, FieldMap, SourceDoc, read_jsonl
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401  (the fixture)

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
ROOT = Path(__file__).resolve().parents[2]
PARTS = ROOT / "benchmarks" / "data" / "parts-en" / "corpus.jsonl"
SCIFACT = Path("/work/shared/data/scifact/corpus.jsonl")
if not SCIFACT.exists():  # CI's copy of shared/ sits beside the clone
    SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


@pytest.fixture(autouse=True)
def _allow_the_test_model(monkeypatch):
    monkeypatch.setenv("HYBRID_ALLOWED_MODELS", "test:hashing")


@pytest.fixture
def parts_index(cli, opensearch_url, index_name):
    url = ("--url", opensearch_url)
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing", *url)
    assert code == 0, err
    code, out, err = cli("ingest", PARTS, "--index", index_name, "--quiet", *url)
    assert code == 0 and "documents: 200  chunks: 200  failures: 0" in out, out + err
    return index_name


def test_metadata_is_filtered_on_and_read_back_as_written(cli, client, opensearch_url, parts_index):
    url = ("--url", opensearch_url)
    code, out, err = cli(
        "search",
        "deep groove ball bearing",
        "--index",
        parts_index,
        "--filter",
        "family=bearing",
        "-k",
        "20",
        "--json",
        *url,
    )
    hits = json.loads(out)["hits"]
    assert code == 0 and len(hits) == 20 and {h["source"]["metadata"]["family"] for h in hits} == {"bearing"}, err
    code, out, _ = cli("search", "ring", "--index", parts_index, "--facet", "family", *url)
    (facet,) = [line for line in out.splitlines() if line.startswith("facet ")]
    assert code == 0 and "oring 24" in facet, out  # the facet counts the matching documents' metadata.family
    # What the file says under metadata is what `hybrid get` gives back, at the same place.
    written = {json.loads(line)["_id"]: json.loads(line) for line in PARTS.read_text(encoding="utf-8").splitlines()[:3]}
    code, out, err = cli("get", *written, "nope", "--index", parts_index, *url)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 3 and "not found: nope" in err
    assert [(r["id"], r["title"], r["text"], r["metadata"]) for r in rows] == [
        (i, w["title"], w["text"], w["metadata"]) for i, w in written.items()
    ]
    documents = Documents.open(client, parts_index)
    assert documents.count() == 200 and documents.count(Selection(filters={"family": "bearing"})) == 90


def test_a_document_read_back_ingests_as_the_same_entry(cli, client, opensearch_url, parts_index, tmp_path):
    url = ("--url", opensearch_url)
    ids = ["brg-6000-open", "brg-6000-zz"]
    code, out, _ = cli("get", *ids, "--index", parts_index, "--with-vectors", *url)
    exported = tmp_path / "back.jsonl"
    exported.write_text(out, encoding="utf-8")
    documents = Documents.open(client, parts_index)
    before = documents.get(ids, with_vectors=True)
    code, out, err = cli("ingest", exported, "--index", parts_index, "--quiet", *url)
    assert code == 0 and "failures: 0" in out, out + err
    after = documents.get(ids, with_vectors=True)
    # metadata not nested again; the carried vectors used as they were
    assert after == before and documents.count() == 200
    mapping = client.indices.get_mapping(index=parts_index)
    (props,) = [m["mappings"]["properties"]["metadata"]["properties"] for m in mapping.values()]
    assert set(props) == {"family"}  # never metadata.metadata, never parent_id or embedded_by as metadata


def test_a_beir_row_round_trips(cli, client, opensearch_url, index_name, tmp_path):
    url = ("--url", opensearch_url)
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", *url)[0] == 0
    row = json.loads(SCIFACT.read_text(encoding="utf-8").split("\n", 1)[0])
    # BEIR's own layout gives each row a metadata object (TREC-COVID's: url, pubmed_id); this copy has none.
    with_meta = {
        **row,
        "_id": f"{row['_id']}-m",
        "metadata": {"url": "https://pubmed.example/4983", "pubmed_id": "11380678"},
    }
    (tmp_path / "beir.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(with_meta) + "\n", encoding="utf-8")
    assert cli("ingest", tmp_path / "beir.jsonl", "--index", index_name, "--quiet", *url)[0] == 0
    code, out, _ = cli("get", row["_id"], with_meta["_id"], "--index", index_name, *url)
    back = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(b["id"], b["title"], b["text"], b["metadata"]) for b in back] == [
        (r["_id"], r["title"], r["text"], r.get("metadata", {})) for r in (row, with_meta)
    ]


def test_delete_by_ids_parent_and_filter_with_a_dry_run(cli, client, opensearch_url, parts_index):
    url = ("--url", opensearch_url)
    documents = Documents.open(client, parts_index)
    code, out, _ = cli(
        "delete", "brg-6000-open", "brg-6000-zz", "missing-id", "--index", parts_index, "--dry-run", *url
    )
    assert code == 0 and "dry run: 2 entries" in out and documents.count() == 200
    code, out, _ = cli("delete", "brg-6000-open", "brg-6000-zz", "missing-id", "--index", parts_index, *url)
    assert code == 0 and "deleted 2 of 2" in out and documents.count() == 198
    code, out, _ = cli("delete", "--filter", "family=pulley", "--index", parts_index, "--dry-run", *url)
    assert code == 0 and "dry run: 4 entries" in out and documents.count() == 198
    code, out, _ = cli("delete", "--filter", "family=pulley", "--index", parts_index, *url)
    assert code == 0 and "deleted 4 of 4" in out and documents.count() == 194
    # A chunked document: every chunk goes with its parent.
    ingestor = Ingestor.open(client, parts_index, TEST_EMBEDDER, progress=False, chunking=Chunking(5, 0))
    ingestor.ingest([SourceDoc("manual", " ".join(f"word{i}" for i in range(23)), metadata={"family": "manual"})])
    assert documents.count() == 194 + 5
    code, out, _ = cli("delete", "--parent", "manual", "--index", parts_index, *url)
    assert code == 0 and "deleted 5 of 5" in out and documents.count() == 194
    with pytest.raises(
        InputError, match="delete needs ids, parents .* or a filter; to delete every entry, say so: all=True"
    ):
        documents.delete()  # never the whole index unasked (issue 38)


def test_update_embeds_again_only_when_the_text_changed(client, parts_index):
    ingestor = Ingestor.open(client, parts_index, TEST_EMBEDDER, progress=False)
    documents = ingestor.documents()
    (before,) = documents.get(["brg-6000-open"], with_vectors=True)
    report = ingestor.update("brg-6000-open", metadata={"stock": 12})
    (after,) = documents.get(["brg-6000-open"], with_vectors=True)
    assert (
        report.embedded == 0 and after.vector == before.vector and after.metadata == {"family": "bearing", "stock": 12}
    )
    report = ingestor.update("brg-6000-open", text="A sealed bearing now.")
    (changed,) = documents.get(["brg-6000-open"], with_vectors=True)
    assert report.embedded == 1 and changed.text == "A sealed bearing now." and changed.vector != before.vector
    with pytest.raises(InputError, match="no document 'nope'"):
        ingestor.update("nope", text="x")


def test_carried_vectors_are_used_from_the_index_model_and_refused_otherwise(client, parts_index):
    ingestor = Ingestor.open(client, parts_index, TEST_EMBEDDER, progress=False)
    key = TEST_EMBEDDER.fingerprint.key
    mine = tuple(float(x) for x in TEST_EMBEDDER.embed_documents(["carried text"])[0])
    other = tuple([1.0] + [0.0] * (TEST_EMBEDDER.dimension - 1))
    report = ingestor.ingest(
        [
            SourceDoc("c1", "carried text", vector=mine, embedded_by=key),
            SourceDoc("c2", "foreign text", vector=other, embedded_by="someone-elses-model"),
            SourceDoc("c3", "unnamed text", vector=other),
        ]
    )
    assert report.embedded == 0 and report.documents == 1
    reasons = {f.id: f.reason for f in report.failures}
    assert (
        set(reasons) == {"c2", "c3"} and "'someone-elses-model'" in reasons["c2"] and "no embedded_by" in reasons["c3"]
    )
    (stored,) = ingestor.documents().get(["c1"], with_vectors=True)
    assert stored.vector == pytest.approx(mine) and stored.embedded_by == key


def test_reingesting_the_same_documents_adds_nothing(client, parts_index):
    ingestor = Ingestor.open(client, parts_index, TEST_EMBEDDER, progress=False)
    rows = list(read_jsonl(PARTS, FieldMap()))[:50]
    ingestor.ingest(rows)
    assert ingestor.documents().count() == 200
