"""LlamaIndex on an adapter index (the ``llamaindex`` extra: ``llama-index-core``).

:class:`HybridVectorStore` is a ``BasePydanticVectorStore`` whose queries are the adapter's
server-side fused hybrid (the query text goes to the server; LlamaIndex embeds nothing at query
time), so the entry points users reach for work on an index ``hybrid init`` made::

    from llama_index.core import VectorStoreIndex
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter

    from adapter import connect
    from adapter.integrations.llamaindex import HybridVectorStore

    store = HybridVectorStore.open(connect(url), "docs")
    IngestionPipeline(transformations=[SentenceSplitter(), store.embed_model], vector_store=store).run(documents=[...])
    index = VectorStoreIndex.from_vector_store(store, embed_model=store.embed_model)
    answer = index.as_query_engine(llm=...).query("error E-4012")

A node's ``ref_doc_id`` is its entry's ``parent_id`` (and its position among its document's nodes
the ``chunk_index``), so ``delete(ref_doc_id)`` removes every chunk of a document and writing a
document again replaces its chunks (those of an earlier split that the new one lacks are deleted:
no duplicates, even with ``SentenceSplitter``'s random node ids). Nodes come back with their
metadata as written, kept out of the LLM's prompt and the embedding text by default
(``excluded_llm_metadata_keys``), and ``ref_doc_id`` set; no explanation is asked for by default.
:class:`HybridRetriever` is a ``BaseRetriever`` on the same search, and :class:`HybridNodeWriter`
an ``IngestionPipeline`` step that writes through the adapter's ingest.

From asyncio, build them with an :class:`adapter.AsyncSearcher` (and an :class:`adapter.AsyncIngestor`
for writes): ``HybridVectorStore.open_async(connect_async(url), "docs")``, or ``async_searcher=`` /
``async_ingestor=`` next to the sync parts. Then ``aquery`` (so ``index.as_query_engine().aquery``),
``async_add``, ``adelete``, ``adelete_nodes``, ``aclear``, ``aget_nodes``, the retriever's
``aretrieve`` and the writer's ``acall`` await the adapter's asyncio API on the event loop, no
thread per call, with the sync methods' results. Built with sync parts only, they run the sync
methods on a worker thread (LlamaIndex's own defaults would block the loop).

LlamaIndex's own OpenSearch store reads other field names, ranks differently (a ``match`` on
``text`` only) and, on write, adds ``_node_content`` and other keys that an adapter index refuses.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Sequence, TypeVar, Union

from adapter._optional import require

require("llama_index.core", "the LlamaIndex components")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)
from llama_index.core.embeddings import BaseEmbedding  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from pydantic import ConfigDict, PrivateAttr  # noqa: E402

from adapter import aio  # noqa: E402
from adapter.engines import AsyncRawClient, ClusterLike  # noqa: E402
from adapter.engines.dsl import Clause  # noqa: E402
from adapter.errors import InputError  # noqa: E402
from adapter.index.documents import CHUNK_FIELD, EMBEDDED_BY_FIELD, METADATA_FIELD, PARENT_FIELD, embedding_text  # noqa: E402
from adapter.fusion import Fusion, parse_fusion  # noqa: E402
from adapter.ingest.by_id import Selection, StoredDocument  # noqa: E402
from adapter.ingest.report import IngestReport  # noqa: E402
from adapter.integrations._common import (  # noqa: E402
    FrameworkRow,
    HitInfo,
    adapter_filters,
    hit_info,
    hit_metadata,
    log_notices,
    raise_on_failures,
    relevance,
    resolve_fusion,
    source_rows,
    split_title,
)
from adapter.integrations import _aio  # noqa: E402
from adapter.integrations._ubi import UbiLink, UbiOptIn  # noqa: E402
from adapter.integrations._filters import llamaindex_clause  # noqa: E402
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, Technique  # noqa: E402

T = TypeVar("T")
LOG = logging.getLogger(__name__)  # a search's notices (fallbacks, partial answers) at WARNING


class HybridRetriever(BaseRetriever):
    """Retrieve ``NodeWithScore`` with :meth:`adapter.Searcher.search`.

    :param searcher: an :class:`adapter.Searcher` on the index, or an :class:`adapter.AsyncSearcher`
        (then only ``aretrieve`` works).
    :param async_searcher: an :class:`adapter.AsyncSearcher` next to a sync ``searcher``: ``aretrieve``
        awaits it on the event loop (without one, ``aretrieve`` searches on a worker thread).
    :param similarity_top_k: nodes returned.
    :param technique: ``hybrid`` (the server fuses), ``bm25``, ``dense`` or ``client-rrf``.
    :param fusion: ``None`` (the index's default), ``"adaptive"``, a fusion name or object.
    :param filters: ``MetadataFilters`` (LlamaIndex's whole grammar, as :class:`HybridVectorStore` reads it) or
        the adapter's ``{"lang": "es"}``.
    :param explain: each leg's rank and score in ``metadata["legs"]``.
    :param search_kwargs: more :meth:`Searcher.search` options.
    :param ubi: each search leaves a UBI query record (off by default): ``True``, a mapping of
        ``client_id``, ``queries_index``, ``events_index``, ``store_query_text``, or a ready
        :class:`~adapter.traffic.logger.UbiLogger` (:mod:`adapter.integrations._ubi`); ``search_with_hits``
        gives each hit's ``query_id``; :attr:`ubi_logger` flushes and closes.
    """

    def __init__(
        self,
        searcher: Any,
        *,
        similarity_top_k: int = 10,
        technique: str = "hybrid",
        fusion: Any = None,
        filters: Any = None,
        explain: bool = False,
        search_kwargs: dict[str, Any] | None = None,
        async_searcher: Any = None,
        ubi: Any = None,
        **kwargs: Any,
    ) -> None:
        searcher, self.async_searcher = _aio.split(searcher, async_searcher)
        if not callable(getattr(searcher, "search", None)):
            raise InputError(f"searcher must be an adapter.Searcher, got {type(searcher).__name__}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise InputError(f"similarity_top_k must be a positive integer, got {similarity_top_k!r}")
        self.searcher = searcher
        self.similarity_top_k = similarity_top_k
        self.technique = Technique.parse(technique)
        self.fusion = resolve_fusion(searcher, fusion)
        self.filters = llama_filters(filters)
        self.explain = explain
        self.search_kwargs = dict(search_kwargs or {})
        self._ubi = UbiLink(UbiOptIn.of(ubi, "llamaindex"))
        self._ubi.open(searcher)
        super().__init__(**kwargs)

    @property
    def ubi_logger(self) -> Any:
        """The :class:`~adapter.traffic.logger.UbiLogger` its searches are logged to (None: off); flush or close it."""
        return self._ubi.logger

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [node for node, _ in self._nodes(self.searcher, query_bundle)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [node for node, _ in await self.asearch_with_hits(query_bundle)]

    def search_with_hits(self, query: str | QueryBundle) -> list[tuple[NodeWithScore, HitInfo]]:
        """Each node (its score the hit's relevance) with what the adapter knows of its hit: the fused
        ``score`` beside the ``relevance``, lineage, rank, how it was fused, the legs."""
        return self._nodes(self.searcher, _bundle(query))

    async def asearch_with_hits(self, query: str | QueryBundle) -> list[tuple[NodeWithScore, HitInfo]]:
        native = self.async_searcher is not None
        searcher = _aio.bridged(self.async_searcher) if native else self.searcher
        return await _aio.run(native, self._nodes, searcher, _bundle(query))

    def _nodes(self, searcher: Any, query_bundle: QueryBundle) -> list[tuple[NodeWithScore, HitInfo]]:
        result = searcher.search(
            query_bundle.query_str,
            technique=self.technique,
            k=self.similarity_top_k,
            filters=self.filters,
            fusion=self.fusion,
            explain=self.explain,
            options=SearchOptions(full_text=True),
            **self.search_kwargs,
        )
        log_notices(LOG, result)
        query_id = self._ubi.log(searcher, result)
        infos = [hit_info(hit, result, query_id) for hit in result.hits]
        return [
            (NodeWithScore(node=text_node(hit), score=info.relevance), info) for hit, info in zip(result.hits, infos)
        ]


def _bundle(query: str | QueryBundle) -> QueryBundle:
    return query if isinstance(query, QueryBundle) else QueryBundle(query_str=query)


def llama_filters(filters: Any) -> dict[str, Any] | None:
    """``MetadataFilters`` as one clause (:func:`adapter.integrations._filters.llamaindex_clause`), or the adapter's own
    dict."""
    if isinstance(filters, MetadataFilters):
        return {"llamaindex": llamaindex_clause(filters)} if filters.filters else None
    return adapter_filters(filters)


def text_node(hit: Hit) -> TextNode:
    """A hit (or a stored entry read as one) as a ``TextNode``: its metadata as written, kept out of
    the LLM's prompt and the embedding text (``excluded_*_metadata_keys``: the text alone is what
    the model reads), and its document as the ``SOURCE`` relationship (``node.ref_doc_id``)."""
    meta = hit_metadata(hit)
    parent = str(hit.source.get("parent_id", hit.id))
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=parent)} if parent != hit.id else {}
    return TextNode(
        id_=hit.id,
        text=hit.text,
        metadata=meta,
        relationships=relationships,
        excluded_llm_metadata_keys=list(meta),
        excluded_embed_metadata_keys=list(meta),
    )


def framework_rows(nodes: Sequence[BaseNode], *, carried: bool = True) -> list[FrameworkRow]:
    """Nodes as the ingest's rows: a node split off a document (``ref_doc_id``) is a chunk of it,
    numbered in the order its document's nodes come; a node's ``embedding`` is carried (checked
    against ``metadata["embedded_by"]``), or dropped when not ``carried``."""
    rows, seen = [], Counter[str]()
    for node in nodes:
        title, metadata = split_title(node.metadata)
        stamp = metadata.pop(EMBEDDED_BY_FIELD, None)
        parent = node.ref_doc_id if node.ref_doc_id and node.ref_doc_id != node.node_id else None
        index = None
        if parent is not None:
            index, seen[parent] = seen[parent], seen[parent] + 1
        vector = node.embedding if carried else None
        rows.append(
            FrameworkRow(
                node.node_id,
                node.get_content(metadata_mode=MetadataMode.NONE),
                title,
                metadata,
                parent_id=parent,
                chunk_index=index,
                vector=vector,
                embedded_by=stamp if vector is not None else None,
            )
        )
    return rows


def drop_older_chunks(ingestor: Any, nodes: Sequence[BaseNode], rows: Sequence[FrameworkRow]) -> None:
    """Delete the entries of the documents just written that this write did not make (an earlier,
    different split: ``SentenceSplitter`` gives new random node ids each run). Only for documents
    whose nodes this write holds whole: a chain of ``PREVIOUS``/``NEXT`` relationships that leaves
    the batch (``VectorStoreIndex`` writes 2,048 nodes per call) means the rest comes in another
    call, whose chunks must stay."""
    parents = sorted(_whole_documents(nodes))
    if parents:
        older = {
            "bool": {
                "filter": [{"terms": {PARENT_FIELD: parents}}],
                "must_not": [{"ids": {"values": [str(r.id) for r in rows]}}],
            }
        }
        ingestor.documents().delete(clause=older)


def _whole_documents(nodes: Sequence[BaseNode]) -> set[str]:
    ids = {n.node_id for n in nodes}
    parents: dict[str, bool] = {}
    for node in nodes:
        parent = node.ref_doc_id
        if parent is None or parent == node.node_id:
            continue
        links = (node.relationships.get(NodeRelationship.PREVIOUS), node.relationships.get(NodeRelationship.NEXT))
        inside = all(not isinstance(link, RelatedNodeInfo) or link.node_id in ids for link in links)
        parents[parent] = parents.get(parent, True) and inside
    return {parent for parent, whole in parents.items() if whole}


class HybridNodeWriter(TransformComponent):
    """Write nodes through :meth:`adapter.Ingestor.ingest` and pass them on unchanged.

    Each node is one entry: ``node_id`` its id (give ``Document(id_=...)`` a stable id, or a
    re-run adds copies under new random ids), its text without metadata, ``metadata["title"]`` its
    title and the rest of ``metadata`` its metadata; a node split off a document has it as its
    ``parent_id`` (``ref_doc_id``), and writing a document's nodes again replaces its earlier chunks
    (give one call all of a document's nodes). A node's ``embedding`` is used when
    ``metadata["embedded_by"]`` is the index model's fingerprint key, and refused otherwise (never
    replaced silently); without one the ingestor embeds with the index's model. Long documents: let the ingestor chunk
    them (``Ingestor.open(..., chunking=Chunking(200, 40))``), which keeps ``parent_id`` for collapse.
    Nodes that do not land raise :class:`adapter.InputError` naming them after the others landed;
    :attr:`last_report` is the :class:`adapter.IngestReport` of the last call.

    ``acall`` (``IngestionPipeline.arun``) writes through ``async_ingestor`` (an :class:`adapter.AsyncIngestor`;
    ``ingestor`` itself may be one) on the event loop; without one, on a worker thread.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ingestor: Any
    async_ingestor: Any = None
    _last_report: IngestReport | None = PrivateAttr(default=None)

    @property
    def last_report(self) -> IngestReport | None:
        return self._last_report

    def model_post_init(self, context: Any, /) -> None:
        self.ingestor, self.async_ingestor = _aio.split(self.ingestor, self.async_ingestor)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self._write(self.ingestor, nodes)

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        native = self.async_ingestor is not None
        return await _aio.run(
            native, self._write, _aio.bridged(self.async_ingestor) if native else self.ingestor, nodes
        )

    def _write(self, ingestor: Any, nodes: Sequence[BaseNode]) -> Sequence[BaseNode]:
        rows = framework_rows(nodes)
        report = ingestor.ingest(source_rows(rows), total=len(rows))
        self._last_report = report
        raise_on_failures(report, "HybridNodeWriter", len(rows))
        drop_older_chunks(ingestor, nodes, rows)
        return nodes


class AdapterEmbedding(BaseEmbedding):
    """LlamaIndex's ``BaseEmbedding`` from an adapter embedder (the index's model, with its query and
    passage prefixes): what ``VectorStoreIndex`` needs to be built. :class:`HybridVectorStore`
    embeds nothing with it at query time (the server's hybrid gets the query text).

    It remembers the vectors it made (a bounded set of their hashes), so the store that handed it
    out knows them as its own model's (``VectorStoreIndex.from_documents`` / ``insert`` embed nodes
    with it and hand the store bare vectors)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    embedder: Any = None
    _made: dict[int, None] = PrivateAttr(default_factory=dict)

    def made(self, vector: Sequence[float] | None) -> bool:
        """Whether this model made ``vector`` (in this process, among the last 100,000 it made)."""
        return vector is not None and hash(tuple(float(x) for x in vector)) in self._made

    def _remember(self, vector: list[float]) -> list[float]:
        if len(self._made) >= 100_000:
            self._made.pop(next(iter(self._made)))
        self._made[hash(tuple(vector))] = None
        return vector

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)  # CPU work: the loop goes on meanwhile

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._remember([float(x) for x in self.embedder.embed_documents([text])[0]])

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._remember([float(x) for x in v]) for v in self.embedder.embed_documents(texts)] if texts else []

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """As an ``IngestionPipeline`` step (LlamaIndex writes only nodes with embeddings into a vector
        store): each node's vector as the adapter's ingest computes it (title and text, the passage
        prefix; no metadata), stamped with the model's fingerprint key in ``metadata["embedded_by"]``
        (left out of the prompt and of what is stored), so the store uses it as it is."""
        key = self.embedder.fingerprint.key
        texts = [
            embedding_text(str(n.metadata.get("title") or ""), n.get_content(metadata_mode=MetadataMode.NONE))
            for n in nodes
        ]
        for node, vector in zip(nodes, self.embedder.embed_documents(texts) if texts else []):
            node.embedding = [float(x) for x in vector]
            node.metadata[EMBEDDED_BY_FIELD] = key
            for excluded in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
                if EMBEDDED_BY_FIELD not in excluded:
                    excluded.append(EMBEDDED_BY_FIELD)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return await asyncio.to_thread(self, nodes, **kwargs)  # CPU work: the loop goes on meanwhile


# Query modes: the server's fused hybrid, BM25 alone, or the hybrid diversified by MMR. The learners
# (svm, regressions) and sparse vectors are not what an adapter index holds.
_HYBRID_MODES = {
    VectorStoreQueryMode.DEFAULT,
    VectorStoreQueryMode.HYBRID,
    VectorStoreQueryMode.SEMANTIC_HYBRID,
    VectorStoreQueryMode.MMR,
}


class HybridVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store on an adapter index. Use :meth:`open`.

    ``query`` runs :meth:`adapter.Searcher.search` with the query's text: modes ``default``,
    ``hybrid`` and ``semantic_hybrid`` are the server's fused hybrid (``alpha``, when given, weighs
    the legs: ``1 - alpha`` BM25, ``alpha`` dense), ``text_search`` BM25 alone, ``mmr`` the hybrid
    diversified with ``mmr_threshold`` as MMR's lambda (0.5 without one); other modes raise
    :class:`adapter.InputError`. It takes ``similarity_top_k``, ``filters`` (``MetadataFilters``
    with LlamaIndex's whole grammar: :func:`adapter.integrations._filters.llamaindex_clause`),
    ``doc_ids`` (documents: ``ref_doc_id``) and ``node_ids``; its ``similarities`` are each hit's
    relevance in [0, 1] (docs/INTEROP.md, Scores): where the index keeps relevance maps
    (:mod:`adapter.fusion.relevance`), ``SimilarityPostprocessor`` cutoffs mean the same under every
    fusion; else each fusion's formula maps its scores.

    ``add`` writes through the adapter's ingest. A node's vector is used when it is the index
    model's: stamped with its fingerprint key in ``metadata["embedded_by"]`` (:attr:`embed_model`
    as a pipeline step does that), or made by this store's :attr:`embed_model` (``from_documents``,
    ``insert``). Any other vector is refused; ``carried_vectors="embed"`` drops it and the index's
    model embeds the text. Writing a document's nodes again replaces its chunks: entries of the same
    ``ref_doc_id`` that this call did not write are deleted, for each document whose nodes the call
    holds whole (:func:`drop_older_chunks`; one that spans two calls keeps what it had).

    ``async_searcher`` / ``async_ingestor`` (:class:`adapter.AsyncSearcher` / :class:`adapter.AsyncIngestor`;
    ``searcher`` / ``ingestor`` themselves may be the async ones, as :meth:`open_async` builds it): the
    async methods await them on the event loop. Without an async searcher they run the sync methods
    on a worker thread; without an async ingestor, ``async_add`` does.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    stores_text: bool = True
    is_embedding_query: bool = False  # the server's hybrid takes the query text; LlamaIndex embeds nothing
    flat_metadata: bool = False
    searcher: Any
    ingestor: Any
    fusion: Any = None
    explain: bool = False
    carried_vectors: str = "refuse"
    search_kwargs: dict[str, Any] = {}
    async_searcher: Any = None
    async_ingestor: Any = None
    # each query's UBI query record: True, its options or a UbiLogger (adapter.integrations._ubi); off by default
    ubi: Any = None
    _embed_model: AdapterEmbedding | None = PrivateAttr(default=None)
    _ubi: UbiLink = PrivateAttr(default_factory=lambda: UbiLink(None))

    def model_post_init(self, context: Any, /) -> None:
        self.searcher, self.async_searcher = _aio.split(self.searcher, self.async_searcher)
        self.ingestor, self.async_ingestor = _aio.split(self.ingestor, self.async_ingestor)
        if self.async_ingestor is not None and self.async_searcher is None:
            raise InputError(
                "an async_ingestor needs an async_searcher (AsyncSearcher.open on the same asyncio client)"
            )
        self._ubi = UbiLink(UbiOptIn.of(self.ubi, "llamaindex"))
        self._ubi.open(self.searcher)

    @property
    def ubi_logger(self) -> Any:
        """The :class:`~adapter.traffic.logger.UbiLogger` its queries are logged to (None: off); flush or close it."""
        return self._ubi.logger

    @classmethod
    def open(cls, client: ClusterLike, alias: str, *, embedder: Any = None, **options: Any) -> HybridVectorStore:
        """The store for the adapter index behind ``alias`` (its own model, loaded once for both sides)."""
        from adapter.ingest.ingestor import Ingestor
        from adapter.search import Searcher

        searcher = Searcher.open(client, alias, embedder)
        return cls(
            searcher=searcher,
            ingestor=Ingestor.open(client, alias, embedder or searcher.embedder, progress=False),
            **options,
        )

    @classmethod
    async def open_async(
        cls, client: AsyncRawClient, alias: str, *, embedder: Any = None, **options: Any
    ) -> HybridVectorStore:
        """:meth:`open` over an asyncio client (``connect_async(url)``): a store for the async methods only."""
        from adapter.ingest.async_ingestor import AsyncIngestor
        from adapter.search.async_searcher import AsyncSearcher

        searcher = await AsyncSearcher.open(client, alias, embedder)
        ingestor = await AsyncIngestor.open(client, alias, embedder or searcher.searcher.embedder)
        return cls(searcher=searcher, ingestor=ingestor, **options)

    # -- asyncio: the sync methods, awaited on the loop (or on a worker thread: see the class docstring) ----
    async def _read(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        native = self.async_searcher is not None
        return await _aio.run(native, method, self._on_loop() if native else self, *args, **kwargs)

    async def _write(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        native = self.async_ingestor is not None
        return await _aio.run(native, method, self._on_loop() if native else self, *args, **kwargs)

    def _on_loop(self) -> HybridVectorStore:
        """This store over the async parts' sync sides (their requests wait on the loop, inside ``aio.run``)."""
        return self.model_copy(
            update={
                "searcher": _aio.bridged(self.async_searcher),
                "ingestor": _aio.bridged(self.async_ingestor),
                "async_searcher": None,
                "async_ingestor": None,
            }
        )

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await self._write(HybridVectorStore.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await self._read(HybridVectorStore.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        *,
        all: bool = False,
        **kwargs: Any,
    ) -> None:  # noqa: A002
        await self._read(HybridVectorStore.delete_nodes, node_ids, filters, all=all, **kwargs)

    async def aclear(self) -> None:
        await self._read(HybridVectorStore.clear)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await self._read(HybridVectorStore.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await self._read(HybridVectorStore.query, query, **kwargs)

    @property
    def client(self) -> Union[ClusterLike, aio.Blocking]:  # Union: ClusterLike is a string alias, which pdoc cannot |
        """The raw client under the searcher's port (LlamaIndex's vector-store interface asks for one): the user's
        sync client, the port where it has none, or the bridge over an asyncio client."""
        client: ClusterLike | aio.Blocking = getattr(self.searcher.cluster, "client", self.searcher.cluster)
        return client

    @property
    def embed_model(self) -> AdapterEmbedding:
        """The index's model as LlamaIndex's ``BaseEmbedding``
        (``VectorStoreIndex.from_vector_store(store, embed_model=store.embed_model)``); one per store."""
        if self._embed_model is None:
            self._embed_model = AdapterEmbedding(
                embedder=self.searcher.embedder, model_name=self.searcher.info.fingerprint.model
            )
        return self._embed_model

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        if self.ingestor is None:
            raise InputError(
                "this HybridVectorStore has no ingestor: use HybridVectorStore.open(client, alias) to add nodes"
            )
        if self.carried_vectors not in ("refuse", "embed"):
            raise InputError(f"carried_vectors must be refuse or embed, got {self.carried_vectors!r}")
        key = self.searcher.info.fingerprint.key
        made = self._embed_model.made if self._embed_model is not None else (lambda _: False)
        rows = [
            replace(row, embedded_by=key)
            if row.vector is not None and row.embedded_by is None and made(row.vector)
            else row
            for row in framework_rows(nodes, carried=self.carried_vectors == "refuse")
        ]
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        raise_on_failures(report, "HybridVectorStore.add", len(rows))
        drop_older_chunks(self.ingestor, nodes, rows)
        return [str(r.id) for r in rows]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every entry of the document ``ref_doc_id`` (all its chunks, or the entry itself)."""
        self._documents().delete(parents=[ref_doc_id])

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        *,
        all: bool = False,  # noqa: A002
        **kwargs: Any,
    ) -> None:
        """Delete the nodes ``node_ids``, or those ``filters`` select (both given: both must hold). Filters that
        select everything (``MetadataFilters(filters=[])``) or match every node are refused unless ``all=True``,
        and a filter on a key no node has is an error (:mod:`adapter.ingest.deletion`): it never empties the
        index unasked (``clear()`` does)."""
        if not node_ids and filters is None:
            raise InputError("delete_nodes needs node_ids or filters: it never empties the whole index (clear() does)")
        documents = self._documents()
        if filters is None:
            documents.delete(list(node_ids or ()))
        else:
            documents.delete(filters=self._filters(node_ids, filters), all=all)

    def clear(self) -> None:
        """Delete every entry of the index (the index, its model and its settings stay)."""
        self._documents().delete(all=True)

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The nodes ``node_ids`` that exist (in that order), or those ``filters`` select."""
        documents = self._documents()
        if filters is None:
            return [_stored_node(d) for d in documents.get(list(node_ids or ()))]
        return [_stored_node(d) for d in documents.find(self._selection(node_ids, filters))]

    def _documents(self) -> Any:
        """Documents by id: the ingestor's, or over the searcher's client (a read-only store)."""
        from adapter.ingest.by_id import Documents

        return (
            self.ingestor.documents()
            if self.ingestor is not None
            else Documents(self.searcher.cluster, self.searcher.info)
        )

    @staticmethod
    def _selection(node_ids: list[str] | None, filters: MetadataFilters) -> Selection:
        return Selection(filters=HybridVectorStore._filters(node_ids, filters))

    @staticmethod
    def _filters(node_ids: list[str] | None, filters: MetadataFilters) -> dict[str, Clause]:
        """The adapter's filters for ``filters`` (with the fields they read) and, given, ``node_ids``."""
        out = {"llamaindex": llamaindex_clause(filters)}
        if node_ids:
            out["node_ids"] = Clause({"ids": {"values": list(node_ids)}}, ("_id",))
        return out

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        if not query.query_str:
            raise InputError("HybridVectorStore searches the query's text with the server's hybrid: give query_str")
        if query.mode not in _HYBRID_MODES and query.mode != VectorStoreQueryMode.TEXT_SEARCH:
            raise InputError(
                f"query mode {query.mode.value!r} is not one an adapter index runs: default, hybrid, "
                "semantic_hybrid, mmr (the server's fused hybrid) or text_search (BM25)"
            )
        filters = dict(llama_filters(query.filters) or {})
        if query.doc_ids:
            filters[PARENT_FIELD] = list(query.doc_ids)
        if query.node_ids:
            filters["node_ids"] = Clause({"ids": {"values": list(query.node_ids)}}, ("_id",))
        mmr = query.mmr_threshold if query.mmr_threshold is not None else 0.5
        result = self.searcher.search(
            query.query_str,
            technique="bm25" if query.mode == VectorStoreQueryMode.TEXT_SEARCH else "hybrid",
            k=query.similarity_top_k,
            filters=filters or None,
            fusion=self._fusion(query.alpha),
            explain=self.explain,
            mmr_lambda=mmr if query.mode == VectorStoreQueryMode.MMR else None,
            options=SearchOptions(full_text=True),
            **self.search_kwargs,
        )
        log_notices(LOG, result)
        self._ubi.log(self.searcher, result)
        nodes = [text_node(hit) for hit in result.hits]
        return VectorStoreQueryResult(
            nodes=nodes, similarities=[relevance(hit, result) for hit in result.hits], ids=[n.node_id for n in nodes]
        )

    def _fusion(self, alpha: float | None) -> Any:
        fusion = resolve_fusion(self.searcher, self.fusion)
        if alpha is None:
            return fusion
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            raise InputError(f"alpha weighs the dense leg against BM25 and lies in [0, 1], got {alpha!r}")
        base = fusion if isinstance(fusion, Fusion) else self.searcher.fusion
        weights = (1.0 - float(alpha), float(alpha))
        return base.with_weights(weights) if isinstance(base, Fusion) else parse_fusion(None, weights=weights)


def _stored_node(doc: StoredDocument) -> TextNode:
    source = {METADATA_FIELD: dict(doc.metadata), PARENT_FIELD: doc.parent_id, CHUNK_FIELD: doc.chunk_index}
    return text_node(Hit(doc.id, 0.0, source, title=doc.title, text=doc.text))
