"""N searches at once: AsyncSearcher on one event loop against the sync Searcher on N threads (and one
after another), over the same index, with each request held ``--delay`` seconds by a proxy (a
remote cluster's latency). The query vectors are given, so what differs is the waiting only.

    .venv/bin/python -m benchmarks.async_searches --url http://127.0.0.1:9200 [--n 64] [--delay 0.05] [--rounds 3]

Without ``--index``, builds a throwaway index of the Spanish support documents (and drops it).
Prints each way's median wall time over the rounds, searches per second, the threads it used, and
whether every way found the same hits in the same order.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter import AsyncSearcher, Searcher, connect, connect_async, init_index, IndexSpec, Ingestor, read_source  # noqa: E402
from adapter.ingest.sources import FieldMap  # noqa: E402
from adapter.models.embedders import E5Embedder  # noqa: E402

QUERIES = ("devoluciones y reembolsos", "error E-4012", "cómo cambio mi contraseña", "envío internacional")


def build(url: str, embedder: E5Embedder) -> str:
    alias = f"bench-async-{uuid.uuid4().hex[:6]}"  # not t-*: a test session starting alone removes those
    client = connect(url)
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer="spanish"))
    Ingestor.open(client, alias, embedder, progress=False).ingest(
        read_source(ROOT / "adapter" / "data" / "support_es.jsonl", FieldMap(metadata=("category", "lang")))
    )
    return alias


def drop(url: str, alias: str) -> None:
    from tests.conftest import drop_hybrid_index

    drop_hybrid_index(connect(url), alias)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--index")
    parser.add_argument("--n", type=int, default=64, help="searches at once")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the proxy holds each request")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--technique", default="hybrid")
    args = parser.parse_args()
    embedder = E5Embedder()
    alias = args.index or build(args.url, embedder)
    vectors = {q: embedder.embed_query(q) for q in QUERIES}
    queries = [QUERIES[i % len(QUERIES)] for i in range(args.n)]
    try:
        with delaying_proxy(args.url, args.delay) as proxy_url:
            report(run_all(proxy_url, alias, embedder, vectors, queries, args), args)
    finally:
        if not args.index:
            drop(args.url, alias)


@contextlib.contextmanager
def delaying_proxy(url: str, delay: float) -> Iterator[str]:
    """The fault proxy holding each request ``delay`` seconds, in a process of its own (in this one, its
    threads would take the GIL from the searches)."""
    code = (
        "import sys, time; from tests.support.faults import Delay, FaultProxy\n"
        f"with FaultProxy({url!r}, lambda n, m, p: Delay({delay})) as proxy:\n"
        "    print(proxy.url, flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.communicate(timeout=30)


def run_all(url, alias, embedder, vectors, queries, args):
    """Each way's searches, timed per round; the searchers opened and warmed (pipeline read) before."""
    sync = Searcher.open(connect(url, pool_maxsize=args.n), alias, embedder)
    loop = asyncio.new_event_loop()  # one loop for every round: the asyncio client and its pool live on it
    aclient = connect_async(url, pool_maxsize=args.n)
    asearcher = loop.run_until_complete(AsyncSearcher.open(aclient, alias, embedder))

    def one(q):
        return [h.id for h in sync.search(q, technique=args.technique, k=10, query_vector=vectors[q]).hits]

    def sequential():
        return [one(q) for q in queries], 1

    def threads():
        with ThreadPoolExecutor(args.n) as pool:
            out = list(pool.map(one, queries))
            return out, searching_threads()

    async def gathered():
        results = await asyncio.gather(
            *(asearcher.search(q, technique=args.technique, k=10, query_vector=vectors[q]) for q in queries)
        )
        return [[h.id for h in r.hits] for r in results], searching_threads()

    ways = {
        "sequential (sync)": sequential,
        f"{args.n} threads (sync)": threads,
        "one event loop (async)": lambda: loop.run_until_complete(gathered()),
    }
    try:
        for way in ways.values():  # warm: connections open, the stored pipeline read
            way()
        timings: dict[str, list[float]] = {name: [] for name in ways}
        found: dict[str, list] = {}
        used: dict[str, int] = {}
        for _ in range(args.rounds):  # interleaved: the ways share the machine's noise
            for name, way in ways.items():
                t0 = time.perf_counter()
                found[name], used[name] = way()
                timings[name].append(time.perf_counter() - t0)
    finally:
        loop.run_until_complete(aclient.close())
        loop.close()
    return timings, found, used


def searching_threads() -> int:
    """The threads searching now: this one and the pools' (not the delaying proxy's, one per connection)."""
    return 1 + sum(1 for t in threading.enumerate() if t.name.startswith(("ThreadPoolExecutor", "asyncio_")))


def report(measured, args) -> None:
    timings, found, used = measured
    print(
        f"{args.n} {args.technique} searches, each request held {args.delay * 1000:.0f} ms, median of {args.rounds} "
        "rounds"
    )
    base = statistics.median(timings["sequential (sync)"])
    for name, seconds in timings.items():
        median = statistics.median(seconds)
        print(
            f"  {name:<26} {median:7.2f} s  {args.n / median:7.1f} searches/s  {base / median:5.1f}x  threads: "
            f"{used[name]}"
        )
    same = all(v == found["sequential (sync)"] for v in found.values())
    print(f"  same hits in the same order every way: {same}")


if __name__ == "__main__":
    main()
