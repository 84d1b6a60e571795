"""The ports a cluster's nodes listen on: ``--port`` for node 1, else the last start's when they are
free (a saved URL keeps working), else free ones; remembered after ``down``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from adapter.errors import PortInUseError
from adapter.local import procs
from adapter.local.layout import Layout


def _ports_file(layout: Layout) -> Path:
    return layout.node_dir / "last-ports.json"  # kept after `down`, unlike the state file


def remember_ports(layout: Layout, ports: list[dict[str, Any]]) -> None:
    layout.node_dir.mkdir(parents=True, exist_ok=True)
    _ports_file(layout).write_text(json.dumps(ports))


def last_ports(layout: Layout) -> list[dict[str, Any]]:
    try:
        last = json.loads(_ports_file(layout).read_text())
        return [{"http": int(p["http"]), "transport": int(p["transport"])} for p in last]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def choose_ports(layout: Layout, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """``--port`` for node 1, else the ports of the last start when they are free, else free ones."""
    config, last = layout.config, last_ports(layout)
    taken: set[int] = set()
    ports = []
    for index in range(config.nodes):
        if index == 0 and config.port:
            http = config.port
            if not procs.port_is_free(http):
                raise PortInUseError(
                    f"port {http} on 127.0.0.1 is already in use by another process; pick another with --port"
                )
        else:
            http = _reuse(
                last[index]["http"] if index < len(last) else None, taken, f"node-{index + 1}'s HTTP port", log
            )
        taken.add(http)
        transport = _reuse(last[index]["transport"] if index < len(last) else None, taken, None, log)
        taken.add(transport)
        ports.append({"http": http, "transport": transport})
    return ports


def _reuse(port: int | None, taken: set[int], what: str | None, log: Callable[[str], None]) -> int:
    if port is not None and port not in taken and procs.port_is_free(port):
        return port
    fresh = procs.free_port()
    while fresh in taken:
        fresh = procs.free_port()
    if port is not None and what:
        log(f"{what} of the last start, port {port}, is taken by another process: using port {fresh}")
    return fresh
