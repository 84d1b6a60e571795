"""One relevance threshold across fusions, on a labelled set (docs/INTEROP.md, Scores).

An index of the set's corpus is made with the given embedder; each fusion's relevance map is fitted
on the train queries' top-k fused scores (``measure_relevance``, what an index keeps in
``_meta.relevance``); on the test queries, for each threshold, the share of the relevant hits in
each fusion's top k whose relevance reaches it is counted, by the fitted map and by each fusion's
formula (``Fusion.relevance``). One meaning under every fusion: the shares agree (their spread,
max - min across fusions, is small), where the formula's do not.

    python scripts/measure_relevance.py --url http://127.0.0.1:9200 [--data benchmarks/data/soporte-es] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FUSIONS = ("min_max-arithmetic_mean", "rrf", "z_score-arithmetic_mean", "l2-arithmetic_mean")
THRESHOLDS = (0.3, 0.5, 0.7, 0.8, 0.9)


def shares(hits: Sequence[tuple[float, bool]], thresholds: Sequence[float]) -> dict[float, float]:
    """For each threshold, the share of the relevant hits whose relevance reaches it."""
    relevant = [r for r, judged in hits if judged]
    return {t: sum(r >= t for r in relevant) / len(relevant) if relevant else 0.0 for t in thresholds}


def measure(cluster: Any, data: Path, embedder: Any, *, analyzer: str, k: int, fusions: Sequence[str],
            thresholds: Sequence[float], alias: str, fit_tops: Sequence[int]) -> dict[str, Any]:
    """For each fusion and each ``fit_top`` (the best hits of each train query its map is fitted on:
    ``measure_relevance(..., k=fit_top)``), and for a map fitted on the train queries' relevant hits alone
    (``judged``), the shares of the test queries' relevant hits kept per threshold."""
    from adapter.evaluation.metrics import load_beir
    from adapter.evaluation.run import prepare_index
    from adapter.fusion import parse_fusion
    from adapter.fusion.relevance import fit
    from adapter.search import Searcher

    train, test = load_beir(data, "train"), load_beir(data, "test")
    prepare_index(cluster, train, embedder, alias, analyzer=analyzer, progress=False)
    searcher = Searcher.open(cluster, alias, embedder)
    rows: dict[str, Any] = {}
    maps: dict[str, Any] = {}
    for name in fusions:
        fusion = parse_fusion(name)
        found = {qid: searcher.search(q, k=max(fit_tops, default=k), fusion=fusion).hits for qid, q in train.queries.items()}
        sample = [[h.score for h in hits] for hits in found.values()]
        relevant = [h.score for qid, hits in found.items() for h in hits if train.qrels.get(qid, {}).get(h.id, 0) > 0]
        judged = [(hit.score, test.qrels.get(qid, {}).get(hit.id, 0) > 0)
                  for qid, query in test.queries.items() for hit in searcher.search(query, k=k, fusion=fusion).hits]
        row: dict[str, Any] = {"relevant_hits": sum(j for _, j in judged), "hits": len(judged),
                               "formula": shares([(fusion.relevance(s), j) for s, j in judged], thresholds)}
        for top in fit_tops:
            fitted = fit(fusion.name, [s for scores in sample for s in scores[:top]])
            maps[f"{fusion.name}@{top}"] = fitted.as_json()
            row[f"map@{top}"] = shares([(fitted.relevance(s), j) for s, j in judged], thresholds)
        judged_map = fit(fusion.name, relevant)  # supervised: the train queries' relevant hits only
        maps[f"{fusion.name}@judged"] = judged_map.as_json()
        row["map@judged"] = shares([(judged_map.relevance(s), j) for s, j in judged], thresholds)
        rows[fusion.name] = row
    kinds = ["formula", *(f"map@{top}" for top in fit_tops), "map@judged"]
    spread = {kind: {t: max(r[kind][t] for r in rows.values()) - min(r[kind][t] for r in rows.values()) for t in thresholds}
              for kind in kinds}
    return {"data": str(data), "k": k, "train_queries": len(train.queries), "test_queries": len(test.queries),
            "fusions": rows, "spread": spread, "maps": maps}


def table(out: dict[str, Any], thresholds: Sequence[float], kind: str) -> str:
    head = "| fusion | relevant hits in top k | " + " | ".join(f"kept at {t:g}" for t in thresholds) + " |"
    lines = [f"{kind}:", "", head, "|" + "---|" * (2 + len(thresholds))]
    for name, row in out["fusions"].items():
        cells = " | ".join(f"{row[kind][t]:.3f}" for t in thresholds)
        lines.append(f"| {name} | {row['relevant_hits']} of {row['hits']} | {cells} |")
    spread = " | ".join(f"**{out['spread'][kind][t]:.3f}**" for t in thresholds)
    lines.append(f"| spread (max - min) | | {spread} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks/data/soporte-es")
    parser.add_argument("--analyzer", default="spanish")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--fit-top", type=int, nargs="+", default=[1, 3, 10],
                        help="best hits per train query each map is fitted on (one map per value)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from adapter.engines import open_cluster
    from adapter.models.embedders import E5Embedder

    cluster = open_cluster(args.url)
    alias = f"measure-relevance-{uuid.uuid4().hex[:6]}"  # not t-*: a test session sweeps those away when it ends
    try:
        out = measure(cluster, args.data, E5Embedder(), analyzer=args.analyzer, k=args.k, fusions=FUSIONS,
                      thresholds=THRESHOLDS, alias=alias, fit_tops=args.fit_top)
    finally:  # the index, its templates and its pipelines
        from adapter.engines import connect

        from tests.conftest import drop_hybrid_index

        drop_hybrid_index(connect(args.url), alias)
    for kind in out["spread"]:
        print(table(out, THRESHOLDS, kind))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
