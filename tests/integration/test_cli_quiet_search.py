"""A terminal search as a person runs it: no model-loading progress bars, the model's load apart from
the query's time, and a vector embedded elsewhere (``--query-vector FILE|-``) with no model at all."""

import json
import subprocess
import sys

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.models.embedders import load_embedder
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from tests.conftest import HashingEmbedder

QUERY = "¿cómo devuelvo un pedido?"


def hybrid(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from adapter.cli import main; sys.exit(main())", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def indexed(client, index_name, support_docs_path):
    def build(embedder):
        init_index(client, index_name, IndexSpec(embedder.fingerprint, analyzer="spanish"))
        Ingestor.open(client, index_name, embedder, progress=False).ingest(read_source(support_docs_path))
        return index_name

    return build


@pytest.mark.slow
def test_a_terminal_search_shows_no_progress_bar_and_times_the_model_apart(indexed, opensearch_url):
    index = indexed(load_embedder("minilm"))
    run = hybrid("search", QUERY, "--index", index, "--url", opensearch_url, "-k", "3")
    assert run.returncode == 0, run.stderr
    # transformers draws "Loading weights: 100%|████| 103/103" on stderr while the model loads (it did before).
    assert "Loading weights" not in run.stderr and "it/s]" not in run.stderr, run.stderr
    first = " ".join(run.stdout.split("\n#")[0].split())  # the result line, however the console wrapped it
    assert "model loaded in" in first and "ms embedding +" in first and "ms search" in first, first


def test_a_vector_embedded_elsewhere_needs_no_model(indexed, opensearch_url, tmp_path):
    embedder = HashingEmbedder(32)  # a test embedder another process cannot load: no model may be loaded
    index = indexed(embedder)
    vector = embedder.embed_query(QUERY).tolist()
    (tmp_path / "v.json").write_text(json.dumps(vector))
    by_file = hybrid(
        "search", QUERY, "--index", index, "--url", opensearch_url, "--query-vector", tmp_path / "v.json", "--json"
    )
    assert by_file.returncode == 0, by_file.stderr
    by_stdin = hybrid(
        "search",
        QUERY,
        "--index",
        index,
        "--url",
        opensearch_url,
        "--query-vector",
        "-",
        "--json",
        stdin=" ".join(map(str, vector)),
    )
    assert by_stdin.returncode == 0, by_stdin.stderr
    ids = [h["id"] for h in json.loads(by_file.stdout)["hits"]]
    assert ids and ids == [h["id"] for h in json.loads(by_stdin.stdout)["hits"]]
    assert "devoluciones" in ids[:3] or "reembolso" in ids[:3]
    plain = hybrid("search", QUERY, "--index", index, "--url", opensearch_url, "--query-vector", tmp_path / "v.json")
    assert "query vector from" in " ".join(plain.stdout.split("\n#")[0].split())
    wrong = hybrid(
        "search", QUERY, "--index", index, "--url", opensearch_url, "--query-vector", "-", stdin="[0.1, 0.2]"
    )
    assert wrong.returncode == 2 and "expects (32,)" in wrong.stderr
