"""The local Elasticsearch node itself, over plain HTTP: it boots with the modules the integ-test
zip has, and serves a ``dense_vector`` field with one request that combines a BM25 query and
``knn``. The adapter on it (the official client, the Elasticsearch dialect) is tested in
test_elastic_adapter.py and by the engine-neutral tests marked for both engines."""

import uuid

import pytest

from adapter.local.procs import get_json

pytestmark = pytest.mark.engine("elasticsearch")


@pytest.fixture
def es_index(cluster_url):
    name = f"t-es-{uuid.uuid4().hex[:6]}"
    yield name
    get_json(f"{cluster_url}/{name}?ignore_unavailable=true", method="DELETE", timeout=30)


def test_the_node_reports_its_version_and_modules(cluster_url, target):
    node = next(iter(get_json(f"{cluster_url}/_nodes/_local/plugins")["nodes"].values()))
    assert node["version"] == target.version
    assert {"x-pack-core", "x-pack-security", "transport-netty4"} <= {m["name"] for m in node["modules"]}
    assert get_json(f"{cluster_url}/_cluster/health")["status"] in ("green", "yellow")


def test_bm25_query_and_knn_in_one_request(cluster_url, es_index):
    mapping = {
        "mappings": {
            "properties": {
                "text": {"type": "text"},
                "v": {"type": "dense_vector", "dims": 3, "index": True, "similarity": "cosine"},
            }
        }
    }
    get_json(f"{cluster_url}/{es_index}", method="PUT", body=mapping, timeout=30)
    docs = [
        ("a", "password reset", [1, 0, 0]),
        ("b", "invoice and billing", [0, 1, 0]),
        ("c", "password policy", [0.9, 0.1, 0]),
    ]
    for doc_id, text, vector in docs:
        get_json(f"{cluster_url}/{es_index}/_doc/{doc_id}", method="PUT", body={"text": text, "v": vector}, timeout=30)
    get_json(f"{cluster_url}/{es_index}/_refresh", method="POST", timeout=30)

    knn_only = get_json(
        f"{cluster_url}/{es_index}/_search",
        method="POST",
        body={"knn": {"field": "v", "query_vector": [0, 1, 0], "k": 1, "num_candidates": 10}, "_source": False},
    )
    assert [h["_id"] for h in knn_only["hits"]["hits"]] == ["b"]
    both = get_json(
        f"{cluster_url}/{es_index}/_search",
        method="POST",
        body={
            "query": {"match": {"text": "password"}},
            "knn": {"field": "v", "query_vector": [1, 0, 0], "k": 2, "num_candidates": 10},
            "_source": False,
        },
    )
    ids = [h["_id"] for h in both["hits"]["hits"]]
    assert ids[0] == "a" and set(ids) == {"a", "c"}  # equal BM25 (same length), a is nearer


def test_the_spanish_language_analyzer_is_absent_and_hunspell_replaces_it(cluster_url, es_index):
    """analysis-common (the `spanish` analyzer) is not in the integ-test zip nor on Maven Central."""
    with pytest.raises(Exception, match="400"):
        get_json(
            f"{cluster_url}/{es_index}",
            method="PUT",
            body={"mappings": {"properties": {"t": {"type": "text", "analyzer": "spanish"}}}},
        )
    settings = {
        "analysis": {
            "filter": {"es_stem": {"type": "hunspell", "locale": "es_ES", "dedup": True}},
            "analyzer": {"es": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "es_stem"]}},
        }
    }
    get_json(
        f"{cluster_url}/{es_index}",
        method="PUT",
        body={"settings": settings, "mappings": {"properties": {"t": {"type": "text", "analyzer": "es"}}}},
    )
    get_json(f"{cluster_url}/{es_index}/_doc/1?refresh=true", method="PUT", body={"t": "Cambiar las contraseñas"})
    hits = get_json(f"{cluster_url}/{es_index}/_search", method="POST", body={"query": {"match": {"t": "contraseña"}}})[
        "hits"
    ]["hits"]
    assert [h["_id"] for h in hits] == ["1"]
