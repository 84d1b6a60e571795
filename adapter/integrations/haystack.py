"""Haystack components on an adapter index (the ``haystack`` extra: ``haystack-ai``).

:class:`HybridRetriever` sends the adapter's server-side hybrid search (the index's fusion, or
any other; filters on metadata; ``top_k``) and returns Haystack ``Document``\\ s;
:class:`HybridDocumentWriter` indexes Haystack ``Document``\\ s through the adapter's ingest, so
they are embedded by the index's own model and checked like ``hybrid ingest``'s rows::

    from haystack import Document, Pipeline

    from adapter import Ingestor, Searcher, connect
    from adapter.integrations.haystack import HybridDocumentWriter, HybridRetriever

    client = connect(url)
    writer = HybridDocumentWriter(Ingestor.open(client, "docs", progress=False))
    writer.run([Document(id="faq-1", content="...", meta={"title": "...", "lang": "es"})])

    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridRetriever(Searcher.open(client, "docs"), top_k=5))
    docs = pipeline.run({"retriever": {"query": "error E-4012"}})["retriever"]["documents"]

Each retrieved ``Document`` has ``id`` = the hit's id (``<parent_id>`` or ``<parent_id>#<n>``),
``content`` = its body text, ``score`` = the fused score, and ``meta`` = the metadata as written
(``title`` with it; a chunk Haystack's splitter made has its ``source_id`` and ``split_id`` back).
What the adapter knows of each hit comes apart, in the ``hits`` output (one dict per document:
``parent_id``, ``chunk_index``, ``score``, ``relevance`` in [0, 1], ``rank``, ``fused_by`` and,
with ``explain``, ``legs``: each leg's rank, raw and normalised score, weight and contribution). Haystack's own OpenSearch store reads an adapter index by other field names and
fuses in Python; these components use the index's contract and the server's fusion instead.
"""

from __future__ import annotations

from typing import Any

from adapter._optional import require

require("haystack", "the Haystack components")

from haystack import Document, component  # noqa: E402

from adapter.errors import InputError  # noqa: E402
from adapter.integrations._common import (  # noqa: E402
    FrameworkRow,
    adapter_filters,
    failures_json,
    hit_info,
    hit_metadata,
    resolve_fusion,
    source_rows,
    split_title,
)
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, Technique  # noqa: E402

# Haystack's DocumentSplitter writes the document a split came from and the split's position into meta:
# they are the entry's lineage (parent_id, chunk_index), given back under the same keys on the way out.
SOURCE_ID, SPLIT_ID = "source_id", "split_id"
# The splitter's bookkeeping (where a split starts, what it overlaps): not the user's metadata, kept out of the mapping.
BOOKKEEPING = ("_split_overlap", "split_idx_start")


@component
class HybridRetriever:
    """Retrieve ``Document``\\ s with :meth:`adapter.Searcher.search`.

    :param searcher: an :class:`adapter.Searcher` on the index (``Searcher.open(client, alias)``).
    :param top_k: documents returned (``run(top_k=...)`` overrides it).
    :param technique: ``hybrid`` (the server fuses), ``bm25``, ``dense`` or ``client-rrf``.
    :param fusion: ``None`` (the index's default pipeline, adaptive on a new index), ``"adaptive"``,
        a fusion name (``"rrf"``, ``"min_max-arithmetic_mean"``, ``"rrf-40"``) or a fusion object.
    :param filters: on metadata: the adapter's ``{"lang": "es"}`` or Haystack's
        ``{"field": "meta.lang", "operator": "==", "value": "es"}`` (``==``, ``in``, ranges, ``AND``).
    :param explain: add each leg's rank and score to ``meta["legs"]`` (the server's explanation
        processor; the same hits, a slower request).
    :param search_kwargs: more :meth:`Searcher.search` options (``depth``, ``rerank_top``, ``mmr_lambda``, ...).
    """

    def __init__(self, searcher: Any, *, top_k: int = 10, technique: str = "hybrid", fusion: Any = None,
                 filters: Any = None, explain: bool = True, search_kwargs: dict[str, Any] | None = None) -> None:
        if not callable(getattr(searcher, "search", None)):
            raise InputError(f"searcher must be an adapter.Searcher, got {type(searcher).__name__}")
        _check_top_k(top_k)
        self.searcher = searcher
        self.top_k = top_k
        self.technique = Technique.parse(technique)
        self.fusion = resolve_fusion(searcher, fusion)
        self.filters = adapter_filters(filters)
        self.explain = explain
        self.search_kwargs = dict(search_kwargs or {})

    @component.output_types(documents=list[Document], hits=list[dict[str, Any]])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, Any]:
        """``filters`` and ``top_k`` given here replace the component's for this run. ``hits``: what
        the adapter knows of each document's hit, in the same order."""
        k = self.top_k if top_k is None else _check_top_k(top_k)
        wanted = self.filters if filters is None else adapter_filters(filters)
        result = self.searcher.search(query, technique=self.technique, k=k, filters=wanted, fusion=self.fusion,
                                      explain=self.explain, options=SearchOptions(full_text=True), **self.search_kwargs)
        return {"documents": [haystack_document(hit, hit.score) for hit in result.hits],
                "hits": [hit_info(hit, result).as_dict() for hit in result.hits]}


@component
class HybridDocumentWriter:
    """Write ``Document``\\ s through :meth:`adapter.Ingestor.ingest`: embedded by the index's
    model, ``id`` kept (a re-run replaces, never duplicates), ``meta["title"]`` as the title and the
    rest of ``meta`` as metadata; a document without content or with an id the server refuses is
    listed in ``failures`` (``id``, ``reason``, ``line`` = its 1-based position) and the others land.

    :param ingestor: an :class:`adapter.Ingestor` (``Ingestor.open(client, alias, progress=False)``
        uses the index's own embedder; its ``chunking`` splits long documents into
        ``<id>#<n>`` chunks with ``parent_id``, so a search can collapse them to one hit).
    """

    def __init__(self, ingestor: Any) -> None:
        if not callable(getattr(ingestor, "ingest", None)):
            raise InputError(f"ingestor must be an adapter.Ingestor, got {type(ingestor).__name__}")
        self.ingestor = ingestor

    @component.output_types(documents_written=int, failures=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """``documents_written``: index entries written (chunks, when chunking); ``failures``: what did not land."""
        rows = [framework_row(doc) for doc in documents]
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        return {"documents_written": report.chunks, "failures": failures_json(report.failures)}


def framework_row(doc: Any) -> FrameworkRow:
    """A Haystack ``Document`` as the ingest's row: ``meta["title"]`` the title, the splitter's
    ``source_id``/``split_id`` its lineage, its bookkeeping left out, the rest the metadata."""
    if not isinstance(doc, Document):
        raise InputError(f"expected haystack Documents, got {type(doc).__name__}")
    title, metadata = split_title(doc.meta)
    parent = metadata.pop(SOURCE_ID, None)
    split = metadata.pop(SPLIT_ID, None) if parent is not None else None
    for key in BOOKKEEPING:
        metadata.pop(key, None)
    return FrameworkRow(doc.id, doc.content, title, metadata, parent_id=None if parent is None else str(parent),
                        chunk_index=split if isinstance(split, int) and not isinstance(split, bool) else None)


def haystack_document(hit: Hit, score: float | None = None) -> Document:
    """A hit (or a stored entry read as one) as Haystack's ``Document``, its lineage back in ``meta``."""
    meta = hit_metadata(hit)
    parent = str(hit.source.get("parent_id", hit.id))
    if parent != hit.id:
        meta[SOURCE_ID], meta[SPLIT_ID] = parent, int(hit.source.get("chunk_index") or 0)
    return Document(id=hit.id, content=hit.text, score=score, meta=meta)


def _check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be a positive integer, got {top_k!r}")
    return top_k
