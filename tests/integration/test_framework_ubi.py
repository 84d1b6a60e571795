"""The framework components' UBI opt-in on a real node (issue 40 item 1): a LangChain store, a
Haystack retriever on its store (and one serialised and loaded again) and a LlamaIndex store and
retriever, each asked to, leave one UBI query record per search that validates against the
specification's schema (adapter/schemas/ubi-query.schema.json) and names the hits shown; asked
nothing, they log nothing. Elasticsearch: the adapter's own UBI indices, with the same schema."""

from __future__ import annotations

import pytest

from adapter.engines import cluster_for
from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.traffic import ubi

pytestmark = [pytest.mark.integration, pytest.mark.engine("opensearch", "elasticsearch")]
TEXTS = ["Returns are free within 30 days.", "Gift cards never expire.", "Refunds reach your card in five days."]


@pytest.fixture
def ubi_index(client, index_name, e5):
    """A small index, and the UBI options that send this test's records to indices of its own
    (named after index_name, so its clean-up removes them)."""
    from adapter.integrations.langchain import HybridVectorStore

    init_index(client, index_name, IndexSpec(e5.fingerprint))
    HybridVectorStore(
        Searcher.open(client, index_name, e5), Ingestor.open(client, index_name, e5, progress=False)
    ).add_texts(TEXTS, [{"lang": "en"}] * 3, ids=["a", "b", "c"])
    options = {
        "queries_index": f"{index_name}-ubi-queries",
        "events_index": f"{index_name}-ubi-events",
        "client_id": "app-7",
    }
    return index_name, options


def records(client, options, logger):
    """Every query record the logger wrote, each checked against the UBI query schema."""
    assert logger.flush(60) and logger.stats.dropped == logger.stats.failed == 0, logger.stats
    port = cluster_for(client)
    port.refresh([options["queries_index"]])
    found = port.search(options["queries_index"], {"query": {"match_all": {}}, "size": 100})["hits"]["hits"]
    docs = [hit["_source"] for hit in found]
    for doc in docs:
        ubi.validate("query", doc)
    return docs


def test_a_langchain_store_asked_to_logs_each_search_and_one_asked_nothing_does_not(client, ubi_index, e5):
    from adapter.integrations.langchain import HybridRetriever, HybridVectorStore

    index, options = ubi_index
    quiet = HybridVectorStore(Searcher.open(client, index, e5))
    assert quiet.ubi_logger is None and quiet.similarity_search("gift cards", k=2)
    # off by default: nothing created, nothing written
    assert not cluster_for(client).index_exists(options["queries_index"])
    store = HybridVectorStore(Searcher.open(client, index, e5), ubi=options)
    found = store.search_with_hits("gift cards", k=2)
    assert store.similarity_search_with_relevance_scores("refunds", k=2, score_threshold=0.0)
    retriever = HybridRetriever(
        searcher=Searcher.open(client, index, e5), k=2, ubi={**options, "store_query_text": False}
    )
    retriever.invoke("returns")
    assert retriever.ubi_logger.flush(60)
    docs = {d["query_id"]: d for d in records(client, options, store.ubi_logger)}
    # one each; no text when told
    assert sorted(d["user_query"] for d in docs.values()) == ["", "gift cards", "refunds"]
    record = docs[found[0][1].query_id]
    assert record["client_id"] == "app-7" and record["query_response_hit_ids"] == [doc.id for doc, _ in found]


def test_a_haystack_retriever_logs_through_its_store_and_the_setting_serialises(client, opensearch_url, ubi_index, e5):
    from haystack import Pipeline

    from adapter.integrations.haystack import HybridDocumentStore, HybridRetriever

    index, options = ubi_index
    store = HybridDocumentStore(opensearch_url, index, embedder=e5, ubi=options)
    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridRetriever(document_store=store, top_k=2))
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["adapter.integrations.haystack"])
    loaded_store = loaded.get_component("retriever").document_store
    assert loaded_store.to_dict()["init_parameters"]["ubi"] == {**options, "store_query_text": True}
    out = loaded.run({"retriever": {"query": "gift cards"}})["retriever"]
    query_id = out["hits"][0]["query_id"]
    (record,) = records(client, options, loaded_store.ubi_logger)
    assert record["query_id"] == query_id and record["query_response_hit_ids"] == [d.id for d in out["documents"]]
    assert record["client_id"] == "app-7"
    plain = HybridRetriever(document_store=HybridDocumentStore(opensearch_url, index, embedder=e5), top_k=2).run(
        "gift cards"
    )
    assert plain["hits"][0]["query_id"] is None  # a store asked nothing logs nothing
    with pytest.raises(InputError, match="unknown option 'client'"):
        HybridDocumentStore(opensearch_url, index, ubi={"client": "x"})


def test_a_llamaindex_store_and_retriever_asked_to_log_each_search(client, ubi_index, e5):
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from adapter.integrations.llamaindex import HybridRetriever, HybridVectorStore

    index, options = ubi_index
    store = HybridVectorStore.open(client, index, embedder=e5, ubi=options)
    answer = store.query(VectorStoreQuery(query_str="gift cards", similarity_top_k=2))
    retriever = HybridRetriever(Searcher.open(client, index, e5), similarity_top_k=2, ubi=store.ubi_logger)
    nodes = retriever.search_with_hits("refunds")
    docs = {d["query_id"]: d for d in records(client, options, store.ubi_logger)}
    assert len(docs) == 2 and docs[nodes[0][1].query_id]["query_response_hit_ids"] == [n.node.node_id for n, _ in nodes]
    (first,) = [d for d in docs.values() if d["user_query"] == "gift cards"]
    assert first["query_response_hit_ids"] == answer.ids and first["client_id"] == "app-7"
    assert retriever.ubi_logger is store.ubi_logger  # a ready logger is shared, not copied
