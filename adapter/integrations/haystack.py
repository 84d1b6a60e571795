"""Haystack on an adapter index (the ``haystack`` extra: ``haystack-ai``).

:class:`HybridDocumentStore` is a Haystack ``DocumentStore`` on an index ``hybrid init`` made
(``count_documents``, ``filter_documents`` with Haystack's whole filter grammar, ``write_documents``
under each ``DuplicatePolicy``, ``delete_documents``), so the stock ``DocumentWriter``, evaluators and
tools work on it. :class:`HybridRetriever` sends the adapter's server-side hybrid search (the
index's fusion, or any other; filters; ``top_k``); :class:`HybridDocumentWriter` writes through the
adapter's ingest. Built from a store, both serialise (``to_dict``/``from_dict``, YAML pipelines,
Hayhooks) with credentials as ``Secret`` (read from the environment, never written out)::

    from haystack import Document, Pipeline
    from haystack.components.writers import DocumentWriter

    from adapter.integrations.haystack import HybridDocumentStore, HybridRetriever

    store = HybridDocumentStore(url, "docs")          # OPENSEARCH_USERNAME / _PASSWORD / _API_KEY from the environment
    DocumentWriter(store).run([Document(id="faq-1", content="...", meta={"title": "...", "lang": "es"})])

    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridRetriever(document_store=store, top_k=5))
    docs = pipeline.run({"retriever": {"query": "error E-4012"}})["retriever"]["documents"]

From asyncio (Haystack's ``AsyncPipeline``), the store's ``*_async`` methods (``count_documents_async``,
``filter_documents_async``, ``write_documents_async``, ``delete_documents_async``,
``delete_by_filter_async``, ``count_documents_by_filter_async``) and the components' ``run_async``
await the adapter's asyncio API on the event loop, no thread per call: the store opens an
:class:`adapter.AsyncSearcher` and :class:`adapter.AsyncIngestor` itself, once per event loop, over
the engine's asyncio client with the same URL and credentials (``await store.close_async()`` closes
the current loop's). Components built from a Searcher / Ingestor take ``async_searcher=`` /
``async_ingestor=`` (or the async one in its place); built from sync ones only, ``run_async`` runs
``run`` on a worker thread.

Each retrieved ``Document`` has ``id`` = the hit's id, ``content`` = its whole text, ``score`` =
its relevance in [0, 1] (one meaning under every fusion where the index keeps relevance maps:
:mod:`adapter.fusion.relevance`; the fused score is ``hits[i]["score"]``), and ``meta`` = the metadata as written
(``title`` with it; a split Haystack's
``DocumentSplitter`` made has its ``source_id`` and ``split_id`` back). What the adapter knows of
each hit comes apart, in the ``hits`` output (one dict per document: ``parent_id``,
``chunk_index``, ``score``, ``relevance`` in [0, 1], ``rank``, ``fused_by`` and, with ``explain``,
``legs``). A splitter's ``source_id``/``split_id`` are the entry's lineage (``parent_id``,
``chunk_index``), never metadata keys; its bookkeeping (``_split_overlap``, ``split_idx_start``) is
not stored.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from adapter._optional import require

require("haystack", "the Haystack components")

from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402
from haystack.document_stores.errors import DuplicateDocumentError  # noqa: E402
from haystack.document_stores.types import DuplicatePolicy  # noqa: E402
from haystack.errors import FilterError  # noqa: E402
from haystack.utils import Secret, deserialize_secrets_inplace  # noqa: E402

from adapter import aio  # noqa: E402
from adapter.engines import AsyncRawClient, open_async_client  # noqa: E402
from adapter.errors import InputError  # noqa: E402
from adapter.integrations import _aio  # noqa: E402
from adapter.integrations._ubi import UbiLink, UbiOptIn  # noqa: E402
from adapter.index.documents import CHUNK_FIELD, EMBEDDED_BY_FIELD, METADATA_FIELD, PARENT_FIELD  # noqa: E402
from adapter.index.facets import MetadataFacets  # noqa: E402
from adapter.ingest.by_id import Documents, Selection, StoredDocument  # noqa: E402
from adapter.integrations._common import (  # noqa: E402
    TITLE,
    FrameworkRow,
    adapter_filters,
    failures_json,
    hit_info,
    hit_metadata,
    log_notices,
    raise_on_failures,
    resolve_fusion,
    source_rows,
    split_title,
)
from adapter.integrations._filters import FilterGrammarError, haystack_clause  # noqa: E402
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, Technique  # noqa: E402

# Haystack's DocumentSplitter writes the document a split came from and the split's position into meta:
# they are the entry's lineage (parent_id, chunk_index), given back under the same keys on the way out.
SOURCE_ID, SPLIT_ID = "source_id", "split_id"
# The splitter's bookkeeping (where a split starts, what it overlaps): not the user's metadata, kept out of the mapping.
BOOKKEEPING = ("_split_overlap", "split_idx_start")
CARRIED = ("refuse", "embed")
SECRETS = ("username", "password", "api_key")  # the store's credentials, serialised as where to read them
FULL_TEXT = SearchOptions(full_text=True)
T = TypeVar("T")
LOG = logging.getLogger(__name__)  # a search's notices (fallbacks, partial answers) at WARNING


def _env(name: str) -> Secret:
    return Secret.from_env_var(name, strict=False)


@dataclass(frozen=True)
class _Parts:
    searcher: Any
    ingestor: Any
    documents: Documents


@dataclass(frozen=True)
class _AsyncParts:
    """One event loop's: the asyncio client and the AsyncSearcher / AsyncIngestor over it."""

    client: AsyncRawClient
    searcher: Any
    ingestor: Any


class HybridDocumentStore:
    """A Haystack ``DocumentStore`` on the adapter index behind ``index`` (made by ``hybrid init``).

    :param url: the cluster (OpenSearch or Elasticsearch; None: ``OPENSEARCH_URL``).
    :param index: the index's alias.
    :param username, password, api_key: ``Secret`` s (by default from ``OPENSEARCH_USERNAME``,
        ``OPENSEARCH_PASSWORD``, ``OPENSEARCH_API_KEY``, when set); serialised as where to read them.
    :param allowed_models: embedding models the index may name (default: the adapter's allow-list).
    :param carried_vectors: what to do with a ``Document.embedding``: ``"refuse"`` (the default:
        the document fails, unless ``meta["embedded_by"]`` is the index model's fingerprint key, when
        the vector is used as it is) or ``"embed"`` (the vector is dropped and the index's model
        embeds the text, as the index requires; say so when your pipeline's embedder is another model).
    :param embedder: an already loaded embedder of the index's model (not serialised; ``from_dict``
        loads the one the index records).
    :param ubi: each search of a retriever on this store leaves a UBI query record (off by default):
        ``True`` or a mapping of ``client_id``, ``queries_index``, ``events_index``, ``store_query_text``
        (serialised as that mapping), or a ready :class:`~adapter.traffic.logger.UbiLogger` (serialised
        as its settings) (:mod:`adapter.integrations._ubi`); each ``hits[i]["query_id"]`` names the record.

    ``write_documents`` under ``DuplicatePolicy.NONE`` overwrites (a document's id is its identity:
    writing it again replaces it, never duplicates it). Documents read back have ``embedding=None``
    (the index's vectors are its model's) and their metadata as written.
    """

    def __init__(
        self,
        url: str | None = None,
        index: str = "",
        *,
        username: Secret | None = _env("OPENSEARCH_USERNAME"),
        password: Secret | None = _env("OPENSEARCH_PASSWORD"),
        api_key: Secret | None = _env("OPENSEARCH_API_KEY"),
        allowed_models: list[str] | None = None,
        carried_vectors: str = "refuse",
        embedder: Any = None,
        ubi: Any = False,
    ) -> None:
        if not index:
            raise InputError("HybridDocumentStore needs index=<the alias of an index made by hybrid init>")
        if carried_vectors not in CARRIED:
            raise InputError(f"carried_vectors must be one of {', '.join(CARRIED)}, got {carried_vectors!r}")
        self.username, self.password, self.api_key = username, password, api_key
        for name, secret in self._secrets().items():
            if secret is not None and not isinstance(secret, Secret):
                raise InputError(f"{name} must be a haystack Secret (Secret.from_env_var(...)), never a plain string")
        self.url, self.index, self.allowed_models, self.carried_vectors = url, index, allowed_models, carried_vectors
        self._embedder = embedder
        self._ubi = UbiLink(UbiOptIn.of(ubi, "haystack"))
        self._parts: _Parts | None = None
        self._lock = threading.Lock()
        # per event loop (an asyncio client belongs to the loop it was opened on): its parts, being opened or open
        self._async: dict[asyncio.AbstractEventLoop, asyncio.Task[_AsyncParts]] = {}

    # -- serialisation -------------------------------------------------------------------------------
    def _secrets(self) -> dict[str, Secret | None]:
        return {name: getattr(self, name) for name in SECRETS}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            url=self.url,
            index=self.index,
            allowed_models=self.allowed_models,
            carried_vectors=self.carried_vectors,
            ubi=self._ubi.as_json() or False,
            **{k: s.to_dict() if s is not None else None for k, s in self._secrets().items()},
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridDocumentStore:
        deserialize_secrets_inplace(data["init_parameters"], keys=list(SECRETS))
        store: HybridDocumentStore = default_from_dict(cls, data)
        return store

    # -- the adapter's parts, opened once --------------------------------------------------------------
    def _open(self) -> _Parts:
        with self._lock:
            if self._parts is None:
                parts = self._connect()
                self._ubi.open(parts.searcher)
                self._parts = parts
            return self._parts

    def _credentials(self) -> dict[str, Any]:
        return {k: s.resolve_value() for k, s in self._secrets().items() if s is not None and s.resolve_value()}

    def _connect(self) -> _Parts:
        from adapter.engines import connect_cluster
        from adapter.ingest.ingestor import Ingestor
        from adapter.search import Searcher

        client = connect_cluster(self.url, **self._credentials())
        searcher = Searcher.open(client, self.index, self._embedder, allowed_models=self.allowed_models)
        ingestor = Ingestor.open(client, self.index, self._embedder or searcher.embedder, progress=False)
        return _Parts(searcher, ingestor, ingestor.documents())

    # -- the asyncio parts, opened once per event loop --------------------------------------------------
    async def _open_async(self) -> _AsyncParts:
        loop = asyncio.get_running_loop()
        for old in [other for other in list(self._async) if other.is_closed()]:
            self._async.pop(old, None)  # a finished loop's parts (its client went with it): not kept alive
        task = self._async.get(loop)
        if task is None:
            task = self._async[loop] = loop.create_task(self._connect_async())
        try:
            return await asyncio.shield(task)  # one caller cancelled: the others still get the parts
        except BaseException:
            if task.done() and self._async.get(loop) is task and (task.cancelled() or task.exception() is not None):
                del self._async[loop]  # a failed opening: the next call tries again
            raise

    async def _connect_async(self) -> _AsyncParts:
        from adapter.engines import engine_name
        from adapter.ingest.async_ingestor import AsyncIngestor
        from adapter.search.async_searcher import AsyncSearcher

        # The engine and the model: the sync parts' (opened once, on a worker thread: the model loads there).
        engine, embedder = await asyncio.to_thread(lambda: (engine_name(self.searcher.cluster), self.searcher.embedder))
        client = _async_client(engine, self.url, self._credentials())
        try:
            searcher = await AsyncSearcher.open(client, self.index, embedder, allowed_models=self.allowed_models)
            return _AsyncParts(client, searcher, await AsyncIngestor.open(client, self.index, embedder))
        except BaseException:
            await client.close()
            raise

    async def close_async(self) -> None:
        """Close this event loop's asyncio client (the next async call opens another)."""
        task = self._async.pop(asyncio.get_running_loop(), None)
        if task is None:
            return
        try:
            parts = await task
        except Exception:  # it never opened (its caller saw why): nothing to close
            return
        await parts.client.close()

    async def _run(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``method`` (a sync one of this class) on the loop, over this loop's asyncio parts."""
        parts = await self._open_async()
        twin = copy.copy(self)
        bridged = _aio.bridged(parts.ingestor)
        twin._parts = _Parts(_aio.bridged(parts.searcher), bridged, bridged.documents())
        return await aio.run(method, twin, *args, **kwargs)

    async def async_searcher(self) -> Any:
        """This event loop's :class:`adapter.AsyncSearcher` on the index (for :class:`HybridRetriever`)."""
        return (await self._open_async()).searcher

    async def async_ingestor(self) -> Any:
        """This event loop's :class:`adapter.AsyncIngestor` on the index (for :class:`HybridDocumentWriter`)."""
        return (await self._open_async()).ingestor

    @property
    def searcher(self) -> Any:
        """The :class:`adapter.Searcher` on the index (for :class:`HybridRetriever`)."""
        return self._open().searcher

    @property
    def ubi_logger(self) -> Any:
        """The :class:`~adapter.traffic.logger.UbiLogger` its retrievers' searches are logged to (None: off); flush or
        close it."""
        if self._ubi.opt_in is not None:
            self._open()  # the logger is built with the sync parts
        return self._ubi.logger

    def ubi_log(self, searcher: Any, result: Any) -> str | None:
        """Queue ``result``'s UBI query record when this store was asked to (its ``query_id``; None: off)."""
        if self._ubi.opt_in is None:
            return None
        self._open()
        return self._ubi.log(searcher, result)

    @property
    def ingestor(self) -> Any:
        return self._open().ingestor

    # -- the DocumentStore protocol ---------------------------------------------------------------------
    def count_documents(self) -> int:
        return self._open().documents.count()

    def _selection(self, filters: dict[str, Any] | None) -> Selection | None:
        """Haystack's filters as the adapter's selection (``content``: the index's body field); none: None."""
        if not filters:
            return None
        return Selection(filters={"haystack": _clause(filters, self._open().documents.info.layout.body_field)})

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Every document ``filters`` (Haystack's grammar: comparisons joined by AND, OR, NOT, on
        ``meta.<key>``, ``id`` and ``content``) selects."""
        return [_document(d) for d in self._open().documents.find(self._selection(filters))]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write through the adapter's ingest; returns how many were written. ``NONE`` and
        ``OVERWRITE`` replace a document of the same id; ``SKIP`` leaves it; ``FAIL`` raises
        ``DuplicateDocumentError`` and writes nothing."""
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise InputError("write_documents takes a list of haystack Documents")
        if policy in (DuplicatePolicy.SKIP, DuplicatePolicy.FAIL):
            there = {d.id for d in self._open().documents.get([d.id for d in documents])}
            if there and policy is DuplicatePolicy.FAIL:
                raise DuplicateDocumentError(f"documents already in {self.index}: {', '.join(sorted(there))}")
            documents = [d for d in documents if d.id not in there]
        if not documents:
            return 0
        rows = [framework_row(d, self.carried_vectors) for d in documents]
        report = self._open().ingestor.ingest(source_rows(rows), total=len(rows))
        raise_on_failures(report, "write_documents", len(rows))
        return int(report.chunks)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete these documents (ids that are not there are no error)."""
        if document_ids:
            self._open().documents.delete(list(document_ids))

    def delete_by_filter(self, filters: dict[str, Any], *, all: bool = False) -> int:  # noqa: A002
        """Delete what ``filters`` selects; returns how many were deleted. A filter that selects everything
        (``{}``, an ``AND`` of no conditions) or matches every document is refused unless ``all=True``, and one
        on a key no document has is an error (:mod:`adapter.ingest.deletion`); nothing is deleted then."""
        selection = self._selection(filters)
        return (
            self._open().documents.delete(filters=dict(selection.filters or {}) if selection else {}, all=all).deleted
        )

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """Delete every document (the index, its model and its settings stay). ``recreate_index=True``
        (which Haystack's OpenSearch store takes to drop and create the index again) is refused: an adapter
        index is its versions behind an alias, its search pipelines and its calibration; ``hybrid reindex``
        makes a new version."""
        _no_recreate(recreate_index)
        self._open().documents.delete(all=True)

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        return self._open().documents.count(self._selection(filters))

    # -- the optional methods of Haystack's OpenSearch and Elasticsearch stores ------------------------
    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the metadata of every document ``filters`` selects (their text and vectors
        stay); returns how many were updated. New keys are declared as a write declares them; a value
        the index's mapping refuses (a string under a numeric key) raises :class:`adapter.InputError`
        naming the documents, after the others were updated."""
        if not isinstance(meta, dict):
            raise InputError(f"update_by_filter takes meta as a dict, got {type(meta).__name__}")
        if TITLE in meta or SOURCE_ID in meta or SPLIT_ID in meta:
            raise InputError(
                "update_by_filter changes metadata only: title, source_id and split_id are the entry's own "
                "fields (write the documents again to change them)"
            )
        selection = self._selection(filters) or Selection()
        report = self._open().ingestor.update_where(selection, meta)
        raise_on_failures(report, "update_by_filter", report.chunks + report.failed)
        return int(report.chunks)

    def get_metadata_fields_info(self) -> dict[str, dict[str, str]]:
        """``{key: {"type": ...}}`` for each metadata key a document in the store has (``keyword``,
        ``long``, ``float``, ``boolean``; keys of objects dotted, ``author.name``). Empty store: ``{}``."""
        return {k: {"type": t} for k, t in self._facets().present().items()}

    def count_unique_metadata_by_filter(self, filters: dict[str, Any], metadata_fields: list[str]) -> dict[str, int]:
        """How many distinct values each of ``metadata_fields`` (with or without ``meta.``) has among the
        documents ``filters`` selects. A key no document was ever written with is an :class:`adapter.InputError`."""
        keys = [_meta_key(f) for f in metadata_fields]
        counts = self._facets().distinct_counts(keys, _query(self._selection(filters)))
        return {key: counts[key] for key in keys}

    def get_metadata_field_min_max(self, metadata_field: str) -> dict[str, Any]:
        """``{"min": ..., "max": ...}`` of a metadata key (with or without ``meta.``) over the store, in the
        key's type (numbers, ISO dates and strings alike); ``None`` each when no document has it."""
        low, high = self._facets().bounds(_meta_key(metadata_field))
        return {"min": low, "max": high}

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """``(values, total)``: the distinct values of a metadata key in ascending order, ``size`` of them
        from ``from_``, among the documents ``filters`` selects whose value contains ``search_term``
        (case-insensitive, on the value, not the text); ``total`` counts all such values. A key no
        document has: ``([], 0)``."""
        return self._facets().values(
            _meta_key(metadata_field), _query(self._selection(filters)), contains=search_term, offset=from_, size=size
        )

    def _facets(self) -> MetadataFacets:
        documents = self._open().documents
        return MetadataFacets(documents.cluster, documents.info)

    # -- the same, from asyncio (AsyncDocumentStore): awaited on the event loop ------------------------
    async def count_documents_async(self) -> int:
        return await self._run(HybridDocumentStore.count_documents)

    async def filter_documents_async(self, filters: dict[str, Any] | None = None) -> list[Document]:
        return await self._run(HybridDocumentStore.filter_documents, filters)

    async def write_documents_async(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        return await self._run(HybridDocumentStore.write_documents, documents, policy)

    async def delete_documents_async(self, document_ids: list[str]) -> None:
        await self._run(HybridDocumentStore.delete_documents, document_ids)

    async def delete_by_filter_async(self, filters: dict[str, Any], *, all: bool = False) -> int:  # noqa: A002
        return await self._run(HybridDocumentStore.delete_by_filter, filters, all=all)

    async def delete_all_documents_async(self, recreate_index: bool = False) -> None:
        _no_recreate(recreate_index)
        await self._run(HybridDocumentStore.delete_all_documents)

    async def count_documents_by_filter_async(self, filters: dict[str, Any]) -> int:
        return await self._run(HybridDocumentStore.count_documents_by_filter, filters)

    async def update_by_filter_async(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        return await self._run(HybridDocumentStore.update_by_filter, filters, meta)

    async def get_metadata_fields_info_async(self) -> dict[str, dict[str, str]]:
        return await self._run(HybridDocumentStore.get_metadata_fields_info)

    async def count_unique_metadata_by_filter_async(
        self, filters: dict[str, Any], metadata_fields: list[str]
    ) -> dict[str, int]:
        return await self._run(HybridDocumentStore.count_unique_metadata_by_filter, filters, metadata_fields)

    async def get_metadata_field_min_max_async(self, metadata_field: str) -> dict[str, Any]:
        return await self._run(HybridDocumentStore.get_metadata_field_min_max, metadata_field)

    async def get_metadata_field_unique_values_async(
        self, metadata_field: str, *args: Any, **kwargs: Any
    ) -> tuple[list[Any], int]:
        """:meth:`get_metadata_field_unique_values` from asyncio: its arguments, checked there."""
        return await self._run(HybridDocumentStore.get_metadata_field_unique_values, metadata_field, *args, **kwargs)


def _async_client(engine: str, url: str | None, credentials: dict[str, Any]) -> AsyncRawClient:
    """The asyncio client of ``engine`` at ``url`` (the registry's: the store names no client library)."""
    return open_async_client(engine, url, **credentials)


def _clause(filters: dict[str, Any] | None, content_field: str = "text") -> Any:
    try:
        return haystack_clause(filters or {}, content_field=content_field)
    except FilterGrammarError as exc:
        raise FilterError(str(exc)) from exc


def _no_recreate(recreate_index: bool) -> None:
    if recreate_index:
        raise InputError(
            "delete_all_documents(recreate_index=True): an adapter index is not dropped and made again by a document "
            "store (its alias, versions, pipelines and calibration go with it); its documents are deleted with "
            "recreate_index=False, and `hybrid reindex` makes a new version of the index"
        )


def _query(selection: Selection | None) -> dict[str, Any] | None:
    return selection.query() if selection is not None else None


def _meta_key(field: Any) -> str:
    """A metadata key as Haystack names it (``meta.category`` or ``category``)."""
    if not isinstance(field, str) or not field or field == "meta.":
        raise InputError(f"a metadata field is a name (with or without meta.), got {field!r}")
    return field[len("meta.") :] if field.startswith("meta.") else field


@component
class HybridRetriever:
    """Retrieve ``Document``\\ s with :meth:`adapter.Searcher.search` (the server's fused hybrid).

    :param document_store: a :class:`HybridDocumentStore` (then the retriever serialises), or
    :param searcher: an :class:`adapter.Searcher` on the index (``Searcher.open(client, alias)``), or an
        :class:`adapter.AsyncSearcher` (then only ``run_async`` works).
    :param async_searcher: an :class:`adapter.AsyncSearcher` next to a sync ``searcher``, for ``run_async``.
    :param top_k: documents returned (``run(top_k=...)`` overrides it).
    :param technique: ``hybrid`` (the server fuses), ``bm25``, ``dense`` or ``client-rrf``.
    :param fusion: ``None`` (the index's default pipeline, adaptive on a new index), ``"adaptive"``,
        a fusion name (``"rrf"``, ``"min_max-arithmetic_mean"``, ``"rrf-40"``) or a fusion object.
    :param filters: the adapter's ``{"lang": "es"}`` or Haystack's grammar (comparisons, AND, OR, NOT).
    :param explain: each leg's rank and score in ``hits[i]["legs"]`` (one more request's worth of work).
    :param search_kwargs: more :meth:`Searcher.search` options (``depth``, ``rerank_top``, ``mmr_lambda``, ...).
    :param ubi: each search leaves a UBI query record, as :class:`HybridDocumentStore`'s ``ubi`` says; by
        default the store's setting (off), given here it is the retriever's own (``hits[i]["query_id"]``).

    ``run_async`` awaits the async searcher (its own, else the store's for this loop) on the event
    loop; built from a sync ``searcher`` alone, it runs :meth:`run` on a worker thread.
    """

    def __init__(
        self,
        searcher: Any = None,
        *,
        document_store: HybridDocumentStore | None = None,
        top_k: int = 10,
        technique: str = "hybrid",
        fusion: Any = None,
        filters: dict[str, Any] | None = None,
        explain: bool = True,
        search_kwargs: dict[str, Any] | None = None,
        async_searcher: Any = None,
        ubi: Any = None,
    ) -> None:
        searcher, self._async_searcher = _aio.split(searcher, async_searcher)
        _one_source(self, ("searcher", "Searcher", "search"), searcher, document_store)
        _check_top_k(top_k)
        self._searcher, self.document_store = searcher, document_store
        self.top_k, self.technique, self.fusion = top_k, Technique.parse(technique), fusion
        self.filters, self.explain, self.search_kwargs = filters, explain, dict(search_kwargs or {})
        _filters(filters)  # refused at construction, not at the first run
        self._ubi = UbiLink(UbiOptIn.of(ubi, "haystack"))
        if searcher is not None:
            self._ubi.open(searcher)

    @property
    def searcher(self) -> Any:
        return self._searcher if self._searcher is not None else self.document_store.searcher  # type: ignore[union-attr]

    def to_dict(self) -> dict[str, Any]:
        store = _store_json(self, "a Searcher")
        if self.fusion is not None and not isinstance(self.fusion, str):
            raise InputError(
                'a fusion object does not serialise: give the fusion by name ("rrf", "min_max-arithmetic_mean")'
            )
        return default_to_dict(
            self,
            document_store=store,
            top_k=self.top_k,
            technique=self.technique.value,
            fusion=self.fusion,
            filters=self.filters,
            explain=self.explain,
            search_kwargs=self.search_kwargs,
            ubi=self._ubi.as_json(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridRetriever:
        return _from_store_json(cls, data)

    @component.output_types(documents=list[Document], hits=list[dict[str, Any]])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """``filters`` and ``top_k`` given here replace the component's for this run. ``hits``: what
        the adapter knows of each document's hit, in the same order."""
        return self._search(self.searcher, query, filters, top_k)

    @component.output_types(documents=list[Document], hits=list[dict[str, Any]])
    async def run_async(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, Any]:
        """:meth:`run` from asyncio (see the class docstring)."""
        searcher = self._async_searcher
        if searcher is None and self.document_store is not None:
            searcher = await self.document_store.async_searcher()
        if searcher is None:
            return await asyncio.to_thread(self.run, query, filters, top_k)
        return await aio.run(self._search, _aio.bridged(searcher), query, filters, top_k)

    def _search(self, searcher: Any, query: str, filters: dict[str, Any] | None, top_k: int | None) -> dict[str, Any]:
        k = self.top_k if top_k is None else _check_top_k(top_k)
        wanted = _filters(self.filters if filters is None else filters, searcher.info.layout.body_field)
        result = searcher.search(
            query,
            technique=self.technique,
            k=k,
            filters=wanted,
            fusion=resolve_fusion(searcher, self.fusion),
            explain=self.explain,
            options=FULL_TEXT,
            **self.search_kwargs,
        )
        log_notices(LOG, result)
        query_id = self._log(searcher, result)
        infos = [hit_info(hit, result, query_id) for hit in result.hits]
        return {
            "documents": [haystack_document(hit, info.relevance) for hit, info in zip(result.hits, infos)],
            "hits": [info.as_dict() for info in infos],
        }

    def _log(self, searcher: Any, result: Any) -> str | None:
        """The search's UBI query record, by the retriever's own opt-in, else its store's (None: off)."""
        if self._ubi.opt_in is None:
            return self.document_store.ubi_log(searcher, result) if self.document_store is not None else None
        if self.document_store is not None:
            # on the store's sync cluster (the searcher may be this loop's)
            self._ubi.open(self.document_store.searcher)
        return self._ubi.log(searcher, result)


@component
class HybridDocumentWriter:
    """Write ``Document``\\ s through :meth:`adapter.Ingestor.ingest`: embedded by the index's
    model, ``id`` kept (a re-run replaces, never duplicates), ``meta["title"]`` as the title, a
    splitter's ``source_id``/``split_id`` as the lineage and the rest of ``meta`` as metadata; a
    document without content or with an id the server refuses is listed in ``failures`` (``id``,
    ``reason``, ``line`` = its 1-based position) and the others land.

    :param ingestor: an :class:`adapter.Ingestor` (``Ingestor.open(client, alias, progress=False)``), or
    :param document_store: a :class:`HybridDocumentStore` (then the writer serialises).
    :param async_ingestor: an :class:`adapter.AsyncIngestor` next to a sync ``ingestor`` (``ingestor`` itself
        may be one: then only ``run_async`` works).

    ``run_async`` awaits the async ingestor (its own, else the store's for this loop) on the event
    loop; built from a sync ``ingestor`` alone, it runs :meth:`run` on a worker thread.
    """

    def __init__(
        self, ingestor: Any = None, *, document_store: HybridDocumentStore | None = None, async_ingestor: Any = None
    ) -> None:
        ingestor, self._async_ingestor = _aio.split(ingestor, async_ingestor)
        _one_source(self, ("ingestor", "Ingestor", "ingest"), ingestor, document_store)
        self._ingestor, self.document_store = ingestor, document_store

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=_store_json(self, "an Ingestor"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridDocumentWriter:
        return _from_store_json(cls, data)

    @component.output_types(documents_written=int, failures=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """``documents_written``: index entries written; ``failures``: what did not land."""
        return self._write(self._ingestor if self._ingestor is not None else self.document_store.ingestor, documents)  # type: ignore[union-attr]

    @component.output_types(documents_written=int, failures=list[dict[str, Any]])
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """:meth:`run` from asyncio (see the class docstring)."""
        ingestor = self._async_ingestor
        if ingestor is None and self.document_store is not None:
            ingestor = await self.document_store.async_ingestor()
        if ingestor is None:
            return await asyncio.to_thread(self.run, documents)
        return await aio.run(self._write, _aio.bridged(ingestor), documents)

    def _write(self, ingestor: Any, documents: list[Document]) -> dict[str, Any]:
        carried = self.document_store.carried_vectors if self.document_store is not None else "refuse"
        rows = [framework_row(doc, carried) for doc in documents]
        report = ingestor.ingest(source_rows(rows), total=len(rows))
        return {"documents_written": report.chunks, "failures": failures_json(report.failures)}


C = TypeVar("C", HybridRetriever, HybridDocumentWriter)


def _one_source(component: object, part: tuple[str, str, str], given: Any, document_store: Any) -> None:
    """A component works through its adapter part (``part``: its argument, its class, the method it calls) or
    through a :class:`HybridDocumentStore` (then it serialises): exactly one, of the right kind."""
    name, kind, method = part
    if (given is None) == (document_store is None):
        raise InputError(
            f"{type(component).__name__} takes {'an' if name[0] in 'aeiou' else 'a'} {name} (adapter.{kind}) or a "
            "document_store (HybridDocumentStore)"
        )
    if given is not None and not callable(getattr(given, method, None)):
        raise InputError(f"{name} must be an adapter.{kind}, got {type(given).__name__}")
    if document_store is not None and not isinstance(document_store, HybridDocumentStore):
        raise InputError(f"document_store must be a HybridDocumentStore, got {type(document_store).__name__}")


def _store_json(component: HybridRetriever | HybridDocumentWriter, built_from: str) -> dict[str, Any]:
    """The component's store, serialised: a component serialises only as built from one."""
    if component.document_store is None:
        raise InputError(
            f"a {type(component).__name__} built from {built_from} does not serialise: build it from a "
            "HybridDocumentStore"
        )
    return component.document_store.to_dict()


def _from_store_json(cls: type[C], data: dict[str, Any]) -> C:
    params = data["init_parameters"]
    params["document_store"] = HybridDocumentStore.from_dict(params["document_store"])
    built: C = default_from_dict(cls, data)
    return built


def _filters(filters: Any, content_field: str = "text") -> dict[str, Any] | None:
    """The adapter's filters from Haystack's grammar (any of it: a Clause) or the adapter's own dict."""
    if filters is None or (isinstance(filters, dict) and not filters):
        return None
    if isinstance(filters, dict) and ("operator" in filters or "conditions" in filters):
        return {"haystack": _clause(filters, content_field)}
    return adapter_filters(filters)


def framework_row(doc: Any, carried_vectors: str = "refuse") -> FrameworkRow:
    """A Haystack ``Document`` as the ingest's row: ``meta["title"]`` the title, the splitter's
    ``source_id``/``split_id`` its lineage, its bookkeeping left out, the rest the metadata; its
    ``embedding`` carried (checked against ``meta["embedded_by"]``) or, with ``"embed"``, dropped."""
    if not isinstance(doc, Document):
        raise InputError(f"expected haystack Documents, got {type(doc).__name__}")
    title, metadata = split_title(doc.meta)
    parent = metadata.pop(SOURCE_ID, None)
    split = metadata.pop(SPLIT_ID, None) if parent is not None else None
    stamp = metadata.pop(EMBEDDED_BY_FIELD, None)
    for key in BOOKKEEPING:
        metadata.pop(key, None)
    vector = doc.embedding if carried_vectors == "refuse" else None
    return FrameworkRow(
        doc.id,
        doc.content,
        title,
        metadata,
        parent_id=None if parent is None else str(parent),
        chunk_index=split if isinstance(split, int) and not isinstance(split, bool) else None,
        vector=vector,
        embedded_by=stamp if vector is not None else None,
    )


def haystack_document(hit: Hit, score: float | None = None) -> Document:
    """A hit as Haystack's ``Document``, its lineage back in ``meta``."""
    meta = hit_metadata(hit)
    parent = str(hit.source.get(PARENT_FIELD, hit.id))
    if parent != hit.id:
        meta[SOURCE_ID], meta[SPLIT_ID] = parent, int(hit.source.get(CHUNK_FIELD) or 0)
    return Document(id=hit.id, content=hit.text, score=score, meta=meta)


def _document(doc: StoredDocument) -> Document:
    source = {METADATA_FIELD: dict(doc.metadata), PARENT_FIELD: doc.parent_id, CHUNK_FIELD: doc.chunk_index}
    return haystack_document(Hit(doc.id, 0.0, source, title=doc.title, text=doc.text))


def _check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be a positive integer, got {top_k!r}")
    return top_k
