"""Depth per request (issue 30 item 3): the rule of docs/depth-study/README.md, measured.

    nice .venv/bin/python -m benchmarks.depth_rule            # -> docs/depth-study/rule.json, and the table printed

Every labelled set with a train split is indexed as docs/EVALUATION.md indexes it (combined layout,
the default of `hybrid init`: adaptive fusion, calibrated on the train split's query texts), on one
local OpenSearch node; its train queries run as the default hybrid at k = 10 and every depth the
rule's grid needs, and the rule is chosen as the README says (written before this ran). Query vectors
are computed once per query; the depths of one query run in a random order.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data"))
TOLERANCE = 0.002
M_GRID = (1.0, 1.5, 2.0, 3.0)
B_GRID = (10, 20, 30, 50, 100)
PAGES = (10, 20, 30, 50, 100)
BASELINE = 100  # today's default depth per leg


@dataclass(frozen=True)
class LabelledSet:
    name: str
    path: Path
    embedder: str
    analyzer: str
    title_boost: float = 1.0


SETS = (
    LabelledSet("scifact", SHARED / "scifact", "minilm", "english"),
    LabelledSet("apropos-en", ROOT / "benchmarks" / "data" / "apropos-en", "minilm", "english"),
    LabelledSet("soporte-es", ROOT / "benchmarks" / "data" / "soporte-es", "multilingual-e5-small", "spanish"),
    LabelledSet("parts-en", ROOT / "benchmarks" / "data" / "parts-en", "minilm", "english"),
    LabelledSet("wsparcie-pl", ROOT / "benchmarks" / "data" / "wsparcie-pl", "multilingual-e5-small", "folding"),
)


def depth_of(m: float, b: int, wanted: int) -> int:
    return max(b, math.ceil(m * wanted))


def depths_needed() -> list[int]:
    return sorted({depth_of(m, b, k) for m in M_GRID for b in B_GRID for k in PAGES} | {BASELINE})


def measure_set(client: Any, s: LabelledSet, depths: Sequence[int], limit: int | None, seed: int) -> dict[str, Any]:
    """nDCG@10 per query and depth on the set's train split (the default hybrid, k = 10)."""
    from adapter.engines import cluster_for
    from adapter.evaluation import prepare_index
    from adapter.evaluation.metrics import load_beir, per_query
    from adapter.admin.calibrate import calibrate_index
    from adapter.index.assets import IndexSpec
    from adapter.admin.init import init_index
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher

    dataset = load_beir(s.path, "train").limited(limit)
    embedder = load_embedder(s.embedder)
    alias = f"perf-depth-{s.name}"
    prepare_index(
        cluster_for(client),
        dataset,
        embedder,
        alias,
        analyzer=s.analyzer,
        title_boost=s.title_boost,
        fresh=False,
        progress=False,
        cache=EmbeddingCache(),
        text_layout="combined",
    )
    init_index(
        client,
        alias,
        IndexSpec(
            embedder.fingerprint,
            analyzer=s.analyzer,
            title_boost=s.title_boost,
            text_layout="combined",
            default_fusion="adaptive",
        ),
    )
    calibrate_index(client, alias, list(dataset.queries.values()), source=f"{s.name} train")
    searcher = Searcher.open(client, alias, embedder)
    qids = list(dataset.queries)
    vectors = {q: embedder.embed_query(dataset.queries[q]) for q in qids}
    rankings: dict[int, dict[str, list[str]]] = {d: {} for d in depths}
    took: dict[int, list[float]] = {d: [] for d in depths}
    rng = random.Random(seed)
    fusions = set()
    for q in qids:
        for d in rng.sample(list(depths), len(depths)):
            r = searcher.search(dataset.queries[q], k=10, depth=d, query_vector=vectors[q])
            rankings[d][q] = r.ids
            took[d].append(r.took_ms or 0.0)
            fusions.add(r.fused_by_label)
    ndcg = {d: per_query(dataset.qrels, rankings[d]) for d in depths}
    return {
        "queries": len(qids),
        "fused_by": sorted(fusions),
        "embedder": s.embedder,
        "analyzer": s.analyzer,
        "ndcg@10": {str(d): float(np.mean(list(ndcg[d].values()))) for d in depths},
        "took_p50_ms": {str(d): float(np.median(took[d])) for d in depths},
        "per_query": {str(d): [round(ndcg[d][q], 6) for q in dataset.qrels] for d in depths},
    }


# -- the rule (pure, as the README says) -------------------------------------------------------------


def loss(ndcg: dict[str, float], m: float, b: int) -> float:
    return max(ndcg[str(max(BASELINE, k))] - ndcg[str(depth_of(m, b, k))] for k in PAGES)


def choose(ndcgs: Sequence[dict[str, float]]) -> tuple[float, int]:
    """The admissible rule (loss <= TOLERANCE on every set given) with the smallest sum of depths over the pages; ties:
    k = 10."""
    rules = [(m, b) for m in M_GRID for b in B_GRID]
    admissible = [r for r in rules if all(loss(n, *r) <= TOLERANCE + 1e-12 for n in ndcgs)]
    if not admissible:
        return 1.0, BASELINE
    return min(admissible, key=lambda r: (sum(depth_of(r[0], r[1], k) for k in PAGES), depth_of(r[0], r[1], PAGES[0])))


def paired_se(per_query: dict[str, list[float]], a: int, b: int) -> float:
    diff = np.array(per_query[str(a)]) - np.array(per_query[str(b)])
    return float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else float("nan")


def report(results: dict[str, dict[str, Any]]) -> list[str]:
    names = list(results)
    lines = [
        "| set | queries | " + " | ".join(f"d {d}" for d in (10, 20, 30, 50, 100, 150)) + " |",
        "|---|---|" + "---|" * 6,
    ]
    for n in names:
        r = results[n]["ndcg@10"]
        lines.append(
            f"| {n} | {results[n]['queries']} | "
            + " | ".join(f"{r[str(d)]:.4f}" for d in (10, 20, 30, 50, 100, 150))
            + " |"
        )
    final = choose([results[n]["ndcg@10"] for n in names])
    lines += [
        "",
        "| held-out set | rule chosen on the other sets | its loss on the held-out set | admissible |",
        "|---|---|---|---|",
    ]
    held = {}
    for n in names:
        m, b = choose([results[o]["ndcg@10"] for o in names if o != n])
        held[n] = loss(results[n]["ndcg@10"], m, b)
        lines.append(
            f"| {n} | max({b}, {m:g} x wanted) | {held[n]:+.4f} | {'yes' if held[n] <= TOLERANCE + 1e-12 else 'no'} |"
        )
    m, b = final
    ships = all(v <= TOLERANCE + 1e-12 for v in held.values())
    lines += [
        "",
        f"Chosen on all sets: depth = max({b}, {m:g} x wanted); depths at k = {', '.join(str(k) for k in PAGES)}: "
        f"{', '.join(str(depth_of(m, b, k)) for k in PAGES)}. Leave-one-set-out: "
        f"{'every held-out loss within' if ships else 'a held-out loss over'} {TOLERANCE}: "
        f"{'ships' if ships and (m, b) != (1.0, BASELINE) else 'not shipped (the default stays depth 100)'}.",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="default: the local node (started if needed)")
    parser.add_argument("--sets", default=",".join(s.name for s in SETS))
    parser.add_argument("--limit", type=int, help="the first N train queries of each set (a quick run)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "depth-study" / "rule.json"))
    args = parser.parse_args()
    from adapter.engines import connect

    url = args.url
    if not url:
        from adapter.local import LocalNode, NodeConfig

        url = LocalNode(NodeConfig()).up().url
    client = connect(url, timeout=300)
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    wanted = args.sets.split(",")
    results = {s.name: measure_set(client, s, depths_needed(), args.limit, seed=7) for s in SETS if s.name in wanted}
    lines = report(results)
    print("\n".join(lines))
    meta = {
        "node": client.info()["version"]["number"],
        "seconds": round(time.perf_counter() - started),
        "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "tolerance": TOLERANCE,
        "m_grid": M_GRID,
        "b_grid": B_GRID,
        "pages": PAGES,
    }
    if args.out != "-":
        Path(args.out).write_text(
            json.dumps({"meta": meta, "sets": results, "report": lines}, indent=1) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
