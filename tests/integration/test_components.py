"""The framework components with the real frameworks against a real node: what each retrieves is
what `Searcher.search` finds for the same query (ids and order, every fusion, filters, top_k), and
what each writes went through the adapter's ingest (the index's model, ids, validation, failures)."""

from __future__ import annotations

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.check import check_index
from adapter.errors import InputError
from adapter.ingest.ingestor import Ingestor
from adapter.integrations._common import relevance
from adapter.search import Searcher
from tests.support.indexes import support_index  # noqa: F401  (the fixture)

# The components hold on both engines: they go through Searcher and Ingestor, which speak each one's dialect.
pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
QUERIES = ("¿cómo devuelvo un pedido?", "error E-4012")
FUSIONS = (None, "adaptive", "rrf", "min_max-arithmetic_mean", "l2-harmonic_mean")


@pytest.fixture
def empty_index(client, index_name, e5):
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    return index_name


def expected(searcher, query, fusion, **options):
    from adapter.integrations._common import resolve_fusion

    from adapter.search.page import SearchOptions

    return searcher.search(
        query, fusion=resolve_fusion(searcher, fusion), explain=True, options=SearchOptions(full_text=True), **options
    )


def written(client, index):
    client.indices.refresh(index=index)
    hits = client.search(
        index=index, body={"size": 100, "query": {"match_all": {}}, "_source": {"excludes": ["embedding"]}}
    )
    return {h["_id"]: h["_source"] for h in hits["hits"]["hits"]}


def one_chunk(doc_id, title, text, metadata, e5):
    """The stored source of a short document every writer sends through the adapter's ingest: one chunk, its
    own parent, the caller's metadata apart from the adapter's fields, the index's model named."""
    return {
        "title": title,
        "text": text,
        "parent_id": doc_id,
        "chunk_index": 0,
        "metadata": metadata,
        "embedded_by": e5.fingerprint.key,
    }


# -- Haystack ------------------------------------------------------------------------------------


def test_haystack_retriever_is_the_searchers_hybrid(client, support_index, e5, target):
    from haystack import Document, Pipeline
    from haystack.errors import FilterError

    from adapter.integrations.haystack import HybridRetriever

    searcher = Searcher.open(client, support_index, e5)
    for fusion in FUSIONS:
        pipeline = Pipeline()
        pipeline.add_component("retriever", HybridRetriever(searcher, top_k=4, fusion=fusion))
        for query in QUERIES:
            out = pipeline.run({"retriever": {"query": query}})["retriever"]
            docs, hits = out["documents"], out["hits"]
            result = expected(searcher, query, fusion, k=4)
            assert [d.id for d in docs] == result.ids, (fusion, query)
            # the documents' scores are relevances (one meaning under every fusion); the fused scores are in `hits`
            assert [d.score for d in docs] == [relevance(h, result) for h in result.hits]
            assert [h["score"] for h in hits] == [h.score for h in result.hits]
            assert docs and all(
                isinstance(d, Document) and d.content == h.text and d.meta["title"] == h.title
                for d, h in zip(docs, result.hits)
            )
            # The metadata is what was written; the adapter's own fields come apart, in `hits`.
            assert all(set(d.meta) <= {"title", "category", "lang", "tags"} for d in docs), docs[0].meta
            assert hits[0]["fused_by"] == result.fused_by_label and 0 <= hits[0]["relevance"] <= 1
            # Elasticsearch on a basic licence fuses most of these in the client, and says so
            if target.engine == "opensearch":
                assert result.fused_by_label.startswith("server:")
            assert [leg["leg"] for leg in hits[0]["legs"]] == ["bm25", "dense"] and hits[0]["legs"][0]["rank"] >= 1
    # Filters (the adapter's and Haystack's syntax) and top_k at run time.
    retriever = HybridRetriever(searcher, top_k=2)
    haystack_filter = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.category", "operator": "in", "value": ["devoluciones"]},
            {"field": "meta.lang", "operator": "==", "value": "es"},
        ],
    }
    docs = retriever.run(QUERIES[0], filters=haystack_filter, top_k=3)["documents"]
    result = expected(searcher, QUERIES[0], None, k=3, filters={"category": ["devoluciones"], "lang": "es"})
    assert (
        [d.id for d in docs] == result.ids and len(docs) == 3 and {d.meta["category"] for d in docs} == {"devoluciones"}
    )
    either = {
        "operator": "OR",
        "conditions": [
            {"field": "meta.category", "operator": "==", "value": "devoluciones"},
            {"field": "meta.category", "operator": "==", "value": "pagos"},
        ],
    }
    docs = retriever.run(QUERIES[0], filters=either, top_k=5)["documents"]
    result = expected(searcher, QUERIES[0], None, k=5, filters={"category": ["devoluciones", "pagos"]})
    assert [d.id for d in docs] == result.ids and {d.meta["category"] for d in docs} <= {"devoluciones", "pagos"}
    with pytest.raises(FilterError):
        retriever.run(QUERIES[0], filters={"operator": "XOR", "conditions": []})
    with pytest.raises(InputError, match="top_k"):
        HybridRetriever(searcher, top_k=0)


def test_haystack_writer_goes_through_the_adapters_ingest(client, empty_index, e5, tmp_path):
    from haystack import Document, Pipeline
    from haystack.components.preprocessors import DocumentCleaner

    from adapter.integrations.haystack import HybridDocumentWriter, HybridRetriever

    pipeline = Pipeline()  # an indexing pipeline as Haystack users build one
    pipeline.add_component("cleaner", DocumentCleaner(keep_id=True))  # else the cleaner gives each document a new id
    pipeline.add_component(
        "writer",
        HybridDocumentWriter(
            Ingestor.open(client, empty_index, progress=False, failures_path=tmp_path / "failures.jsonl")
        ),
    )
    pipeline.connect("cleaner.documents", "writer.documents")
    documents = [
        Document(
            id="h-1",
            content="Para devolver un pedido, abre Mis pedidos.",
            meta={"title": "Devoluciones", "category": "devoluciones"},
        ),
        Document(
            id="h-2",
            content="El error E-4012 aparece cuando la tarjeta ha caducado.",
            meta={"title": "Error E-4012", "category": "pagos"},
        ),
        Document(id="h-3", content="", meta={"category": "vacío"}),  # neither text nor title: refused, the others land
        Document(id="x" * 600, content="un id demasiado largo"),  # over the server's 512-byte id limit
    ]
    out = pipeline.run({"cleaner": {"documents": documents}})["writer"]
    assert out["documents_written"] == 2
    assert sorted(f["id"] for f in out["failures"]) == sorted(["h-3", "x" * 600]) and all(
        f["reason"] for f in out["failures"]
    )
    stored = written(client, empty_index)
    assert set(stored) == {"h-1", "h-2"}
    assert stored["h-1"] == one_chunk(
        "h-1", "Devoluciones", "Para devolver un pedido, abre Mis pedidos.", {"category": "devoluciones"}, e5
    )
    report = check_index(client, empty_index, e5)  # the index's own model wrote the vectors
    assert report.ok and report.sampled == 2
    docs = HybridRetriever(Searcher.open(client, empty_index, e5), top_k=1).run("tarjeta caducada")["documents"]
    assert docs[0].id == "h-2" and docs[0].meta["category"] == "pagos"
    # Written again: replaced, not duplicated.
    assert pipeline.run({"cleaner": {"documents": documents[:2]}})["writer"] == {"documents_written": 2, "failures": []}
    assert len(written(client, empty_index)) == 2


# -- LlamaIndex ----------------------------------------------------------------------------------


def test_llamaindex_retriever_is_the_searchers_hybrid(client, support_index, e5):
    from llama_index.core.schema import MetadataMode, NodeWithScore
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

    from adapter.integrations.llamaindex import HybridRetriever

    searcher = Searcher.open(client, support_index, e5)
    for fusion in FUSIONS:
        retriever = HybridRetriever(searcher, similarity_top_k=4, fusion=fusion)
        for query in QUERIES:
            nodes = retriever.retrieve(query)
            result = expected(searcher, query, fusion, k=4)
            assert [n.node.node_id for n in nodes] == result.ids, (fusion, query)
            assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
            assert [n.score for n in nodes] == [relevance(h, result) for h in result.hits]
            assert [info.score for _, info in retriever.search_with_hits(query)] == [h.score for h in result.hits]
            assert [n.node.get_content() for n in nodes] == [h.text for h in result.hits]
            # The metadata as written, kept out of the LLM's prompt; no explanation asked for by default.
            assert "legs" not in nodes[0].node.metadata and nodes[0].node.excluded_llm_metadata_keys == list(
                nodes[0].node.metadata
            )
            assert nodes[0].node.get_content(metadata_mode=MetadataMode.LLM) == nodes[0].node.text
    filters = MetadataFilters(
        filters=[MetadataFilter(key="category", value="devoluciones", operator=FilterOperator.EQ)]
    )
    nodes = HybridRetriever(searcher, similarity_top_k=3, filters=filters).retrieve(QUERIES[0])
    result = expected(searcher, QUERIES[0], None, k=3, filters={"category": "devoluciones"})
    assert [n.node.node_id for n in nodes] == result.ids and {n.node.metadata["category"] for n in nodes} == {
        "devoluciones"
    }
    with pytest.raises(InputError, match="text_match"):  # metadata is stored as exact values: no substring match
        HybridRetriever(
            searcher,
            filters=MetadataFilters(
                filters=[MetadataFilter(key="lang", value="es", operator=FilterOperator.TEXT_MATCH)]
            ),
        )


def test_llamaindex_ingestion_pipeline_writes_through_the_adapter(client, empty_index, e5, tmp_path):
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline

    from adapter.integrations.llamaindex import HybridNodeWriter

    writer = HybridNodeWriter(
        ingestor=Ingestor.open(client, empty_index, progress=False, failures_path=tmp_path / "f.jsonl")
    )
    pipeline = IngestionPipeline(transformations=[writer])
    docs = [
        Document(
            id_="l-1", text="Los reembolsos tardan de 5 a 10 días.", metadata={"title": "Reembolsos", "lang": "es"}
        ),
        Document(id_="l-2", text="Cambia tu contraseña desde Ajustes.", metadata={"title": "Contraseña", "lang": "es"}),
    ]
    nodes = pipeline.run(documents=docs)
    assert [n.node_id for n in nodes] == ["l-1", "l-2"] and writer.last_report.complete
    stored = written(client, empty_index)
    # no _node_content, no doc_id: the contract
    assert stored["l-1"] == one_chunk("l-1", "Reembolsos", "Los reembolsos tardan de 5 a 10 días.", {"lang": "es"}, e5)
    assert check_index(client, empty_index, e5).ok
    with pytest.raises(InputError, match="1 of 2 documents did not land.*l-3"):
        pipeline.run(documents=[Document(id_="l-3", text=" "), Document(id_="l-4", text="Envíos a Canarias")])
    assert "l-4" in written(client, empty_index)


# -- LangChain -----------------------------------------------------------------------------------


def test_langchain_vector_store_searches_the_servers_hybrid(client, support_index, e5):
    from adapter.integrations.langchain import HybridVectorStore

    searcher = Searcher.open(client, support_index, e5)
    for fusion in FUSIONS:
        store = HybridVectorStore(searcher, fusion=fusion, explain=True)
        for query in QUERIES:
            docs = store.similarity_search(query, k=4)
            result = expected(searcher, query, fusion, k=4)
            assert [d.id for d in docs] == result.ids, (fusion, query)
            assert [d.page_content for d in docs] == [h.text for h in result.hits]
    store = HybridVectorStore(searcher)
    docs = store.as_retriever(search_kwargs={"k": 3, "filter": {"category": "devoluciones"}}).invoke(QUERIES[0])
    result = searcher.search(QUERIES[0], k=3, filters={"category": "devoluciones"})
    assert [d.id for d in docs] == result.ids and all(d.metadata["category"] == "devoluciones" for d in docs)
    scored = store.similarity_search_with_score(QUERIES[1], k=2)
    # excerpts (the store asks for whole texts): the scores agree to float32
    plain = searcher.search(QUERIES[1], k=2).hits
    assert [d.id for d, _ in scored] == [h.id for h in plain] and [s for _, s in scored] == pytest.approx(
        [h.score for h in plain], rel=1e-5
    )
    mmr = store.max_marginal_relevance_search(QUERIES[0], k=3, fetch_k=10, lambda_mult=0.5)
    assert [d.id for d in mmr] == searcher.search(QUERIES[0], k=3, mmr_lambda=0.5, mmr_candidates=10).ids


def test_langchain_vector_store_adds_through_the_adapter(client, empty_index, e5, tmp_path):
    from langchain_core.documents import Document

    from adapter.integrations.langchain import EmbedderEmbeddings, HybridVectorStore

    ingestor = Ingestor.open(client, empty_index, progress=False, failures_path=tmp_path / "f.jsonl")
    store = HybridVectorStore(Searcher.open(client, empty_index, e5), ingestor)
    ids = store.add_texts(
        ["Los envíos a Canarias tardan 5 días.", "El error E-4013 indica fondos insuficientes."],
        metadatas=[{"title": "Envíos", "lang": "es"}, {"title": "Error E-4013"}],
        ids=["c-1", None],
    )
    assert ids[0] == "c-1" and len(ids[1]) == 32
    assert (
        store.add_texts(["El error E-4013 indica fondos insuficientes."], metadatas=[{"title": "Error E-4013"}])
        == ids[1:]
    )
    store.add_documents(
        [Document(id="c-3", page_content="Facturas en PDF desde Mis pedidos.", metadata={"title": "Facturas"})]
    )
    stored = written(client, empty_index)
    assert set(stored) == {"c-1", ids[1], "c-3"}  # the same text added twice: one document
    assert stored["c-1"] == one_chunk("c-1", "Envíos", "Los envíos a Canarias tardan 5 días.", {"lang": "es"}, e5)
    assert check_index(client, empty_index, e5).ok
    assert store.similarity_search("fondos insuficientes", k=1)[0].id == ids[1]
    with pytest.raises(InputError, match="1 of 2 documents did not land"):
        store.add_texts(["", "Otro texto"], ids=["c-4", "c-5"])
    assert "c-5" in written(client, empty_index)
    with pytest.raises(InputError, match="embedded by the model it records"):
        HybridVectorStore.from_texts(["x"], embedding=object(), client=client, index=empty_index)
    from_texts = HybridVectorStore.from_texts(
        ["Horario de atención: 9 a 18 h."], EmbedderEmbeddings(e5), client=client, index=empty_index, ids=["c-6"]
    )
    assert from_texts.similarity_search("horario", k=1)[0].id == "c-6"
