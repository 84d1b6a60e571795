"""Issue 31: every default candidate's nDCG@10 per query on each labelled set, from legs fetched once.

    .venv/bin/python scripts/study_default_rule.py rows out/legs/*-combined.json --out docs/evals/default-rule
    .venv/bin/python scripts/study_default_rule.py fit --out docs/evals/default-rule
    .venv/bin/python scripts/study_default_rule.py signals out/legs/*-combined.json

``rows``: for each legs file (scripts/fetch_legs.py: both legs of every judged query, raw scores,
and the query's analysed terms with their document frequencies), the test split's rows fused in
Python with the server's formulas (:func:`adapter.fusion.fuse`): the legs, every fixed fusion at
0.5 / 0.5, RRF (the client's tie order), DBSF and the score sum (both fused in the client), and the
adaptive policy's two forms calibrated label-free on the calibration queries (the train split's
texts where there is one, else the test split's, as ``hybrid eval`` does). Each row keeps its
nDCG@10 per query (trec_eval's, :func:`adapter.evaluation.metrics.per_query`), which the selection's
standard errors need (docs/EVALUATION.md, "The rule"). One JSON per set under ``--out``.

``fit``: the guarded candidates' rows, fitted leave one set out (:func:`fit_guards`), added to
the reports of ``rows``.

``guards``: the better-leg guard's neighbours on every set (its floor at full confidence 0, 0.05 or
0.1; codes kept at the baseline or departing like every query), and that family chosen leave one set
out by the rule, scored on the held-out set (reads the ``rows`` output in ``--out``).

``signals``: each set's label-free evidence from its calibration queries (term coverage, the
legs' agreement), beside which leg wins on the judgments: what the better-leg guard is built from.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.evaluation.metrics import per_query  # noqa: E402
from adapter.fusion import LEGS, RRF, ScoreNormalization, ScoreSum  # noqa: E402
from adapter.fusion.dbsf import DBSF  # noqa: E402
from adapter.fusion.base import Fusion  # noqa: E402
from adapter.fusion.choice.policy import (  # noqa: E402
    DEFAULT_POLICY,
    ISSUE18_POLICY,
    AdaptivePolicy,
    Calibration,
    FieldTerms,
    QuerySignals,
    calibrate,
    match_quality,
)  # noqa: E402
from adapter.fusion.choice.signals import QueryEvidence, term_coverage  # noqa: E402

Run = list[tuple[str, float]]
DEPTH = 100


def fields_of(q: Mapping[str, Any]) -> list[FieldTerms]:
    return [
        FieldTerms(f["field"], f["boost"], f["doc_count"], tuple(tuple(t) for t in f["terms"])) for f in q["fields"]
    ]


@dataclass(frozen=True)
class LegsSet:
    """One set's fetched legs: its test queries' runs, and its calibration sample."""

    name: str
    data: Mapping[str, Any]
    qids: tuple[str, ...]  # the test split's judged queries, sorted
    qrels: Mapping[str, Mapping[str, int]]
    sample: tuple[str, ...]  # the calibration queries' ids (train where there is one, else test)
    sample_split: str

    @classmethod
    def load(cls, path: str | Path) -> LegsSet:
        data = json.loads(Path(path).read_text())
        qrels = data["qrels"]["test"]
        split = "train" if "train" in data["qrels"] else "test"
        return cls(data["dataset"], data, tuple(sorted(qrels)), qrels, tuple(sorted(data["qrels"][split])), split)

    def runs(self, qid: str) -> list[Run]:
        q = self.data["queries"][qid]
        return [[(d, float(s)) for d, s in q["bm25"]], [(d, float(s)) for d, s in q["dense"]]]

    def calibration(self) -> Calibration:
        legacy = self.data["legacy_bm25"]
        queries = [self.data["queries"][q] for q in self.sample]
        return calibrate(
            [match_quality(q["bm25"][0][1] if q["bm25"] else 0.0, fields_of(q), legacy_bm25=legacy) for q in queries],
            coverages=[term_coverage(fields_of(q)) for q in queries],
            source=f"{self.name} {self.sample_split}",
            texts=[q["text"] for q in queries],
        )

    def evidence(self, qids: Sequence[str] | None = None) -> list[QueryEvidence]:
        out = []
        for qid in qids if qids is not None else self.sample:
            runs = self.runs(qid)
            out.append(QueryEvidence.of(fields_of(self.data["queries"][qid]), runs[0], runs[1]))
        return out

    def score(self, ranked: Callable[[str, list[Run]], list[str]]) -> list[float]:
        """nDCG@10 of every test query (in :attr:`qids` order) for a ranking function of the legs."""
        rankings = {q: ranked(q, self.runs(q))[:DEPTH] for q in self.qids}
        by_query = per_query({q: dict(self.qrels[q]) for q in self.qids}, rankings)
        return [round(by_query[q], 6) for q in self.qids]


def fused(fusion: Fusion) -> Callable[[str, list[Run]], list[str]]:
    return lambda _q, runs: [f.id for f in fusion.fuse(runs, leg_names=LEGS)]


def policy_fusion(policy: AdaptivePolicy, calibration: Calibration, z_score: bool) -> ScoreNormalization:
    return policy.fusion(policy.choose(QuerySignals("natural"), calibration, z_score=z_score))


def by_policy(s: LegsSet, policy: AdaptivePolicy, calibration: Calibration) -> Callable[[str, list[Run]], list[str]]:
    """The policy as the searcher runs it: each query's weights from its own text (its class) and the calibration."""

    def ranked(qid: str, runs: list[Run]) -> list[str]:
        choice = policy.choose(QuerySignals.of(s.data["queries"][qid]["text"]), calibration, z_score=True)
        return [f.id for f in policy.fusion(choice).fuse(runs, leg_names=LEGS)]

    return ranked


GUARDS = {
    f"{base}-{w:.2f}-{'codes-kept' if e == 0 else 'all-depart'}": replace(
        DEFAULT_POLICY, normalization=base, departure_weight=w, exact_departure=e, name=f"guarded-{base}"
    )
    for base in ("z_score", "min_max")
    for w in (0.0, 0.05, 0.1)
    for e in (0.0, 1.0)
}


def fixed_fusions() -> dict[str, Fusion]:
    return {
        "hybrid-min_max-arithmetic_mean": ScoreNormalization("min_max", weights=(0.5, 0.5)),
        "hybrid-l2-arithmetic_mean": ScoreNormalization("l2", weights=(0.5, 0.5)),
        "hybrid-z_score-arithmetic_mean": ScoreNormalization("z_score", weights=(0.5, 0.5)),
        "hybrid-rrf": RRF(),
        "client-rrf": RRF(),
        "client-dbsf": DBSF(),
        "hybrid-sum": ScoreSum((0.5, 0.5)),
    }


def rows(s: LegsSet) -> dict[str, list[float]]:
    calibration = s.calibration()
    out = {
        "bm25": s.score(lambda _q, runs: [d for d, _ in runs[0]]),
        "dense": s.score(lambda _q, runs: [d for d, _ in runs[1]]),
    }
    for name, fusion in fixed_fusions().items():
        out[name] = s.score(fused(fusion))
    # The policy of issue 18 (no guard); the guarded policy's rows are fitted leave one set out (``fit``).
    for row, policy in (("hybrid-adaptive-issue18", ISSUE18_POLICY),):
        out[row] = s.score(by_policy(s, replace(policy, normalization="z_score"), calibration))
        out[f"{row}-min_max"] = s.score(
            by_policy(s, replace(policy, normalization="min_max", name=f"{policy.name}-min_max"), calibration)
        )
    return {**out, **guard_rows(s)}


def guard_rows(s: LegsSet) -> dict[str, list[float]]:
    """The guard's neighbours (not candidates): its floor and whether codes keep the baseline."""
    calibration = s.calibration()
    return {f"guard-{name}": s.score(by_policy(s, policy, calibration)) for name, policy in GUARDS.items()}


def how(script: str) -> str:
    """The report's ``how``: the method every study of the rule shares, and the script that ran it."""
    return (
        "offline: both legs fetched once per query (scripts/fetch_legs.py), fused in Python with the server's "
        f"formulas ({script})"
    )


def report(s: LegsSet, by_row: Mapping[str, list[float]], method: str | None = None, **extra: Any) -> dict[str, Any]:
    """One set's report: its legs' provenance, ``method`` (default: this script's), ``extra``, the rows' nDCG@10."""
    d = s.data
    return {
        "dataset": s.name,
        "split": "test",
        "embedder": d["embedder"],
        "analyzer": d["analyzer"],
        "text_layout": d["text_layout"],
        "engine": d["engine"],
        "version": d["version"],
        "depth_per_leg": d["depth"],
        "calibration": s.calibration().to_meta(),
        "how": method or how("scripts/study_default_rule.py") + "; hybrid-rrf and client-rrf in the client's tie order",
        **extra,
        "queries": list(s.qids),
        "ndcg@10": {row: round(statistics.fmean(v), 4) for row, v in by_row.items()},
        "per_query_ndcg@10": {row: [round(x, 4) for x in v] for row, v in by_row.items()},
    }


def cmd_rows(paths: Sequence[str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        s = LegsSet.load(path)
        write_report(report(s, rows(s)), out)


def write_report(doc: Mapping[str, Any], out: Path) -> None:
    """``doc`` as ``<out>/<dataset>.json``, and its rows' nDCG@10 in one line."""
    (out / f"{doc['dataset']}.json").write_text(json.dumps(doc, ensure_ascii=False) + "\n")
    means = ", ".join(f"{k} {v:.4f}" for k, v in doc["ndcg@10"].items())
    print(f"{doc['dataset']} ({len(doc['queries'])} queries): {means}", flush=True)


def cmd_signals(paths: Sequence[str]) -> None:
    for path in paths:
        s = LegsSet.load(path)
        ev = s.evidence()
        agree = []
        for qid in s.sample:
            bm25, dense = s.runs(qid)
            top_b = {d for d, _ in bm25[:10]}
            top_d = {d for d, _ in dense[:10]}
            agree.append((bool(bm25) and bm25[0][0] in top_d, bool(dense) and dense[0][0] in top_b))
        b_conf = statistics.fmean(a for a, _ in agree)
        d_conf = statistics.fmean(b for _, b in agree)

        def med(xs: list[float | None]) -> float:
            known = [x for x in xs if x is not None]
            return statistics.median(known) if known else float("nan")

        print(
            f"{s.name:12} n={len(s.sample):4} coverage {med([e.coverage for e in ev]):.3f} overlap "
            f"{med([e.overlap for e in ev]):.2f} footrule {med([e.rank_correlation for e in ev]):.2f} "
            f"bm25top1-in-dense10 {b_conf:.2f} dense top1-in-bm25-10 {d_conf:.2f} peak b "
            f"{med([e.bm25_peak for e in ev]):.2f} d {med([e.dense_peak for e in ev]):.2f}"
        )


def cmd_guards(rows_dir: Path) -> None:
    """The guard's neighbours on every set (its floor, and whether codes keep the baseline), and the
    guard's family chosen leave one set out by the rule (docs/EVALUATION.md), scored on the held-out set."""
    from adapter.fusion.choice.selection import ClusterKind, SetRun, as_run_on, choose, standard_error

    runs = []
    for path in sorted(rows_dir.glob("*.json")):
        base = json.loads(path.read_text())
        per = base["per_query_ndcg@10"]
        # OpenSearch 3.x's alternatives (the regret's reference): no client-only fusion there.
        runs.append(
            as_run_on(
                SetRun(base["dataset"], {k: statistics.fmean(v) for k, v in per.items()}, per), ClusterKind.OPENSEARCH_3
            )
        )
    family = [f"guard-{n}" for n in GUARDS]
    print("| set | " + " | ".join(f.replace("guard-", "") for f in family) + " |")
    print("|---|" + "---|" * len(family))
    for run in runs:
        print(f"| {run.name} | " + " | ".join(f"{run.rows[f]:.4f}" for f in family) + " |")
    print("\n| held out | chosen on the others | its nDCG@10 | better leg | its regret ± se |\n|---|---|---|---|---|")
    for run in runs:
        pick = choose([o for o in runs if o.name != run.name], family).row
        print(
            f"| {run.name} | {pick.replace('guard-', '')} | {run.rows[pick]:.4f} | {run.best_leg[0]} "
            f"{run.best_leg[1]:.4f} | {run.regret(pick):+.4f} ± {standard_error(run, pick):.4f} |"
        )
    best = choose(runs, family)
    print(f"\nchosen on every set: {best.row.replace('guard-', '')} (worst {best.worst:+.4f}, mean {best.mean:+.4f})")


def fit_guards(rows_dir: Path) -> None:
    """Rule 8 of docs/EVALUATION.md: the better-leg guard's parameters (its family, :data:`GUARDS`) are
    fitted, so each set's guarded rows are those of the member the rule picks on the *other* sets:
    ``hybrid-adaptive-guard`` among the z_score members on OpenSearch 3.x's rows,
    ``hybrid-adaptive-guard-min_max`` among the min_max members on 2.19's. Written into each set's
    report in ``rows_dir`` (with the picks, ``guard_fit``), beside the family on every set."""
    from adapter.fusion.choice.selection import ClusterKind, SetRun, as_run_on, choose

    paths = sorted(rows_dir.glob("*.json"))
    docs = {p: json.loads(p.read_text()) for p in paths}
    forms = (
        ("hybrid-adaptive-guard", "z_score", ClusterKind.OPENSEARCH_3),
        ("hybrid-adaptive-guard-min_max", "min_max", ClusterKind.OPENSEARCH_2),
    )
    fitted: dict[Path, dict[str, list[float]]] = {p: {} for p in paths}
    picks: dict[Path, dict[str, str]] = {p: {} for p in paths}
    for row, base, kind in forms:
        family = [f"guard-{n}" for n in GUARDS if n.startswith(base + "-")]
        runs = {}
        for p, d in docs.items():
            per = {k: v for k, v in d["per_query_ndcg@10"].items() if not k.startswith("hybrid-adaptive-guard")}
            runs[p] = as_run_on(SetRun(d["dataset"], {k: statistics.fmean(v) for k, v in per.items()}, per), kind)
        for p in paths:
            pick = choose([r for q, r in runs.items() if q != p], family).row
            fitted[p][row] = list(docs[p]["per_query_ndcg@10"][pick])
            picks[p][row] = pick.replace("guard-", "")
        whole = choose(list(runs.values()), family)
        print(
            f"{row}: on every set the rule picks {whole.row.replace('guard-', '')} (worst {whole.worst:+.4f}, mean "
            f"{whole.mean:+.4f}): the shipped parameters if this row is chosen",
            flush=True,
        )
    for p, d in docs.items():
        d["per_query_ndcg@10"].update(fitted[p])
        d["ndcg@10"].update({k: round(statistics.fmean(v), 4) for k, v in fitted[p].items()})
        d["guard_fit"] = picks[p]
        p.write_text(json.dumps(d, ensure_ascii=False) + "\n")
        print(
            f"{d['dataset']}: " + ", ".join(f"{k} = {v} ({d['ndcg@10'][k]:.4f})" for k, v in picks[p].items()),
            flush=True,
        )


def main(argv: Sequence[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["rows", "fit", "signals", "guards"])
    p.add_argument("legs", nargs="*")
    p.add_argument("--out", default="docs/evals/default-rule")
    args = p.parse_args(argv)
    if args.command == "rows":
        cmd_rows(args.legs, Path(args.out))
    elif args.command == "fit":
        fit_guards(Path(args.out))
    elif args.command == "guards":
        cmd_guards(Path(args.out))
    else:
        cmd_signals(args.legs)


if __name__ == "__main__":
    main(sys.argv[1:])
