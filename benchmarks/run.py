"""Benchmarks: ratios measured side by side in one run (shared, noisy machines: absolute times vary).

    make bench                                  # every section, writes docs/BENCHMARKS.md
    .venv/bin/python -m benchmarks.run --only ingest,query --scale-docs 20000

Sections:
- ingest: adapter ingest rate vs the raw ``encode`` rate of the same embedder on the same SciFact
  abstracts; re-ingest of unchanged documents (embedding cache) vs the first ingest.
- query:  client overhead per query (request building, parsing, fusion, explanations) without
  model time and the server's ``took``; server hybrid vs each single leg; client-rrf vs server
  hybrid. Techniques are interleaved per query so they share the machine's noise.
- models: query embedding latency; cross-encoder rerank latency for the top 20 and top 50.
- scale:  ingest of N synthetic documents (hashed word vectors, so the model does not dominate),
  index size, and query latency per technique at that size.
- depth:  server hybrid vs each of its legs at the same depth (leg size = depth) and at k = 10, on
  every cluster side by side (by default OpenSearch 3.6.0 and 2.19.1, local nodes), on SciFact and
  on N synthetic documents; ``profile: true`` breakdowns where the cluster allows them.
- explain: what ``explain`` costs: the server's explanations, the legs, the adapter's explain path.

- shards: nDCG@10 and top-10 agreement of each technique on a 1-shard and a 3-shard copy of SciFact.

The single-cluster sections run on the first cluster; depth, explain and shards on all of them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from adapter.engines import cluster_for

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data beside the checkout (as in CI); HYBRID_SHARED_DATA where a worktree sits elsewhere.
SCIFACT = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data")) / "scifact"


def pct(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass
class Section:
    title: str
    lines: list[str]

    def show(self) -> None:
        print(f"\n## {self.title}\n")
        print("\n".join(self.lines))


def table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(f"{c:.3f}" if isinstance(c, float) else str(c) for c in row) + " |")
    return out


def clusters_for(args) -> list[tuple[str, object]]:
    """(version, client) per cluster: ``--url`` (or OPENSEARCH_URL) alone, else a local node per ``--versions``."""
    from adapter.engines import connect
    from adapter.local import LocalNode, NodeConfig

    url = args.url or os.environ.get("OPENSEARCH_URL")
    urls = (
        [url]
        if url
        else [
            LocalNode(NodeConfig(version=v), log=lambda m: print(m, file=sys.stderr)).up().url
            for v in args.versions.split(",")
        ]
    )
    out = []
    for u in urls:
        client = connect(u, timeout=300)
        out.append((client.info()["version"]["number"], client))
    return out


def scifact_docs(n: int) -> list[dict]:
    docs = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            docs.append(json.loads(line))
            if len(docs) >= n:
                break
    return docs


def drop(client, alias: str) -> None:
    client.indices.delete(index=f"{alias}-v*", ignore=[404])


# -- ingest --------------------------------------------------------------------------------------
def bench_ingest(client, args) -> Section:
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import SourceDoc

    docs = scifact_docs(args.ingest_docs)
    rows = [SourceDoc(str(d["_id"]), d["text"], d.get("title", "")) for d in docs]
    embedder = load_embedder("minilm")
    embedder.embed_documents(["warm up the model"] * 8)
    texts = [f"{r.title}\n{r.text}" if r.title else r.text for r in rows]

    t0 = time.perf_counter()
    for i in range(0, len(texts), 64):
        embedder.embed_documents(texts[i : i + 64])
    raw_s = time.perf_counter() - t0

    alias = "bench-ingest"
    drop(client, alias)
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer="english"))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "cache.sqlite")
        first = Ingestor.open(client, alias, embedder, cache=cache, progress=False).ingest(rows)
        second = Ingestor.open(client, alias, embedder, cache=cache, progress=False).ingest(rows)
    count = client.count(index=alias)["count"]
    drop(client, alias)
    raw_rate = len(texts) / raw_s
    lines = table(
        ["measure", "value"],
        [
            ["documents (SciFact abstracts)", len(rows)],
            ["raw encode rate (docs/s, batch 64)", raw_rate],
            ["adapter ingest rate, first run (docs/s)", first.docs_per_second],
            ["**ingest / raw encode**", first.docs_per_second / raw_rate],
            [
                "first ingest: embedding s / indexing s (overlapped) / total s",
                f"{first.seconds_embedding:.1f} / {first.seconds_indexing:.1f} / {first.seconds_total:.1f}",
            ],
            ["re-ingest, unchanged documents (s)", second.seconds_total],
            ["re-ingest: embedded / from cache", f"{second.embedded} / {second.cache_hits}"],
            ["**re-ingest speed-up (first / second)**", first.seconds_total / second.seconds_total],
            ["documents in the index after both", count],
        ],
    )
    lines.append("")
    lines.append("Targets: ingest >= 0.9 of the raw encode rate; re-ingest >= 20x faster.")
    return Section("Ingest vs raw encode (all-MiniLM-L6-v2, max_seq_length 256)", lines)


# -- query ---------------------------------------------------------------------------------------
def ensure_scifact_index(client, embedder, progress=True, alias: str = "bench-scifact") -> str:
    from adapter.models.cache import EmbeddingCache
    from adapter.evaluation import prepare_index
    from adapter.evaluation.metrics import load_beir

    dataset = load_beir(SCIFACT, "test")
    return prepare_index(
        cluster_for(client),
        dataset,
        embedder,
        alias,
        analyzer="english",
        title_boost=0.5,
        fresh=False,
        progress=progress,
        cache=EmbeddingCache(),
    ).alias


def bench_query(client, args) -> Section:
    from adapter.models.embedders import load_embedder
    from adapter.fusion import RRF
    from adapter.evaluation.metrics import load_beir
    from adapter.search import Searcher
    from adapter.testing import FakeClient, RecordingClient

    from adapter.fusion.choice.policy import AdaptivePolicy
    from adapter.admin.calibrate import calibrate_index
    from adapter.fusion import ScoreNormalization

    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec

    embedder = load_embedder("minilm")
    alias = ensure_scifact_index(client, embedder)
    # An adaptive index (the default of `hybrid init`), calibrated on the train split's query texts
    # (what a query log would give): its <alias>-adaptive pipeline holds the corpus weights.
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer="english", default_fusion="adaptive"))
    calibrate_index(client, alias, list(load_beir(SCIFACT, "train").queries.values())[:300], source="scifact train")
    searcher = Searcher.open(client, alias, embedder)
    queries = list(load_beir(SCIFACT, "test").queries.values())[: args.queries]
    vectors = [embedder.embed_query(q) for q in queries]
    modes = {
        "bm25": dict(technique="bm25"),
        "dense": dict(technique="dense"),
        "hybrid (server, min_max)": dict(technique="hybrid", fusion=ScoreNormalization()),
        "hybrid (server, min_max 0.3/0.7 inline)": dict(
            technique="hybrid", fusion=ScoreNormalization(weights=(0.3, 0.7))
        ),
        "hybrid (server, rrf)": dict(technique="hybrid", fusion=RRF()),
        # the index's default: its stored adaptive pipeline
        "hybrid (adaptive, corpus prior)": dict(technique="hybrid"),
        "hybrid (adaptive, per-query signals)": dict(technique="hybrid", fusion=AdaptivePolicy(query=0.5)),
        "client-rrf": dict(technique="client-rrf"),
        "hybrid + explain": dict(technique="hybrid", fusion=ScoreNormalization(), explain=True),
    }
    for q, v in zip(queries[:10], vectors[:10]):  # warm caches on both sides
        for kwargs in modes.values():
            searcher.search(q, k=10, depth=100, query_vector=v, **kwargs)
    total = {m: [] for m in modes}
    took = {m: [] for m in modes}
    rng = random.Random(7)
    for q, v in zip(queries, vectors):
        order = list(modes)
        rng.shuffle(order)
        for m in order:
            r = searcher.search(q, k=10, depth=100, query_vector=v, **modes[m])
            total[m].append(r.total_ms)
            took[m].append(r.took_ms)
    overhead = {m: [a - b for a, b in zip(total[m], took[m])] for m in modes}
    rows = [[m, pct(took[m], 50), pct(total[m], 50), pct(overhead[m], 50), pct(overhead[m], 99)] for m in modes]
    lines = table(
        [
            "technique (k=10, 100 candidates per leg)",
            "server took p50 ms",
            "client total p50 ms",
            "client overhead p50 ms",
            "client overhead p99 ms",
        ],
        rows,
    )

    # Client work without network or server: the same searcher calls, answered from recordings.
    real = searcher.cluster
    recorder = RecordingClient(real.client)
    searcher.cluster = searcher.engine.cluster(recorder)
    sample = list(zip(queries[:50], vectors[:50]))
    for q, v in sample:
        for m in modes:
            searcher.search(q, k=10, depth=100, query_vector=v, **modes[m])
    pure = {m: [] for m in modes}
    for _ in range(3):
        searcher.cluster = searcher.engine.cluster(
            FakeClient(recording=recorder.exchanges, engine_name=searcher.caps.engine)
        )
        for q, v in sample:
            for m in modes:
                t0 = time.perf_counter()
                searcher.search(q, k=10, depth=100, query_vector=v, **modes[m])
                pure[m].append((time.perf_counter() - t0) * 1000)
    searcher.cluster = real
    lines += [
        "",
        *table(
            ["technique", "client work p50 ms (replayed, no network)", "p99 ms"],
            [[m, pct(pure[m], 50), pct(pure[m], 99)] for m in modes],
        ),
    ]

    leg_max = [max(a, b) for a, b in zip(took["bm25"], took["dense"])]
    base = "hybrid (server, min_max)"
    lines += [
        "",
        *table(
            ["adaptive vs fixed fusion", "p50 ms"],
            [
                [
                    "client work: adaptive (corpus prior) - hybrid (stored pipeline), replayed",
                    pct(pure["hybrid (adaptive, corpus prior)"], 50) - pct(pure[base], 50),
                ],
                [
                    "client work: adaptive (per-query signals) - hybrid (stored pipeline), replayed",
                    pct(pure["hybrid (adaptive, per-query signals)"], 50) - pct(pure[base], 50),
                ],
                [
                    "client total: adaptive (corpus prior, stored pipeline) - hybrid (stored pipeline), live",
                    pct(total["hybrid (adaptive, corpus prior)"], 50) - pct(total[base], 50),
                ],
                [
                    "client total: inline pipeline (0.3/0.7) - stored pipeline (0.5/0.5), live",
                    pct(total["hybrid (server, min_max 0.3/0.7 inline)"], 50) - pct(total[base], 50),
                ],
                [
                    "client total: adaptive (per-query signals) - adaptive (corpus prior), live",
                    pct(total["hybrid (adaptive, per-query signals)"], 50)
                    - pct(total["hybrid (adaptive, corpus prior)"], 50),
                ],
            ],
        ),
    ]
    ratios = [
        [
            "server hybrid (min_max) took / slower single leg took, p50",
            pct(took["hybrid (server, min_max)"], 50) / pct(leg_max, 50),
        ],
        [
            "server hybrid (min_max) took / bm25 took, p50",
            pct(took["hybrid (server, min_max)"], 50) / pct(took["bm25"], 50),
        ],
        [
            "server hybrid (min_max) took / dense took, p50",
            pct(took["hybrid (server, min_max)"], 50) / pct(took["dense"], 50),
        ],
        [
            "client-rrf total / server hybrid (rrf) total, p50",
            pct(total["client-rrf"], 50) / pct(total["hybrid (server, rrf)"], 50),
        ],
    ]
    lines += ["", *table(["ratio", "value"], ratios)]
    lines += [
        "",
        f"{len(queries)} SciFact test queries, query vectors precomputed (model time excluded), techniques interleaved "
        "in random order per query. Client overhead = client total - server took: it includes the loopback HTTP round "
        "trip and the server's own time outside `took`. Client work (replayed) runs the same `Searcher.search` calls "
        "against recorded responses, with the client library's JSON encoding and decoding, so it is the adapter's own "
        "cost: building the request, parsing, fusion, explanations. client-rrf's took is the `_msearch` request's "
        "(its two legs run in parallel). Adaptive (corpus prior) chooses its weights from the query text and the "
        "index's calibration; they are the index's corpus weights, so its stored `<index>-adaptive` pipeline runs them "
        "(weights no stored pipeline has go in a request-scoped one): no extra request; with per-query signals it "
        "first asks BM25 for its best hit and the query's term statistics (two small requests, their took included). "
        "Targets: client overhead <= 2 ms p50; adaptive's client work <= 2 ms p50 beyond the requests it needs; server "
        "hybrid <= 1.1x the slower single leg.",
    ]
    return Section("Query latency: client overhead, server hybrid vs single legs", lines)


# -- models --------------------------------------------------------------------------------------
def bench_models(client, args) -> Section:
    from sentence_transformers import CrossEncoder

    from adapter.models.embedders import load_embedder
    from adapter.evaluation.metrics import load_beir
    from adapter.search.rerank import CrossEncoderReranker

    queries = list(load_beir(SCIFACT, "test").queries.values())[: args.queries]
    rows = []
    for spec in ("minilm", "multilingual-e5-small"):
        emb = load_embedder(spec)
        emb.embed_query("warm up")
        times = []
        for q in queries:
            t0 = time.perf_counter()
            emb.embed_query(q)
            times.append((time.perf_counter() - t0) * 1000)
        rows.append([f"query embedding, {spec}", pct(times, 50), pct(times, 95)])
    minilm = load_embedder("minilm")
    docs = [f"{d.get('title', '')}\n{d['text']}" for d in scifact_docs(50)]
    with tempfile.TemporaryDirectory() as tmp:
        CrossEncoder(minilm.model_name, num_labels=1).save(str(Path(tmp) / "ce"))
        reranker = CrossEncoderReranker(str(Path(tmp) / "ce"), max_length=256)
        reranker.score("warm up", docs[:4])
        for n in (20, 50):
            times = []
            for q in queries[: max(5, args.queries // 10)]:
                t0 = time.perf_counter()
                reranker.score(q, docs[:n])
                times.append((time.perf_counter() - t0) * 1000)
            rows.append(
                [f"rerank top {n} (MiniLM-L6 cross-encoder architecture, 256 tokens)", pct(times, 50), pct(times, 95)]
            )
    lines = table(["model step", "p50 ms", "p95 ms"], rows)
    lines += [
        "",
        "The cross-encoder is built locally from MiniLM weights (no trained one is obtainable here): "
        "same architecture and cost as cross-encoder/ms-marco-MiniLM-L-6-v2, scores not meaningful.",
    ]
    return Section("Model latency (CPU)", lines)


# -- scale ---------------------------------------------------------------------------------------
class HashedWordsEmbedder:
    """Vectors from hashed words: real 384-d unit vectors without a model, so scale runs measure the cluster."""

    def __init__(self, dimension: int = 384) -> None:
        from adapter.models.fingerprint import EmbeddingFingerprint

        self._fp = EmbeddingFingerprint(
            "bench/hashed-words", "bench:hashed-words", hashlib.sha256(b"hashed-words-v1").hexdigest(), dimension, True
        )
        self._rng_cache: dict[str, np.ndarray] = {}

    fingerprint = property(lambda self: self._fp)
    dimension = property(lambda self: self._fp.dimension)
    normalized = property(lambda self: True)

    def _word(self, w: str) -> np.ndarray:
        v = self._rng_cache.get(w)
        if v is None:
            seed = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            self._rng_cache[w] = v
        return v

    def _one(self, text: str) -> np.ndarray:
        v = np.sum([self._word(w) for w in re.findall(r"\w+", text.lower())[:64]], axis=0)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_documents(self, texts):
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text):
        return self._one(text)


def synthetic_docs(n: int, seed: int = 11):
    from adapter.ingest.sources import SourceDoc

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like
    for i in range(n):
        words = rng.choices(vocab, weights=weights, k=rng.randint(30, 90))
        yield SourceDoc(f"s{i}", " ".join(words), f"doc {i} " + " ".join(words[:4]), {"bucket": f"b{i % 10}"})


@dataclass(frozen=True)
class Synthetic:
    alias: str
    ingest: object | None  # the IngestReport, None when a complete index was reused


def ensure_synthetic(client, n: int, *, keep: bool) -> Synthetic:
    """``bench-synthetic-<n>``: n synthetic documents, force-merged to one segment; reused when
    complete and ``keep`` (``--keep-indices``), so later runs skip the ingest."""
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.index.catalog import alias_indices
    from adapter.ingest.ingestor import Ingestor

    alias = f"bench-synthetic-{n}"
    embedder = HashedWordsEmbedder()
    if keep and alias_indices(cluster_for(client), alias) and client.count(index=alias)["count"] == n:
        return Synthetic(alias, None)
    drop(client, alias)
    init_index(client, alias, IndexSpec(embedder.fingerprint, analyzer="folding"))
    report = Ingestor.open(client, alias, embedder, batch_size=500, bulk_batch_size=1000, progress=True).ingest(
        synthetic_docs(n), total=n
    )
    client.indices.forcemerge(index=alias, max_num_segments=1, request_timeout=1800)
    client.indices.refresh(index=alias)
    return Synthetic(alias, report)


def synthetic_queries(n: int) -> list[str]:
    rng = random.Random(3)
    return [" ".join(f"w{rng.randint(0, 2000)}" for _ in range(4)) for _ in range(n)]


def bench_scale(client, args) -> Section:
    from adapter.search import Searcher

    n = args.scale_docs
    embedder = HashedWordsEmbedder()
    synthetic = ensure_synthetic(client, n, keep=True)  # the depth section uses it too; main() drops it
    alias, report = synthetic.alias, synthetic.ingest
    stats = client.indices.stats(index=alias, metric="store,docs")["_all"]["primaries"]
    searcher = Searcher.open(client, alias, embedder)
    rng = random.Random(3)
    queries = synthetic_queries(args.queries)
    modes = {"bm25": {}, "dense": {}, "hybrid (min_max)": {}, "client-rrf": {}}
    techniques = {"bm25": "bm25", "dense": "dense", "hybrid (min_max)": "hybrid", "client-rrf": "client-rrf"}
    for q in queries[:10]:
        for m in modes:
            searcher.search(q, technique=techniques[m], k=10)
    took = {m: [] for m in modes}
    total = {m: [] for m in modes}
    for q in queries:
        order = list(modes)
        rng.shuffle(order)
        for m in order:
            r = searcher.search(q, technique=techniques[m], k=10)
            took[m].append(r.took_ms)
            total[m].append(r.total_ms)
    rows = [[m, pct(took[m], 50), pct(took[m], 95), pct(total[m], 50)] for m in modes]
    ingest_rows = [["documents", stats["docs"]["count"]]]
    if report is not None:
        ingest_rows += [
            ["failures", len(report.failures)],
            ["ingest rate (docs/s; hashed-word vectors, no model)", report.docs_per_second],
        ]
    else:
        ingest_rows += [["ingest", "index reused (built earlier in this run, or kept by --keep-indices)"]]
    lines = table(
        ["measure", "value"],
        [
            *ingest_rows,
            ["index size on disk after force-merge (MiB)", stats["store"]["size_in_bytes"] / 2**20],
            ["bytes per document", stats["store"]["size_in_bytes"] / max(1, stats["docs"]["count"])],
        ],
    )
    lines += [
        "",
        *table(
            [
                "technique (k=10, 100 candidates per leg)",
                "server took p50 ms",
                "server took p95 ms",
                "client total p50 ms",
            ],
            rows,
        ),
    ]
    return Section(f"Scale: {n:,} synthetic documents", lines)


# -- equal depth, profiles, explain (every cluster side by side) ------------------------------------
def scifact_targets(clusters, embedder):
    from adapter.search import Searcher
    from benchmarks.depth import Target

    return [Target(name, Searcher.open(c, ensure_scifact_index(c, embedder), embedder)) for name, c in clusters]


def scifact_queries(embedder, n: int):
    from adapter.evaluation.metrics import load_beir

    queries = list(load_beir(SCIFACT, "test").queries.values())[:n]
    return [(q, embedder.embed_query(q)) for q in queries]


def bench_depth(clusters, args) -> Section:
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher
    from benchmarks.depth import Target, equal_depth, profiles

    depths = [int(d) for d in args.depths.split(",")]
    embedder = load_embedder("minilm")
    targets = scifact_targets(clusters, embedder)
    queries = scifact_queries(embedder, args.queries)
    lines = [
        f"### SciFact: 5,183 abstracts, MiniLM, {len(queries)} test queries",
        "",
        *equal_depth(targets, queries, depths),
        "",
        f"`profile: true`, hybrid depth {max(depths)} and its legs, {args.profile_queries} queries:",
        "",
        *profiles(targets, queries[: args.profile_queries], max(depths)),
    ]
    t0 = time.perf_counter()
    hashed = HashedWordsEmbedder()
    synthetic = [(name, c, ensure_synthetic(c, args.scale_docs, keep=True)) for name, c in clusters]
    built = time.perf_counter() - t0
    targets = [Target(name, Searcher.open(c, s.alias, hashed)) for name, c, s in synthetic]
    queries = [(q, hashed.embed_query(q)) for q in synthetic_queries(args.queries)]
    lines += [
        "",
        f"### {args.scale_docs:,} synthetic documents (hashed-word vectors), {len(queries)} queries",
        "",
        *equal_depth(targets, queries, depths),
        "",
        f"`profile: true`, hybrid depth {max(depths)} and its legs, {args.profile_queries} queries:",
        "",
        *profiles(targets, queries[: args.profile_queries], max(depths)),
    ]
    ingested = [name for name, _, s in synthetic if s.ingest is not None]
    lines += [
        "",
        f"Synthetic indices: {'built for ' + ', '.join(ingested) if ingested else 'reused'} ({built:.0f} s); "
        "each cluster holds its own copy, built one after the other.",
    ]
    return Section("Server hybrid vs its legs at equal depth, OpenSearch versions side by side", lines)


def bench_explain(clusters, args) -> Section:
    from adapter.models.embedders import load_embedder
    from benchmarks.depth import explain_cost

    embedder = load_embedder("minilm")
    targets = scifact_targets(clusters, embedder)
    queries = scifact_queries(embedder, args.queries)
    return Section("What explain costs (SciFact, k 10, depth 100)", explain_cost(targets, queries, depth=100))


def bench_shards(clusters, args) -> Section:
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder
    from adapter.evaluation import prepare_index, standard_techniques
    from adapter.evaluation.metrics import load_beir
    from adapter.search import Searcher
    from benchmarks.depth import shard_quality

    embedder = load_embedder("minilm")
    dataset = load_beir(SCIFACT, "test")
    wanted = (
        "bm25",
        "dense",
        "hybrid-min_max-arithmetic_mean",
        "hybrid-z_score-arithmetic_mean",
        "hybrid-rrf",
        "client-rrf",
    )
    lines = []
    for name, c in clusters:
        one = Searcher.open(c, ensure_scifact_index(c, embedder, progress=False), embedder)
        three_alias = prepare_index(
            cluster_for(c),
            dataset,
            embedder,
            "bench-scifact-3shards",
            analyzer="english",
            title_boost=0.5,
            fresh=False,
            progress=False,
            cache=EmbeddingCache(),
            shards=3,
        ).alias
        three = Searcher.open(c, three_alias, embedder)
        specs = [s for s in standard_techniques(one.caps) if s.name in wanted]
        lines += [*shard_quality(f"OpenSearch {name}", one, three, dataset, specs), ""]
    return Section("One shard vs three: fusion quality on SciFact", lines)


def bench_fast_path(clusters, args) -> Section:
    """`hybrid fast-path`'s own check on SciFact, per cluster and depth: what it would keep."""
    from adapter.models.embedders import load_embedder
    from adapter.search.fast_path import check_fast_path
    from adapter.evaluation.metrics import load_beir

    embedder = load_embedder("minilm")
    queries = list(load_beir(SCIFACT, "test").queries.values())[: args.queries]
    rows = []
    for target in scifact_targets(clusters, embedder):
        for depth in (int(d) for d in args.depths.split(",")):
            check = check_fast_path(target.searcher, queries, k=10, depth=depth, max_queries=args.queries)
            rows.append(
                [
                    target.name,
                    depth,
                    check.fusion,
                    f"{check.same_pages}/{check.queries}",
                    f"{check.same_lists}/{check.queries}",
                    f"{check.hybrid_p50_ms:.1f}",
                    f"{check.fast_p50_ms:.1f}",
                    f"{check.ratio:.2f}x",
                    check.why_not() or "earned: kept with --keep",
                ]
            )
    lines = [
        f"`hybrid fast-path` (`adapter.search.fast_path`) on the SciFact index, k 10, {len(queries)} test queries, "
        "each run as the server hybrid and on the fast path in a random order (one query vector for both):",
        "",
        *table(
            [
                "node",
                "depth",
                "fusion",
                "same page",
                "same list (every offset)",
                "server hybrid p50 ms",
                "fast path p50 ms",
                "ratio",
                "the check",
            ],
            rows,
        ),
    ]
    return Section("The fast path's check (hybrid fast-path) on SciFact", lines)


SECTIONS = {
    "ingest": bench_ingest,
    "query": bench_query,
    "models": bench_models,
    "scale": bench_scale,
    "depth": bench_depth,
    "explain": bench_explain,
    "shards": bench_shards,
    "fastpath": bench_fast_path,
}
MULTI = {"depth", "explain", "shards", "fastpath"}  # sections that compare every cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help=f"comma-separated sections ({', '.join(SECTIONS)})")
    parser.add_argument("--url", help="one cluster for every section (default: local nodes of --versions)")
    parser.add_argument(
        "--versions", default="3.6.0,2.19.1", help="local releases run side by side (default %(default)s)"
    )
    parser.add_argument(
        "--depths", default="10,100", help="candidate depths per leg compared in `depth` (default %(default)s)"
    )
    parser.add_argument("--profile-queries", type=int, default=30)
    parser.add_argument(
        "--keep-indices", action="store_true", help="keep (and reuse) the synthetic indices between runs"
    )
    parser.add_argument("--ingest-docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scale-docs", type=int, default=100_000)
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"), help="markdown report ('-' for none)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {', '.join(SECTIONS)}")
    clusters = clusters_for(args)
    sections = []
    for name in names:
        t0 = time.perf_counter()
        load = os.getloadavg()[0]
        section = SECTIONS[name](clusters if name in MULTI else clusters[0][1], args)
        versions = ", ".join(v for v, _ in clusters) if name in MULTI else clusters[0][0]
        section.lines.append(
            f"\n_Measured {time.strftime('%Y-%m-%d %H:%M')} on OpenSearch {versions}; section time "
            f"{time.perf_counter() - t0:.0f} s; load average {load:.1f} at its start, "
            f"{os.getloadavg()[0]:.1f} at its end._"
        )
        section.show()
        sections.append(section)
    if not args.keep_indices:
        for _, c in clusters:
            drop(c, f"bench-synthetic-{args.scale_docs}")
    if args.out != "-":
        write_report(Path(args.out), sections)


HEADER = [
    "# Benchmarks",
    "",
    "Measured on this project's machine ({cores} cores, {machine}, Python {python}, local nodes with a 1 GiB heap, "
    "lucene HNSW). Produced by `make bench` (`python -m benchmarks.run --only SECTION` measures one section again; a "
    "run replaces the sections it measured and keeps the others); every ratio comes from one run with the compared "
    "variants measured side by side, interleaved per query. The machine is shared with other engineers' test suites: "
    "absolute times vary between runs (each section notes the load average), ratios much less.",
]


def write_report(path: Path, sections: list[Section]) -> None:
    """Replace these sections in the report and keep every other one: the report also holds
    sections other commands measured (peers, scale, encode) and hand-written readings of them."""
    kept: list[tuple[str, list[str]]] = []
    if path.exists():
        current: tuple[str, list[str]] | None = None
        for line in path.read_text().splitlines():
            if line.startswith("## "):
                current = (line[3:], [])
                kept.append(current)
            elif current is not None:
                current[1].append(line)
    fresh = {s.title: s.lines for s in sections}
    order = [title for title, _ in kept] + [s.title for s in sections if s.title not in {t for t, _ in kept}]
    old = dict(kept)
    header = [
        line.format(cores=os.cpu_count(), machine=platform.machine(), python=platform.python_version())
        for line in HEADER
    ]
    body: list[str] = []
    for title in order:
        lines = fresh.get(title)
        body += [f"## {title}", "", *(lines if lines is not None else _strip_blank(old[title])), ""]
    path.write_text("\n".join(header + [""] + body).rstrip() + "\n")
    print(f"\nwritten to {path}")


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


if __name__ == "__main__":
    main()
