"""A LangChain retriever around :class:`adapter.Searcher` (the ``langchain`` extra).

LangChain's own ``OpenSearchVectorSearch`` reads an adapter index for dense search only (and its
hybrid search hard-codes other field names); this retriever runs the adapter's searches instead:
server-fused hybrid through the index's pipeline, the embedder the index records, filters on
``metadata``, rerank and MMR::

    from adapter import Searcher, connect
    from adapter.integrations.langchain import HybridRetriever

    retriever = HybridRetriever(searcher=Searcher.open(connect(url), "docs"), k=5)
    docs = retriever.invoke("error E-4012")   # list[langchain_core.documents.Document]

:class:`EmbedderEmbeddings` hands an adapter embedder (with its prefixes) to LangChain code that
wants ``Embeddings``, such as ``OpenSearchVectorSearch`` for dense search on an adapter index.

Each ``Document`` has the hit's body text as ``page_content``, its id as ``id``, and in
``metadata``: the hit's ``metadata`` fields, ``title``, ``score``, ``rank``, ``fused_by`` and, with
``explain``, the per-leg ``legs``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .._optional import require

require("langchain_core", "the LangChain retriever")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict  # noqa: E402


class HybridRetriever(BaseRetriever):
    """Retrieve with ``searcher.search(query, technique=..., k=..., **search_kwargs)``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    searcher: Any  # adapter.Searcher (typed loosely: pydantic need not know it)
    technique: str = "hybrid"
    k: int = 4
    filters: dict[str, Any] | None = None
    explain: bool = False
    search_kwargs: dict[str, Any] = {}  # fusion, pipeline, depth, rerank_top, mmr_lambda, ...

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        result = self.searcher.search(query, technique=self.technique, k=self.k, filters=self.filters, explain=self.explain,
                                      **self.search_kwargs)
        return [to_document(hit, fused_by=result.fused_by_label) for hit in result.hits]


def to_document(hit, *, fused_by: str = "none") -> Document:
    """A LangChain ``Document`` from an :class:`adapter.Hit`."""
    metadata: dict[str, Any] = dict(hit.source.get("metadata") or {})
    metadata.update(id=hit.id, title=hit.title, score=hit.score, rank=hit.rank, fused_by=fused_by)
    if hit.legs:
        metadata["legs"] = [asdict(leg) for leg in hit.legs]
    return Document(id=hit.id, page_content=hit.text, metadata=metadata)


class EmbedderEmbeddings(Embeddings):
    """LangChain ``Embeddings`` from an adapter :class:`~adapter.Embedder`: the same model, prefixes
    and normalisation as the index's documents (``load_embedder(meta["embedding"]["spec"])``)."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()
