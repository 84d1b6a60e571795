"""One relevance threshold across fusions, on a labelled set (docs/INTEROP.md, Scores).

An index of the set's corpus is made with the given embedder; the legs' maps (``legs``: each leg's
raw scores of the consensus hits, a hit's relevance the mean of its legs' shares made non-increasing
along the page, adapter.fusion.relevance.LegRelevance, counted on client-fused pages, whose hits carry
their legs, and as a thresholded search gets it, ``thresholded``: SearchOptions(leg_relevance=True), on
OpenSearch the server-fused page with its named legs' scores) and each fusion's relevance map are
fitted on the train queries' hits, as ``hybrid calibrate`` fits them (``consensus``: the documents in
the top k of every fusion, scored by each: ``measure_relevance``), and for comparison on each fusion's own
top hits (``top@n``, the first map) and on the train queries' judged relevant hits (``judged``: the
supervised reference a label-free map stands in for). On the test queries, for each threshold, the
share of the relevant hits in each fusion's top k whose relevance reaches it is counted, by each map
and by each fusion's formula (``Fusion.relevance``). The target (docs/INTEROP.md, written before the
measurement): the spread of those shares across the fusions (max - min) is at most 0.05 at every
threshold.

    python scripts/measure_relevance.py --url http://127.0.0.1:9200 \
        [--data benchmarks/data/soporte-es] [--json out.json]
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
TOLERANCE = 0.05  # the target: at every threshold, the shares across the fusions at most this far apart


def shares(hits: Sequence[tuple[float, bool]], thresholds: Sequence[float]) -> dict[float, float]:
    """For each threshold, the share of the relevant hits whose relevance reaches it."""
    relevant = [r for r, judged in hits if judged]
    return {t: sum(r >= t for r in relevant) / len(relevant) if relevant else 0.0 for t in thresholds}


def measure(
    cluster: Any,
    data: Path,
    embedder: Any,
    *,
    analyzer: str,
    k: int,
    fusions: Sequence[str],
    thresholds: Sequence[float],
    alias: str,
    fit_tops: Sequence[int],
    cache: Any = None,
) -> dict[str, Any]:
    """For each fusion, the shares of the test queries' relevant hits kept per threshold, by its
    formula and by maps fitted on the train queries: ``consensus`` (``hybrid calibrate``'s), ``top@n``
    for each ``fit_tops`` n (each fusion's own best n hits) and ``judged`` (the relevant hits alone)."""
    from adapter.evaluation.metrics import load_beir
    from adapter.evaluation.run import prepare_index
    from adapter.admin.calibrate import store_relevance
    from adapter.fusion import LEGS, parse_fusion
    from adapter.fusion.relevance import consensus, consensus_ids, fit, fit_legs, leg_scores
    from adapter.search import Searcher
    from adapter.search.page import SearchOptions

    train, test = load_beir(data, "train"), load_beir(data, "test")
    prepare_index(cluster, train, embedder, alias, analyzer=analyzer, progress=False, cache=cache)
    searcher = Searcher.open(cluster, alias, embedder)
    chosen = [parse_fusion(name) for name in fusions]
    depth = max([k, *fit_tops])
    found = {
        f.name: {qid: searcher.search(q, k=depth, fusion=f).hits for qid, q in train.queries.items()} for f in chosen
    }
    ranked = {name: [[(h.id, h.score) for h in hits[:k]] for hits in per.values()] for name, per in found.items()}
    agreed = consensus(ranked)
    # the legs' maps, as calibrate fits them, stored so that a search whose hits carry their legs uses them
    legs_maps = fit_legs(LEGS, leg_scores(consensus_ids(ranked), [searcher.legs(q) for q in train.queries.values()]))
    store_relevance(cluster, alias, legs_maps)
    by_legs = Searcher.open(cluster, alias, embedder)
    rows: dict[str, Any] = {}
    maps: dict[str, Any] = {}
    for fusion in chosen:
        per = found[fusion.name]
        judged = [
            (hit.score, test.qrels.get(qid, {}).get(hit.id, 0) > 0)
            for qid, query in test.queries.items()
            for hit in searcher.search(query, k=k, fusion=fusion).hits
        ]
        fitted = {"consensus": fit(fusion.name, agreed[fusion.name], reference="consensus")}
        for top in fit_tops:
            fitted[f"top@{top}"] = fit(fusion.name, [h.score for hits in per.values() for h in hits[:top]])
        fitted["judged"] = fit(
            fusion.name,
            [h.score for qid, hits in per.items() for h in hits[:k] if train.qrels.get(qid, {}).get(h.id, 0) > 0],
            reference="judged",
        )
        legs_judged = []  # client fusion: the same page, each hit with its legs' raw scores
        thresholded = []  # the default path as a threshold asks for it: OpenSearch's server page with its legs
        for qid, query in test.queries.items():
            result = by_legs.search(query, k=k, fusion=fusion, technique="client")
            if result.relevance_by != "legs":
                raise SystemExit(f"{fusion.name}: relevance by {result.relevance_by}, not by the legs")
            legs_judged += [(h.relevance, test.qrels.get(qid, {}).get(h.id, 0) > 0) for h in result.hits]
            asked = by_legs.search(query, k=k, fusion=fusion, options=SearchOptions(leg_relevance=True))
            if asked.relevance_by != "legs":
                raise SystemExit(f"{fusion.name}: a thresholded search's relevance by {asked.relevance_by}")
            thresholded += [(h.relevance or 0.0, test.qrels.get(qid, {}).get(h.id, 0) > 0) for h in asked.hits]
        row: dict[str, Any] = {
            "relevant_hits": sum(j for _, j in judged),
            "hits": len(judged),
            "legs_relevant_hits": sum(j for _, j in legs_judged),
            "formula": shares([(fusion.relevance(s), j) for s, j in judged], thresholds),
            "legs": shares(legs_judged, thresholds),
            "thresholded_relevant_hits": sum(j for _, j in thresholded),
            "thresholded": shares(thresholded, thresholds),
        }
        for kind, relevance_map in fitted.items():
            maps[f"{fusion.name}@{kind}"] = relevance_map.as_json()
            row[kind] = shares([(relevance_map.relevance(s), j) for s, j in judged], thresholds)
        rows[fusion.name] = row
    for legs_map in legs_maps:
        maps[legs_map.fusion] = legs_map.as_json()
    kinds = ["thresholded", "legs", "consensus", *(f"top@{top}" for top in fit_tops), "judged", "formula"]
    spread = {
        kind: {t: max(r[kind][t] for r in rows.values()) - min(r[kind][t] for r in rows.values()) for t in thresholds}
        for kind in kinds
    }
    return {
        "data": str(data),
        "k": k,
        "analyzer": analyzer,
        "embedder": embedder.fingerprint.model,
        "train_queries": len(train.queries),
        "test_queries": len(test.queries),
        "fusions": rows,
        "spread": spread,
        "met": {kind: max(spread[kind].values()) <= TOLERANCE for kind in kinds},
        "maps": maps,
    }


def table(out: dict[str, Any], thresholds: Sequence[float], kind: str) -> str:
    head = "| fusion | relevant hits in top k | " + " | ".join(f"kept at {t:g}" for t in thresholds) + " |"
    lines = [f"{kind}:", "", head, "|" + "---|" * (2 + len(thresholds))]
    for name, row in out["fusions"].items():
        cells = " | ".join(f"{row[kind][t]:.3f}" for t in thresholds)
        relevant = row[f"{kind}_relevant_hits" if kind in ("legs", "thresholded") else "relevant_hits"]
        lines.append(f"| {name} | {relevant} of {row['hits']} | {cells} |")
    spread = " | ".join(f"**{out['spread'][kind][t]:.3f}**" for t in thresholds)
    lines.append(f"| spread (max - min) | | {spread} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--data", type=Path, default=ROOT / "benchmarks/data/soporte-es")
    parser.add_argument("--analyzer", default="spanish")
    parser.add_argument("--embedder", default="multilingual-e5-small", help="the index's model (an embedder spec)")
    parser.add_argument(
        "--cache", type=Path, help="an embedding cache (SQLite) to reuse the corpus' vectors across runs"
    )
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--fit-top",
        type=int,
        nargs="+",
        default=[5, 10],
        help="best hits per train query each map is fitted on (one map per value)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from adapter.engines import open_cluster
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder

    cluster = open_cluster(args.url)
    alias = f"measure-relevance-{uuid.uuid4().hex[:6]}"  # not t-*: a test session sweeps those away when it ends
    try:
        out = measure(
            cluster,
            args.data,
            load_embedder(args.embedder),
            analyzer=args.analyzer,
            k=args.k,
            fusions=FUSIONS,
            thresholds=THRESHOLDS,
            alias=alias,
            fit_tops=args.fit_top,
            cache=EmbeddingCache(args.cache) if args.cache else None,
        )
    finally:  # the index, its templates and its pipelines, through the engine's own client (either engine)
        from tests.conftest import drop_hybrid_index

        drop_hybrid_index(cluster.client, alias)
    for kind in out["spread"]:
        print(table(out, THRESHOLDS, kind))
    print(
        "within 0.05 at every threshold: "
        + ", ".join(f"{kind} {'yes' if met else 'no'}" for kind, met in out["met"].items())
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
