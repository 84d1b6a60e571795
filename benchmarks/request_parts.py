"""What each part of the default hybrid request costs the server (issue 37 item 3), by the server's ``took``.

    .venv/bin/python -m benchmarks.request_parts --url http://127.0.0.1:9200 --index bench-scifact [--queries 150]

The searcher's own request for each SciFact test query (vector given, k 10), then variants of it, each one
part changed: total hits not counted (``track_total_hits: false``), the texts from ``_source`` instead of the
excerpts' highlight, the candidate depth 20 / 10 instead of 100, without the empty shard, and with each leg's raw
score per hit (both sub-queries named, ``include_named_queries_score=true``: what the legs' relevance reads on a
server-fused page, docs/INTEROP.md, Scores). Every variant is sent for each query in a random order, ``--rounds``
rounds, the first untimed; the server's ``took`` (whole ms, so means are given beside medians), the client's wall
time through the same opensearch-py client, and the median over queries of each variant's wall time over the
request as sent, query by query. ``--only WORD ...``: the variants whose names hold one of the words.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import time
from typing import Any, Callable

from adapter.engines import connect
from adapter.engines.dsl import named_query
from adapter.evaluation.metrics import load_beir
from adapter.fusion import LEGS
from adapter.models.embedders import load_embedder
from adapter.search import Searcher
from benchmarks.run import SCIFACT

Variant = Callable[[str, dict[str, Any], dict[str, Any]], tuple[str, dict[str, Any], dict[str, Any]]]


def _depth(depth: int) -> Variant:
    def change(path: str, params: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        body = copy.deepcopy(body)
        hybrid = body["query"]["hybrid"]
        hybrid["pagination_depth"] = depth
        for leg in hybrid["queries"]:
            for clause in leg.get("knn", {}).values():
                clause["k"] = depth
        return path, params, body

    return change


def _no_total(path: str, params: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    return path, params, {**body, "track_total_hits": False}


def _source_texts(
    path: str, params: dict[str, Any], body: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    body = {k: v for k, v in body.items() if k != "highlight"}
    body["_source"] = {"excludes": ["embedding"]}
    return path, params, body


def _no_empty_shard(
    path: str, params: dict[str, Any], body: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    return path.replace(",hybrid-empty-shard", ""), params, body


def _named_scores(
    path: str, params: dict[str, Any], body: dict[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    body = copy.deepcopy(body)
    hybrid = body["query"]["hybrid"]
    hybrid["queries"] = [named_query(q, leg) for q, leg in zip(hybrid["queries"], LEGS)]
    return path, {**params, "include_named_queries_score": "true"}, body


VARIANTS: dict[str, Variant | None] = {
    "as sent (depth 100, excerpts, empty shard)": None,
    "track_total_hits: false": _no_total,
    "texts from _source, no highlight": _source_texts,
    "depth 20": _depth(20),
    "depth 10": _depth(10),
    "without the empty shard": _no_empty_shard,
    "legs' raw scores (named, include_named_queries_score)": _named_scores,
}
AS_SENT = next(iter(VARIANTS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--index", default="bench-scifact")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the queries, the first untimed")
    parser.add_argument(
        "--only", nargs="+", help="the variants whose names hold these words, beside the request as sent"
    )
    args = parser.parse_args()
    chosen = [AS_SENT, *(n for n in list(VARIANTS)[1:] if not args.only or any(w in n for w in args.only))]
    client = connect(args.url, timeout=60)
    embedder = load_embedder("minilm")
    searcher = Searcher.open(client, args.index, embedder)
    queries = list(load_beir(SCIFACT, "test").queries.values())[: args.queries]
    sent = []
    for query in queries:
        request = searcher.search(query, k=10, query_vector=embedder.embed_query(query)).sent[0]
        sent.append((request.path, dict(request.params), json.loads(json.dumps(request.body))))
    took: dict[str, list[float]] = {name: [] for name in chosen}
    wall: dict[str, list[float]] = {name: [] for name in chosen}
    load = [os.getloadavg()[0]]
    shuffle = random.Random(5)
    for round_ in range(args.rounds):
        for path, params, body in sent:
            names = list(chosen)
            shuffle.shuffle(names)
            for name in names:
                change = VARIANTS[name]
                p, q, b = change(path, params, body) if change else (path, params, body)
                started = time.perf_counter()
                answer = client.transport.perform_request("POST", p, params=q, body=b)
                if round_:
                    wall[name].append((time.perf_counter() - started) * 1000)
                    took[name].append(float(answer["took"]))
    load.append(os.getloadavg()[0])
    base = statistics.mean(took[AS_SENT])
    print(
        f"{len(queries)} SciFact test queries x {args.rounds - 1} timed rounds on {args.index}, k 10; "
        f"load average {load[0]:.1f} -> {load[1]:.1f}"
    )
    print("| request | took p50 ms | took mean ms | mean / as sent | client p50 ms | p50 of client ms / as sent |")
    print("|---|---|---|---|---|---|")
    for name in chosen:
        paired = statistics.median(w / b for w, b in zip(wall[name], wall[AS_SENT]))
        print(
            f"| {name} | {statistics.median(took[name]):.0f} | {statistics.mean(took[name]):.2f} | "
            f"{statistics.mean(took[name]) / base:.2f} | {statistics.median(wall[name]):.2f} | {paired:.3f} |"
        )


if __name__ == "__main__":
    main()
