"""The search-only floor (issue 37's first target): what the same request costs when no library sends it.

    .venv/bin/python -m benchmarks.search_floor --url URL --queries 100    # prints a markdown table

Search only, vector given, k 10, one caller, SciFact with MiniLM vectors: the adapter's ``Searcher`` against
LangChain's ``OpenSearchVectorSearch`` (its hybrid pipeline helper), and beside them each one's request body
sent raw through one bare opensearch-py client (the adapter's body as the searcher sent it for that query,
captured from ``SearchResult.sent``; LangChain's as its ``hybrid_search`` builds it). Every system once per
query in a random order, the first of the rounds untimed. What it shows: the share of each call that is the
server's answer to the request as sent. Where the raw requests cost the same, no client, however lean, reaches
a ratio below raw-ours / peer-whole-call.

Indices: ``<prefix>adapter`` and ``<prefix>langchain``, built as benchmarks/end_to_end.py builds them (a kept
``make bench-e2e`` run's, ``--prefix e2eq-`` with ``--keep``, are used as they are); deleted at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any, Callable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4, help="rounds over the queries, the first untimed (default 4)")
    parser.add_argument("--prefix", default="floor-")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    from opensearchpy import OpenSearch

    from adapter.engines import connect
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher
    from benchmarks.peers import Precomputed, adapter_systems, langchain_pipeline, langchain_store, load_corpus

    embedder = load_embedder("minilm")
    corpus = load_corpus(embedder, args.queries)
    client = connect(args.url, timeout=300)
    raw = OpenSearch(args.url, timeout=300)
    ours, theirs = f"{args.prefix}adapter", f"{args.prefix}langchain"
    adapter_systems(client, corpus, embedder, alias=ours)  # builds the adapter's index where it is missing
    if raw.indices.exists(index=theirs):
        from langchain_community.vectorstores import OpenSearchVectorSearch
        from langchain_core.embeddings import Embeddings

        given = Precomputed({corpus.queries[q]: v for q, v in corpus.query_vectors.items()})

        class Given(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                raise AssertionError("the index exists")

            def embed_query(self, text: str) -> list[float]:
                return given.vector(text)

        store = OpenSearchVectorSearch(args.url, theirs, Given(), engine="lucene", timeout=300)
    else:
        store = langchain_store(args.url, corpus, theirs)
    pipeline = langchain_pipeline(theirs)
    searcher = Searcher.open(client, ours, embedder)
    qids = list(corpus.queries)
    sent = {q: searcher.search(corpus.queries[q], k=10, query_vector=corpus.query_vectors[q]).sent[0] for q in qids}

    def langchain_body(q: str) -> dict[str, Any]:  # as OpenSearchVectorSearch's hybrid_search builds it
        vector = [float(x) for x in corpus.query_vectors[q]]
        return {
            "size": 10,
            "query": {
                "hybrid": {
                    "queries": [
                        {"match": {"text": {"query": corpus.queries[q]}}},
                        {"knn": {"vector_field": {"vector": vector, "k": 10}}},
                    ]
                }
            },
            "_source": {"exclude": ["vector_field"]},
        }

    theirs_bodies = {q: langchain_body(q) for q in qids}
    systems: dict[str, Callable[[str], Any]] = {
        "adapter: Searcher.search (default hybrid)": lambda q: searcher.search(
            corpus.queries[q], k=10, query_vector=corpus.query_vectors[q]
        ),
        "adapter's request, sent raw": lambda q: raw.transport.perform_request(
            "POST", sent[q].path, params=sent[q].params, body=sent[q].body
        ),
        "LangChain: similarity_search_with_score (hybrid)": lambda q: store.similarity_search_with_score(
            corpus.queries[q], k=10, search_type="hybrid_search", search_pipeline=pipeline
        ),
        "LangChain's request, sent raw": lambda q: raw.transport.perform_request(
            "POST", f"/{theirs}/_search", params={"search_pipeline": pipeline}, body=theirs_bodies[q]
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in systems}
    rng, load0 = random.Random(7), os.getloadavg()[0]
    try:
        for rnd in range(args.rounds):
            for q in qids:
                names = list(systems)
                rng.shuffle(names)
                for name in names:
                    t0 = time.perf_counter()
                    systems[name](q)
                    if rnd:
                        times[name].append((time.perf_counter() - t0) * 1000)
    finally:
        if not args.keep:
            raw.indices.delete(index=f"{ours}*,{theirs}", ignore=[404])
            raw.transport.perform_request("DELETE", f"/_search/pipeline/{pipeline}", params={"ignore": 404})
    p50 = {name: statistics.median(t) for name, t in times.items()}
    peer = p50["LangChain: similarity_search_with_score (hybrid)"]
    print(
        f"SciFact, {len(qids)} queries x {args.rounds - 1} timed rounds, k 10, vector given, one caller; "
        f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}\n"
    )
    print("| call | p50 ms | mean ms | p50 / LangChain's whole call |")
    print("|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {p50[name]:.2f} | {statistics.mean(t):.2f} | {p50[name] / peer:.2f} |")


if __name__ == "__main__":
    main()
