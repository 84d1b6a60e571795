"""The default hybrid request as the searcher sends it (beside the empty shard, with the page's excerpts) against
its legs at equal depth, by the server's ``took`` (issue 30: at most 1.2x the slower leg).

    .venv/bin/python -m benchmarks.depth_as_sent --url http://127.0.0.1:47043 [--queries 200]

On ``bench-scifact`` (built as ``make bench`` builds it). Each request is built once per query, then sent once per
round in a random order; the last of two rounds is kept. The legs are sent with ``_source: false``; "dense k D,
size 10" retrieves as many candidates as the hybrid's leg and returns its page. docs/BENCHMARKS.md has the table.
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
from typing import Any

from adapter.engines import connect
from adapter.evaluation.metrics import load_beir
from adapter.models.embedders import load_embedder
from adapter.search import Searcher
from benchmarks.run import SCIFACT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--depths", default="10,100")
    args = parser.parse_args()
    client = connect(args.url, timeout=60)
    embedder = load_embedder("minilm")
    searcher = Searcher.open(client, "bench-scifact", embedder)
    queries = list(load_beir(SCIFACT, "test").queries.values())[: args.queries]
    vectors = [embedder.embed_query(q) for q in queries]

    def leg(i: int, technique: str, size: int, k: int) -> tuple[str, dict[str, Any], Any]:
        sent = searcher.search(queries[i], technique=technique, k=size, depth=k, query_vector=vectors[i]).sent[0]
        body = copy.deepcopy(sent.body)
        body["_source"] = False
        body.pop("highlight", None)
        if technique == "dense":
            body["query"]["knn"][searcher.info.vector_field]["k"] = k
        return sent.path, {}, body

    def hybrid(i: int, depth: int) -> tuple[str, dict[str, Any], Any]:
        sent = searcher.search(queries[i], k=10, depth=depth, query_vector=vectors[i]).sent[0]
        return sent.path, dict(sent.params), sent.body

    builders: dict[str, Any] = {}
    for d in (int(x) for x in args.depths.split(",")):
        builders[f"hybrid as sent, depth {d} (page 10, excerpts)"] = lambda i, d=d: hybrid(i, d)
        builders[f"bm25 size {d}"] = lambda i, d=d: leg(i, "bm25", d, d)
        builders[f"dense size {d}"] = lambda i, d=d: leg(i, "dense", d, d)
        builders[f"dense k {d}, size 10"] = lambda i, d=d: leg(i, "dense", 10, d)
    requests = {(name, i): build(i) for i in range(len(queries)) for name, build in builders.items()}
    took: dict[str, list[float]] = {name: [] for name in builders}
    for kept in (False, True):
        for i in range(len(queries)):
            names = list(builders)
            random.shuffle(names)
            for name in names:
                path, params, body = requests[(name, i)]
                answer = client.transport.perform_request("POST", path, params=params, body=body)
                if kept:
                    took[name].append(float(answer["took"]))
    print("| request | took p50 ms | took mean ms | p95 ms |\n|---|---|---|---|")
    for name, values in took.items():
        print(
            f"| {name} | {statistics.median(values):.1f} | {statistics.mean(values):.2f} | "
            f"{sorted(values)[int(0.95 * len(values))]:.0f} |"
        )


if __name__ == "__main__":
    main()
