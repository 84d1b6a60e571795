"""Other tools on an adapter index: docs/INTEROP.md's snippets run as written, the LangChain
retriever, and `hybrid check` catching vectors another model wrote."""

import re
from pathlib import Path

import numpy as np
import pytest

from adapter.fusion.choice.policy import DEFAULT_POLICY
from adapter.cli import main
from adapter.engines import cluster_for
from adapter.search.page import SearchOptions
from adapter.search import Searcher
from tests.conftest import HashingEmbedder
from tests.support.indexes import support_index  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
QUERY = "¿cómo devuelvo un pedido?"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_interop_snippets_run_as_written(opensearch_url, client, support_index, e5, capsys):
    blocks = python_blocks(ROOT / "docs" / "INTEROP.md")
    assert len(blocks) >= 5
    namespace = {"URL": opensearch_url, "INDEX": support_index}
    for block in blocks:
        exec(compile(block, "docs/INTEROP.md", "exec"), namespace)
    # By hand with opensearch-py: the adapter's own hybrid (the first snippet's, before the writers wrote), same hits
    # and scores.
    ours = namespace["result"]
    assert [h["_id"] for h in namespace["hits"]] == ours.ids
    assert [h["_score"] for h in namespace["hits"]] == pytest.approx([h.score for h in ours.hits], rel=1e-5)
    # The components: what the searcher finds for the same query, with what their writers wrote.
    searcher = Searcher.open(client, support_index, e5)
    haystack_docs = namespace["answer"]["retriever"]["documents"]
    assert namespace["written"]["writer"] == {"documents_written": 1}
    assert [d.id for d in haystack_docs] == searcher.search(
        QUERY, k=3, filters={"category": ["devoluciones", "reembolsos"]}
    ).ids
    assert [n.node.node_id for n in namespace["nodes"]] == searcher.search(QUERY, k=3, filters={"lang": "es"}).ids
    assert [n.node.node_id for n in namespace["response"].source_nodes] == searcher.search(QUERY, k=3).ids
    assert namespace["found"][0].id == "lc-1" and namespace["ids"] == ["lc-1"]
    assert [d.id for d in namespace["found_async"]] == [d.id for d in namespace["found"]]  # asyncio: the same answer
    # The retriever: filtered, server-fused, metadata carried.
    docs = namespace["docs"]
    assert docs and all(d.metadata["category"] == "devoluciones" for d in docs)
    # the uncalibrated adaptive index's baseline there
    base = DEFAULT_POLICY.base(cluster_for(client).probe().z_score).value
    (_, info), *_ = namespace["retriever"].search_with_hits(QUERY)
    assert info.fused_by == f"server:{support_index}-{base}-arithmetic_mean" and "fused_by" not in docs[0].metadata
    # LangChain's own store, dense: the adapter's dense ranking, with metadata.
    # The snippet reads whole texts from _source; the adapter returns excerpts unless asked for the full text.
    dense = Searcher.open(client, support_index, e5).search(
        QUERY, technique="dense", k=3, options=SearchOptions(full_text=True)
    )
    assert [d.page_content for d in namespace["dense"]] == [h.text for h in dense.hits]
    assert namespace["dense"] and all(d.metadata.get("lang") == "es" for d in namespace["dense"])
    # the 12 samples and what the three writers wrote
    assert namespace["report"].ok and namespace["report"].sampled == 15


def test_the_retriever_returns_what_the_searcher_finds(client, support_index, e5):
    from adapter.integrations.langchain import HybridRetriever

    searcher = Searcher.open(client, support_index, e5)
    for technique in ("hybrid", "bm25", "client-rrf"):
        retriever = HybridRetriever(searcher=searcher, technique=technique, k=4, explain=True)
        docs, found = retriever.invoke("error E-4012"), retriever.search_with_hits("error E-4012")
        result = searcher.search(
            "error E-4012",
            technique=technique,
            k=4,
            explain=True,  # explain moves scores ~1e-4
            options=SearchOptions(full_text=True),
        )
        assert [d.id for d in docs] == result.ids and [info.score for _, info in found] == [
            h.score for h in result.hits
        ]
        assert [d.page_content for d in docs] == [h.text for h in result.hits]
    assert found[0][1].legs[0]["leg"] == "bm25"


def test_check_finds_vectors_another_model_wrote(client, support_index, capsys, opensearch_url):
    """Before: nothing told an admin that documents had been written with another model's vectors."""
    assert main(["check", "--index", support_index, "--url", opensearch_url]) == 0
    assert "ok: every document was written by the adapter, and every sampled vector" in capsys.readouterr().out
    # Another tool writes two documents straight into the alias, with another 384-d model's vectors.
    other = HashingEmbedder(384, name="another-model")
    for doc_id, text in (("foreign-1", "Devolver un pedido dañado"), ("foreign-2", "Cambiar la contraseña")):
        client.index(
            index=support_index,
            id=doc_id,
            refresh=True,
            body={
                "title": "",
                "text": text,
                "parent_id": doc_id,
                "chunk_index": 0,
                "metadata": {"category": "otros"},
                "embedding": other.embed_documents([text])[0].tolist(),
            },
        )
    code = main(["check", "--index", support_index, "--url", opensearch_url])
    out = capsys.readouterr().out
    assert code == 1
    flagged = re.findall(r"^  (\S+): cosine (-?[0-9.]+)", out, flags=re.M)
    assert sorted(d for d, _ in flagged) == ["foreign-1", "foreign-2"] and all(float(c) < 0.5 for _, c in flagged)
    assert "vectors (a sample of 14, embedded again)" in out
    # Without the fingerprint key the adapter writes on each entry, the contract query finds them too.
    assert "2 of 14 documents were written without the adapter (no fingerprint: 2)" in out


def test_langchain_add_texts_with_another_model_is_caught(client, support_index, e5):
    """LangChain's add_texts bypasses the fingerprint; `hybrid check` sees what it wrote."""
    from langchain_community.vectorstores import OpenSearchVectorSearch

    from adapter.index.check import check_index
    from adapter.engines import describe_url
    from adapter.integrations.langchain import EmbedderEmbeddings

    url = describe_url(client)
    other = EmbedderEmbeddings(HashingEmbedder(384, name="langchain-model"))
    store = OpenSearchVectorSearch(opensearch_url=url, index_name=support_index, embedding_function=other)
    store.add_texts(
        ["Texto escrito por otra herramienta"], ids=["from-langchain"], vector_field="embedding", text_field="text"
    )
    client.indices.refresh(index=support_index)
    report = check_index(client, support_index, e5)
    assert [m.id for m in report.mismatches] == ["from-langchain"]
    # The same tool with the index's own model writes vectors the sample accepts; the contract query still finds the
    # document.
    store = OpenSearchVectorSearch(
        opensearch_url=url, index_name=support_index, embedding_function=EmbedderEmbeddings(e5)
    )
    store.add_texts(
        ["Texto escrito por otra herramienta"], ids=["from-langchain"], vector_field="embedding", text_field="text"
    )
    client.indices.refresh(index=support_index)
    again = check_index(client, support_index, e5)
    assert not again.mismatches and [m.id for m in again.foreign] == ["from-langchain"] and not again.ok
    assert np.isclose(report.min_cosine, 0.99)
