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
        return ([ids(f) for f in found], ids(await native.amax_marginal_relevance_search(QUERIES[0], k=3, fetch_k=10)),
                await native.asimilarity_search_with_relevance_scores(QUERIES[1], k=4),
                ids(await native.aget_by_ids(wanted[0][:3])), [ids(await retriever.ainvoke(q)) for q in QUERIES])

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
