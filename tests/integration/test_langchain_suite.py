"""LangChain's own suites (``langchain_tests``) on the adapter's VectorStore and retriever, on a real
node: ``VectorStoreIntegrationTests`` (sync and async, 25 tests) and ``RetrieversIntegrationTests``
(5); the async tests run the components' native asyncio path (an AsyncSearcher and AsyncIngestor). Each test gets an
empty adapter index (``hybrid init``'s, embedded by the index's model; one
index per class, emptied through the adapter's delete by id after each test: creating an index per
test cost 15-25 s on a busy shared node); the store searches through the server's fused hybrid.
The suite's ``get_embeddings()`` (a fake model) is not used: an adapter index embeds with the model
it records, here multilingual-e5-small."""

from __future__ import annotations


import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests

from adapter.index.assets import IndexSpec
from adapter.ingest.async_ingestor import AsyncIngestor
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.search.async_searcher import AsyncSearcher
from adapter.integrations._common import FrameworkRow, source_rows
from adapter.integrations.langchain import HybridRetriever, HybridVectorStore
from tests.integration.test_async_search import async_client
from tests.support.indexes import module_index, shared_index  # noqa: F401  (the fixture)

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")


def emptied(store: HybridVectorStore) -> None:
    documents = store.ingestor.documents()
    hits = store.searcher.cluster.search(
        store.searcher.alias, {"size": 1000, "_source": False, "query": {"match_all": {}}}
    )
    ids = [h["_id"] for h in hits["hits"]["hits"]]
    if ids:
        documents.delete(ids)
    assert documents.count() == 0


class TestHybridVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    async def vectorstore(self, client, opensearch_url, shared_index, e5):
        """Sync and async parts (opened on the test's own loop): the suite's async tests run the native
        asyncio path (tests/integration/test_framework_async.py shows it sends from the loop's thread)."""
        aclient = async_client(client, opensearch_url)
        try:
            store = HybridVectorStore(
                Searcher.open(client, shared_index, e5),
                Ingestor.open(client, shared_index, e5, progress=False),
                async_searcher=await AsyncSearcher.open(aclient, shared_index, e5),
                async_ingestor=await AsyncIngestor.open(aclient, shared_index, e5),
            )
            emptied(store)
            yield store
            emptied(store)
        finally:
            await aclient.close()


RETRIEVER_DOCS = [
    ("r1", "Returns are free within 30 days of delivery."),
    ("r2", "Refunds reach the original card within five working days."),
    ("r3", "Gift cards never expire and are redeemed at checkout."),
    ("r4", "A return label is printed from the order page."),
]


@pytest.fixture(scope="module")
def retriever_index(client, e5):
    with module_index(client, "langchain-retriever", IndexSpec(e5.fingerprint)) as name:
        rows = source_rows(FrameworkRow(i, t) for i, t in RETRIEVER_DOCS)
        Ingestor.open(client, name, e5, progress=False).ingest(rows)
        TestHybridRetriever.searcher = Searcher.open(client, name, e5)
        yield name
        TestHybridRetriever.searcher = None


@pytest.mark.usefixtures("retriever_index")
class TestHybridRetriever(RetrieversIntegrationTests):
    searcher = None

    @pytest.fixture
    async def retriever(self, client, opensearch_url):
        """The suite's retriever, with an async searcher on the test's loop: ``ainvoke`` runs natively."""
        aclient = async_client(client, opensearch_url)
        try:
            searcher = type(self).searcher
            yield HybridRetriever(
                searcher=searcher,
                async_searcher=await AsyncSearcher.open(aclient, searcher.alias, searcher.embedder),
                k=2,
            )
        finally:
            await aclient.close()

    @property
    def retriever_constructor(self):
        return HybridRetriever

    @property
    def retriever_constructor_params(self):
        return {"searcher": type(self).searcher, "k": 2}

    @property
    def retriever_query_example(self):
        return "how do I return an order"
