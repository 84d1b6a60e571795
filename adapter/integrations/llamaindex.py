"""LlamaIndex on an adapter index (the ``llamaindex`` extra: ``llama-index-core``).

:class:`HybridRetriever` is a ``BaseRetriever`` whose nodes come from the adapter's server-side
hybrid search; :class:`HybridNodeWriter` is a transformation that writes nodes through the
adapter's ingest (the index's own model, its checks), as the last step of an ``IngestionPipeline``::

    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline

    from adapter import Ingestor, Searcher, connect
    from adapter.integrations.llamaindex import HybridNodeWriter, HybridRetriever

    client = connect(url)
    IngestionPipeline(transformations=[HybridNodeWriter(ingestor=Ingestor.open(client, "docs", progress=False))]).run(
        documents=[Document(id_="faq-1", text="...", metadata={"title": "...", "lang": "es"})])
    nodes = HybridRetriever(Searcher.open(client, "docs"), similarity_top_k=5).retrieve("error E-4012")

Each ``NodeWithScore`` has ``score`` = the fused score and a ``TextNode`` with ``id_`` = the hit's
id, ``text`` = its body text and ``metadata`` = the hit's metadata fields, ``title``, ``parent_id``,
``chunk_index``, ``score``, ``rank``, ``fused_by`` and (with ``explain``, the default) ``legs``.
LlamaIndex's own OpenSearch store reads other field names, ranks differently (a ``match`` on
``text`` only) and, on write, adds ``_node_content`` and other keys that an adapter index refuses.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

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
from pydantic import ConfigDict, PrivateAttr  # noqa: E402

from adapter.errors import InputError  # noqa: E402
from adapter.ingest.report import IngestReport  # noqa: E402
from adapter.integrations._common import (  # noqa: E402
    FrameworkRow,
    adapter_filters,
    hit_metadata,
    raise_on_failures,
    resolve_fusion,
    source_rows,
    split_title,
)
from adapter.search.page import SearchOptions  # noqa: E402
from adapter.search.results import Hit, Technique  # noqa: E402


class HybridRetriever(BaseRetriever):
    """Retrieve ``NodeWithScore`` with :meth:`adapter.Searcher.search`.

    :param searcher: an :class:`adapter.Searcher` on the index.
    :param similarity_top_k: nodes returned.
    :param technique: ``hybrid`` (the server fuses), ``bm25``, ``dense`` or ``client-rrf``.
    :param fusion: ``None`` (the index's default), ``"adaptive"``, a fusion name or object.
    :param filters: ``MetadataFilters`` (``==``, ``in``, ranges; ``and``) or the adapter's ``{"lang": "es"}``.
    :param explain: each leg's rank and score in ``metadata["legs"]``.
    :param search_kwargs: more :meth:`Searcher.search` options.
    """

    def __init__(self, searcher: Any, *, similarity_top_k: int = 10, technique: str = "hybrid", fusion: Any = None,
                 filters: Any = None, explain: bool = False, search_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not callable(getattr(searcher, "search", None)):
            raise InputError(f"searcher must be an adapter.Searcher, got {type(searcher).__name__}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise InputError(f"similarity_top_k must be a positive integer, got {similarity_top_k!r}")
        self.searcher = searcher
        self.similarity_top_k = similarity_top_k
        self.technique = Technique.parse(technique)
        self.fusion = resolve_fusion(searcher, fusion)
        self.filters = adapter_filters(filters)
        self.explain = explain
        self.search_kwargs = dict(search_kwargs or {})
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.searcher.search(query_bundle.query_str, technique=self.technique, k=self.similarity_top_k,
                                      filters=self.filters, fusion=self.fusion, explain=self.explain,
                                      options=SearchOptions(full_text=True), **self.search_kwargs)
        return [NodeWithScore(node=text_node(hit), score=hit.score) for hit in result.hits]


def text_node(hit: Hit) -> TextNode:
    """A hit (or a stored entry read as one) as a ``TextNode``: its metadata as written, kept out of
    the LLM's prompt and the embedding text (``excluded_*_metadata_keys``: the text alone is what
    the model reads), and its document as the ``SOURCE`` relationship (``node.ref_doc_id``)."""
    meta = hit_metadata(hit)
    parent = str(hit.source.get("parent_id", hit.id))
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=parent)} if parent != hit.id else {}
    return TextNode(id_=hit.id, text=hit.text, metadata=meta, relationships=relationships,
                    excluded_llm_metadata_keys=list(meta), excluded_embed_metadata_keys=list(meta))


def framework_rows(nodes: Sequence[BaseNode]) -> list[FrameworkRow]:
    """Nodes as the ingest's rows: a node split off a document (``ref_doc_id``) is a chunk of it,
    numbered in the order its document's nodes come."""
    rows, seen = [], Counter[str]()
    for node in nodes:
        title, metadata = split_title(node.metadata)
        parent = node.ref_doc_id if node.ref_doc_id and node.ref_doc_id != node.node_id else None
        index = None
        if parent is not None:
            index, seen[parent] = seen[parent], seen[parent] + 1
        rows.append(FrameworkRow(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), title, metadata,
                                 parent_id=parent, chunk_index=index))
    return rows


class HybridNodeWriter(TransformComponent):
    """Write nodes through :meth:`adapter.Ingestor.ingest` and pass them on unchanged.

    Each node is one document: ``node_id`` its id (give ``Document(id_=...)`` a stable id, or a
    re-run adds copies under new random ids), its text without metadata, ``metadata["title"]`` its
    title and the rest of ``metadata`` its metadata. Embeddings a node carries are not used: the
    ingestor embeds with the index's model. Long documents: let the ingestor chunk them
    (``Ingestor.open(..., chunking=Chunking(200, 40))``), which keeps ``parent_id`` for collapse.
    Nodes that do not land raise :class:`adapter.InputError` naming them after the others landed;
    :attr:`last_report` is the :class:`adapter.IngestReport` of the last call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ingestor: Any
    _last_report: IngestReport | None = PrivateAttr(default=None)

    @property
    def last_report(self) -> IngestReport | None:
        return self._last_report

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        rows = framework_rows(nodes)
        report = self.ingestor.ingest(source_rows(rows), total=len(rows))
        self._last_report = report
        raise_on_failures(report, "HybridNodeWriter", len(rows))
        return nodes
