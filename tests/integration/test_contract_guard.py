"""The index contract against foreign writers, with the stock framework stores on a real node:
the metadata mapping does not grow from them, and `hybrid check` finds what they wrote by a query
over the whole index (no fingerprint, missing fields), not by a sample."""

from __future__ import annotations

import re

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.check import check_index
from adapter.cli import main
from adapter.engines import describe_url
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import FieldMap, read_source


@pytest.fixture
def support_index(client, index_name, e5, support_docs_path):
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    report = Ingestor.open(client, index_name, e5, progress=False).ingest(
        read_source(support_docs_path, FieldMap(metadata=("category", "lang")))
    )
    assert report.complete
    return index_name


def metadata_fields(client, alias) -> set[str]:
    (mapping,) = client.indices.get_mapping(index=alias).values()
    return set(mapping["mappings"]["properties"]["metadata"].get("properties", {}))


def test_llamaindex_add_cannot_grow_the_metadata_mapping(client, support_index, e5):
    """Before: LlamaIndex's add landed and mapped _node_content, _node_type, doc_id, document_id and
    ref_doc_id under metadata (metadata was dynamic: true)."""
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.opensearch import OpensearchVectorClient, OpensearchVectorStore

    before = metadata_fields(client, support_index)
    assert before == {"category", "lang"}  # what the adapter's ingest declared
    store = OpensearchVectorStore(
        OpensearchVectorClient(describe_url(client), support_index, 384, embedding_field="embedding", text_field="text")
    )
    node = TextNode(
        id_="from-llamaindex",
        text="Texto de LlamaIndex",
        metadata={"lang": "es"},
        embedding=e5.embed_documents(["Texto de LlamaIndex"])[0].tolist(),
    )
    with pytest.raises(Exception, match="strict_dynamic_mapping_exception|mapping set to strict"):
        store.add([node])
    client.indices.refresh(index=support_index)
    assert metadata_fields(client, support_index) == before
    assert client.count(index=support_index, body={"query": {"ids": {"values": ["from-llamaindex"]}}})["count"] == 0


def test_check_finds_what_langchain_add_texts_wrote_by_a_whole_index_query(
    client, support_index, e5, capsys, opensearch_url
):
    """Before: LangChain's add_texts with the index's own model passed `hybrid check` (its vector is
    right), though the document has no title, parent_id or chunk_index and no fingerprint."""
    from langchain_community.vectorstores import OpenSearchVectorSearch

    from adapter.integrations.langchain import EmbedderEmbeddings

    store = OpenSearchVectorSearch(
        opensearch_url=describe_url(client), index_name=support_index, embedding_function=EmbedderEmbeddings(e5)
    )
    store.add_texts(
        ["Texto escrito por LangChain"], ids=["from-langchain"], vector_field="embedding", text_field="text"
    )
    client.indices.refresh(index=support_index)
    report = check_index(client, support_index, e5, sample=1)  # a sample of one cannot be what finds it
    assert not report.ok
    (foreign,) = report.foreign
    assert foreign.id == "from-langchain" and "no fingerprint" in foreign.reason
    assert "parent_id" in foreign.reason and "chunk_index" in foreign.reason
    assert report.contract_checked == 13 and report.without_fingerprint == 1
    code = main(["check", "--index", support_index, "--url", opensearch_url])
    out = capsys.readouterr().out
    assert code == 1 and re.search(r"^  from-langchain: written without the adapter", out, flags=re.M)
    assert "1 of 13 documents were written without the adapter" in out
    # Its metadata stayed inside the contract: nothing new in the mapping.
    assert metadata_fields(client, support_index) == {"category", "lang"}


def test_langchain_add_texts_with_another_dimension_is_refused(client, support_index):
    from langchain_community.vectorstores import OpenSearchVectorSearch

    from adapter.integrations.langchain import EmbedderEmbeddings
    from tests.conftest import HashingEmbedder

    store = OpenSearchVectorSearch(
        opensearch_url=describe_url(client),
        index_name=support_index,
        embedding_function=EmbedderEmbeddings(HashingEmbedder(8, name="tiny")),
    )
    with pytest.raises(Exception):  # the knn_vector field's dimension (384) refuses it: nothing lands
        store.add_texts(["ocho dimensiones"], ids=["eight"], vector_field="embedding", text_field="text")
    client.indices.refresh(index=support_index)
    assert client.count(index=support_index, body={"query": {"ids": {"values": ["eight"]}}})["count"] == 0


def test_the_adapter_declares_its_own_metadata_and_every_metadata_feature_works(
    client, index_name, e5, tmp_path, opensearch_url, capsys
):
    """Metadata keys the adapter's ingest has not seen yet are declared before the rows that carry
    them: filters, facets and collapse by parent work on them; a spec diff stays in sync."""
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    rows = tmp_path / "docs.jsonl"
    rows.write_text(
        '{"id": "a", "text": "pedido devuelto", "category": "devoluciones", "year": 2024, "tags": ["x", "y"], '
        '"price": 9.5, "urgent": true, "owner": {"team": "soporte"}}\n'
        '{"id": "b", "text": "pedido enviado a Canarias, con un texto algo más largo para partirlo", "category": '
        '"envios", "year": 2023}\n',
        encoding="utf-8",
    )
    report = Ingestor.open(client, index_name, e5, progress=False, chunking=None).ingest(read_source(rows))
    assert report.complete
    (mapping,) = client.indices.get_mapping(index=index_name).values()
    meta = mapping["mappings"]["properties"]["metadata"]
    assert meta["dynamic"] == "strict"
    assert {k: v.get("type") for k, v in meta["properties"].items()} == {
        "category": "keyword",
        "year": "long",
        "tags": "keyword",
        "price": "float",
        "urgent": "boolean",
        "owner": None,
    }
    assert meta["properties"]["owner"]["properties"]["team"]["type"] == "keyword"
    searcher = Searcher.open(client, index_name, e5)
    assert searcher.search("pedido", filters={"year": {"gte": 2024}}).ids == ["a"]
    # a dotted key is a field path
    assert searcher.search("pedido", filters={"metadata.owner.team": "soporte"}).ids == ["a"]
    assert searcher.search("pedido", filters={"urgent": True}).ids == ["a"]
    from adapter.search.page import Collapse, SearchOptions

    page = searcher.search("pedido", options=SearchOptions(facets=("category",), collapse=Collapse()))
    assert sorted(b.key for b in page.aggregations["category"].buckets) == ["devoluciones", "envios"]
    assert sorted(page.ids) == ["a", "b"]
    # A later row with a new key declares it too; a row whose value does not fit its key's type is refused alone.
    rows.write_text(
        '{"id": "c", "text": "otro pedido", "region": "norte", "year": 2025}\n'
        '{"id": "d", "text": "pedido raro", "year": "no es un año"}\n',
        encoding="utf-8",
    )
    report = Ingestor.open(client, index_name, e5, progress=False, failures_path=tmp_path / "f.jsonl").ingest(
        read_source(rows)
    )
    assert [f.id for f in report.failures] == ["d"] and "year" in report.failures[0].reason
    assert searcher.search("pedido", filters={"region": "norte"}).ids == ["c"]
    # The declared keys are the index's, not drift: init again and diff find nothing to change.
    assert (
        main(
            [
                "diff",
                "--index",
                index_name,
                "--embedder",
                "multilingual-e5-small",
                "--analyzer",
                "spanish",
                "--url",
                opensearch_url,
            ]
        )
        == 0
    ), capsys.readouterr().out
    assert check_index(client, index_name, e5).ok
