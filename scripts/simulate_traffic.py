"""The simulator's numbers in docs/EVALUATION.md ("Learning from traffic"): for one labelled set on a
running node, each fusion's offline nDCG@10, how many interleaved sessions find the better of a pair
(20 seeds per user), and how well COEC judgments from simulated clicks rank the fusions (Kendall tau).

    OPENSEARCH_URL=http://localhost:9200 python scripts/simulate_traffic.py soporte-es spanish mm-0.2 rrf
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import uuid
from pathlib import Path

from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapter.engines import connect  # noqa: E402
from adapter.evaluation.metrics import evaluate, load_beir  # noqa: E402
from adapter.fusion import fuse  # noqa: E402
from adapter.index.assets import IndexSpec  # noqa: E402
from adapter.admin.init import init_index  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.ingest.sources import read_source  # noqa: E402
from adapter.models.embedders import E5Embedder  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.traffic.clicks import Shown, as_qrels, coec_judgments  # noqa: E402
from adapter.traffic.simulate import USERS, interleaved_sessions, running, sessions_to_detect  # noqa: E402
from tests.support.traffic import FUSIONS  # noqa: E402  (the fusions test_traffic.py claims about)

SEEDS, MAX_SESSIONS, FIXED = 20, 6000, (1000, 2000, 3000, 5000)


def rankings(name: str, analyzer: str) -> tuple[dict, dict, dict]:
    client, e5 = connect(os.environ.get("OPENSEARCH_URL")), E5Embedder()
    dataset = load_beir(f"benchmarks/data/{name}", "test")
    alias = f"sim-traffic-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer=analyzer))
    try:
        Ingestor.open(client, alias, e5, progress=False).ingest(read_source(dataset.corpus))
        searcher = Searcher.open(client, alias, e5)
        legs = {q: searcher.legs(text, depth=100) for q, text in dataset.queries.items()}
    finally:
        client.indices.delete(index=f"{alias}*")
    ranked = {
        f: {q: [d.id for d in fuse(legs[q], fusion)][:10] for q in dataset.queries} for f, fusion in FUSIONS.items()
    }
    return ranked, {f: evaluate(dataset.qrels, r)["ndcg@10"] for f, r in ranked.items()}, dataset.qrels


def detection(ranked: dict, qrels: dict, better: str, worse: str) -> dict:
    out = {}
    for user_name, user in USERS.items():
        needed = [
            sessions_to_detect(
                interleaved_sessions(ranked[worse], ranked[better], qrels, MAX_SESSIONS, user=user, seed=s)
            )
            for s in range(SEEDS)
        ]
        found = [n for n in needed if n is not None]
        fixed = {
            n: sum(
                running(interleaved_sessions(ranked[worse], ranked[better], qrels, n, user=user, seed=s)).verdict
                == "candidate"
                for s in range(SEEDS)
            )
            for n in FIXED
        }
        out[user_name] = {
            "detected": len(found),
            "median": statistics.median(found) if found else None,
            "max": max(found) if found else None,
            "candidate_found_at": fixed,
        }
    return out


def agreement(ranked: dict, ndcg: dict, qrels: dict, sessions: int = 4000) -> dict:
    names, pairs = sorted(ranked), list(itertools.combinations(sorted(ranked), 2))
    out = {}
    for user_name, user in USERS.items():
        logged = [
            s
            for i, (a, b) in enumerate(pairs)
            for s in interleaved_sessions(ranked[a], ranked[b], qrels, sessions // len(pairs), user=user, seed=i)
        ]
        shown = [Shown(s.query, d, p) for s in logged for p, d in enumerate(s.page)]
        clicked = [Shown(s.query, d, p) for s in logged for d, p in s.clicks]
        judged = as_qrels(coec_judgments(shown, clicked))
        estimate = [evaluate(judged, ranked[n])["ndcg@10"] for n in names]
        out[user_name] = round(float(kendalltau([ndcg[n] for n in names], estimate).statistic), 3)
    return out


if __name__ == "__main__":
    name, analyzer, better, worse = sys.argv[1:5]
    ranked, ndcg, qrels = rankings(name, analyzer)
    print(
        json.dumps(
            {
                "set": name,
                "ndcg@10": {k: round(v, 4) for k, v in ndcg.items()},
                "pair": [better, worse],
                "difference": round(ndcg[better] - ndcg[worse], 4),
                "sessions_to_detect": detection(ranked, qrels, better, worse),
                "coec_kendall_tau": agreement(ranked, ndcg, qrels),
            },
            indent=1,
        )
    )
