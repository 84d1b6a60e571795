"""Ray Data ingest on a local Ray with 2 workers, against the real node (extra ``ray``)."""

import functools
import hashlib
import json
from pathlib import Path

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.errors import IndexMismatchError
from tests.conftest import HashingEmbedder

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
pytestmark = pytest.mark.engine("opensearch")
EMBEDDER = HashingEmbedder(32)
make_embedder = functools.partial(HashingEmbedder, 32)  # built in each actor (pickled by reference: tests.conftest)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_ray():
    # Two workers; the actors below take fractions of them so Ray's read tasks keep a core (a pool
    # that takes every CPU starves them and the pipeline stalls).
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        ignore_reinit_error=True,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )  # the workers import tests.conftest
    yield
    ray.shutdown()


def rows(n):
    return [{"id": f"r{i}", "title": f"doc {i}", "text": f"texto número {i} sobre el tema {i % 13}"} for i in range(n)]


@pytest.fixture
def ray_index(client, index_name):
    """The test's empty index, made for EMBEDDER."""
    init_index(client, index_name, IndexSpec(EMBEDDER.fingerprint, analyzer="standard"))
    return index_name


def index_rows(data, cluster_url, alias, embedder=make_embedder, **options):
    """``index_dataset`` over a Ray dataset of ``data``, on the session's node."""
    from adapter.integrations.ray_data import index_dataset

    return index_dataset(ray.data.from_items(data), url=cluster_url, alias=alias, embedder=embedder, **options)


def test_two_embedder_actors_and_a_writer_index_every_row_once(local_ray, client, ray_index, cluster_url, tmp_path):
    data = rows(500)
    summary = index_rows(
        data,
        cluster_url,
        ray_index,
        batch_size=64,
        embed_concurrency=2,
        embed_cpus=0.5,
        write_concurrency=1,
        write_cpus=0.5,
        failures_path=tmp_path / "f.jsonl",
    )
    assert (summary.written, summary.failures, summary.failures_file) == (500, (), None)
    assert client.count(index=ray_index)["count"] == 500
    hits = client.search(
        index=ray_index, body={"size": 500, "_source": ["text", "embedding"], "query": {"match_all": {}}}
    )["hits"]["hits"]
    got = hashlib.sha256("".join(sorted(f"{h['_id']}\t{h['_source']['text']}\n" for h in hits)).encode()).hexdigest()
    want = hashlib.sha256("".join(sorted(f"{r['id']}\t{r['text']}\n" for r in data)).encode()).hexdigest()
    assert got == want
    one = next(h for h in hits if h["_id"] == "r7")
    expected = EMBEDDER.embed_documents([f"doc 7\n{data[7]['text']}"])[0]  # title + text, as `hybrid ingest` embeds
    assert max(abs(a - b) for a, b in zip(one["_source"]["embedding"], expected)) < 1e-6


def test_rows_the_cluster_refuses_are_reported_with_reasons(local_ray, ray_index, cluster_url, tmp_path):
    data = rows(20) + [{"id": "x" * 600, "title": "", "text": "an id over the server's 512-byte limit"}]
    summary = index_rows(
        data, cluster_url, ray_index, batch_size=8, embed_cpus=0.5, write_cpus=0.5, failures_path=tmp_path / "f.jsonl"
    )
    assert summary.written == 20 and [f.id for f in summary.failures] == ["x" * 600]
    assert json.loads((tmp_path / "f.jsonl").read_text().splitlines()[0])["id"] == "x" * 600


def test_an_embedder_that_does_not_match_the_index_is_refused_before_any_work(
    local_ray, client, ray_index, cluster_url
):
    with pytest.raises(IndexMismatchError, match="never mix embedding models"):
        index_rows(rows(4), cluster_url, ray_index, embedder=functools.partial(HashingEmbedder, 16))
    assert client.count(index=ray_index)["count"] == 0
