"""The adapter against what users would pick instead (issue 23): ``make bench-peers``.

    .venv/bin/pip install -c constraints.txt -e '.[peers]'
    nice -n 10 .venv/bin/python -m benchmarks.peers            # -> docs/BENCHMARKS.md, section "Against peers"

SciFact test (300 queries), one local OpenSearch node, MiniLM vectors computed once (the shared
embedding cache) and handed to every system, so the systems differ only in what they ask the node
and do in the client. Each peer builds its own index with its own writer and the layout its docs
show, with one change: the local node's k-NN plugin has no native libraries, so the faiss/nmslib
engines the peers default to are replaced by lucene HNSW (the adapter's engine; every other
parameter is the peer's):

- LangChain ``OpenSearchVectorSearch`` (langchain-community): ``add_embeddings``; hybrid through
  its ``configure_search_pipelines`` helper (min_max, weights 0.7 keyword / 0.3 vector, its
  defaults) and ``search_type="hybrid_search"``; dense by its default approximate search.
- Haystack ``OpenSearchHybridRetriever`` (opensearch-haystack) on an ``OpenSearchDocumentStore``
  with its defaults: a BM25 and an embedding request, joined in Python by reciprocal rank fusion.
- LlamaIndex ``OpensearchVectorStore`` (llama-index-vector-stores-opensearch) in
  ``VectorStoreQueryMode.HYBRID`` with the search pipeline of its docs (min_max, 0.3 / 0.7).
- The adapter: its default hybrid (the index's default pipeline) at max(k, 20) candidates per leg
  (given with each request: the Searcher's own default depth is 100) and at 100, client-rrf, bm25
  and dense.

Every system answers the same 300 queries at k = 10 and k = 100, the (system, k) pairs
interleaved in a random order per query: nDCG@10 and Recall@100 of the returned list, client
p50/p95 per call (the query vector is given, so no model time).
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data")) / "scifact"
PEER_PACKAGES = (
    "langchain-community",
    "langchain-core",
    "haystack-ai",
    "opensearch-haystack",
    "llama-index-core",
    "llama-index-vector-stores-opensearch",
    "opensearch-py",
)


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


@dataclass(frozen=True)
class Corpus:
    ids: list[str]
    texts: list[str]  # what every system indexes and embeds: title + text (the adapter's embedding text)
    vectors: np.ndarray
    queries: dict[str, str]
    query_vectors: dict[str, np.ndarray]
    qrels: dict[str, dict[str, int]]


class Precomputed:
    """The vectors computed once, by text: what every framework is given as its embedding model."""

    def __init__(self, by_text: dict[str, np.ndarray]) -> None:
        self.by_text = by_text

    def vector(self, text: str) -> list[float]:
        return [float(x) for x in self.by_text[text]]


def load_corpus(embedder, limit: int | None) -> Corpus:
    import json

    from adapter.models.cache import EmbeddingCache, embed_documents
    from adapter.index.documents import embedding_text
    from adapter.evaluation.metrics import load_beir

    dataset = load_beir(SCIFACT, "test").limited(limit)
    ids, texts = [], []
    with open(dataset.corpus, encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if (doc.get("text") or "").strip():
                ids.append(str(doc["_id"]))
                texts.append(embedding_text(doc.get("title", ""), doc["text"]))
    vectors = embed_documents(embedder, texts, EmbeddingCache()).vectors
    query_vectors = {q: embedder.embed_query(text) for q, text in dataset.queries.items()}
    return Corpus(ids, texts, vectors, dataset.queries, query_vectors, dataset.qrels)


# -- the systems: each a function (query text, vector, k) -> ranked ids ---------------------------------
Search = Callable[[str, np.ndarray, int], list[str]]


# Each peer's index is built by its *_store function (index names are parameters, so a run can keep to names of its
# own on a shared node); benchmarks/end_to_end.py searches the same indices through each peer's embedding class.
def langchain_pipeline(index: str) -> str:
    return index.replace("-", "_") + "_hybrid"


def _complete(url: str, index: str, corpus: Corpus) -> bool:
    """Whether ``index`` exists and holds every document of ``corpus`` (what ``reuse`` takes as it is)."""
    from opensearchpy import OpenSearch

    raw = OpenSearch(url, timeout=300)
    return bool(raw.indices.exists(index=index)) and raw.count(index=index)["count"] == len(corpus.ids)


def langchain_store(url: str, corpus: Corpus, index: str = "peer-langchain", reuse: bool = False) -> Any:
    """The peer-langchain index and its hybrid pipeline, written by LangChain with the corpus's vectors; the store
    answers queries with the precomputed query vectors. ``reuse``: an index that already holds the corpus is taken
    as it is (runs compared side by side search the same index)."""
    from langchain_community.vectorstores import OpenSearchVectorSearch
    from langchain_core.embeddings import Embeddings

    queries = Precomputed({corpus.queries[q]: v for q, v in corpus.query_vectors.items()})

    class Given(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("documents are added with their vectors")

        def embed_query(self, text: str) -> list[float]:
            return queries.vector(text)

    store = OpenSearchVectorSearch(url, index, Given(), engine="lucene", timeout=300)
    if reuse and _complete(url, index, corpus):
        store.configure_search_pipelines(langchain_pipeline(index))
        return store
    if store.index_exists():
        store.delete_index()
    for start in range(0, len(corpus.ids), 1000):  # it refuses more embeddings per call than its bulk_size
        stop = start + 1000
        store.add_embeddings(
            list(zip(corpus.texts[start:stop], (v.tolist() for v in corpus.vectors[start:stop]))),
            ids=corpus.ids[start:stop],
            bulk_size=1000,
        )
    store.client.indices.refresh(index=index)
    store.configure_search_pipelines(langchain_pipeline(index))  # its defaults: min_max, 0.7 keyword / 0.3 vector
    return store


def langchain_systems(url: str, corpus: Corpus, index: str = "peer-langchain", store: Any = None) -> dict[str, Search]:
    store = store or langchain_store(url, corpus, index)
    pipeline = langchain_pipeline(index)

    def hybrid(q: str, v: np.ndarray, k: int) -> list[str]:
        found = store.similarity_search_with_score(q, k=k, search_type="hybrid_search", search_pipeline=pipeline)
        return [d.id for d, _ in found]

    def dense(q: str, v: np.ndarray, k: int) -> list[str]:
        return [d.id for d, _ in store.similarity_search_with_score(q, k=k)]

    return {
        "LangChain OpenSearchVectorSearch, hybrid (its pipeline helper)": hybrid,
        "LangChain OpenSearchVectorSearch, dense": dense,
    }


def haystack_store(url: str, corpus: Corpus, index: str = "peer-haystack", reuse: bool = False) -> Any:
    """The peer-haystack index, written by Haystack's OpenSearchDocumentStore with the corpus's vectors
    (``reuse``: as langchain_store)."""
    from haystack import Document
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore
    from opensearchpy import OpenSearch

    kept = reuse and _complete(url, index, corpus)
    if not kept:
        OpenSearch(url).indices.delete(index=index, ignore=[404])
    store = OpenSearchDocumentStore(
        hosts=[url],
        index=index,
        embedding_dim=corpus.vectors.shape[1],
        method={"space_type": "cosinesimil", "engine": "lucene", "name": "hnsw"},
    )
    if kept:
        return store
    store.write_documents(
        [Document(id=i, content=t, embedding=v.tolist()) for i, t, v in zip(corpus.ids, corpus.texts, corpus.vectors)],
        policy="overwrite",
    )
    OpenSearch(url).indices.refresh(index=index)
    return store


def haystack_systems(url: str, corpus: Corpus, index: str = "peer-haystack", store: Any = None) -> dict[str, Search]:
    from haystack import component
    from haystack_integrations.components.retrievers.opensearch import OpenSearchHybridRetriever

    queries = Precomputed({corpus.queries[q]: v for q, v in corpus.query_vectors.items()})

    @component
    class Given:
        @component.output_types(embedding=list[float])
        def run(self, text: str) -> dict[str, Any]:
            return {"embedding": queries.vector(text)}

    store = store or haystack_store(url, corpus, index)
    retrievers: dict[int, Any] = {}

    def hybrid(q: str, v: np.ndarray, k: int) -> list[str]:
        if k not in retrievers:
            retrievers[k] = OpenSearchHybridRetriever(store, embedder=Given(), top_k_bm25=k, top_k_embedding=k, top_k=k)
        return [d.id for d in retrievers[k].run(query=q)["documents"]]

    return {"Haystack OpenSearchHybridRetriever (RRF in Python)": hybrid}


def llamaindex_pipeline(index: str) -> str:
    return f"{index}-hybrid"


def llamaindex_store(url: str, corpus: Corpus, index: str = "peer-llamaindex", reuse: bool = False) -> Any:
    """The peer-llamaindex index and the search pipeline of LlamaIndex's docs, written by its OpensearchVectorStore
    (``reuse``: as langchain_store)."""
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.opensearch import OpensearchVectorClient, OpensearchVectorStore
    from opensearchpy import OpenSearch

    raw = OpenSearch(url, timeout=300)
    kept = reuse and _complete(url, index, corpus)
    if not kept:
        raw.indices.delete(index=index, ignore=[404])
    raw.transport.perform_request(
        "PUT",
        f"/_search/pipeline/{llamaindex_pipeline(index)}",
        body={  # as its docs show
            "description": "Post processor for hybrid search",
            "phase_results_processors": [
                {
                    "normalization-processor": {
                        "normalization": {"technique": "min_max"},
                        "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.3, 0.7]}},
                    }
                }
            ],
        },
    )
    client = OpensearchVectorClient(
        url,
        index,
        corpus.vectors.shape[1],
        embedding_field="embedding",
        text_field="content",
        engine="lucene",
        search_pipeline=llamaindex_pipeline(index),
        timeout=300,
    )
    store = OpensearchVectorStore(client)
    if kept:
        return store
    nodes = [TextNode(id_=i, text=t, embedding=v.tolist()) for i, t, v in zip(corpus.ids, corpus.texts, corpus.vectors)]
    for start in range(0, len(nodes), 1000):
        store.add(nodes[start : start + 1000])
    raw.indices.refresh(index=index)
    return store


def llamaindex_systems(
    url: str, corpus: Corpus, index: str = "peer-llamaindex", store: Any = None
) -> dict[str, Search]:
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    store = store or llamaindex_store(url, corpus, index)

    def hybrid(q: str, v: np.ndarray, k: int) -> list[str]:
        found = store.query(
            VectorStoreQuery(
                query_embedding=v.tolist(), query_str=q, similarity_top_k=k, mode=VectorStoreQueryMode.HYBRID
            )
        )
        return list(found.ids or [])

    return {"LlamaIndex OpensearchVectorStore, hybrid": hybrid}


def adapter_systems(client, corpus: Corpus, embedder, alias: str = "bench-scifact") -> dict[str, Search]:
    from adapter.search import Searcher
    from benchmarks.run import ensure_scifact_index

    searcher = Searcher.open(client, ensure_scifact_index(client, embedder, progress=False, alias=alias), embedder)

    def technique(name: str, depth: Callable[[int], int] | None = None) -> Search:
        def run(q: str, v: np.ndarray, k: int) -> list[str]:
            r = searcher.search(q, technique=name, k=k, depth=depth(k) if depth else None, query_vector=v)
            return [h.id for h in r.hits]

        return run

    return {
        "adapter: default hybrid, depth = max(k, 20)": technique("hybrid", lambda k: max(k, 20)),
        "adapter: default hybrid, depth 100": technique("hybrid", lambda k: max(k, 100)),
        "adapter: client-rrf, depth = max(k, 20)": technique("client-rrf", lambda k: max(k, 20)),
        "adapter: bm25": technique("bm25"),
        "adapter: dense": technique("dense", lambda k: k),
    }


# -- the run -----------------------------------------------------------------------------------------
def run_all(
    systems: dict[str, Search], corpus: Corpus, ks: Sequence[int], *, seed: int = 7
) -> dict[tuple[str, int], dict[str, Any]]:
    from adapter.evaluation.metrics import evaluate

    rankings: dict[tuple[str, int], dict[str, list[str]]] = {(s, k): {} for s in systems for k in ks}
    times: dict[tuple[str, int], list[float]] = {key: [] for key in rankings}
    qids = list(corpus.queries)
    for qid in qids[:10]:  # warm up every system
        for name, search in systems.items():
            for k in ks:
                search(corpus.queries[qid], corpus.query_vectors[qid], k)
    rng = random.Random(seed)
    for qid in qids:
        jobs = list(rankings)
        rng.shuffle(jobs)
        for name, k in jobs:
            t0 = time.perf_counter()
            ids = systems[name](corpus.queries[qid], corpus.query_vectors[qid], k)
            times[(name, k)].append((time.perf_counter() - t0) * 1000)
            rankings[(name, k)][qid] = ids
    out = {}
    for key, ranking in rankings.items():
        metrics = evaluate(corpus.qrels, ranking)
        out[key] = {
            "ndcg@10": metrics["ndcg@10"],
            "recall@100": metrics["recall@100"],
            "p50": pct(times[key], 50),
            "p95": pct(times[key], 95),
        }
    return out


def versions(names: Sequence[str] = PEER_PACKAGES) -> str:
    """``name version`` of each installed package of ``names`` (``(not installed)`` for the others)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in names:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def report(
    results: dict[tuple[str, int], dict[str, Any]],
    ks: Sequence[int],
    node: str,
    queries: int,
    load: tuple[float, float],
    seconds: float,
) -> list[str]:
    names = list(dict.fromkeys(name for name, _ in results))
    lines = []
    for k in ks:
        lines += [
            f"### k = {k}",
            "",
            "| system | nDCG@10 | Recall@100 | client p50 ms | client p95 ms |",
            "|---|---|---|---|---|",
        ]
        for name in names:
            r = results[(name, k)]
            lines.append(f"| {name} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['p50']:.2f} | {r['p95']:.2f} |")
        lines.append("")
        peers = [n for n in names if not n.startswith("adapter") and "dense" not in n]
        ours = "adapter: default hybrid, depth = max(k, 20)"
        lines += [
            f"Targets at k = {k} (the adapter's default hybrid, depth = max(k, 20), against each peer's hybrid): "
            "quality >= the peer's AND client p50 <= 0.8x the peer's.",
            "",
            "| peer hybrid | nDCG@10 adapter - peer | p50 adapter / peer | met |",
            "|---|---|---|---|",
        ]
        for peer in peers:
            a, p = results[(ours, k)], results[(peer, k)]
            dq, ratio = a["ndcg@10"] - p["ndcg@10"], a["p50"] / p["p50"]
            lines.append(f"| {peer} | {dq:+.4f} | {ratio:.2f} | {'yes' if dq >= 0 and ratio <= 0.8 else 'no'} |")
        lines.append("")
    lines += [
        f"SciFact test, {queries} queries; MiniLM vectors computed once and given to every system; one OpenSearch "
        f"{node} node; every (system, k) interleaved in random order per query. Versions: {versions()}. Command: `make "
        "bench-peers`.",
        "",
        f"_Measured {time.strftime('%Y-%m-%d %H:%M')}; {seconds:.0f} s; load average {load[0]:.1f} at its start, "
        f"{load[1]:.1f} at its end._",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="default: the local node (started if needed)")
    parser.add_argument("--queries", type=int, help="the first N test queries (default: all 300)")
    parser.add_argument("--ks", default="10,100")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"), help="markdown report ('-' for none)")
    args = parser.parse_args()
    from adapter.engines import connect
    from adapter.models.embedders import load_embedder

    started, load0 = time.perf_counter(), os.getloadavg()[0]
    url = args.url
    if not url:
        from adapter.local import LocalNode, NodeConfig

        url = LocalNode(NodeConfig()).up().url
    client = connect(url, timeout=300)
    embedder = load_embedder("minilm")
    corpus = load_corpus(embedder, args.queries)
    systems = {
        **adapter_systems(client, corpus, embedder),
        **langchain_systems(url, corpus),
        **haystack_systems(url, corpus),
        **llamaindex_systems(url, corpus),
    }
    ks = [int(k) for k in args.ks.split(",")]
    results = run_all(systems, corpus, ks)
    lines = report(
        results,
        ks,
        client.info()["version"]["number"],
        len(corpus.queries),
        (load0, os.getloadavg()[0]),
        time.perf_counter() - started,
    )
    print("\n".join(lines))
    if args.out != "-":
        from benchmarks.run import Section, write_report

        write_report(
            Path(args.out), [Section("Against peers: LangChain, Haystack, LlamaIndex on the same vectors", lines)]
        )


if __name__ == "__main__":
    main()
