"""Status: what a running cluster is, from its state file and its own answers (version, plugins,
modules, heap, health, the Hunspell locales its nodes loaded)."""

from __future__ import annotations

import urllib.error
from typing import Any

from adapter.local import procs
from adapter.local.config import NodeStatus
from adapter.local.layout import Layout
from adapter.local.start import http_options


def read_status(layout: Layout, state: dict[str, Any], alive: list[bool]) -> NodeStatus:
    """The status of the running cluster ``state`` records (``alive``: which of its nodes run)."""
    nodes = tuple(
        {
            "name": n["name"],
            "pid": n["pid"] if ok else None,
            "url": n["url"],
            "running": ok,
            "rss_bytes": procs.rss_bytes(n["pid"]) if ok else None,
        }
        for n, ok in zip(state["nodes"], alive)
    )
    url = next(n["url"] for n in nodes if n["running"])
    base = dict(
        running=True,
        url=url,
        pid=nodes[0]["pid"],
        home=state["home"],
        engine=layout.distribution.name,
        name=layout.name,
        nodes=nodes,
        java=f"{state['java_home']} (Java {state['java_major']}, {state['java_source']})",
        rss_bytes=sum(n["rss_bytes"] or 0 for n in nodes),
        version=state["version"],
    )
    try:
        info = procs.get_json(f"{url}/_nodes/_local/plugins,jvm,settings", **http_options(layout))["nodes"]
        health = procs.get_json(f"{url}/_cluster/health", **http_options(layout))["status"]
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return NodeStatus(**base)
    node = next(iter(info.values()))
    attrs = node.get("attributes", {})
    return NodeStatus(
        **{**base, "version": node.get("version", state["version"])},
        plugins=tuple(sorted((p["name"], p["version"]) for p in node.get("plugins", []))),
        modules=tuple(sorted(m["name"] for m in node.get("modules", []))),
        heap_max_bytes=node.get("jvm", {}).get("mem", {}).get("heap_max_in_bytes"),
        health=health,
        hunspell=tuple(attrs.get("hunspell", "").split(",")) if attrs.get("hunspell") else (),
    )
