"""LangChain on an adapter index (the ``langchain`` extra): a retriever around
:class:`adapter.Searcher` and a ``VectorStore`` that also writes through the adapter's ingest.

LangChain's own ``OpenSearchVectorSearch`` reads an adapter index for dense search only (and its
hybrid search hard-codes other field names); this retriever runs the adapter's searches instead:
server-fused hybrid through the index's pipeline, the embedder the index records, filters on
``metadata``, rerank and MMR::

    from adapter import Searcher, connect
    from adapter.integrations.langchain import HybridRetriever

    retriever = HybridRetriever(searcher=Searcher.open(connect(url), "docs"), k=5)
    docs = retriever.invoke("error E-4012")   # list[langchain_core.documents.Document]

:class:`HybridVectorStore` is the ``VectorStore`` for code that wants one: ``add_texts`` and
``add_documents`` go through :class:`adapter.Ingestor` (the index's own model, stable ids,
validation, failures), ``similarity_search`` is the server's hybrid, ``max_marginal_relevance_search``
the adapter's MMR, ``as_retriever()`` works as for any store::

    store = HybridVectorStore(Searcher.open(client, "docs"), Ingestor.open(client, "docs", progress=False))
    store.add_texts(["..."], metadatas=[{"title": "...", "lang": "es"}], ids=["faq-1"])
    store.similarity_search("error E-4012", k=5, filter={"lang": "es"})

:class:`EmbedderEmbeddings` hands an adapter embedder (with its prefixes) to LangChain code that
wants ``Embeddings``, such as ``OpenSearchVectorSearch`` for dense search on an adapter index.

Each ``Document`` has the hit's body text as ``page_content``, its id as ``id``, and in
``metadata``: the hit's ``metadata`` fields, ``title``, ``parent_id``, ``chunk_index``, ``score``,
``rank``, ``fused_by`` and, with ``explain``, the per-leg ``legs`` (the Haystack and LlamaIndex
components carry the same keys).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from adapter._optional import require

require("langchain_core", "the LangChain retriever")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from adapter.errors import InputError  # noqa: E402
from adapter.search.results import Hit, SearchResult, Technique  # noqa: E402

if TYPE_CHECKING:
    from adapter.ingest.ingestor import Ingestor
    from adapter.models.embedders import Embedder
    from adapter.search import Searcher
from adapter.integrations._common import (  # noqa: E402
    adapter_filters,
    content_id,
    hit_metadata,
    raise_on_failures,
    resolve_fusion,
    source_rows,
    split_title,
)


class HybridRetriever(BaseRetriever):
    """Retrieve with ``searcher.search(query, technique=..., k=..., **search_kwargs)``; ``filters``
    on metadata (the adapter's ``{"lang": "es"}``)."""

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
        return [_document(hit, result) for hit in result.hits]


class EmbedderEmbeddings(Embeddings):
    """LangChain ``Embeddings`` from an adapter :class:`~adapter.Embedder`: the same model, prefixes
    and normalisation as the index's documents (``load_embedder(meta["embedding"]["spec"])``)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embedder.embed_documents(list(texts)).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        vector: list[float] = self.embedder.embed_query(text).tolist()
        return vector


class HybridVectorStore(VectorStore):
    """A LangChain ``VectorStore`` on an adapter index.

    :param searcher: an :class:`adapter.Searcher` on the index (searches: the server's hybrid by default).
    :param ingestor: an :class:`adapter.Ingestor` on the same index, for ``add_texts``/``add_documents``
        (``Ingestor.open(client, alias, progress=False)`` embeds with the index's own model); ``None``: read-only.
    :param technique: ``hybrid``, ``bm25``, ``dense`` or ``client-rrf``.
    :param fusion: ``None`` (the index's default), ``"adaptive"``, a fusion name or object.
    :param explain: each leg's rank and score in ``metadata["legs"]``.

    Documents come back as :class:`HybridRetriever` makes them. Texts added without ids get an id
    from their content (the same text and metadata: the same id, so adding it again replaces it);
    ``metadata["title"]`` becomes the title. Rows that do not land raise :class:`adapter.InputError`
    naming them, after the others landed.
    """

    def __init__(self, searcher: Searcher, ingestor: Ingestor | None = None, *, technique: str = "hybrid", fusion: Any = None,
                 explain: bool = False) -> None:
        if not callable(getattr(searcher, "search", None)):
            raise InputError(f"searcher must be an adapter.Searcher, got {type(searcher).__name__}")
        if ingestor is not None and not callable(getattr(ingestor, "ingest", None)):
            raise InputError(f"ingestor must be an adapter.Ingestor, got {type(ingestor).__name__}")
        if ingestor is not None and ingestor.alias != searcher.alias:
            raise InputError(f"the ingestor writes {ingestor.alias!r} but the searcher reads {searcher.alias!r}")
        self.searcher = searcher
        self.ingestor = ingestor
        self.technique = Technique.parse(technique)
        self.fusion = resolve_fusion(searcher, fusion)
        self.explain = explain

    @property
    def embeddings(self) -> Embeddings:
        """The index's own model (with its query and passage prefixes)."""
        return EmbedderEmbeddings(self.searcher.embedder)

    def add_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, *,
                  ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Index ``texts`` through the adapter's ingest; returns their ids."""
        if self.ingestor is None:
            raise InputError("this HybridVectorStore has no ingestor: pass ingestor=Ingestor.open(client, alias) to add texts")
        texts = list(texts)
        metadatas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        if len(metadatas) != len(texts) or (ids is not None and len(ids) != len(texts)):
            raise InputError(f"{len(texts)} texts, {len(metadatas)} metadatas and {len(ids) if ids is not None else 'no'} ids: "
                             "give one of each per text")
        rows, out_ids = [], []
        for i, (text, metadata) in enumerate(zip(texts, metadatas)):
            title, rest = split_title(metadata)
            doc_id = ids[i] if ids is not None and ids[i] is not None else content_id(text, title, rest)
            rows.append((doc_id, text, title, rest))
            out_ids.append(str(doc_id))
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        raise_on_failures(report, "add_texts", len(rows))
        return out_ids

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter=filter, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[tuple[Document, float]]:
        """``filter``: the adapter's filters on metadata; ``kwargs``: more :meth:`Searcher.search` options."""
        result = self._search(query, k, filter, kwargs)
        return [(_document(hit, result), hit.score) for hit in result.hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # The fused score of the normalization fusions is already in [0, 1] (min_max, l2); RRF's is
        # small but ranks alike. LangChain warns when a score falls outside [0, 1].
        return lambda score: score

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Any = None, **kwargs: Any) -> list[Document]:
        """The adapter's MMR (Carbonell & Goldstein 1998) over the first ``fetch_k`` hits, on the stored vectors."""
        result = self._search(query, k, filter, {"mmr_lambda": lambda_mult, "mmr_candidates": fetch_k, **kwargs})
        return [_document(hit, result) for hit in result.hits]

    def _search(self, query: str, k: int, filter: Any, kwargs: dict[str, Any]) -> SearchResult:
        kwargs.setdefault("explain", self.explain)
        result: SearchResult = self.searcher.search(query, technique=kwargs.pop("technique", self.technique), k=k,
                                                    filters=adapter_filters(filter), fusion=kwargs.pop("fusion", self.fusion), **kwargs)
        return result

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None, metadatas: list[dict[str, Any]] | None = None, *,
                   client: Any = None, index: str | None = None, ids: list[str] | None = None, **kwargs: Any) -> HybridVectorStore:
        """Add ``texts`` to the existing adapter index ``index`` (``hybrid init`` makes one) and
        return its store. ``embedding`` may only be :class:`EmbedderEmbeddings` of the index's own
        model (or ``None``): the ingestor embeds with the model the index records."""
        from adapter.ingest.ingestor import Ingestor
        from adapter.search import Searcher

        if client is None or not index:
            raise InputError("HybridVectorStore.from_texts needs client=adapter.connect(url) and index=<alias of an adapter index>")
        embedder = embedding.embedder if isinstance(embedding, EmbedderEmbeddings) else None
        if embedding is not None and embedder is None:
            raise InputError(f"an adapter index is embedded by the model it records; pass embedding=None, not {type(embedding).__name__}")
        store = cls(Searcher.open(client, index, embedder), Ingestor.open(client, index, embedder, progress=False), **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def _document(hit: Hit, result: SearchResult) -> Document:
    return Document(id=hit.id, page_content=hit.text, metadata=hit_metadata(hit, result))
