"""The cluster the product stands on: plugins, analyzers, k-NN, hybrid query with both fusions."""

import pytest

from adapter.engines.opensearch import OPENSEARCH


def test_plugins_k_nn_and_neural_search_are_installed(client):
    rows = client.cat.plugins(format="json")
    names = {r["component"] for r in rows}
    assert {"opensearch-knn", "opensearch-neural-search"} <= names
    caps = OPENSEARCH.probe(client)
    assert caps.hybrid and caps.rrf and caps.explanation


def analyze(client, analyzer, text):
    return [t["token"] for t in client.indices.analyze(body={"analyzer": analyzer, "text": text})["tokens"]]


def test_spanish_analyzer_lowercases_folds_accents_and_stems(client):
    assert analyze(client, "spanish", "Facturación") == analyze(client, "spanish", "facturacion") == ["facturacion"]
    assert analyze(client, "spanish", "Devoluciones") == analyze(client, "spanish", "devolución")
    assert analyze(client, "spanish", "el de la") == []  # stopwords


@pytest.fixture
def knn_index(client, index_name):
    body = {
        "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {
            "properties": {
                "text": {"type": "text", "analyzer": "spanish"},
                "v": {
                    "type": "knn_vector",
                    "dimension": 384,
                    "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
                },
            }
        },
    }
    client.indices.create(index=index_name, body=body)
    texts = ["error E-4012 tarjeta caducada", "devoluciones en 30 días", "envíos a Canarias", "cambiar la contraseña"]
    for i, text in enumerate(texts):
        vec = [0.0] * 384
        vec[i] = 1.0
        vec[383] = 0.5
        client.index(index=index_name, id=str(i), body={"text": text, "v": vec})
    client.indices.refresh(index=index_name)
    return index_name


def test_knn_vector_index_accepts_documents(client, knn_index):
    assert client.count(index=knn_index)["count"] == 4
    mapping = client.indices.get_mapping(index=knn_index)[knn_index]["mappings"]["properties"]["v"]
    assert mapping["dimension"] == 384 and mapping["method"]["engine"] == "lucene"
    query = [0.0] * 384
    query[1] = 1.0
    hits = client.search(index=knn_index, body={"query": {"knn": {"v": {"vector": query, "k": 2}}}})["hits"]["hits"]
    assert hits[0]["_id"] == "1"


def _hybrid(client, index, pipeline, query_vec):
    body = {
        "size": 10,
        "query": {
            "hybrid": {
                "queries": [
                    {"match": {"text": "error E-4012 devoluciones"}},
                    {"knn": {"v": {"vector": query_vec, "k": 4}}},
                ]
            }
        },
    }
    return client.search(index=index, body=body, params={"search_pipeline": pipeline})["hits"]["hits"]


def _legs(client, index, query_vec):
    bm25 = client.search(index=index, body={"size": 10, "query": {"match": {"text": "error E-4012 devoluciones"}}})[
        "hits"
    ]["hits"]
    knn = client.search(index=index, body={"size": 4, "query": {"knn": {"v": {"vector": query_vec, "k": 4}}}})["hits"][
        "hits"
    ]
    return [(h["_id"], h["_score"]) for h in bm25], [(h["_id"], h["_score"]) for h in knn]


def _fused_and_legs(client, index, pipeline, processor, hot):
    """PUT ``pipeline`` with the one phase-results ``processor``; then, for a query vector one-hot at ``hot``, the
    hybrid query's hits through it and the two legs' runs."""
    client.transport.perform_request(
        "PUT", f"/_search/pipeline/{pipeline}", body={"phase_results_processors": [processor]}
    )
    qv = [0.0] * 384
    qv[hot] = 1.0
    return (_hybrid(client, index, pipeline, qv), *_legs(client, index, qv))


def test_hybrid_with_normalization_processor_returns_min_max_fused_scores(client, knn_index, index_name):
    min_max_processor = {
        "normalization-processor": {
            "normalization": {"technique": "min_max"},
            "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.3, 0.7]}},
        }
    }
    hits, bm25, knn = _fused_and_legs(client, knn_index, f"{index_name}-minmax", min_max_processor, hot=2)

    def min_max(run):
        scores = [s for _, s in run]
        lo, hi = min(scores), max(scores)
        return {d: (0.001 if s == lo else (s - lo) / (hi - lo)) for d, s in run}

    nb, nk = min_max(bm25), min_max(knn)
    expected = {d: 0.3 * nb.get(d, 0.0) + 0.7 * nk.get(d, 0.0) for d in set(nb) | set(nk)}
    assert {h["_id"] for h in hits} == set(expected)
    for h in hits:
        assert h["_score"] == pytest.approx(expected[h["_id"]], abs=1e-5)
    assert hits[0]["_id"] == max(expected, key=expected.get)


def test_hybrid_with_score_ranker_processor_returns_rrf_scores(client, knn_index, index_name):
    rrf_processor = {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}
    hits, bm25, knn = _fused_and_legs(client, knn_index, f"{index_name}-rrf", rrf_processor, hot=0)
    expected = {}
    for run in (bm25, knn):
        for rank, (doc, _) in enumerate(run, start=1):
            expected[doc] = expected.get(doc, 0.0) + 1.0 / (60 + rank)
    assert {h["_id"]: pytest.approx(h["_score"], rel=1e-5) for h in hits} == expected
    assert hits[0]["_id"] == "0" and hits[0]["_score"] == pytest.approx(2 / 61, rel=1e-5)
