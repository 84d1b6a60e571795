"""A real single-node OpenSearch (k-NN + neural-search) for development and tests, from Maven."""

from .distribution import DEFAULT_VERSION
from .node import LocalNode, NodeConfig, NodeStatus, default_cache_dir

__all__ = ["DEFAULT_VERSION", "LocalNode", "NodeConfig", "NodeStatus", "default_cache_dir"]
