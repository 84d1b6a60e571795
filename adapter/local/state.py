"""The cluster's state file (``state.json``: pids, ports, java, user), trusted only when the caller
owns it, and which of its recorded processes are still this cluster's JVMs."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from adapter.local import procs
from adapter.local.layout import Layout


def read_state(layout: Layout, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The state file, only if the caller owns it and nobody else can write it."""
    try:
        st = layout.state_file.stat()
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            log(f"ignoring {layout.state_file}: not owned by uid {os.geteuid()} or writable by others")
            return None
        state = json.loads(layout.state_file.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("nodes"), list) else None


def write_state(layout: Layout, state: dict[str, Any]) -> None:
    tmp = layout.state_file.with_name(".state.json.tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.chmod(0o644)
    os.replace(tmp, layout.state_file)


def why_not_ours(layout: Layout, state: dict[str, Any], node: dict[str, Any]) -> str | None:
    """Why the process recorded for ``node`` is not this cluster's JVM (None: it is)."""
    if not node.get("pid"):
        return "not started"
    return procs.is_node_process(
        node["pid"],
        java=state["java"],
        uid=state["uid"],
        main_class=layout.distribution.main_class,
        # Both engines pass the node's own tmp folder to the server JVM (Elasticsearch 9 passes no config path).
        node_arg=f"-Djava.io.tmpdir={node['dir']}/tmp",
        started=node.get("start_time"),
    )


def alive(layout: Layout, state: dict[str, Any]) -> list[bool]:
    return [why_not_ours(layout, state, n) is None for n in state["nodes"]]


def running_state(layout: Layout, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The recorded cluster, if at least one of its nodes still runs and is ours."""
    state = read_state(layout, log)
    if state and any(alive(layout, state)):
        return state
    return None
