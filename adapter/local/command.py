"""``hybrid local up | down | status | logs``: the command-line face of :class:`LocalNode`."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(sub) -> None:
    from .distribution import DEFAULT_VERSION

    local = sub.add_parser("local", help="a local OpenSearch node with k-NN and neural-search (from Maven)")
    local.add_argument("action", choices=["up", "down", "status", "logs"])
    local.add_argument("--version", default=DEFAULT_VERSION, help="OpenSearch version (default %(default)s)")
    local.add_argument("--cache-dir", help="where artifacts, the home and the node's data live (env HYBRID_CACHE_DIR)")
    local.add_argument("--port", type=int, help="HTTP port on 127.0.0.1 (default: the running node's, else a free one)")
    local.add_argument("--heap", default="1g", help="JVM heap (default %(default)s)")
    local.add_argument("--java-home", help="JDK to run the node with (env HYBRID_JAVA_HOME, JAVA_HOME)")
    local.add_argument("--fetcher", choices=["auto", "maven", "https"], default="auto",
                       help="how artifacts are fetched: Maven as configured, or HTTPS from --repository")
    local.add_argument("--repository", help="Maven repository base URL for HTTPS (env HYBRID_MAVEN_REPOSITORY)")
    local.add_argument("-n", "--lines", type=int, default=50, help="log lines to show (logs)")
    local.add_argument("--json", action="store_true", help="status as JSON")
    local.set_defaults(func=run)


def node_config(args):
    from .node import NodeConfig, default_cache_dir

    return NodeConfig(
        version=args.version,
        cache_dir=Path(args.cache_dir) if args.cache_dir else default_cache_dir(),
        port=getattr(args, "port", None),
        heap=getattr(args, "heap", "1g"),
        java_home=args.java_home,
        fetcher=args.fetcher,
        repository=args.repository,
    )


def print_status(status) -> None:
    if not status.running:
        print("not running")
        return
    print(f"url:      {status.url}")
    print(f"pid:      {status.pid}")
    print(f"version:  {status.version}")
    print("plugins:  " + ", ".join(f"{n} {v}" for n, v in status.plugins))
    print("modules:  " + ", ".join(status.modules))
    if status.heap_max_bytes:
        print(f"heap max: {status.heap_max_bytes / 2**20:.0f} MiB")
    if status.rss_bytes:
        print(f"rss:      {status.rss_bytes / 2**20:.0f} MiB")
    print(f"home:     {status.home}")


def run(args) -> int:
    from .node import LocalNode

    node = LocalNode(node_config(args), log=lambda msg: print(msg, file=sys.stderr))
    if args.action == "up":
        status = node.up()
        print(status.url)
    elif args.action == "down":
        if not node.down():
            print("no node from this cache folder is running")
    elif args.action == "status":
        status = node.status()
        if args.json:
            print(json.dumps(status.__dict__, indent=2))
        else:
            print_status(status)
        return 0 if status.running else 3
    elif args.action == "logs":
        print(node.logs(args.lines))
    return 0
