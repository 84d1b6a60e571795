"""Nodes of our own for the reliability tier: killed, restarted, configured with node settings.

The shared development node must not be killed or reconfigured, so these run from their own
cache folder (reusing the assembled OpenSearch home of the default one, so nothing is downloaded
twice) and are stopped at the end.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Mapping


def own_cache_dir(name: str) -> Path:
    """``<the session's test cache>/own-<name>``: a cluster of its own, beside the session's node.

    The test cache (tests/conftest.py) is one the node user can traverse when run as root, and its
    downloads and assembled homes come from the user's cache folder (HYBRID_ARTIFACTS_DIR).
    """
    from adapter.local.config import default_cache_dir

    return default_cache_dir() / f"own-{name}"


def own_node(
    name: str,
    settings: Mapping[str, str] | None = None,
    heap: str = "512m",
    nodes: int = 1,
    distribution: str = "opensearch",
):
    """A :class:`LocalNode` in its own cache folder, not started yet (``nodes=2``: a two-node cluster)."""
    from adapter.local import LocalNode, NodeConfig

    config = NodeConfig(
        cache_dir=own_cache_dir(name),
        heap=heap,
        settings=dict(settings or {}),
        nodes=nodes,
        distribution=distribution,
        hunspell=distribution == "opensearch",
    )
    return LocalNode(config, log=lambda m: None)


def kill_hard(node) -> int:
    """SIGKILL the node's JVM (no shutdown hooks, no flush) and wait until it is gone."""
    from adapter.local import procs

    pid = node.status().pid
    if not pid:
        raise RuntimeError(f"{node.name} is not running: nothing to kill")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not procs.pid_alive(pid):  # a zombie counts as gone: whoever reaps it is not us
            return pid
        time.sleep(0.1)
    raise RuntimeError(f"node pid {pid} survived SIGKILL")


def restart(node, timeout: float = 600.0):
    """Start ``node`` again after a kill, waiting as long as a loaded machine needs (the default start
    timeout is for a node started once, not for a restart among other suites' load)."""
    from dataclasses import replace

    from adapter.local import LocalNode

    return LocalNode(replace(node.config, start_timeout=timeout), log=lambda m: None).up()
