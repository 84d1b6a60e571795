"""Stop: a node's JVM signalled (SIGTERM, then SIGKILL after ``timeout``), and only when the state
file's record of it is still this cluster's process."""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Callable

from adapter.local import procs
from adapter.local.layout import Layout
from adapter.local.state import why_not_ours


def terminate(pid: int, timeout: float) -> None:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while procs.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if procs.pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def stop_all(layout: Layout, state: dict[str, Any], log: Callable[[str], None], *, timeout: float = 60.0) -> list[str]:
    """Every node of ``state`` that is still this cluster's JVM stopped; returns their pids. A recorded
    process that is not (a pid reused since) is left alone and named in the log."""
    stopped = []
    for node in state["nodes"]:
        why = why_not_ours(layout, state, node)
        if why is None:
            terminate(node["pid"], timeout)
            stopped.append(str(node["pid"]))
        elif node.get("pid") and why != "not running":
            log(f"not signalling pid {node['pid']} from {layout.state_file}: {why}")
    return stopped
