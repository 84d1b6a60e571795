"""LlamaIndex's usual entry points on an adapter index, on a real node, with llama-index-core's
MockLLM (no hosted model is reachable; it echoes its prompt, so what the LLM reads is visible):

- an IngestionPipeline with SentenceSplitter writing into HybridVectorStore, run twice (random node
  ids): no duplicate chunks;
- ``VectorStoreIndex.from_vector_store(...)``: ``as_query_engine()``'s source nodes are the server's
  fused hybrid in the adapter's order, with ``ref_doc_id`` lineage and the metadata out of the prompt;
  ``as_retriever()`` with MetadataFilters (OR, NOT, !=, contains, is_empty), hybrid alpha, mmr; ``as_chat_engine()``
(its default mode);
- ``VectorStoreIndex.from_documents(..., storage_context=...)`` (vectors from the store's own model);
- ``delete(ref_doc_id)``, ``delete_nodes``, ``get_nodes``; a foreign vector refused.

LlamaIndex has no conformance suite for vector stores (llama-index-core ships none; each integration
tests itself): these are its documented entry points, run end to end. One index, ~20 small chunks."""

from __future__ import annotations

import pytest

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.search.page import SearchOptions

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")

GUIDE = " ".join(
    [
        "To return an order, open My orders and press Return next to the item.",
        "Print the return label and drop the parcel at any post office within 30 days.",
        "Refunds reach the original card within five working days after the parcel arrives.",
        "Items bought in a sale can be returned as well, but gift wrapping is not refunded.",
        "Damaged items are collected from your address at no cost: choose Collect when you return them.",
    ]
    * 3
)
CARDS = "Gift cards never expire. They are redeemed at checkout and can be combined with a discount code."
SHIPPING = "Parcels ship within two working days; express delivery arrives the next day."


def test_the_query_engine_answers_from_the_servers_fused_hybrid(client, index_name, e5, target):
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

    from adapter.integrations.llamaindex import HybridVectorStore

    init_index(client, index_name, IndexSpec(e5.fingerprint))
    store = HybridVectorStore.open(client, index_name, embedder=e5)
    documents = store.ingestor.documents()
    docs = [
        Document(id_="guide", text=GUIDE, metadata={"topic": "returns", "lang": "en"}),
        Document(id_="cards", text=CARDS, metadata={"topic": "payments", "lang": "en", "tags": ["gift", "card"]}),
    ]

    def pipeline() -> IngestionPipeline:  # LlamaIndex writes only embedded nodes: the index's model embeds them
        return IngestionPipeline(
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), store.embed_model], vector_store=store
        )

    first = pipeline().run(documents=docs)
    entries = documents.count()
    assert entries == len(first) > 2
    second = pipeline().run(documents=docs)
    assert {n.node_id for n in second}.isdisjoint({n.node_id for n in first})  # random ids again
    assert documents.count() == entries  # re-ingesting the same documents: their chunks replaced, 0 duplicates
    stored = documents.get([second[0].node_id])[0]
    assert (stored.parent_id, stored.chunk_index, dict(stored.metadata)) == (
        "guide",
        0,
        {"topic": "returns", "lang": "en"},
    )

    index = VectorStoreIndex.from_vector_store(store, embed_model=store.embed_model)
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=3)
    query = "how do I return an order and get a refund"
    response = engine.query(query)
    expected = store.searcher.search(query, k=3, options=SearchOptions(full_text=True))
    # the server's fused hybrid, as the adapter ranks it
    assert [n.node.node_id for n in response.source_nodes] == expected.ids
    # a basic licence fuses in the client, and says so
    assert expected.fused_by.server or target.engine == "elasticsearch"
    assert {n.node.ref_doc_id for n in response.source_nodes} == {"guide"}
    assert response.source_nodes[0].node.metadata == {"topic": "returns", "lang": "en"}
    assert all(0 <= n.score <= 1 for n in response.source_nodes)  # relevance, whatever the fusion
    # MockLLM echoes its prompt
    assert "topic" not in str(response) and response.source_nodes[0].node.text[:40] in str(response)

    def ids(filters: MetadataFilters, q: str = "gift card") -> list[str | None]:
        return sorted({n.node.ref_doc_id for n in index.as_retriever(similarity_top_k=10, filters=filters).retrieve(q)})

    payments = MetadataFilter(key="topic", value="payments")
    assert ids(MetadataFilters(filters=[payments])) == ["cards"]
    assert ids(
        MetadataFilters(filters=[payments, MetadataFilter(key="topic", value="returns")], condition=FilterCondition.OR)
    ) == ["cards", "guide"]
    assert ids(MetadataFilters(filters=[payments], condition=FilterCondition.NOT)) == ["guide"]
    assert ids(MetadataFilters(filters=[MetadataFilter(key="topic", value="returns", operator=FilterOperator.NE)])) == [
        "cards"
    ]
    assert ids(
        MetadataFilters(filters=[MetadataFilter(key="tags", value="gift", operator=FilterOperator.CONTAINS)])
    ) == ["cards"]
    assert ids(MetadataFilters(filters=[MetadataFilter(key="tags", value=None, operator=FilterOperator.IS_EMPTY)])) == [
        "guide"
    ]
    with pytest.raises(InputError, match="text_match"):
        ids(MetadataFilters(filters=[MetadataFilter(key="topic", value="pay", operator=FilterOperator.TEXT_MATCH)]))
    bm25 = index.as_retriever(similarity_top_k=2, vector_store_query_mode="text_search").retrieve("gift cards")
    assert [n.node.node_id for n in bm25] == store.searcher.search("gift cards", technique="bm25", k=2).ids

    weighted = index.as_retriever(similarity_top_k=3, vector_store_query_mode="hybrid", alpha=0.3).retrieve(query)
    fusion = store._fusion(0.3)
    assert fusion.weights == (0.7, 0.3)  # alpha: the dense leg's weight, BM25 the rest
    assert [n.node.node_id for n in weighted] == store.searcher.search(query, k=3, fusion=fusion).ids
    diverse = index.as_retriever(similarity_top_k=3, vector_store_query_mode="mmr").retrieve(query)
    assert [n.node.node_id for n in diverse] == store.searcher.search(query, k=3, mmr_lambda=0.5).ids
    with pytest.raises(InputError, match="query mode 'svm'"):
        index.as_retriever(vector_store_query_mode="svm").retrieve(query)

    chat = index.as_chat_engine(llm=MockLLM())  # the default mode: condense the question, then retrieve as context
    reply = chat.chat("Do gift cards expire?")
    assert reply.source_nodes and reply.source_nodes[0].node.ref_doc_id == "cards" and "never expire" in str(reply)

    # The framework's first example: from_documents into the store, embedded by the store's own model.
    built = VectorStoreIndex.from_documents(
        [Document(id_="ship", text=SHIPPING, metadata={"topic": "shipping"})],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=store.embed_model,
    )
    (hit,) = built.as_retriever(similarity_top_k=1).retrieve("when does express delivery arrive")
    assert hit.node.ref_doc_id == "ship" and hit.node.metadata == {"topic": "shipping"}
    with pytest.raises(InputError, match="embedded_by"):  # a vector another model made is never replaced silently
        store.add([TextNode(id_="foreign", text="x", embedding=[0.1] * 384)])

    store.delete("guide")
    assert documents.count() == entries - sum(1 for n in second if n.ref_doc_id == "guide") + 1
    assert {n.node.ref_doc_id for n in engine.query(query).source_nodes} <= {"cards", "ship"}
    assert [n.node_id for n in store.get_nodes([second[-1].node_id])] == [second[-1].node_id]
    store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="topic", value="shipping")]))
    assert {
        n.ref_doc_id for n in store.get_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="lang", value="en")]))
    } == {"cards"}
