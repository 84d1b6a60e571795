"""``hybrid fast-path``: check whether the parallel-legs fast path ranks an index's queries as its
server hybrid does and is faster, and keep the check with the index (:mod:`adapter.search.fast_path`)."""

from __future__ import annotations

import argparse

from adapter.cli.common import Subparsers, connect, read_queries, with_url
from adapter.errors import InputError


def add_parsers(sub: Subparsers) -> None:
    fp = with_url(
        sub.add_parser(
            "fast-path", help="measure the parallel-legs fast path against the server hybrid; keep it where it earns it"
        )
    )
    fp.add_argument("--index", required=True)
    fp.add_argument("--queries", help="a sample of the index's queries: one per line, or BEIR queries.jsonl")
    fp.add_argument("-k", type=int, default=10, help="hits per page (default %(default)s)")
    fp.add_argument(
        "--depth",
        type=int,
        help="candidates per leg (default: the searcher's, 100); searches take the fast path at this depth only",
    )
    fp.add_argument("--max-queries", type=int, default=200, help="queries checked (default 200)")
    what = fp.add_mutually_exclusive_group()
    what.add_argument(
        "--keep",
        action="store_true",
        help="keep the check with the index: searches take the fast path where it earned it",
    )
    what.add_argument(
        "--forget", action="store_true", help="remove the kept check: every hybrid is fused on the server again"
    )
    fp.set_defaults(func=run_fast_path)


def run_fast_path(args: argparse.Namespace) -> int:
    from adapter.search import Searcher
    from adapter.search.fast_path import check_fast_path, keep_fast_path

    cluster = connect(args)
    if args.forget:
        print(
            f"index {keep_fast_path(cluster, args.index, None)}: no fast-path check kept; every hybrid is fused on the "
            "server"
        )
        return 0
    if not args.queries:
        raise InputError("give --queries to check with (or --forget)")
    searcher = Searcher.open(cluster, args.index)
    check = check_fast_path(
        searcher, read_queries(args.queries), k=args.k, depth=args.depth, max_queries=args.max_queries
    )
    print(
        f"index {args.index} on {check.version}, {check.queries} queries, k {check.k}, depth {check.depth}, fusion "
        f"{check.fusion}"
    )
    print(f"  server hybrid      client p50 {check.hybrid_p50_ms:8.1f} ms")
    print(f"  fast path          client p50 {check.fast_p50_ms:8.1f} ms  ({check.ratio:.2f}x)")
    print(f"  same page          {check.same_pages}/{check.queries} queries")
    print(
        f"  same list          {check.same_lists}/{check.queries} queries (the whole fused list to depth "
        f"{check.depth}, in order: every offset; {check.shards} shard{'s' if check.shards != 1 else ''})"
    )
    why = check.why_not()
    print("the fast path earns it" if why is None else f"the fast path does not earn it: {why}")
    if args.keep:
        index = keep_fast_path(cluster, args.index, check if why is None else None)
        print(
            f"kept with {index}: hybrid searches at depth {check.depth} take the fast path at any offset, and say so"
            if why is None
            else f"nothing kept with {index} (and any earlier check removed): every hybrid is fused on the server"
        )
    return 0
