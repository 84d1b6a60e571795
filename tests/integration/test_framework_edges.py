"""What the stock stores' users meet at the edges, on a real node (issue 41): LangChain's
``afrom_texts`` with the base class's signature (no ``embedding``), native on an asyncio client; a
filter on a key inside a metadata object without the ``metadata.`` prefix, and one on a key no
entry has (refused, naming it, never a silent empty answer); a result's notices in the
integration's logger at WARNING; and metadata that reads back as written (a user key named
``metadata`` refused at write time; a title that is not a string; lists of mixed types)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from tests.integration.test_async_search import async_client

pytestmark = [pytest.mark.integration, pytest.mark.engine("opensearch", "elasticsearch")]
TEXTS = ["Returns are free within 30 days.", "Gift cards never expire.", "Refunds reach your card in five days."]
METAS = [{"nested": {"team": "ops"}, "lang": "en"}, {"nested": {"team": "sales"}, "lang": "en"}, {"lang": "es"}]


@pytest.fixture
def edge_index(client, index_name, e5):
    init_index(client, index_name, IndexSpec(e5.fingerprint))
    return index_name


def store_of(client, index, e5):
    from adapter.integrations.langchain import HybridVectorStore

    return HybridVectorStore(Searcher.open(client, index, e5), Ingestor.open(client, index, e5, progress=False))


def test_afrom_texts_takes_the_base_signature_and_runs_on_the_loop(client, opensearch_url, edge_index, e5, caplog):
    from adapter.integrations.langchain import HybridVectorStore

    caplog.set_level(logging.DEBUG, logger="adapter.requests")

    async def made():
        aclient = async_client(client, opensearch_url)
        try:
            caplog.clear()
            store = await HybridVectorStore.afrom_texts(
                TEXTS, metadatas=METAS, ids=["a", "b", "c"], client=aclient, index=edge_index
            )
            found = await store.asimilarity_search("gift cards", k=1)
            return store, found, threading.get_ident()
        finally:
            await aclient.close()

    store, found, loop_thread = asyncio.run(made())
    threads = {r.thread for r in caplog.records if r.name == "adapter.requests"}
    assert threads == {loop_thread}  # every request from the loop's own thread: no executor
    assert store.async_searcher is not None and [d.id for d in found] == ["b"]
    # a sync client still works from asyncio (on a worker thread) and so does embedding=None given by name
    again = asyncio.run(
        HybridVectorStore.afrom_texts(
            ["Shipping is free over 50 euros."], embedding=None, client=client, index=edge_index, ids=["d"]
        )
    )
    assert [d.id for d in again.get_by_ids(["d"])] == ["d"]
    with pytest.raises(InputError, match="needs client="):
        asyncio.run(HybridVectorStore.afrom_texts(TEXTS))


def test_a_dotted_key_is_a_path_in_metadata_and_an_unknown_key_is_named(client, edge_index, e5):
    from adapter.integrations.langchain import HybridRetriever

    store = store_of(client, edge_index, e5)
    store.add_texts(TEXTS, METAS, ids=["a", "b", "c"])
    assert [d.id for d in store.similarity_search("returns", k=3, filter={"nested.team": "ops"})] == ["a"]
    assert [d.id for d in store.similarity_search("returns", k=3, filter={"metadata.nested.team": "ops"})] == ["a"]
    retriever = HybridRetriever(searcher=store.searcher, k=3, filters={"nested.team": "sales"})
    assert [d.id for d in retriever.invoke("returns")] == ["b"]
    with pytest.raises(
        InputError,
        match=r"'metadata.team', which no entry of .* was ever written with.*metadata keys: lang, nested, nested.team",
    ):
        store.similarity_search("returns", k=3, filter={"team": "ops"})
    with pytest.raises(InputError, match="'metadata.nested.teams'"):
        retriever.invoke("returns", filters={"nested.teams": "ops"})
    # a known key with a value no entry has: an empty answer, as asked
    assert store.similarity_search("returns", k=3, filter={"nested.team": "legal"}) == []


def test_notices_reach_the_integrations_logger(client, edge_index, e5, caplog):
    store = store_of(client, edge_index, e5)
    store.add_texts(TEXTS, METAS, ids=["a", "b", "c"])
    caplog.set_level(logging.WARNING, logger="adapter.integrations.langchain")
    from adapter.search.fast_path import FastPath

    def logged() -> list[str]:
        records = [r for r in caplog.records if r.name == "adapter.integrations.langchain"]
        assert all(r.levelno == logging.WARNING for r in records)
        return [r.getMessage() for r in records]

    # What the result says (the engines differ: Elasticsearch's test node also notes its linear retriever's fallback)
    said = store.searcher.search("gift cards", k=2, fast_path=FastPath.ON).notices
    assert said  # OpenSearch: the fast path (asked for); Elasticsearch's test node: its retriever's fallback
    caplog.clear()
    assert store.similarity_search("gift cards", k=2, fast_path=FastPath.ON)  # a client fusion the result notes
    assert [m.split(" (query ")[0] for m in logged()] == list(said)
    caplog.clear()
    plain = store.searcher.search("gift cards", k=2).notices
    caplog.clear()
    store.similarity_search("gift cards", k=2)
    assert [m.split(" (query ")[0] for m in logged()] == list(plain)  # none on OpenSearch


def test_metadata_reads_back_as_written_or_is_refused_at_write_time(client, edge_index, e5):
    from haystack import Document as HaystackDocument

    from adapter.integrations.haystack import HybridDocumentWriter, haystack_document  # noqa: F401

    store = store_of(client, edge_index, e5)
    written = [
        {"title": 42, "tags": [1, "a", True], "scores": [1, 2.5]},
        {"title": None, "lang": "es"},
        {"title": "A real title", "mixed": ["x", 2]},
    ]
    store.add_texts(TEXTS, written, ids=["t1", "t2", "t3"])
    back = {d.id: d.metadata for d in store.get_by_ids(["t1", "t2", "t3"])}
    assert back == {"t1": written[0], "t2": written[1], "t3": written[2]}
    assert isinstance(back["t1"]["title"], int)
    searched = {d.id: d.metadata for d in store.similarity_search("returns gift cards refunds", k=3)}
    assert searched == back
    assert [d.id for d in store.similarity_search("returns", k=3, filter={"scores": 2.5})] == ["t1"]
    with pytest.raises(InputError, match=r"u1: metadata key 'metadata' is reserved"):
        store.add_texts(["Some text."], [{"metadata": {"a": 1}}], ids=["u1"])
    with pytest.raises(InputError, match=r"u2: metadata 'refs' is a list of objects and plain values"):
        store.add_texts(["Other text."], [{"refs": [{"a": 1}, "b"]}], ids=["u2"])
    assert store.get_by_ids(["u1", "u2"]) == []
    writer = HybridDocumentWriter(Ingestor.open(client, edge_index, e5, progress=False))
    out = writer.run([HaystackDocument(id="h1", content="x y", meta={"metadata": "nested"})])
    assert out["documents_written"] == 0 and "reserved" in out["failures"][0]["reason"]


def test_the_index_relevance_maps_are_every_frameworks_relevance(client, edge_index, e5):
    from haystack import Pipeline  # noqa: F401

    from adapter.engines import cluster_for
    from adapter.admin.calibrate import measure_relevance, store_relevance
    from adapter.integrations.haystack import HybridRetriever as HaystackRetriever
    from adapter.integrations.llamaindex import HybridRetriever as LlamaRetriever

    store = store_of(client, edge_index, e5)
    store.add_texts(TEXTS, METAS, ids=["a", "b", "c"])
    queries = ["returns", "gift cards", "refunds", "card", "days", "free", "expire", "five days"]
    (fitted,) = measure_relevance(store.searcher, queries, ["rrf"], k=3, legs=False)  # the fusion's map alone
    store_relevance(cluster_for(client), edge_index, [fitted])
    searcher = Searcher.open(client, edge_index, e5)  # reads _meta.relevance
    lc = store_of(client, edge_index, e5)
    found = lc.search_with_hits("gift cards", k=3, fusion=fitted_fusion())
    assert found and [info.relevance for _, info in found] == [fitted.relevance(info.score) for _, info in found]
    kept = lc.similarity_search_with_relevance_scores("gift cards", k=3, fusion=fitted_fusion(), score_threshold=0.5)
    assert [d.id for d, r in kept] == [d.id for d, info in found if info.relevance >= 0.5]
    hs = HaystackRetriever(searcher, top_k=3, fusion="rrf").run("gift cards")
    assert [d.score for d in hs["documents"]] == [fitted.relevance(h["score"]) for h in hs["hits"]]
    li = LlamaRetriever(searcher, similarity_top_k=3, fusion="rrf").search_with_hits("gift cards")
    assert [n.score for n, _ in li] == [fitted.relevance(info.score) for _, info in li]


def fitted_fusion():
    from adapter.fusion import parse_fusion

    return parse_fusion("rrf")
