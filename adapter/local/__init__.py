"""Real local OpenSearch (k-NN + neural-search) and Elasticsearch nodes for development and tests, from Maven."""

from .releases import DEFAULT_VERSION, RELEASES, Release, resolve_release
from .node import LocalNode, NodeConfig, NodeStatus, default_cache_dir

__all__ = ["DEFAULT_VERSION", "RELEASES", "LocalNode", "NodeConfig", "NodeStatus", "Release", "default_cache_dir", "resolve_release"]
