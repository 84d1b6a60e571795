"""One source of defaults on a real node (issue 39): a new index's analyzer chosen from its documents' language (at
init from --sample, else by the first ingest, which rebuilds the still-empty index), an existing index keeping its
own (init, plan, eval), and `plan --index X --write-spec FILE` writing what the live index has so that `diff` is clean."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.cli import cli  # noqa: F401  (fixture)
from tests.support.extras import requires_extra

pytestmark = [pytest.mark.engine("opensearch", "elasticsearch")]


@pytest.fixture(autouse=True)
def target_url(monkeypatch, opensearch_url):
    monkeypatch.setenv("OPENSEARCH_URL", opensearch_url)


def _analyzer(client, alias: str) -> str:
    index = next(iter(client.indices.get_alias(name=alias)))
    return client.indices.get_mapping(index=index)[index]["mappings"]["properties"]["text"]["analyzer"]


def test_write_spec_of_an_english_index_is_in_sync(cli, client, index_name, tmp_path):
    """Before: `plan --index docs --write-spec` on an `english` index wrote init's default (folding) and `diff` on
    it reported drift at once (exit 2)."""
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "english",
                         "--title-boost", "0.5", "--m", "24", "--weights", "0.4,0.6", "--shards", "2")
    assert code == 0, err
    written = tmp_path / "spec.yaml"
    code, out, err = cli("plan", "--index", index_name, "--write-spec", written)
    assert code == 0, err
    assert "analyzer: english, embedder: test:hashing (the live index's" in out
    doc = yaml.safe_load(written.read_text())
    assert doc["index"]["analyzer"] == "english" and doc["index"]["title_boost"] == 0.5 and doc["index"]["text_layout"] == "fields"
    assert doc["index"]["hnsw"] == {"m": 24, "ef_construction": 128} and doc["index"]["shards"] == 2
    assert doc["embedder"]["spec"] == "test:hashing" and doc["embedder"]["fingerprint"]["dimension"] == 32
    assert doc["pipelines"]["weights"] == [0.4, 0.6] or client.__class__.__module__.startswith("elasticsearch")  # ES stores none
    code, out, err = cli("diff", written)
    assert code == 0 and "in sync" in out, out + err


def test_init_again_without_flags_keeps_the_index_as_it_is(cli, client, index_name):
    """Before: `hybrid init --index docs` on an `english` index asked for folding and was refused (a rebuild)."""
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "english")[0] == 0
    code, out, err = cli("init", "--index", index_name)
    assert code == 0, err
    assert "nothing to change" in out and "analyzer: english, embedder: test:hashing (the existing index's" in out


@requires_extra("language")
def test_init_with_a_sample_chooses_from_its_language(cli, client, index_name, support_docs_path):
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--sample", support_docs_path)
    assert code == 0, err
    assert "analyzer: spanish, embedder: test:hashing (" in out and "are Spanish" in out, out
    assert _analyzer(client, index_name) == "spanish"


@requires_extra("language")
def test_the_first_ingest_chooses_when_init_had_no_documents(cli, client, index_name, support_docs_path):
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing")
    assert code == 0, err
    assert "for now: the first `hybrid ingest` reads its documents' language" in out
    assert _analyzer(client, index_name) == "folding"
    code, out, err = cli("ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache")
    assert code == 0, err
    assert "analyzer: spanish, embedder: test:hashing (" in out and "Spanish" in out
    assert _analyzer(client, index_name) == "spanish"
    client.indices.refresh(index=index_name)
    lines = sum(1 for line in open(support_docs_path, encoding="utf-8") if line.strip())
    assert client.count(index=index_name)["count"] == lines  # every row landed in the rebuilt index
    # chosen once: a second ingest neither chooses nor rebuilds
    code, out, _ = cli("ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache")
    assert code == 0 and "analyzer:" not in out
    meta = client.indices.get_mapping(index=f"{index_name}-v1")[f"{index_name}-v1"]["mappings"]["_meta"]
    assert meta["analysis"]["analyzer"] == "spanish" and meta["analysis"]["pending"] is False


def test_an_index_written_before_the_first_ingest_keeps_its_analyzer(cli, client, index_name, support_docs_path, tmp_path):
    """A document that lands by another way (here a partitioned ingest, which never chooses) ends the wait."""
    assert cli("init", "--index", index_name, "--embedder", "test:hashing")[0] == 0
    code, out, err = cli("ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache",
                         "--partition", "1/1")
    assert code == 0, err
    assert "a partitioned ingest does not choose it" in out
    code, out, err = cli("ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache")
    assert code == 0, err
    assert "documents were written before the first ingest chose" in out and _analyzer(client, index_name) == "folding"
