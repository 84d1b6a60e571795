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

From asyncio, build them with an :class:`adapter.AsyncSearcher` (and an :class:`adapter.AsyncIngestor`
for writes), alone or next to the sync ones (``async_searcher=``, ``async_ingestor=``): the ``a*``
methods (``asimilarity_search*``, ``amax_marginal_relevance_search``, ``aadd_texts``/``aadd_documents``,
``adelete``, ``aget_by_ids``, the retriever's ``ainvoke``) then await the adapter's asyncio API on
the event loop, no thread per call, with the sync methods' results::

    aclient = connect_async(url)
    store = HybridVectorStore(Searcher.open(client, "docs"), Ingestor.open(client, "docs", progress=False),
                              async_searcher=await AsyncSearcher.open(aclient, "docs"),
                              async_ingestor=await AsyncIngestor.open(aclient, "docs"))
    docs = await store.asimilarity_search("error E-4012", k=5)

Built with sync parts only, the ``a*`` methods run the sync ones on a worker thread.

:class:`EmbedderEmbeddings` hands an adapter embedder (with its prefixes) to LangChain code that
wants ``Embeddings``, such as ``OpenSearchVectorSearch`` for dense search on an adapter index.

Each ``Document`` has the hit's body text as ``page_content``, its id as ``id`` and as ``metadata``
exactly what was written (with ``title`` when the entry has one): the adapter's own fields (lineage,
scores, rank, how it was fused, the legs) never enter it. They come apart, as
:class:`~adapter.integrations._common.HitInfo`, from :meth:`HybridVectorStore.search_with_hits`
and :meth:`HybridRetriever.search_with_hits`. ``similarity_search_with_relevance_scores`` gives
each document a relevance in [0, 1]: through the index's relevance map for the fusion that ran
(:mod:`adapter.fusion.relevance`: one meaning under every fusion, so one ``score_threshold`` keeps the
same share of hits), else by the fusion's formula (docs/INTEROP.md, Scores).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, TypeVar, Union, cast

from adapter._optional import require

require("langchain_core", "the LangChain retriever")

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables.config import run_in_executor  # noqa: E402
from langchain_core.vectorstores import VectorStore  # noqa: E402
from pydantic import ConfigDict, PrivateAttr  # noqa: E402

from adapter import aio  # noqa: E402
from adapter.errors import InputError  # noqa: E402
from adapter.integrations import _aio  # noqa: E402
from adapter.integrations._ubi import UbiLink, UbiOptIn  # noqa: E402
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, SearchResult, Technique  # noqa: E402

FULL_TEXT = SearchOptions(full_text=True)  # a framework document holds the whole text, never an excerpt
T = TypeVar("T")
LOG = logging.getLogger(__name__)  # a search's notices (fallbacks, partial answers) at WARNING

if TYPE_CHECKING:
    from adapter.engines import AsyncRawClient, ClusterLike
    from adapter.ingest.async_ingestor import AsyncIngestor
    from adapter.ingest.ingestor import Ingestor
    from adapter.models.embedders import Embedder
    from adapter.search import Searcher
    from adapter.search.async_searcher import AsyncSearcher
from adapter.integrations._common import (  # noqa: E402
    FrameworkRow,
    HitInfo,
    adapter_filters,
    content_id,
    hit_info,
    hit_metadata,
    log_notices,
    raise_on_failures,
    refuse_unknown_keys,
    resolve_fusion,
    source_rows,
    split_title,
)


class HybridRetriever(BaseRetriever):
    """Retrieve with ``searcher.search(query, technique=..., k=..., **search_kwargs)``; ``filters``
    on metadata (the adapter's ``{"lang": "es"}``). ``invoke(query, k=2)`` and
    ``invoke(query, filters={...})`` override them for one call.

    ``searcher`` may be an :class:`adapter.AsyncSearcher` (then only ``ainvoke`` works), and
    ``async_searcher`` one next to a sync ``searcher``: ``ainvoke`` then awaits it on the event loop.
    With a sync searcher only, ``ainvoke`` runs ``invoke``'s search on a worker thread."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    searcher: Any  # adapter.Searcher (typed loosely: pydantic need not know it)
    async_searcher: Any = None  # adapter.AsyncSearcher: ainvoke's, on the event loop
    technique: str = "hybrid"
    k: int = 4
    filters: dict[str, Any] | None = None
    fusion: Any = None  # None: the index's default; "adaptive", a fusion name or object
    explain: bool = False
    search_kwargs: dict[str, Any] = {}  # pipeline, depth, rerank_top, mmr_lambda, ...
    # each search's UBI query record: True, its options or a UbiLogger (adapter.integrations._ubi); off by default
    ubi: Any = None
    _ubi: UbiLink = PrivateAttr(default_factory=lambda: UbiLink(None))

    def model_post_init(self, context: Any, /) -> None:
        self.searcher, self.async_searcher = _aio.split(self.searcher, self.async_searcher)
        self._ubi = UbiLink(UbiOptIn.of(self.ubi, "langchain"))
        self._ubi.open(self.searcher)

    @property
    def ubi_logger(self) -> Any:
        """The :class:`~adapter.traffic.logger.UbiLogger` its searches are logged to (None: off); flush or close it."""
        return self._ubi.logger

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, filters: Any = None
    ) -> list[Document]:
        return [doc for doc, _ in self.search_with_hits(query, k=k, filters=filters)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, filters: Any = None
    ) -> list[Document]:
        return [doc for doc, _ in await self.asearch_with_hits(query, k=k, filters=filters)]

    def search_with_hits(
        self, query: str, *, k: int | None = None, filters: Any = None
    ) -> list[tuple[Document, HitInfo]]:
        """The documents with what the adapter knows of each hit (lineage, score, relevance, rank, legs)."""
        return self._hits(self.searcher, query, k, filters)

    async def asearch_with_hits(
        self, query: str, *, k: int | None = None, filters: Any = None
    ) -> list[tuple[Document, HitInfo]]:
        """:meth:`search_with_hits` from asyncio: through ``async_searcher`` on the loop (else on a worker thread)."""
        native = self.async_searcher is not None
        searcher = _aio.bridged(self.async_searcher) if native else self.searcher
        return await _aio.run(native, self._hits, searcher, query, k, filters)

    def _hits(self, searcher: Any, query: str, k: int | None, filters: Any) -> list[tuple[Document, HitInfo]]:
        size = self.k if k is None else k
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"k must be a positive integer, got {size!r}")
        wanted = adapter_filters(self.filters if filters is None else filters)
        result = searcher.search(
            query,
            technique=self.technique,
            k=size,
            filters=wanted,
            explain=self.explain,
            fusion=resolve_fusion(searcher, self.fusion),
            options=FULL_TEXT,
            **self.search_kwargs,
        )
        log_notices(LOG, result)
        refuse_unknown_keys(searcher, wanted, result)
        query_id = self._ubi.log(searcher, result)
        return [(_document(hit), hit_info(hit, result, query_id)) for hit in result.hits]


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
    :param async_searcher: an :class:`adapter.AsyncSearcher` on the same index (``searcher`` itself may
        be one: then only the ``a*`` methods work): the ``a*`` methods await it on the event loop.
    :param async_ingestor: an :class:`adapter.AsyncIngestor` (or ``ingestor`` itself), for
        ``aadd_texts``/``aadd_documents`` on the loop; it needs an async searcher.
    :param ubi: each search leaves a UBI query record (off by default): ``True``, a mapping of
        ``client_id``, ``queries_index``, ``events_index``, ``store_query_text``, or a ready
        :class:`~adapter.traffic.logger.UbiLogger` (:mod:`adapter.integrations._ubi`); each hit's
        ``HitInfo.query_id`` names the record; :attr:`ubi_logger` flushes and closes.

    Without an async searcher the ``a*`` methods run the sync ones on a worker thread (one per call);
    without an async ingestor, ``aadd_*`` do.

    Documents come back as :class:`HybridRetriever` makes them. Texts added without ids get an id
    from their content (the same text and metadata: the same id, so adding it again replaces it);
    ``metadata["title"]`` becomes the title. Rows that do not land raise :class:`adapter.InputError`
    naming them, after the others landed.
    """

    def __init__(
        self,
        searcher: Searcher | AsyncSearcher,
        ingestor: Ingestor | AsyncIngestor | None = None,
        *,
        technique: str = "hybrid",
        fusion: Any = None,
        explain: bool = False,
        async_searcher: AsyncSearcher | None = None,
        async_ingestor: AsyncIngestor | None = None,
        ubi: Any = None,
    ) -> None:
        reader, async_searcher = _aio.split(searcher, async_searcher)
        writer, async_ingestor = _aio.split(ingestor, async_ingestor)
        if async_ingestor is not None and async_searcher is None:
            raise InputError(
                "an async_ingestor needs an async_searcher (AsyncSearcher.open on the same asyncio client)"
            )
        if not callable(getattr(reader, "search", None)):
            raise InputError(f"searcher must be an adapter.Searcher, got {type(reader).__name__}")
        if writer is not None and not callable(getattr(writer, "ingest", None)):
            raise InputError(f"ingestor must be an adapter.Ingestor, got {type(writer).__name__}")
        for part in (writer, async_searcher, async_ingestor):
            if part is not None and part.alias != reader.alias:
                raise InputError(
                    f"the {type(part).__name__} is on {part.alias!r} but the searcher reads {reader.alias!r}"
                )
        self.searcher = reader  # an async-only store: the AsyncSearcher's sync side (info, embedder; no request)
        self.ingestor = writer
        self.async_searcher, self.async_ingestor = async_searcher, async_ingestor
        self.technique = Technique.parse(technique)
        self.fusion = resolve_fusion(searcher, fusion)
        self.explain = explain
        self._ubi = UbiLink(UbiOptIn.of(ubi, "langchain"))
        self._ubi.open(reader)

    @property
    def ubi_logger(self) -> Any:
        """The :class:`~adapter.traffic.logger.UbiLogger` its searches are logged to (None: off); flush or close it."""
        return self._ubi.logger

    @property
    def embeddings(self) -> Embeddings:
        """The index's own model (with its query and passage prefixes)."""
        return EmbedderEmbeddings(self.searcher.embedder)

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Index ``texts`` through the adapter's ingest; returns their ids (given ones kept, the others
        from each text's content, so adding the same text again replaces it)."""
        if self.ingestor is None:
            raise InputError(
                "this HybridVectorStore has no ingestor: pass ingestor=Ingestor.open(client, alias) to add texts"
            )
        texts = list(texts)
        metadatas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        if len(metadatas) != len(texts) or (ids is not None and len(ids) != len(texts)):
            raise InputError(
                f"{len(texts)} texts, {len(metadatas)} metadatas and {len(ids) if ids is not None else 'no'} ids: "
                "give one of each per text"
            )
        rows = []
        for i, (text, metadata) in enumerate(zip(texts, metadatas)):
            title, rest = split_title(metadata)
            doc_id = ids[i] if ids is not None and ids[i] is not None else content_id(text, title, rest)
            rows.append(FrameworkRow(doc_id, text, title, rest))
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        raise_on_failures(report, "add_texts", len(rows))
        return [str(r.id) for r in rows]

    def delete(
        self,
        ids: list[str] | None = None,
        *,
        parents: Sequence[str] = (),
        filter: Any = None,
        all: bool = False,  # noqa: A002
        **kwargs: Any,
    ) -> bool:
        """Delete the documents ``ids`` (ids that are not there are no error), every chunk of the
        ``parents`` documents, or what ``filter`` matches. With none of them, a filter that selects
        everything or one that matches every document: an error, unless ``all=True`` (which alone deletes
        every document); a filter on a key no document has is an error (:mod:`adapter.ingest.deletion`)."""
        documents = self._documents()
        if ids is None and not parents and filter is None:
            if not all:
                raise InputError(
                    "delete needs ids, parents or a filter: it never empties the whole index unless told to (all=True)"
                )
            documents.delete(all=True)
        if ids is not None:
            documents.delete(list(ids))
        if parents:
            documents.delete(parents=list(parents))
        if filter is not None:
            documents.delete(filters=adapter_filters(filter) or {}, all=all)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids that exist (missing ones are left out), in the order asked."""
        return [
            Document(id=d.id, page_content=d.text, metadata={**d.metadata, **({"title": d.title} if d.title else {})})
            for d in self._documents().get(list(ids))
        ]

    def _documents(self) -> Any:
        from adapter.ingest.by_id import Documents

        if self.ingestor is not None:
            return self.ingestor.documents()
        return Documents(self.searcher.cluster, self.searcher.info)

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.search_with_hits(query, k, filter=filter, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The documents with their fused score (its scale depends on the fusion; see
        ``similarity_search_with_relevance_scores`` for [0, 1])."""
        return [(doc, info.score) for doc, info in self.search_with_hits(query, k, filter=filter, **kwargs)]

    def similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The base's; with a ``score_threshold`` the search asks for the relevance from the legs on a
        server-fused page too (:func:`legs_for_threshold`), so one threshold keeps the same share of the
        relevant hits under every fusion; a search without one does not pay for it."""
        return super().similarity_search_with_relevance_scores(query, k, **legs_for_threshold(kwargs))

    async def asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await super().asimilarity_search_with_relevance_scores(query, k, **legs_for_threshold(kwargs))

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Relevance in [0, 1], mapped from each hit's score by the fusion that produced it
        (:func:`adapter.integrations._common.relevance`)."""
        filter = kwargs.pop("filter", None)
        return [(doc, info.relevance) for doc, info in self.search_with_hits(query, k, filter=filter, **kwargs)]

    # -- asyncio: the sync methods, awaited on the loop (or on a worker thread: see the class docstring) ----
    async def _read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.async_searcher is None:
            return await run_in_executor(None, method, self, *args, **kwargs)
        return await _aio.run(True, method, self._on_loop(), *args, **kwargs)

    async def _write(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.async_ingestor is None:
            return await run_in_executor(None, method, self, *args, **kwargs)
        return await _aio.run(True, method, self._on_loop(), *args, **kwargs)

    def _on_loop(self) -> HybridVectorStore:
        """This store with the async parts' sync sides (their requests wait on the loop, inside ``aio.run``)."""
        twin = copy.copy(self)
        twin.searcher, twin.ingestor = _aio.bridged(self.async_searcher), _aio.bridged(self.async_ingestor)
        twin.async_searcher = twin.async_ingestor = None
        return twin

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return await self._write(HybridVectorStore.add_texts, texts, metadatas, ids=ids, **kwargs)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """:meth:`delete` from asyncio: its arguments (``parents``, ``filter``, ``all``), checked there."""
        return await self._read(HybridVectorStore.delete, ids, **kwargs)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await self._read(HybridVectorStore.get_by_ids, ids)

    async def asimilarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:
        return await self._read(HybridVectorStore.similarity_search, query, k, filter, **kwargs)

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await self._read(HybridVectorStore.similarity_search_with_score, query, k, filter, **kwargs)

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await self._read(HybridVectorStore._similarity_search_with_relevance_scores, query, k, **kwargs)

    async def amax_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        return await self._read(
            HybridVectorStore.max_marginal_relevance_search, query, k, fetch_k, lambda_mult, filter, **kwargs
        )

    async def asearch_with_hits(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, HitInfo]]:
        return await self._read(HybridVectorStore.search_with_hits, query, k, filter, **kwargs)

    def search_with_hits(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, HitInfo]]:
        """``filter``: the adapter's filters on metadata (or Haystack's / LlamaIndex's); ``kwargs``:
        more :meth:`Searcher.search` options. Each document with what the adapter knows of its hit."""
        result = self._search(query, k, filter, kwargs)
        query_id = self._ubi.log(self.searcher, result)
        return [(_document(hit), hit_info(hit, result, query_id)) for hit in result.hits]

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The adapter's MMR (Carbonell & Goldstein 1998) over the first ``fetch_k`` hits, on the stored vectors."""
        result = self._search(query, k, filter, {"mmr_lambda": lambda_mult, "mmr_candidates": fetch_k, **kwargs})
        self._ubi.log(self.searcher, result)
        return [_document(hit) for hit in result.hits]

    def _search(self, query: str, k: int, filter: Any, kwargs: dict[str, Any]) -> SearchResult:
        kwargs.setdefault("explain", self.explain)
        kwargs.setdefault("options", FULL_TEXT)
        wanted = adapter_filters(filter)
        result: SearchResult = self.searcher.search(
            query,
            technique=kwargs.pop("technique", self.technique),
            k=k,
            filters=wanted,
            fusion=kwargs.pop("fusion", self.fusion),
            **kwargs,
        )
        log_notices(LOG, result)
        refuse_unknown_keys(self.searcher, wanted, result)
        return result

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        # Optional[...], not `ClusterLike | None`: a string alias cannot be or-ed when evaluated (pdoc)
        client: Optional[ClusterLike] = None,
        index: str | None = None,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> HybridVectorStore:
        """Add ``texts`` to the existing adapter index ``index`` (``hybrid init`` makes one) and
        return its store. ``embedding`` may only be :class:`EmbedderEmbeddings` of the index's own
        model (or ``None``): the ingestor embeds with the model the index records."""
        from adapter.ingest.ingestor import Ingestor
        from adapter.search import Searcher

        embedder = _index_embedder(client, index, embedding, "from_texts")
        client, index = cast("ClusterLike", client), cast(str, index)  # _index_embedder refused None for either
        store = cls(
            Searcher.open(client, index, embedder), Ingestor.open(client, index, embedder, progress=False), **kwargs
        )
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        client: Optional[Union[ClusterLike, AsyncRawClient]] = None,
        index: str | None = None,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> HybridVectorStore:
        """:meth:`from_texts` from asyncio, with the base class's signature (``embedding`` may be left out).
        Given an asyncio client (``connect_async(url)``), the store is an :class:`adapter.AsyncSearcher` and
        :class:`adapter.AsyncIngestor` over it and the texts are added on the event loop (no thread); given a
        sync client, :meth:`from_texts` runs on a worker thread."""
        embedder = _index_embedder(client, index, embedding, "afrom_texts")
        if not aio.is_async_client(client):  # read by its shape: sync, it is a ClusterLike
            sync = cast("ClusterLike", client)
            return await asyncio.to_thread(
                cls.from_texts, texts, embedding, metadatas, client=sync, index=index, ids=ids, **kwargs
            )
        from adapter.ingest.async_ingestor import AsyncIngestor
        from adapter.search.async_searcher import AsyncSearcher

        native = cast("AsyncRawClient", client)
        searcher = await AsyncSearcher.open(native, str(index), embedder)
        store = cls(
            searcher, await AsyncIngestor.open(native, str(index), embedder or searcher.searcher.embedder), **kwargs
        )
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store


def _index_embedder(client: object, index: str | None, embedding: Any, method: str) -> Any:
    """The adapter embedder ``embedding`` wraps (``None``: the one the index records), after checking the arguments."""
    if client is None or not index:
        raise InputError(
            f"HybridVectorStore.{method} needs client=adapter.connect(url) (or connect_async) and index=<alias of an "
            "adapter index>"
        )
    embedder = embedding.embedder if isinstance(embedding, EmbedderEmbeddings) else None
    if embedding is not None and embedder is None:
        raise InputError(
            f"an adapter index is embedded by the model it records; pass embedding=None, not {type(embedding).__name__}"
        )
    return embedder


def legs_for_threshold(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of a relevance search; where they hold a ``score_threshold``, its ``options`` (the store's
    whole-text default) ask for the relevance from the legs (``SearchOptions.leg_relevance``,
    docs/INTEROP.md, Scores: on OpenSearch's server-fused page it costs the request a quarter of its time)."""
    if kwargs.get("score_threshold") is None:
        return kwargs
    options = kwargs.get("options") or FULL_TEXT
    return {**kwargs, "options": dataclasses.replace(options, leg_relevance=True)}


def _document(hit: Hit) -> Document:
    return Document(id=hit.id, page_content=hit.text, metadata=hit_metadata(hit))
