"""Haystack's own document-store tests (``haystack.testing.document_store.DocumentStoreBaseTests``:
count, write under each DuplicatePolicy, the whole filter grammar with AND/OR/NOT and every
comparison, delete) on :class:`HybridDocumentStore`, on a real node; then the components
serialised through a Pipeline's ``dumps``/``loads`` and run, and ``run_async``; and Haystack's async
document-store tests (``haystack.testing.document_store_async``) on the store's ``*_async`` methods.

Two of the suite's own choices are the store's to make, and the suite says to override them:
``test_write_documents`` (the default policy: here NONE overwrites) and ``assert_documents_are_equal``
(order and embeddings: an index returns documents in its own order, and an adapter index's vectors
are its model's, never the random 768-number ones the suite's documents carry, which the store is
told to drop with ``carried_vectors="embed"``)."""

from __future__ import annotations


import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    DocumentStoreBaseExtendedTests,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldUniqueValuesTest,
)
from haystack.testing.document_store_async import (
    CountDocumentsAsyncTest,
    CountDocumentsByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    DeleteAllAsyncTest,
    DeleteByFilterAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
    UpdateByFilterAsyncTest,
    WriteDocumentsAsyncTest,
)

from adapter.errors import InputError

from adapter.integrations.haystack import HybridDocumentStore, HybridDocumentWriter, HybridRetriever
from tests.support.indexes import shared_index  # noqa: F401  (the fixture)

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")


def emptied(store: HybridDocumentStore) -> None:
    documents = store._open().documents
    ids = [d.id for d in documents.find()]
    if ids:
        documents.delete(ids)
    assert documents.count() == 0


ALPHA_BETA = [
    Document(content="Doc 1", meta={"category": "Alpha", "year": 2023, "status": "draft"}),
    Document(content="Doc 2", meta={"category": "Alpha", "year": 2024, "status": "published"}),
    Document(content="Doc 3", meta={"category": "Beta", "year": 2023, "status": "draft"}),
]
BOTH = {
    "operator": "AND",
    "conditions": [
        {"field": "meta.category", "operator": "==", "value": "Alpha"},
        {"field": "meta.year", "operator": "==", "value": 2023},
    ],
}
EITHER = {
    "operator": "OR",
    "conditions": [
        {"field": "meta.category", "operator": "==", "value": "Beta"},
        {"field": "meta.status", "operator": "==", "value": "published"},
    ],
}
# The suite's distinct-types documents: one key given an int, a string, a float and a boolean. An index maps a key
# to one type (the first value's, here long): "1" and 1.0 are numbers the long field takes (read back as written),
# True is refused at write time, named, and the other documents land.
DISTINCT_TYPES = [
    Document(content="Doc 1", meta={"priority": 1}),
    Document(content="Doc 2", meta={"priority": "1"}),
    Document(content="Doc 3", meta={"priority": 1.0}),
    Document(id="as-bool", content="Doc 4", meta={"priority": True}),
    Document(content="Doc 5", meta={"priority": 1}),
]


class TestHybridDocumentStore(
    DocumentStoreBaseExtendedTests,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    """Haystack's base suite and the tests of the optional methods the integrations' stores have
    (delete_all_documents, delete_by_filter, update_by_filter, count_documents_by_filter,
    count_unique_metadata_by_filter, get_metadata_fields_info, get_metadata_field_min_max,
    get_metadata_field_unique_values). delete_all_documents has no recreate_index: those two skip."""

    @pytest.fixture
    def document_store(self, opensearch_url, shared_index, e5):
        store = HybridDocumentStore(opensearch_url, shared_index, carried_vectors="embed", embedder=e5)
        emptied(store)
        yield store
        emptied(store)

    def test_delete_all_documents_with_recreate_index(self, document_store):
        """The suite's own drops and makes the index again; an adapter index is not the store's to drop: refused,
        nothing deleted, and recreate_index=False (the suite's other test) deletes the documents."""
        document_store.write_documents([Document(id="1", content="A first document")])
        with pytest.raises(InputError, match="hybrid reindex"):
            document_store.delete_all_documents(recreate_index=True)
        assert document_store.count_documents() == 1

    def test_delete_by_filter_advanced_filters(self, document_store):
        """The suite's own, but for the store's one delete rule (issue 38): its second filter matches every
        document left, so it is refused, nothing deleted, until ``all=True`` says so."""
        document_store.write_documents(ALPHA_BETA)
        assert document_store.delete_by_filter(filters=BOTH) == 1
        with pytest.raises(InputError, match="matches all 2 entries"):
            document_store.delete_by_filter(filters=EITHER)
        assert document_store.count_documents() == 2
        assert document_store.delete_by_filter(filters=EITHER, all=True) == 2
        assert document_store.count_documents() == 0

    def test_get_metadata_field_unique_values_distinct_types(self, document_store):
        """The suite's own asks four types under one key back apart; an index maps a key to one type."""
        with pytest.raises(InputError, match=r"1 of 5 documents did not land.*as-bool.*metadata.priority"):
            document_store.write_documents(DISTINCT_TYPES)
        assert document_store.count_documents() == 4
        # as written
        assert sorted(repr(d.meta["priority"]) for d in document_store.filter_documents()) == ["'1'", "1", "1", "1.0"]
        values, total = document_store.get_metadata_field_unique_values("priority")
        assert (values, total) == ([1], 1) and isinstance(values[0], int)

    def test_unique_values_search_term_needs_no_script_and_reads_numbers_and_literal_wildcards(self, document_store):
        """search_term is a case-insensitive substring of the value with no painless (Elasticsearch's test
        distribution has none): on a string key ``*`` and ``?`` are literal, a number or boolean matches on its
        text, and ``filters`` narrow the documents first."""
        document_store.write_documents(
            [
                Document(content="a", meta={"code": "A*1", "year": 2023, "score": 0.6, "ok": True}),
                Document(content="b", meta={"code": "AB1", "year": 2024, "score": 1.25, "ok": False}),
                Document(content="c", meta={"code": "ab?2", "year": 1999, "score": 0.65, "ok": True}),
            ]
        )
        unique = document_store.get_metadata_field_unique_values
        assert unique("code", search_term="a*") == (["A*1"], 1)
        assert unique("code", search_term="B?") == (["ab?2"], 1)
        assert unique("code", search_term="ab") == (["AB1", "ab?2"], 2)
        assert unique("year", search_term="02") == ([2023, 2024], 2)
        assert unique("year", search_term="02", filters={"field": "meta.ok", "operator": "==", "value": True}) == (
            [2023],
            1,
        )
        assert unique("score", search_term="0.6") == ([0.6, 0.65], 2)
        assert unique("ok", search_term="TRU") == ([True], 1)
        assert unique("year", search_term="7") == ([], 0)

    def test_filters_on_content(self, document_store):
        document_store.write_documents(
            [
                Document(id="c1", content="Gift cards never expire.", meta={"lang": "en"}),
                Document(id="c2", content="Returns are free within 30 days.", meta={"lang": "en"}),
                Document(id="c3", content="Las tarjetas regalo no caducan.", meta={"lang": "es"}),
            ]
        )

        def ids(filters):
            return sorted(d.id for d in document_store.filter_documents(filters))

        assert ids({"field": "content", "operator": "==", "value": "gift cards"}) == ["c1"]
        assert ids({"field": "content", "operator": "!=", "value": "gift cards"}) == ["c2", "c3"]
        assert ids({"field": "content", "operator": "in", "value": ["never expire", "30 days"]}) == ["c1", "c2"]
        assert ids(
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.lang", "operator": "==", "value": "en"},
                    {"field": "content", "operator": "not in", "value": ["returns"]},
                ],
            }
        ) == ["c1"]
        assert (
            document_store.count_documents_by_filter({"field": "content", "operator": "==", "value": "cards expire"})
            == 0
        )
        from haystack.errors import FilterError

        with pytest.raises(FilterError, match="never ordered"):
            document_store.filter_documents({"field": "content", "operator": ">", "value": "a"})
        retriever = HybridRetriever(document_store=document_store, top_k=3)
        found = retriever.run("expire", filters={"field": "content", "operator": "==", "value": "gift cards"})[
            "documents"
        ]
        assert [d.id for d in found] == ["c1"]

    def test_update_by_filter_keeps_text_and_vectors_and_names_refusals(self, document_store):
        document_store.write_documents(
            [
                Document(id="u1", content="Gift cards never expire.", meta={"kind": "faq", "rank": 1}),
                Document(id="u2", content="Returns are free.", meta={"kind": "faq", "rank": 2}),
            ]
        )

        def vectors():
            return {d.id: d.vector for d in document_store._open().documents.get(["u1", "u2"], with_vectors=True)}

        before = vectors()
        assert (
            document_store.update_by_filter({"field": "meta.rank", "operator": "==", "value": 1}, {"reviewed": "yes"})
            == 1
        )
        (doc,) = document_store.filter_documents({"field": "meta.reviewed", "operator": "==", "value": "yes"})
        assert (doc.id, doc.content, doc.meta) == (
            "u1",
            "Gift cards never expire.",
            {"kind": "faq", "rank": 1, "reviewed": "yes"},
        )
        assert vectors() == before  # nothing embedded again
        with pytest.raises(InputError, match="u2.*metadata.rank"):
            document_store.update_by_filter(
                {"field": "meta.kind", "operator": "==", "value": "faq"}, {"rank": "not a number"}
            )
        with pytest.raises(InputError, match="metadata only"):
            document_store.update_by_filter({"field": "meta.kind", "operator": "==", "value": "faq"}, {"title": "x"})

    def assert_documents_are_equal(self, received, expected):
        def plain(docs):
            return sorted(((d.id, d.content, d.meta, d.score) for d in docs), key=lambda t: t[0])

        assert all(d.embedding is None for d in received)
        assert plain(received) == plain([Document(id=d.id, content=d.content, meta=d.meta) for d in expected])

    def test_write_documents(self, document_store):
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        assert document_store.write_documents([doc]) == 1  # NONE overwrites: written again, not duplicated
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


class TestHybridDocumentStoreAsync(
    CountDocumentsAsyncTest,
    WriteDocumentsAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    CountDocumentsByFilterAsyncTest,
    DeleteByFilterAsyncTest,
    DeleteAllAsyncTest,
    UpdateByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
):
    """Haystack's async document-store tests: the store's ``*_async`` methods, over the AsyncSearcher and
    AsyncIngestor it opens itself on the test's loop (closed after each test)."""

    @pytest.fixture
    async def document_store(self, opensearch_url, shared_index, e5):
        store = HybridDocumentStore(opensearch_url, shared_index, carried_vectors="embed", embedder=e5)
        emptied(store)
        try:
            yield store
        finally:
            await store.close_async()
            emptied(store)

    assert_documents_are_equal = TestHybridDocumentStore.assert_documents_are_equal

    async def test_write_documents_async(self, document_store):
        doc = Document(content="test doc")
        assert await document_store.write_documents_async([doc]) == 1
        assert await document_store.write_documents_async([doc]) == 1  # NONE overwrites: written again, not duplicated
        self.assert_documents_are_equal(await document_store.filter_documents_async(), [doc])

    async def test_delete_by_filter_advanced_filters_async(self, document_store):
        """The suite's own, but for the store's one rule (issue 38): its second filter matches every document left,
        so it is refused, nothing deleted, until ``all=True`` says so."""
        await document_store.write_documents_async(ALPHA_BETA)
        assert await document_store.delete_by_filter_async(filters=BOTH) == 1
        with pytest.raises(InputError, match="matches all 2 entries"):
            await document_store.delete_by_filter_async(filters=EITHER)
        assert await document_store.count_documents_async() == 2
        assert await document_store.delete_by_filter_async(filters=EITHER, all=True) == 2
        assert await document_store.count_documents_async() == 0

    async def test_delete_all_documents_with_recreate_index_async(self, document_store):
        await document_store.write_documents_async([Document(id="1", content="A first document")])
        with pytest.raises(InputError, match="hybrid reindex"):
            await document_store.delete_all_documents_async(recreate_index=True)
        assert await document_store.count_documents_async() == 1

    async def test_get_metadata_field_unique_values_distinct_types_async(self, document_store):
        """As the sync one: an index maps a key to one type; the boolean is refused at write time, named."""
        with pytest.raises(InputError, match=r"1 of 5 documents did not land.*as-bool"):
            await document_store.write_documents_async(DISTINCT_TYPES)
        assert await document_store.get_metadata_field_unique_values_async("priority") == ([1], 1)


def test_carried_vectors_are_refused_unless_the_store_is_told(opensearch_url, shared_index, e5):
    from adapter.errors import InputError

    store = HybridDocumentStore(opensearch_url, shared_index, embedder=e5)
    emptied(store)
    with pytest.raises(InputError, match="carries its own vector with no embedded_by"):
        store.write_documents([Document(id="v1", content="x", embedding=[0.1] * 768)])
    own = e5.embed_documents(["passage-prefixed text is the index's business"])[0].tolist()
    key = e5.fingerprint.key
    assert (
        store.write_documents([Document(id="v2", content="y", embedding=own, meta={"embedded_by": key, "lang": "en"})])
        == 1
    )
    (doc,) = store.filter_documents()
    assert doc.id == "v2" and doc.meta == {"lang": "en"}
    emptied(store)


def test_a_pipeline_of_the_components_serialises_and_runs(opensearch_url, shared_index, e5, monkeypatch):
    monkeypatch.setenv("OPENSEARCH_PASSWORD", "never-written-out")
    store = HybridDocumentStore(opensearch_url, shared_index, embedder=e5)
    emptied(store)
    indexing = Pipeline()
    indexing.add_component("writer", HybridDocumentWriter(document_store=store))
    text = indexing.dumps()
    assert "never-written-out" not in text and "OPENSEARCH_PASSWORD" in text
    trusted = ["adapter.integrations.haystack"]  # Haystack loads classes only from modules its user trusts
    written = Pipeline.loads(text, allowed_modules=trusted).run(
        {
            "writer": {
                "documents": [
                    Document(id="p1", content="Returns are free within 30 days.", meta={"topic": "returns"}),
                    Document(id="p2", content="Gift cards never expire.", meta={"topic": "payments"}),
                ]
            }
        }
    )
    assert written["writer"] == {"documents_written": 2, "failures": []}
    search = Pipeline()
    search.add_component("retriever", HybridRetriever(document_store=store, top_k=1, fusion="rrf"))
    loaded = Pipeline.loads(search.dumps(), allowed_modules=trusted)
    out = loaded.run(
        {
            "retriever": {
                "query": "how do returns work",
                "filters": {
                    "operator": "OR",
                    "conditions": [
                        {"field": "meta.topic", "operator": "==", "value": "returns"},
                        {"field": "meta.topic", "operator": "==", "value": "shipping"},
                    ],
                },
            }
        }
    )["retriever"]
    assert [d.id for d in out["documents"]] == ["p1"] and out["documents"][0].meta == {"topic": "returns"}
    assert out["hits"][0]["fused_by"].startswith(("server:", "client:")) and 0 <= out["hits"][0]["relevance"] <= 1
    again = Pipeline.loads(search.dumps(), allowed_modules=trusted)
    import asyncio

    async def retrieve():  # run_async over the store's own asyncio parts (opened on this loop, then closed)
        retriever = again.get_component("retriever")
        try:
            return await retriever.run_async("gift cards")
        finally:
            await retriever.document_store.close_async()

    docs = asyncio.run(retrieve())["documents"]
    assert docs[0].id == "p2"
    assert store.write_documents([Document(id="p1", content="changed")], policy=DuplicatePolicy.SKIP) == 0
    emptied(store)
