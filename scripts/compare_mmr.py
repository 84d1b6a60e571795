"""The k-NN plugin's MMR (``ext.mmr``, OpenSearch 3.3+) against the adapter's, on SciFact.

For every test query, interleaved so both share the machine's noise: dense top 10 (no MMR); the
adapter's MMR over the top ``--candidates`` dense hits (vectors fetched to the client); the
server's MMR over the same candidates; and the server's formula replayed here (adapter.search.mmr.knn_mmr)
over the very candidates and scores the server saw, to show the server list is that formula.
Reports nDCG@10, the lists' overlap, how alike each list's documents are (mean pairwise cosine
of the top 10: lower is more diverse) and latency (the client's wall time and the server's took).

    .venv/bin/python scripts/compare_mmr.py --url http://127.0.0.1:9200 --lambda 0.5 --json out/mmr.json

The cluster setting that turns the server's MMR on is switched on for the run (and put back) with
``--enable``; the eval index ``feat-mmr-scifact`` is built once (embedding cache) and kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.models.cache import EmbeddingCache  # noqa: E402
from adapter.engines.opensearch.capabilities import MMR_FACTORIES, MMR_SETTING  # noqa: E402
from adapter.engines import connect  # noqa: E402
from adapter.models.embedders import load_embedder  # noqa: E402
from adapter.evaluation.run import prepare_index  # noqa: E402
from adapter.evaluation.metrics import evaluate, load_beir  # noqa: E402
from adapter.search.mmr import knn_mmr  # noqa: E402
from adapter.search.page import MMRPlace, SearchOptions  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.engines import cluster_for  # noqa: E402


def pairwise(vectors: np.ndarray) -> float:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    n = len(unit)
    return float((sims.sum() - n) / (n * (n - 1))) if n > 1 else 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--dataset", default=str("/work/shared/data/scifact"))
    ap.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        default=0.5,
        help="the adapter's lambda; the server gets diversity 1 - lambda",
    )
    ap.add_argument("--candidates", type=int, default=30)
    ap.add_argument("--limit", type=int, help="first N test queries")
    ap.add_argument("--enable", action="store_true", help="switch the MMR factories on for the run, restore after")
    ap.add_argument("--json")
    args = ap.parse_args()

    client = connect(args.url)
    before = None
    if args.enable:
        before = client.cluster.get_settings(filter_path=f"persistent.{MMR_SETTING}")
        client.cluster.put_settings(body={"persistent": {MMR_SETTING: list(MMR_FACTORIES)}})
    try:
        return run(client, args)
    finally:
        if args.enable:
            old = ((before or {}).get("persistent") or {}).get(MMR_SETTING)
            client.cluster.put_settings(body={"persistent": {MMR_SETTING: old}})


def run(client, args) -> int:
    dataset = load_beir(args.dataset, "test").limited(args.limit)
    embedder = load_embedder("minilm")
    alias = "feat-mmr-scifact"
    prepare_index(
        cluster_for(client),
        dataset,
        embedder,
        alias,
        analyzer="english",
        fresh=False,
        progress=False,
        cache=EmbeddingCache(),
    )
    opened = Searcher.open(client, alias, embedder)
    caps = opened.engine.probe(client, refresh=True)
    searcher = Searcher(client, opened.info, caps, embedder)  # the capabilities as the setting now stands
    if not caps.server_mmr_enabled:
        raise SystemExit(f"the server's MMR is not on ({caps.version}); pass --enable")
    field = searcher.info.vector_field
    lam, n = args.lam, args.candidates
    runs: dict[str, dict[str, list[str]]] = {"dense": {}, "client-mmr": {}, "server-mmr": {}, "formula": {}}
    wall: dict[str, list[float]] = {k: [] for k in ("dense", "client-mmr", "server-mmr")}
    took: dict[str, list[float]] = {k: [] for k in wall}
    similar: dict[str, list[float]] = {k: [] for k in ("dense", "client-mmr", "server-mmr")}
    identical = 0
    vectors_of: dict[str, np.ndarray] = {}
    for i, (qid, text) in enumerate(dataset.queries.items()):
        vector = embedder.embed_query(text)
        order = ["dense", "client-mmr", "server-mmr"]
        order = order[i % 3 :] + order[: i % 3]  # rotate who goes first
        for name in order:
            kwargs = (
                {}
                if name == "dense"
                else {
                    "mmr_lambda": lam,
                    "mmr_candidates": n,
                    "options": SearchOptions(mmr=MMRPlace.CLIENT if name == "client-mmr" else MMRPlace.SERVER),
                }
            )
            result = searcher.search(text, technique="dense", k=10, query_vector=vector, **kwargs)
            if name == "server-mmr" and "ext" not in result.request_body:
                raise SystemExit(f"the server's MMR did not run: {result.notices}")
            runs[name][qid] = result.ids
            wall[name].append(result.total_ms)
            took[name].append(result.took_ms)
        # The candidates the server saw (its knn with k = candidates), with their vectors.
        resp = client.search(
            index=alias,
            body={"size": n, "query": {"knn": {field: {"vector": vector.tolist(), "k": n}}}, "_source": [field]},
        )
        hits = resp["hits"]["hits"]
        cand = np.asarray([h["_source"][field] for h in hits], dtype=np.float32)
        for h, v in zip(hits, cand):
            vectors_of[h["_id"]] = v
        picked = knn_mmr([h["_score"] for h in hits], cand, k=10, diversity=1 - lam, space_type="cosinesimil")
        runs["formula"][qid] = [hits[j]["_id"] for j, _ in picked]
        identical += runs["formula"][qid] == runs["server-mmr"][qid]
        for name in similar:
            missing = [d for d in runs[name][qid] if d not in vectors_of]
            if missing:
                more = client.mget(index=alias, body={"ids": missing}, params={"_source_includes": field})["docs"]
                for d in more:
                    vectors_of[d["_id"]] = np.asarray(d["_source"][field], dtype=np.float32)
            similar[name].append(pairwise(np.stack([vectors_of[d] for d in runs[name][qid]])))

    queries = len(dataset.queries)
    overlap = np.mean([len(set(runs["client-mmr"][q]) & set(runs["server-mmr"][q])) / 10 for q in dataset.queries])
    out = {
        "version": caps.version,
        "queries": queries,
        "lambda": lam,
        "server_diversity": 1 - lam,
        "candidates": n,
        "server_equals_formula": identical,
        "overlap_client_server_at10": float(overlap),
        "techniques": {},
    }
    for name in ("dense", "client-mmr", "server-mmr"):
        metrics = evaluate(dataset.qrels, runs[name])
        out["techniques"][name] = {
            "ndcg@10": metrics["ndcg@10"],
            "recall@10": metrics.get("recall@10"),
            "mean_pairwise_cosine@10": float(np.mean(similar[name])),
            "client_ms_p50": float(np.percentile(wall[name], 50)),
            "client_ms_p95": float(np.percentile(wall[name], 95)),
            "server_took_ms_p50": float(np.percentile(took[name], 50)),
            "server_took_ms_p95": float(np.percentile(took[name], 95)),
        }
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still puts the setting back
    started = time.perf_counter()
    code = main()
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    raise SystemExit(code)
