"""One million documents (issue 23): ``make bench-scale`` (not in CI; about an hour and a half here).

    nice -n 19 .venv/bin/python -m benchmarks.scale --docs 1000000 > out/bench-scale.log 2>&1 &
    .venv/bin/python -m benchmarks.scale --docs 20000 --checkpoints 10000,20000 --out -   # a quick look

1. A synthetic corpus (:mod:`benchmarks.corpus`: realistic lengths, 384-d vectors computed once and
   cached, no model in the loop) is bulk-ingested into one index on the default local node, in
   blocks that alternate between the adapter (``Ingestor``, its defaults, vectors from the cache
   by text) and opensearch-py's ``parallel_bulk`` (its defaults: 4 threads, 500 actions a request)
   sending the bodies ``build_document`` makes from the same cache: the same kind of bodies into
   the same index as it grows, so both writers meet the same merges and noise. docs/s is each
   writer's documents over its own time.
2. At each checkpoint (10k, 100k, 1M documents): index size, segments, heap, merge time so far;
   then the queries, every request interleaved in random order per query: bm25, dense, the
   default hybrid (server pipeline), the parallel-legs fast path (both legs in one ``_msearch``,
   fused here with the server's math, the page's sources fetched after) and client-rrf, at
   k = 10 with 100 candidates per leg (client p50/p99), and the server hybrid against its legs at
   equal depth (``benchmarks.depth.equal_depth``: server took).
3. At 1M: a force-merge to one segment, timed, and the queries again.
4. The client's RSS: ``hybrid ingest`` in a process of its own over the 1M-row JSONL, with
   ``--partition 1/20`` (it reads, checks and deduplicates every row, indexes a twentieth), beside
   the same over the first 100k rows: peak RSS, so growth with input size shows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.corpus import Corpus, CachedVectors, build

ROOT = Path(__file__).resolve().parent.parent
ALIAS = "bench-scale"


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append(
            "| "
            + " | ".join(
                f"{c:,.2f}" if isinstance(c, float) else (f"{c:,}" if isinstance(c, int) else str(c)) for c in row
            )
            + " |"
        )
    return out


# -- writers ---------------------------------------------------------------------------------------
def adapter_block(client, info, embedder: CachedVectors, corpus: Corpus, start: int, stop: int) -> tuple[int, int]:
    """(documents written, failures) by the adapter's Ingestor with its defaults."""
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import SourceDoc

    rows = (SourceDoc(r["id"], r["text"], r["title"], line=i + 1) for i, r in corpus.rows(start, stop))
    report = Ingestor(client, info, embedder, cache=None, progress=False, refresh=False).ingest(rows)
    return report.chunks, len(report.failures)


def parallel_bulk_block(client, info, corpus: Corpus, start: int, stop: int) -> tuple[int, int]:
    """(documents written, failures) by opensearch-py's ``parallel_bulk`` with its defaults, same bodies."""
    from opensearchpy.helpers import parallel_bulk

    from adapter.index.documents import build_document

    vectors = corpus.vector_rows(start, stop)

    def actions():
        for (i, r), v in zip(corpus.rows(start, stop), vectors):
            yield {
                "_op_type": "index",
                "_index": info.index,
                "_id": r["id"],
                "_source": build_document(info.layout, text=r["text"], vector=v, parent_id=r["id"], title=r["title"]),
            }

    ok = failed = 0
    for success, _ in parallel_bulk(client, actions(), raise_on_error=False):
        ok, failed = ok + bool(success), failed + (not success)
    return ok, failed


# -- the index -------------------------------------------------------------------------------------
def index_stats(client, index: str) -> dict[str, float]:
    prim = client.indices.stats(index=index, metric="docs,store,merge,segments")["indices"][index]["primaries"]
    jvm = next(iter(client.nodes.stats(metric="jvm")["nodes"].values()))["jvm"]["mem"]
    return {
        "docs": prim["docs"]["count"],
        "store_mib": prim["store"]["size_in_bytes"] / 2**20,
        "segments": prim["segments"]["count"],
        "merge_s": prim["merges"]["total_time_in_millis"] / 1000,
        "heap_used_mib": jvm["heap_used_in_bytes"] / 2**20,
        "heap_max_mib": jvm["heap_max_in_bytes"] / 2**20,
    }


# -- queries ---------------------------------------------------------------------------------------
def default_fusion(searcher, query: str, vector: np.ndarray):
    """The fixed fusion the default hybrid runs (an uncalibrated adaptive index: its baseline, the
    same for every query), which the fast path must fuse by to rank as it does."""
    r = searcher.search(query, technique="hybrid", k=1, query_vector=vector)
    if r.choice is not None and r.choice.per_query:
        raise SystemExit(
            "the index's adaptive policy chooses weights per query: the fast path here fuses one fixed fusion"
        )
    return r.fusion


def fast_path(searcher, fusion, query: str, vector: np.ndarray, *, k: int, depth: int):
    """Both legs in one ``_msearch`` (ids and scores), fused here by ``fusion`` with the server's
    formulas, then the page's sources: the requests the parallel-legs fast path sends.
    Returns (ids of the page, client ms, server took of the _msearch)."""
    # one _msearch + the page
    r = searcher.search(query, technique="client", fusion=fusion, k=k, depth=depth, query_vector=vector)
    return [(h.id, h.score) for h in r.hits], r.total_ms, r.took_ms


def measure_queries(
    searcher, queries: list[tuple[str, np.ndarray]], *, k: int = 10, depth: int = 100, seed: int = 7
) -> dict[str, Any]:
    """Client ms (and server took) per mode, every mode once per query in a random order."""
    from adapter.fusion import same_ranking_up_to_ties

    modes: dict[str, Callable[[str, np.ndarray], tuple[list[tuple[str, float]], float, float]]] = {}
    for technique in ("bm25", "dense", "hybrid", "client-rrf"):

        def run(q, v, technique=technique):
            r = searcher.search(q, technique=technique, k=k, depth=depth, query_vector=v)
            return [(h.id, h.score) for h in r.hits], r.total_ms, r.took_ms

        modes[{"hybrid": "hybrid (default: server pipeline)"}.get(technique, technique)] = run
    fixed = default_fusion(searcher, *queries[0])
    modes["hybrid fast path (legs _msearch, client fusion)"] = lambda q, v: fast_path(
        searcher, fixed, q, v, k=k, depth=depth
    )
    for q, v in queries[:10]:
        for run in modes.values():
            run(q, v)
    total: dict[str, list[float]] = {m: [] for m in modes}
    took: dict[str, list[float]] = {m: [] for m in modes}
    same = 0
    rng = random.Random(seed)
    for q, v in queries:
        order = list(modes)
        rng.shuffle(order)
        pages = {}
        for m in order:
            ids, ms, server = modes[m](q, v)
            total[m].append(ms)
            took[m].append(server)
            pages[m] = ids
        same += same_ranking_up_to_ties(
            pages["hybrid (default: server pipeline)"], pages["hybrid fast path (legs _msearch, client fusion)"]
        )
    return {"total": total, "took": took, "same_pages": same, "queries": len(queries)}


def checkpoint_lines(
    label: str, stats: dict[str, float], measured: dict[str, Any], depth_lines: list[str]
) -> list[str]:
    rows = [
        [m, pct(measured["total"][m], 50), pct(measured["total"][m], 99), pct(measured["took"][m], 50)]
        for m in measured["total"]
    ]
    return [
        f"#### {label}",
        "",
        f"{int(stats['docs']):,} documents, {stats['store_mib']:,.0f} MiB, {int(stats['segments'])} segments, heap "
        f"{stats['heap_used_mib']:,.0f} of {stats['heap_max_mib']:,.0f} MiB, merge time so far {stats['merge_s']:,.0f} "
        "s.",
        "",
        *table(["technique (k 10, depth 100)", "client p50 ms", "client p99 ms", "server took p50 ms"], rows),
        "",
        "Fast path and server hybrid rank the page identically (up to ties) for "
        f"{measured['same_pages']}/{measured['queries']} queries.",
        "",
        "Server hybrid against its legs at equal depth (`_source: false`, server took):",
        "",
        *depth_lines,
        "",
    ]


def checkpoint(client, index: str, embedder, queries, version: str, label: str) -> tuple[list[str], dict[str, float]]:
    """The index refreshed and measured at one point of the run: its section's lines, and each technique's client
    p50 (ms), for the growth table."""
    from adapter.search import Searcher
    from benchmarks.depth import Target, equal_depth

    client.indices.refresh(index=index)
    stats = index_stats(client, index)
    searcher = Searcher.open(client, ALIAS, embedder)
    measured = measure_queries(searcher, queries)
    depth_lines = equal_depth([Target(version, searcher)], queries, [10, 100])
    return checkpoint_lines(label, stats, measured, depth_lines), {m: pct(v, 50) for m, v in measured["total"].items()}


# -- client RSS --------------------------------------------------------------------------------------
def rss_child(argv: list[str]) -> None:
    """In a process of its own: ``hybrid ingest`` with the cached vectors as its embedder; prints peak RSS (MiB)."""
    import adapter.models.embedders as embedders
    from adapter.cli import main

    corpus = Corpus(Path(argv.pop(0)), 0)
    cached = CachedVectors(corpus)
    real = embedders.load_embedder
    embedders.load_embedder = lambda spec, **o: cached if spec == "bench:cached" else real(spec, **o)  # type: ignore[assignment]
    code = main(argv)
    print(json.dumps({"exit": code, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def measure_rss(client, url: str, corpus: Corpus, rows: int, partition: str, workdir: Path) -> dict[str, Any]:
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec

    path = corpus.jsonl
    if rows < corpus.n:
        path = workdir / f"first-{rows}.jsonl"
        with open(corpus.jsonl, encoding="utf-8") as src, open(path, "w", encoding="utf-8") as out:
            for i, line in enumerate(src):
                if i >= rows:
                    break
                out.write(line)
    alias = f"{ALIAS}-rss"
    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    # Deleting the 1M index keeps the master busy for minutes: a create sent meanwhile times out (503).
    client.cluster.health(wait_for_events="languid", timeout="1800s", params={"request_timeout": 1900})
    init_index(client, alias, IndexSpec(CachedVectors(corpus).fingerprint))
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.scale",
            "--rss-child",
            str(corpus.folder),
            "ingest",
            str(path),
            "--index",
            alias,
            "--url",
            url,
            "--embedder",
            "bench:cached",
            "--no-cache",
            "-q",
            "--partition",
            partition,
            "--failures",
            str(workdir / "rss-failures.jsonl"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - t0
    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    if path != corpus.jsonl:
        path.unlink()
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        raise SystemExit(f"the RSS child failed ({out.returncode}): {out.stderr[-2000:]}")
    result = json.loads(lines[-1])
    kept = next((line for line in lines if line.startswith("partition ")), "")
    return {"rows": rows, "partition": partition, "seconds": seconds, "summary": kept, **result}


def client_rss(client, url: str, corpus: Corpus, workdir: Path) -> list[str]:
    """Step 4's table: peak RSS over the first 100k rows and over the whole input."""
    rss = [
        measure_rss(client, url, corpus, rows, "1/20", workdir) for rows in sorted({min(100_000, corpus.n), corpus.n})
    ]
    return table(
        ["input rows", "rows indexed", "peak RSS MiB", "seconds"],
        [[r["rows"], r["summary"], r["peak_rss_mib"], r["seconds"]] for r in rss],
    )


# -- the run -----------------------------------------------------------------------------------------
def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rss-child":
        return rss_child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--checkpoints", default="10000,100000,1000000")
    parser.add_argument("--block", type=int, default=5_000, help="documents per writer turn (default %(default)s)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--url", help="default: the local node (started if needed)")
    parser.add_argument("--no-merge", action="store_true", help="skip the force-merge at the end")
    parser.add_argument("--keep", action="store_true", help="keep the index (default: deleted at the end, it is large)")
    parser.add_argument("--cache", default=str(ROOT / "out" / "bench-scale"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"), help="markdown report ('-' for none)")
    parser.add_argument(
        "--only-rss",
        action="store_true",
        help="only the client's memory (step 4), on the cached corpus; prints its table",
    )
    args = parser.parse_args()
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",")} | {args.docs})

    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.index.catalog import read_index_info
    from adapter.engines import connect

    started = time.perf_counter()
    load0 = os.getloadavg()[0]
    corpus = build(Path(args.cache) / str(args.docs), args.docs, log=lambda m: print(m, flush=True))
    print(f"corpus ready ({time.perf_counter() - started:.0f} s)", flush=True)
    url = args.url
    if not url:
        from adapter.local import LocalNode, NodeConfig

        url = LocalNode(NodeConfig(), log=lambda m: print(m, file=sys.stderr)).up().url
    client = connect(url, timeout=600)
    version = client.info()["version"]["number"]
    workdir = Path(args.cache)
    if args.only_rss:
        print("\n".join(client_rss(client, url, corpus, workdir)))
        return
    embedder = CachedVectors(corpus)
    client.indices.delete(index=f"{ALIAS}-v*", ignore=[404])
    init_index(client, ALIAS, IndexSpec(embedder.fingerprint))
    info = read_index_info(client, ALIAS)
    queries = corpus.queries()[: args.queries]

    written = {"adapter": 0, "parallel_bulk": 0}
    seconds = {"adapter": 0.0, "parallel_bulk": 0.0}
    failures = {"adapter": 0, "parallel_bulk": 0}
    sections: list[str] = []
    growth: dict[str, dict[str, float]] = {}
    at = 0
    turn = 0
    for point in checkpoints:
        while at < point:
            stop = min(point, at + args.block)
            writer = ("adapter", "parallel_bulk")[turn % 2]
            t0 = time.perf_counter()
            n, bad = (
                adapter_block(client, info, embedder, corpus, at, stop)
                if writer == "adapter"
                else parallel_bulk_block(client, info, corpus, at, stop)
            )
            seconds[writer] += time.perf_counter() - t0
            written[writer] += n
            failures[writer] += bad
            at, turn = stop, turn + 1
            if at % 50_000 == 0:
                print(
                    f"{at:,} written; docs/s adapter {written['adapter'] / max(seconds['adapter'], 1e-9):.0f}, "
                    f"parallel_bulk {written['parallel_bulk'] / max(seconds['parallel_bulk'], 1e-9):.0f}",
                    flush=True,
                )
        label = f"{point:,} documents"
        lines, growth[label] = checkpoint(client, info.index, embedder, queries, version, label)
        sections += lines
        print("\n".join(sections[-40:]), flush=True)
        partial = Path(args.cache) / f"partial-{args.docs}.md"  # what a run stopped midway has measured
        partial.write_text(
            "\n".join([f"writers so far: {written} documents, {seconds} s, {failures} failures", "", *sections]) + "\n"
        )

    ingest_rows = [[w, written[w], failures[w], seconds[w], written[w] / seconds[w]] for w in written]
    ratio = (written["adapter"] / seconds["adapter"]) / (written["parallel_bulk"] / seconds["parallel_bulk"])
    if not args.no_merge:
        t0 = time.perf_counter()
        client.indices.forcemerge(index=info.index, max_num_segments=1, request_timeout=7200)
        merge_s = time.perf_counter() - t0
        label = f"{args.docs:,} documents, force-merged to one segment ({merge_s:,.0f} s)"
        lines, growth[f"{args.docs:,} merged"] = checkpoint(client, info.index, embedder, queries, version, label)
        sections += lines
    if not args.keep:
        client.indices.delete(index=f"{ALIAS}-v*", ignore=[404])

    rss_lines = client_rss(client, url, corpus, workdir)

    lines = [
        f"Synthetic corpus ({args.docs:,} documents; lengths drawn from SciFact's abstracts; 384-d hashed-word vectors "
        "cached, no model in the loop: `benchmarks/corpus.py`), one index (1 shard, lucene HNSW m 16, ef_construction "
        f"128) on the local OpenSearch {version} node (1 GiB heap). Command: `make bench-scale` "
        f"(`nice -n 19 python -m benchmarks.scale --docs {args.docs}`).",
        "",
        f"### Bulk ingest: the adapter against `parallel_bulk`, alternating blocks of {args.block:,} into the same "
        "index",
        "",
        *table(["writer", "documents", "failures", "seconds", "docs/s"], ingest_rows),
        "",
        f"**adapter / parallel_bulk docs/s: {ratio:.2f}** (target >= 0.9).",
        "",
        "### Queries as the index grows",
        "",
        *sections,
        "### How each grows (client p50 ms, k 10, depth 100)",
        "",
        *table(["technique", *growth], [[m, *[growth[c][m] for c in growth]] for m in next(iter(growth.values()))]),
        "",
        "### The client's memory: `hybrid ingest` over the whole input, `--partition 1/20`",
        "",
        *rss_lines,
        "",
        "No model is loaded (the vectors come from the cache): the target is RSS <= 500 MB plus the model.",
        "",
        f"_Measured {time.strftime('%Y-%m-%d %H:%M')} on OpenSearch {version}; {time.perf_counter() - started:,.0f} s "
        f"in all; load average {load0:.1f} at its start, {os.getloadavg()[0]:.1f} at its end._",
    ]
    print("\n".join(lines))
    if args.out != "-":
        from benchmarks.run import Section, write_report

        write_report(Path(args.out), [Section(f"Scale: {args.docs:,} documents", lines)])


if __name__ == "__main__":
    main()
