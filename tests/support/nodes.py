"""Nodes of our own for the reliability tier: killed, restarted, configured with node settings.

The shared development node must not be killed or reconfigured, so these run from their own
cache folder (reusing the assembled OpenSearch home of the default one, so nothing is downloaded
twice) and are stopped at the end.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Mapping


def own_node(name: str, settings: Mapping[str, str] | None = None, heap: str = "512m", nodes: int = 1):
    """A :class:`LocalNode` in its own cache folder, not started yet (``nodes=2``: a two-node cluster)."""
    from adapter.local import LocalNode, NodeConfig

    default = LocalNode(log=lambda m: None)
    home = os.environ.get("OPENSEARCH_HOME") or str(default._home())  # the default node's home, assembled once
    # As root the node runs as an unprivileged user, who must be able to traverse the folder.
    base = Path("/var/cache") if os.geteuid() == 0 else Path(tempfile.gettempdir())
    config = NodeConfig(cache_dir=base / f"hybrid-reliability-{name}", opensearch_home=home, heap=heap,
                        settings=dict(settings or {}), nodes=nodes)
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
