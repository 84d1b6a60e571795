"""OpenSearch-native hybrid search: BM25 + k-NN fused by the server, embeddings computed in Python.
Elasticsearch 8.19 / 9.x too (``connect_cluster`` picks the client; the ``elasticsearch`` extra).

The public API (everything else is internal)::

    from adapter import connect, init_index, IndexSpec, Ingestor, Searcher, load_embedder, read_source

    client = connect("http://localhost:9200")
    embedder = load_embedder("minilm")
    init_index(client, "docs", IndexSpec(embedder.fingerprint, analyzer="english", text_layout="combined"))  # as `hybrid init`
    Ingestor.open(client, "docs", embedder).ingest(read_source("docs.jsonl"))
    result = Searcher.open(client, "docs", embedder).search("error E-4012", technique="hybrid")

Shell objects (client, models, searcher) import lazily, so ``import adapter`` stays light.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version as _dist_version
from typing import TYPE_CHECKING, Any

from .errors import (
    ArtifactNotFoundError,
    AssetError,
    AuthenticationError,
    BackendError,
    CapabilityError,
    ChecksumError,
    ClusterUnavailableError,
    ConfigurationError,
    HybridError,
    IndexMismatchError,
    InputError,
    JavaError,
    LocalNodeError,
    MigrationError,
    NodeStartError,
    PermissionDeniedError,
    PipelineNotFoundError,
    PortInUseError,
    TLSError,
)
from .fastpath import FastPath, FastPathCheck
from .fusion import (
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
from .types import (
    Bucket,
    EmbeddingFingerprint,
    Facet,
    FusedBy,
    FusionChoice,
    Hit,
    IngestReport,
    ItemFailure,
    LegScore,
    SearchResult,
    Technique,
)

try:  # the installed distribution's version (pyproject.toml); `hybrid --version` prints it
    __version__ = _dist_version("opensearch-hybrid-adapter")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs (nothing is imported at run time);
    # `name as name`: a re-export that a strict checker accepts (a star in __all__ it cannot read)
    from .engines import connect as connect, connect_cluster as connect_cluster
    from .capabilities import Capabilities as Capabilities
    from .assets import IndexSpec as IndexSpec, IndexNames as IndexNames
    from .documents import DocumentLayout as DocumentLayout
    from .catalog import IndexInfo as IndexInfo, read_index_info as read_index_info
    from .engines import Engine as Engine, engine_for as engine_for
    from .admin import init_index as init_index, InitReport as InitReport
    from .spec import Spec as Spec, load_spec as load_spec
    from .plan import Plan as Plan, plan_spec as plan_spec, apply_plan as apply_plan
    from .migrate import reindex as reindex, rollback as rollback, prune as prune
    from .embedders import Embedder as Embedder, SentenceTransformerEmbedder as SentenceTransformerEmbedder
    from .embedders import E5Embedder as E5Embedder, load_embedder as load_embedder
    from .cache import EmbeddingCache as EmbeddingCache
    from .ingest import Ingestor as Ingestor
    from .sources import FieldMap as FieldMap, Chunking as Chunking, read_source as read_source
    from .search import Searcher as Searcher, FusionPlan as FusionPlan
    from .queries import TextLeg as TextLeg
    from .page import SearchOptions as SearchOptions, Collapse as Collapse, SortKey as SortKey, MMRPlace as MMRPlace
    from .rerank import Reranker as Reranker, CrossEncoderReranker as CrossEncoderReranker
    from .fusion import rrf as rrf, fuse as fuse
    from .mmr import mmr as mmr
    from .local import LocalNode as LocalNode, NodeConfig as NodeConfig
    from .adaptive import AdaptivePolicy as AdaptivePolicy, Calibration as Calibration, DEFAULT_POLICY as DEFAULT_POLICY
    from .calibration import calibrate_index as calibrate_index
    from .fast_path_check import check_fast_path as check_fast_path, keep_fast_path as keep_fast_path

_LAZY = {
    "connect": "engines",
    "connect_cluster": "engines",
    "Capabilities": "capabilities",
    "IndexSpec": "assets",
    "IndexNames": "assets",
    "DocumentLayout": "documents",
    "IndexInfo": "catalog",
    "read_index_info": "catalog",
    "Engine": "engines",
    "engine_for": "engines",
    "init_index": "admin",
    "InitReport": "admin",
    "Spec": "spec",
    "load_spec": "spec",
    "Plan": "plan",
    "plan_spec": "plan",
    "apply_plan": "plan",
    "reindex": "migrate",
    "rollback": "migrate",
    "prune": "migrate",
    "Embedder": "embedders",
    "SentenceTransformerEmbedder": "embedders",
    "E5Embedder": "embedders",
    "load_embedder": "embedders",
    "EmbeddingCache": "cache",
    "Ingestor": "ingest",
    "FieldMap": "sources",
    "Chunking": "sources",
    "read_source": "sources",
    "Searcher": "search",
    "FusionPlan": "search",
    "AdaptivePolicy": "adaptive",
    "Calibration": "adaptive",
    "DEFAULT_POLICY": "adaptive",
    "calibrate_index": "calibration",
    "check_fast_path": "fast_path_check",
    "keep_fast_path": "fast_path_check",
    "TextLeg": "queries",
    "SearchOptions": "page",
    "Collapse": "page",
    "SortKey": "page",
    "MMRPlace": "page",
    "Reranker": "rerank",
    "CrossEncoderReranker": "rerank",
    "rrf": "fusion",
    "fuse": "fusion",
    "mmr": "mmr",
    "LocalNode": "local",
    "NodeConfig": "local",
}

__all__ = [
    "__version__",
    # errors
    "HybridError", "ConfigurationError", "InputError", "AssetError", "IndexMismatchError", "CapabilityError",
    "PipelineNotFoundError", "BackendError", "ClusterUnavailableError", "LocalNodeError", "JavaError",
    "ArtifactNotFoundError", "ChecksumError", "PortInUseError", "NodeStartError", "MigrationError",
    "AuthenticationError", "PermissionDeniedError", "TLSError",
    # values
    "Technique", "Normalization", "Combination", "Fusion", "RRF", "ScoreNormalization", "ScoreSum", "DEFAULT_FUSION", "DEFAULT_WEIGHTS",
    "parse_fusion", "FusedBy", "FusionChoice", "Hit", "LegScore", "SearchResult", "Facet", "Bucket", "EmbeddingFingerprint",
    "IngestReport", "ItemFailure", "FastPath", "FastPathCheck",
    # functions and classes (lazy)
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'adapter' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
