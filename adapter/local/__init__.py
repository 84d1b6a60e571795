"""Real local OpenSearch (k-NN + neural-search) and Elasticsearch nodes for development and tests, from Maven."""

from adapter.local.config import NodeConfig, NodeStatus, default_cache_dir
from adapter.local.node import LocalNode
from adapter.local.releases import DEFAULT_VERSION, RELEASES, Release, resolve_release

__all__ = [
    "DEFAULT_VERSION",
    "RELEASES",
    "LocalNode",
    "NodeConfig",
    "NodeStatus",
    "Release",
    "default_cache_dir",
    "resolve_release",
]
