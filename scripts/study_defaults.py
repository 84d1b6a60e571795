"""Offline study of default candidates on fetched legs (scripts/fetch_legs.py), server-exact math.

    .venv/bin/python scripts/study_defaults.py out/legs/scifact-combined.json out/legs/lisa-combined.json ...
    .venv/bin/python scripts/study_defaults.py --report out/legs/scifact-combined.json docs/evals/scifact-offline.json

For each set (its test split; calibrated on the train split's query texts where there is one,
else on the test split's texts, as ``hybrid eval`` does): the legs, every fixed fusion at 0.5 / 0.5,
the pre-issue-18 policy (match quality, min_max), and the coverage policy family over a grid of
its two thresholds, each fitted *without* the set it is scored on (leave one set out: the grid
point with the smallest worst-case regret on the other sets, then the best mean). Fusion is
:func:`adapter.fusion.fuse` (the server's formulas); nDCG@10 is trec_eval's (:mod:`adapter.evaluation.metrics`).
Nothing here is shipped: the shipped rows come from ``hybrid eval`` on the server.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.fusion.choice.policy import (  # noqa: E402
    DEFAULT_POLICY,
    AdaptivePolicy,
    QuerySignals,
    calibrate,
    match_quality,
)  # noqa: E402
from adapter.fusion import LEGS, RRF, ScoreNormalization, fuse  # noqa: E402
from adapter.evaluation.metrics import per_query  # noqa: E402
from adapter.fusion.choice.selection import SetRun, choose  # noqa: E402
from adapter.fusion.choice.signals import term_coverage  # noqa: E402
from study_default_rule import fields_of  # noqa: E402  (the legs files both read: scripts/fetch_legs.py)

OLD = AdaptivePolicy.from_json({"schema": 1, "kind": "adaptive-fusion-policy", "parameters": {}})
STARTS = (0.8, 0.85, 0.9)
SPANS = (0.1, 0.15, 0.2, 0.3)
SAMPLES = (0.0, 10.0)  # n0 of the sample shrink n / (n + n0)


class Study:
    def __init__(self, path: str) -> None:
        self.data = json.loads(Path(path).read_text())
        d = self.data
        self.name = d["dataset"]
        self.qrels = d["qrels"]["test"]
        self.queries = {q: d["queries"][q] for q in self.qrels}
        sample = "train" if "train" in d["qrels"] else "test"
        texts = [d["queries"][q] for q in d["qrels"][sample]]
        legacy = d["legacy_bm25"]
        self.calibration = calibrate(
            [match_quality(q["bm25"][0][1] if q["bm25"] else 0.0, fields_of(q), legacy_bm25=legacy) for q in texts],
            coverages=[term_coverage(fields_of(q)) for q in texts],
            source=f"{self.name} {sample}",
        )
        self._cache: dict = {}

    def ndcg(self, fusion) -> float:
        key = (getattr(fusion, "name", fusion), getattr(fusion, "weights", None))
        if key not in self._cache:
            ranked = {}
            for qid, q in self.queries.items():
                runs = [[tuple(x) for x in q["bm25"]], [tuple(x) for x in q["dense"]]]
                if fusion == "bm25":
                    ranked[qid] = [d for d, _ in runs[0]]
                elif fusion == "dense":
                    ranked[qid] = [d for d, _ in runs[1]]
                else:
                    ranked[qid] = [f.id for f in fuse(runs, fusion, leg_names=LEGS)[:100]]
            self._cache[key] = statistics.fmean(per_query(self.qrels, ranked).values())
        return self._cache[key]

    def policy(self, policy: AdaptivePolicy) -> tuple[float, tuple[float, float], float]:
        choice = policy.choose(QuerySignals("natural"), self.calibration, z_score=True)
        return self.ndcg(policy.fusion(choice)), choice.weights, choice.confidence


def offline_report(path: str, out: str) -> None:
    """One set's rows as an eval report (the eval contract), computed offline from its legs: for a set
    whose server run did not fit in the time there was (each row says so in its notices)."""
    from adapter.fusion.choice.learned import train
    from adapter.evaluation.metrics import evaluate

    s = Study(path)
    d = s.data
    note = (
        "offline: fused in Python from both legs fetched once per query (scripts/fetch_legs.py, "
        "scripts/study_defaults.py) with the server's formulas, not by a `hybrid eval` run"
    )
    runs = {
        q: [[tuple(x) for x in d["queries"][q]["bm25"]], [tuple(x) for x in d["queries"][q]["dense"]]] for q in s.qrels
    }
    z = replace(DEFAULT_POLICY, normalization="z_score")
    mm = replace(DEFAULT_POLICY, normalization="min_max", name="adaptive-min_max")
    fusions = {
        "hybrid-min_max-arithmetic_mean": ScoreNormalization("min_max", weights=(0.5, 0.5)),
        "hybrid-l2-arithmetic_mean": ScoreNormalization("l2", weights=(0.5, 0.5)),
        "hybrid-z_score-arithmetic_mean": ScoreNormalization("z_score", weights=(0.5, 0.5)),
        "hybrid-rrf": RRF(),
        "client-rrf": RRF(),
        "hybrid-adaptive": z.fusion(z.choose(QuerySignals("natural"), s.calibration, z_score=True)),
        "hybrid-adaptive-min_max": mm.fusion(mm.choose(QuerySignals("natural"), s.calibration, z_score=True)),
    }
    rankings = {
        "bm25": {q: [x for x, _ in r[0]] for q, r in runs.items()},
        "dense": {q: [x for x, _ in r[1]] for q, r in runs.items()},
    }
    for name, f in fusions.items():
        rankings[name] = {q: [x.id for x in f.fuse(r, leg_names=LEGS)[:100]] for q, r in runs.items()}
    model = None
    if "train" in d["qrels"]:
        train_q = d["qrels"]["train"]
        legs = {
            q: [[tuple(x) for x in d["queries"][q]["bm25"]], [tuple(x) for x in d["queries"][q]["dense"]]]
            for q in train_q
        }
        model = train(
            legs,
            train_q,
            trained_on={"dataset": s.name, "split": "train", "queries": len(train_q), "depth": d["depth"]},
        )
        rankings["client-learned"] = {q: [x.id for x in model.fuse(r)[:100]] for q, r in runs.items()}
    results = {}
    for name, ranked in rankings.items():
        family = name if name in ("bm25", "dense") else "hybrid"
        results[name] = {
            **{k: round(v, 4) for k, v in evaluate(s.qrels, ranked).items()},
            "latency_ms_p50": 0.0,
            "latency_ms_p95": 0.0,
            "server_ms_p50": 0.0,
            "server_ms_p95": 0.0,
            "queries": len(ranked),
            "notices": [note],
            "family": family,
            "post_processed": False,
        }
    report = {
        "schema_version": 2,
        "dataset": s.name,
        "split": "test",
        "embedder": d["embedder"],
        "index": d["index"],
        "settings": {
            "analyzer": d["analyzer"],
            "title_boost": d["title_boost"],
            "titles": d["titles"],
            "k": 100,
            "depth_per_leg": d["depth"],
            "weights": [0.5, 0.5],
            "mmr_lambda": None,
            "mmr": None,
            "text_fields": [],
            "text_layout": d["text_layout"],
            "layouts": None,
            "calibration": s.calibration.to_meta(),
            "default_technique": None,
            "engine": d["engine"],
            "version": d["version"],
            "opensearch": d["version"],
            "seconds": 0.0,
            "rrf_parity": None,
        },
        "results": results,
        "tuning": None,
        "learned": None,
        "learned_fusion": model.to_json() if model else None,
        "default_regret": None,
    }
    Path(out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"{out}: " + ", ".join(f"{k} {v['ndcg@10']:.4f}" for k, v in results.items()))


def main(paths: list[str]) -> None:
    if paths and paths[0] == "--report":
        offline_report(paths[1], paths[2])
        return
    studies = [Study(p) for p in paths]
    fixed = {
        f"hybrid-{n}-arithmetic_mean": ScoreNormalization(n, weights=(0.5, 0.5)) for n in ("min_max", "z_score", "l2")
    }
    fixed["hybrid-rrf"] = RRF()
    family = {}
    for start, span, n0 in itertools.product(STARTS, SPANS, SAMPLES):
        for base in ("z_score", "min_max"):
            family[f"coverage-{base}-{start:.2f}-{start - span:.2f}-n0={n0:g}"] = AdaptivePolicy(
                coverage_start=start, coverage_full=round(start - span, 2), sample_queries=n0, normalization=base
            )
    rows = {}
    for s in studies:
        r = {"bm25": s.ndcg("bm25"), "dense": s.ndcg("dense")}
        r.update({name: s.ndcg(f) for name, f in fixed.items()})
        r["old-adaptive (match quality)"] = s.policy(OLD)[0]
        for name, pol in family.items():
            r[name] = s.policy(pol)[0]
        rows[s.name] = r
    print("| set | coverage | match quality | bm25 | dense | min_max | z_score | l2 | rrf | old adaptive |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in studies:
        r = rows[s.name]
        print(
            f"| {s.name} | {s.calibration.coverage:.3f} | {s.calibration.match_quality:.2f} | "
            + " | ".join(
                f"{r[k]:.4f}"
                for k in (
                    "bm25",
                    "dense",
                    "hybrid-min_max-arithmetic_mean",
                    "hybrid-z_score-arithmetic_mean",
                    "hybrid-l2-arithmetic_mean",
                    "hybrid-rrf",
                    "old-adaptive (match quality)",
                )
            )
            + " |"
        )
    runs = [SetRun(n, r) for n, r in rows.items()]
    members = list(family)
    print(
        "\nleave one set out, the coverage policy (base normalisation, thresholds, sample shrink) chosen on the other "
        "sets:"
    )
    print("| held out | chosen on the others | weights | confidence | nDCG@10 | best alternative | regret |")
    print("|---|---|---|---|---|---|---|")
    for s, run in zip(studies, runs):
        rest = [o for o in runs if o.name != run.name]
        pick = choose(rest, members).row
        ndcg, weights, conf = s.policy(family[pick])
        print(
            f"| {s.name} | {pick[len('coverage-') :]} | {weights[0]:.2f}/{weights[1]:.2f} | {conf:.2f} | {ndcg:.4f} | "
            f"{run.reference:.4f} | {run.reference - ndcg:+.4f} |"
        )
    best = choose(runs, members)
    print(f"chosen on all sets: {best.row[len('coverage-') :]} (worst regret {best.worst:+.4f}, mean {best.mean:+.4f})")
    for base in ("z_score", "min_max"):
        top = choose(runs, [m for m in members if m.startswith(f"coverage-{base}")])
        print(
            f"  best on {base}: {top.row[len('coverage-') :]} (worst {top.worst:+.4f}, mean {top.mean:+.4f}): "
            + ", ".join(f"{k} {v:+.4f}" for k, v in top.regrets.items())
        )
    print("\nfixed and old candidates, regret per set:")
    for cand in [*fixed, "old-adaptive (match quality)"]:
        print(
            f"  {cand}: "
            + ", ".join(f"{run.name} {run.regret(cand):+.4f}" for run in runs)
            + f"  worst {max(run.regret(cand) for run in runs):+.4f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
