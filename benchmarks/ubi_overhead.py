"""What UBI logging adds to a search's latency (issue 40: at most 0.5 ms p50 with logging on).

    OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python benchmarks/ubi_overhead.py --index perfes [--rounds 20]

The same hybrid searches (soporte-es's 124 queries, their vectors embedded once before timing: no model
time) run through a plain ``Searcher`` and through ``UbiLogger(...).wrap(searcher)``, interleaved: each
query runs both ways back to back, the order flipped by a seeded coin, so drift on a shared machine
falls on both sides alike. The logger is a real one: its thread writes the records to UBI indices of
this run's own (``bench-ubi-<random>-queries`` / ``-events``, deleted at the end) on the same node while
the searches run. Prints each side's p50 / p90 / p99 (ms), the difference of the p50s, the median of the
paired differences, ``log_search`` alone (the part a search thread pays), the logger's counts and the load average
before and after. docs/BENCHMARKS.md
("UBI logging overhead") lists what it printed. Exits 1 when the p50 grew by more than the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

BOUND_MS = 0.5
QUERIES = Path(__file__).parent / "data" / "soporte-es" / "queries.jsonl"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--index", default="perfes")
    parser.add_argument(
        "--rounds", type=int, default=20, help="passes over the queries, each query both ways (default %(default)s)"
    )
    parser.add_argument("--warmup", type=int, default=2, help="untimed passes first (default %(default)s)")
    parser.add_argument("--seed", type=int, default=40)
    args = parser.parse_args(argv)

    from adapter.engines import connect_cluster
    from adapter.search import Searcher
    from adapter.traffic.logger import UbiLogger
    from adapter.traffic.store import UbiStore

    cluster = connect_cluster(args.url)
    searcher = Searcher.open(cluster, args.index)
    texts = [json.loads(line)["text"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    vectors = [searcher.embedder.embed_query(t) for t in texts]  # before timing: the searches carry their vectors
    name = f"bench-ubi-{uuid.uuid4().hex[:6]}"
    store = UbiStore(searcher.cluster, queries_index=f"{name}-queries", events_index=f"{name}-events")
    logger = UbiLogger(store)
    logged = logger.wrap(searcher)

    def plain(i: int) -> None:
        searcher.search(texts[i], k=10, query_vector=vectors[i])

    def with_logging(i: int) -> None:
        logged.search(texts[i], k=10, query_vector=vectors[i], client_id="bench")

    runs = {"plain": plain, "logged": with_logging}
    times: dict[str, list[float]] = {"plain": [], "logged": []}
    own: list[float] = []  # log_search alone, microseconds
    coin = random.Random(args.seed)
    load_before = os.getloadavg()
    try:
        for n in range(args.warmup + args.rounds):
            for i in range(len(texts)):
                order = ["plain", "logged"] if coin.random() < 0.5 else ["logged", "plain"]
                for side in order:
                    started = time.perf_counter()
                    runs[side](i)
                    if n >= args.warmup:
                        times[side].append((time.perf_counter() - started) * 1000)
        # the search thread's own part, alone: building one record and queueing it (no search around it)
        results = [searcher.search(t, k=10, query_vector=v) for t, v in zip(texts, vectors)]
        for _ in range(args.rounds):
            for result in results:
                started = time.perf_counter()
                logger.log_search(result, client_id="bench", index=args.index)
                own.append((time.perf_counter() - started) * 1e6)
        load_after = os.getloadavg()
        logger.close(60)
        stats = logger.stats
    finally:
        logger.close(60)
        searcher.cluster.delete_indices(
            [store.queries_index, store.events_index], action="deleting this run's UBI indices"
        )
    pairs = [b - a for a, b in zip(times["plain"], times["logged"])]
    print(
        f"index {args.index} on {args.url}: {len(texts)} queries x {args.rounds} rounds, each both ways (hybrid, k 10, "
        "vectors given)"
    )
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
        f"{' '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} CPUs)"
    )
    print("| searches | n | p50 ms | p90 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for side, label in (("plain", "plain Searcher"), ("logged", "UbiLogger(...).wrap(searcher)")):
        v = times[side]
        print(
            f"| {label} | {len(v)} | {percentile(v, 0.5):.3f} | {percentile(v, 0.9):.3f} | {percentile(v, 0.99):.3f} |"
        )
    grew = percentile(times["logged"], 0.5) - percentile(times["plain"], 0.5)
    print(
        f"p50 difference (logged - plain): {grew:+.3f} ms; median of the paired differences: "
        f"{statistics.median(pairs):+.3f} ms (bound {BOUND_MS} ms)"
    )
    print(
        f"log_search alone (the search thread's part): p50 {percentile(own, 0.5):.1f} us, p99 "
        f"{percentile(own, 0.99):.1f} us over {len(own)} calls"
    )
    print(f"logger: {stats.queued} queued, {stats.written} written, {stats.dropped} dropped, {stats.failed} failed")
    return 0 if grew <= BOUND_MS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
