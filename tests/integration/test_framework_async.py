"""The framework components' async paths on a real node: built with an AsyncSearcher (and an
AsyncIngestor), LangChain's, LlamaIndex's and Haystack's async methods await the adapter's asyncio
API on the event loop (every request is sent from the loop's own thread: no worker thread per call)
and answer what the sync methods answer (same ids, same order). Built with a sync Searcher only,
they still answer, from a worker thread."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from adapter.search import Searcher
from adapter.search.async_searcher import AsyncSearcher
from tests.integration.test_async_search import async_client
from tests.integration.test_search import support  # noqa: F401  (fixture: the Spanish support documents)

pytestmark = [pytest.mark.integration, pytest.mark.engine("opensearch", "elasticsearch")]
QUERIES = ("devoluciones y reembolsos", "error E-4012", "cómo cambio mi contraseña")


def request_threads(caplog) -> set[int]:
    """The threads the adapter's requests were sent from (the request log's records)."""
    return {r.thread for r in caplog.records if r.name == "adapter.requests"}


def on_loop(client, opensearch_url, support, e5, caplog, calls):
    """``calls(asearcher)`` awaited on a fresh loop over the engine's asyncio client; returns its answer
    and whether every request it sent left from the loop's thread (and at least one did)."""

    async def run():
        aclient = async_client(client, opensearch_url)
        try:
            asearcher = await AsyncSearcher.open(aclient, support, e5)
            caplog.clear()
            return await calls(asearcher), threading.get_ident()
        finally:
            await aclient.close()

    caplog.set_level(logging.DEBUG, logger="adapter.requests")
    answer, loop_thread = asyncio.run(run())
    threads = request_threads(caplog)
    return answer, bool(threads) and threads == {loop_thread}


def ids(docs):
    return [d.id for d in docs]


def test_langchain_async_is_native_and_answers_as_sync(client, opensearch_url, support, e5, caplog):
    from adapter.integrations.langchain import HybridRetriever, HybridVectorStore

    store = HybridVectorStore(Searcher.open(client, support, e5))
    wanted = [ids(store.similarity_search(q, k=5)) for q in QUERIES]
    wanted_mmr = ids(store.max_marginal_relevance_search(QUERIES[0], k=3, fetch_k=10))
    wanted_scored = store.similarity_search_with_relevance_scores(QUERIES[1], k=4)
    wanted_by_id = ids(store.get_by_ids(wanted[0][:3]))

    async def calls(asearcher):
        native = HybridVectorStore(asearcher)
        retriever = HybridRetriever(searcher=asearcher, k=5)
        found = await asyncio.gather(*(native.asimilarity_search(q, k=5) for q in QUERIES))
        return (
            [ids(f) for f in found],
            ids(await native.amax_marginal_relevance_search(QUERIES[0], k=3, fetch_k=10)),
            await native.asimilarity_search_with_relevance_scores(QUERIES[1], k=4),
            ids(await native.aget_by_ids(wanted[0][:3])),
            [ids(await retriever.ainvoke(q)) for q in QUERIES],
        )

    (found, mmr, scored, by_id, retrieved), native = on_loop(client, opensearch_url, support, e5, caplog, calls)
    assert native
    assert all(found) and found == wanted == retrieved
    assert (mmr, by_id) == (wanted_mmr, wanted_by_id)
    assert [(d.id, s) for d, s in scored] == [(d.id, s) for d, s in wanted_scored]


def test_langchain_async_without_an_async_searcher_runs_on_a_worker_thread(client, support, e5, caplog):
    from adapter.integrations.langchain import HybridVectorStore

    store = HybridVectorStore(Searcher.open(client, support, e5))
    caplog.set_level(logging.DEBUG, logger="adapter.requests")

    async def run():
        return ids(await store.asimilarity_search(QUERIES[0], k=5)), threading.get_ident()

    found, loop_thread = asyncio.run(run())
    threads = request_threads(caplog)
    assert found == ids(store.similarity_search(QUERIES[0], k=5))
    assert threads and loop_thread not in threads


def test_llamaindex_async_is_native_and_answers_as_sync(client, opensearch_url, support, e5, caplog):
    from llama_index.core.schema import QueryBundle
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    from adapter.integrations.llamaindex import HybridRetriever, HybridVectorStore

    store = HybridVectorStore(searcher=Searcher.open(client, support, e5), ingestor=None)
    modes = (VectorStoreQueryMode.HYBRID, VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.MMR)
    queries = [VectorStoreQuery(query_str=q, similarity_top_k=5, mode=m) for q in QUERIES for m in modes]
    wanted = [(r.ids, r.similarities) for r in map(store.query, queries)]
    wanted_nodes = [n.node_id for n in store.get_nodes(wanted[0][0][:3])]

    async def calls(asearcher):
        native = await HybridVectorStore.open_async(asearcher.client, support, embedder=e5)
        retriever = HybridRetriever(asearcher, similarity_top_k=5)
        found = await asyncio.gather(*(native.aquery(q) for q in queries))
        return (
            [(r.ids, r.similarities) for r in found],
            [n.node_id for n in await native.aget_nodes(wanted[0][0][:3])],
            [[n.node.node_id for n in await retriever.aretrieve(QueryBundle(q))] for q in QUERIES],
        )

    (found, nodes, retrieved), native = on_loop(client, opensearch_url, support, e5, caplog, calls)
    assert native
    assert all(ids for ids, _ in found) and found == wanted
    assert nodes == wanted_nodes and retrieved == [wanted[i * len(modes)][0] for i in range(len(QUERIES))]


def test_haystack_async_is_native_and_answers_as_sync(client, opensearch_url, support, e5, caplog):
    from adapter.integrations.haystack import HybridDocumentStore, HybridRetriever

    es = {"field": "meta.lang", "operator": "==", "value": "es"}
    retriever = HybridRetriever(Searcher.open(client, support, e5), top_k=5)
    wanted = [ids(retriever.run(q)["documents"]) for q in QUERIES]
    store = HybridDocumentStore(opensearch_url, support, embedder=e5)  # its sync parts open here, before the loop
    wanted_store = (store.count_documents(), sorted(ids(store.filter_documents(es))), ids(store.filter_documents()))

    async def calls(asearcher):
        native, stored = HybridRetriever(asearcher, top_k=5), HybridRetriever(document_store=store, top_k=5)
        try:
            found = await asyncio.gather(*(native.run_async(q) for q in QUERIES))
            from_store = [ids((await stored.run_async(q))["documents"]) for q in QUERIES]
            return (
                [ids(f["documents"]) for f in found],
                from_store,
                (
                    await store.count_documents_async(),
                    sorted(ids(await store.filter_documents_async(es))),
                    ids(await store.filter_documents_async()),
                ),
            )
        finally:
            await store.close_async()

    (found, from_store, counted), native = on_loop(client, opensearch_url, support, e5, caplog, calls)
    assert native
    assert all(found) and found == from_store == wanted
    assert counted == wanted_store and counted[0] == 12


def test_async_writes_are_native_and_land_as_sync_ones(client, opensearch_url, index_name, e5, caplog):
    """LlamaIndex's async_add / adelete and Haystack's writer run_async over an AsyncIngestor, on the loop."""
    from haystack import Document
    from llama_index.core.schema import TextNode

    from adapter.index.assets import IndexSpec
    from adapter.admin.init import init_index
    from adapter.ingest.async_ingestor import AsyncIngestor
    from adapter.ingest.ingestor import Ingestor
    from adapter.integrations.haystack import HybridDocumentWriter
    from adapter.integrations.llamaindex import HybridVectorStore

    init_index(client, index_name, IndexSpec(e5.fingerprint))

    async def calls(asearcher):
        aingestor = await AsyncIngestor.open(asearcher.client, index_name, e5)
        store = HybridVectorStore(searcher=asearcher, ingestor=aingestor)
        added = await store.async_add(
            [
                TextNode(id_=f"n{i}", text=t, metadata={"lang": "en"})
                for i, t in enumerate(
                    ("Returns are free within 30 days.", "Gift cards never expire.", "Parcels ship in two days.")
                )
            ]
        )
        written = await HybridDocumentWriter(aingestor).run_async(
            [Document(id="h1", content="Refunds take five days.")]
        )
        await store.adelete("n1")
        return added, written, sorted(n.node_id for n in await store.aget_nodes(["n0", "n1", "n2", "h1"]))

    (added, written, left), native = on_loop(client, opensearch_url, index_name, e5, caplog, calls)
    assert native
    assert added == ["n0", "n1", "n2"] and written == {"documents_written": 1, "failures": []}
    assert left == ["h1", "n0", "n2"]
    assert (
        sorted(
            d.id
            for d in Ingestor.open(client, index_name, e5, progress=False).documents().get(["n0", "n1", "n2", "h1"])
        )
        == left
    )
