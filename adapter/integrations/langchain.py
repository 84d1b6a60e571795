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

Each ``Document`` has the hit's body text as ``page_content``, its id as ``id`` and as ``metadata``
exactly what was written (with ``title`` when the entry has one): the adapter's own fields (lineage,
scores, rank, how it was fused, the legs) never enter it. They come apart, as
:class:`~adapter.integrations._common.HitInfo`, from :meth:`HybridVectorStore.search_with_hits`
and :meth:`HybridRetriever.search_with_hits`. ``similarity_search_with_relevance_scores`` gives
each document a relevance in [0, 1] mapped from the fused score by the fusion that produced it
(docs/INTEROP.md, Scores), so ``score_threshold`` means something under every fusion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from adapter._optional import require

require("langchain_core", "the LangChain retriever")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables.config import run_in_executor  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from adapter.errors import InputError  # noqa: E402
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, SearchResult, Technique  # noqa: E402

FULL_TEXT = SearchOptions(full_text=True)  # a framework document holds the whole text, never an excerpt

if TYPE_CHECKING:
    from adapter.engines import ClusterLike
    from adapter.ingest.ingestor import Ingestor
    from adapter.models.embedders import Embedder
    from adapter.search import Searcher
from adapter.integrations._common import (  # noqa: E402
    FrameworkRow,
    HitInfo,
    adapter_filters,
    content_id,
    hit_info,
    hit_metadata,
    raise_on_failures,
    resolve_fusion,
    source_rows,
    split_title,
)


class HybridRetriever(BaseRetriever):
    """Retrieve with ``searcher.search(query, technique=..., k=..., **search_kwargs)``; ``filters``
    on metadata (the adapter's ``{"lang": "es"}``). ``invoke(query, k=2)`` and
    ``invoke(query, filters={...})`` override them for one call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    searcher: Any  # adapter.Searcher (typed loosely: pydantic need not know it)
    technique: str = "hybrid"
    k: int = 4
    filters: dict[str, Any] | None = None
    fusion: Any = None  # None: the index's default; "adaptive", a fusion name or object
    explain: bool = False
    search_kwargs: dict[str, Any] = {}  # pipeline, depth, rerank_top, mmr_lambda, ...

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
                                filters: Any = None) -> list[Document]:
        return [doc for doc, _ in self.search_with_hits(query, k=k, filters=filters)]

    def search_with_hits(self, query: str, *, k: int | None = None, filters: Any = None) -> list[tuple[Document, HitInfo]]:
        """The documents with what the adapter knows of each hit (lineage, score, relevance, rank, legs)."""
        size = self.k if k is None else k
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"k must be a positive integer, got {size!r}")
        wanted = self.filters if filters is None else adapter_filters(filters)
        result = self.searcher.search(query, technique=self.technique, k=size, filters=wanted, explain=self.explain,
                                      fusion=resolve_fusion(self.searcher, self.fusion), options=FULL_TEXT, **self.search_kwargs)
        return [(_document(hit), hit_info(hit, result)) for hit in result.hits]


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
        """Index ``texts`` through the adapter's ingest; returns their ids (given ones kept, the others
        from each text's content, so adding the same text again replaces it)."""
        if self.ingestor is None:
            raise InputError("this HybridVectorStore has no ingestor: pass ingestor=Ingestor.open(client, alias) to add texts")
        texts = list(texts)
        metadatas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        if len(metadatas) != len(texts) or (ids is not None and len(ids) != len(texts)):
            raise InputError(f"{len(texts)} texts, {len(metadatas)} metadatas and {len(ids) if ids is not None else 'no'} ids: "
                             "give one of each per text")
        rows = []
        for i, (text, metadata) in enumerate(zip(texts, metadatas)):
            title, rest = split_title(metadata)
            doc_id = ids[i] if ids is not None and ids[i] is not None else content_id(text, title, rest)
            rows.append(FrameworkRow(doc_id, text, title, rest))
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        raise_on_failures(report, "add_texts", len(rows))
        return [str(r.id) for r in rows]

    def delete(self, ids: list[str] | None = None, *, parents: Sequence[str] = (), filter: Any = None, **kwargs: Any) -> bool:
        """Delete the documents ``ids`` (ids that are not there are no error), every chunk of the
        ``parents`` documents, or what ``filter`` matches. With none of them: an error, never the
        whole index."""
        documents = self._documents()
        if ids is None and not parents and filter is None:
            raise InputError("delete needs ids, parents or a filter: it never empties the whole index")
        if ids is not None:
            documents.delete(list(ids))
        if parents:
            documents.delete(parents=list(parents))
        if filter is not None:
            documents.delete(filters=adapter_filters(filter))
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids that exist (missing ones are left out), in the order asked."""
        return [Document(id=d.id, page_content=d.text, metadata={**d.metadata, **({"title": d.title} if d.title else {})})
                for d in self._documents().get(list(ids))]

    def _documents(self) -> Any:
        from adapter.ingest.by_id import Documents

        if self.ingestor is not None:
            return self.ingestor.documents()
        return Documents(self.searcher.cluster, self.searcher.info)

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.search_with_hits(query, k, filter=filter, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[tuple[Document, float]]:
        """The documents with their fused score (its scale depends on the fusion; see
        ``similarity_search_with_relevance_scores`` for [0, 1])."""
        return [(doc, info.score) for doc, info in self.search_with_hits(query, k, filter=filter, **kwargs)]

    def _similarity_search_with_relevance_scores(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """Relevance in [0, 1], mapped from each hit's score by the fusion that produced it
        (:func:`adapter.integrations._common.relevance`)."""
        filter = kwargs.pop("filter", None)
        return [(doc, info.relevance) for doc, info in self.search_with_hits(query, k, filter=filter, **kwargs)]

    async def _asimilarity_search_with_relevance_scores(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        return await run_in_executor(None, self._similarity_search_with_relevance_scores, query, k, **kwargs)

    def search_with_hits(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[tuple[Document, HitInfo]]:
        """``filter``: the adapter's filters on metadata (or Haystack's / LlamaIndex's); ``kwargs``:
        more :meth:`Searcher.search` options. Each document with what the adapter knows of its hit."""
        result = self._search(query, k, filter, kwargs)
        return [(_document(hit), hit_info(hit, result)) for hit in result.hits]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Any = None, **kwargs: Any) -> list[Document]:
        """The adapter's MMR (Carbonell & Goldstein 1998) over the first ``fetch_k`` hits, on the stored vectors."""
        result = self._search(query, k, filter, {"mmr_lambda": lambda_mult, "mmr_candidates": fetch_k, **kwargs})
        return [_document(hit) for hit in result.hits]

    def _search(self, query: str, k: int, filter: Any, kwargs: dict[str, Any]) -> SearchResult:
        kwargs.setdefault("explain", self.explain)
        kwargs.setdefault("options", FULL_TEXT)
        result: SearchResult = self.searcher.search(query, technique=kwargs.pop("technique", self.technique), k=k,
                                                    filters=adapter_filters(filter), fusion=kwargs.pop("fusion", self.fusion), **kwargs)
        return result

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None, metadatas: list[dict[str, Any]] | None = None, *,
                   client: ClusterLike | None = None, index: str | None = None, ids: list[str] | None = None, **kwargs: Any) -> HybridVectorStore:
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


def _document(hit: Hit) -> Document:
    return Document(id=hit.id, page_content=hit.text, metadata=hit_metadata(hit))
