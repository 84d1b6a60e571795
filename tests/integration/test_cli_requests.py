"""How many HTTP requests one `hybrid search` sends, counted on the wire (opensearch-py's own request log,
not the adapter's counter), and that its JSON's ``requests`` says that number (issue 37: 12 requests, and
the JSON said 1)."""

from __future__ import annotations

import json

import pytest

from adapter.index.assets import IndexSpec
from adapter.testing import wire_log
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from tests.conftest import HashingEmbedder

QUERY = "¿cómo devuelvo un pedido?"


@pytest.fixture
def wire():
    with wire_log() as lines:
        yield lines


@pytest.fixture
def indexed(client, index_name, support_docs_path, tmp_path):
    embedder = HashingEmbedder(32)  # the query's vector is given: no model in the command
    init_index(client, index_name, IndexSpec(embedder.fingerprint, analyzer="spanish"))
    assert Ingestor.open(client, index_name, embedder, progress=False).ingest(read_source(support_docs_path)).complete

    def vector(query: str) -> str:
        path = tmp_path / f"v{abs(hash(query))}.json"
        path.write_text(json.dumps(embedder.embed_query(query).tolist()))
        return str(path)

    return index_name, vector


def search(capsys, wire, *args) -> tuple[dict, list[str]]:
    from adapter.cli import main

    wire.clear()
    code = main(["search", *args, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out), list(wire)


@pytest.mark.parametrize("technique", ["hybrid", "bm25", "client-rrf"])
def test_a_search_sends_at_most_four_requests_and_says_how_many(indexed, opensearch_url, capsys, wire, technique):
    index, vector = indexed
    answer, sent = search(
        capsys, wire, QUERY, "--index", index, "--url", opensearch_url, "--query-vector", vector(QUERY), "-t", technique
    )
    assert answer["hits"] and not answer["notices"]
    assert len(sent) <= 4 and answer["requests"] == len(sent), sent
    paths = [line.split(" ", 1)[1].split("?")[0].split("/", 3)[-1] for line in sent]
    assert paths.count("") == 1, sent  # GET / once: the engine's detection and the probe share it
    assert not [
        p for p in paths if p.startswith(("_nodes", "_cluster", "_alias")) or p.endswith(("_termvectors", "_count"))
    ], sent
    # what told the notes that BM25 matched stays out of the answer
    assert "_text_matches" not in answer["aggregations"]


def test_dense_only_hits_still_say_why_and_count_the_request_that_asks(indexed, opensearch_url, capsys, wire):
    """BM25 matching nothing is what the notes are for: then one ``_termvectors`` says why, and is counted."""
    index, vector = indexed
    answer, sent = search(
        capsys,
        wire,
        "xyzzyq plokw",
        "--index",
        index,
        "--url",
        opensearch_url,
        "--query-vector",
        vector("xyzzyq plokw"),
    )
    assert answer["notices"] == [
        "none of the query's words is in the index: BM25 matched nothing, so these hits are the dense leg's alone"
    ]
    assert answer["requests"] == len(sent) == 5 and sent[-1].endswith("/_termvectors"), sent
