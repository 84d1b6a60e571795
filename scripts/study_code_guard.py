"""Issue 39 item 4: how far a query with codes follows the better-leg guard's departure, chosen by the
rule written before the measurement (docs/EVALUATION.md, "The better-leg guard on code-heavy corpora").

    .venv/bin/python scripts/study_code_guard.py rows out/c39/legs/*.json --out docs/evals/code-guard
    .venv/bin/python scripts/study_code_guard.py choose --out docs/evals/code-guard

``rows``: for each legs file (scripts/fetch_legs.py, in the index ``init`` + ``ingest`` make with no flags),
the test split's nDCG@10 per query of the legs, the fixed fusions at 0.5 / 0.5 OpenSearch 3.x runs, and
the four candidates (K, P, H, A: the shipped policy, an exact-term query following the departure not at
all, by its share of non-code words, half, fully), fused in Python with the server's formulas and
calibrated on the calibration queries as ``hybrid eval`` does (scripts/study_default_rule.py's method).
``choose``: the rule's tables (regret, worst, mean, the pick; leave one set out) from those reports.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from adapter.fusion.choice.policy import DEFAULT_POLICY  # noqa: E402
from study_default_rule import LegsSet, by_policy, fixed_fusions, fused, how, report, write_report  # noqa: E402

# In the rule's order of preference (K: as shipped).
CANDIDATES = {
    "K": replace(DEFAULT_POLICY, exact_departure=0.0, exact_by_words=0.0),
    "P": replace(DEFAULT_POLICY, exact_departure=0.0, exact_by_words=1.0),
    "H": replace(DEFAULT_POLICY, exact_departure=0.5, exact_by_words=0.0),
    "A": replace(DEFAULT_POLICY, exact_departure=1.0, exact_by_words=0.0),
}
FIXED = ("hybrid-min_max-arithmetic_mean", "hybrid-l2-arithmetic_mean", "hybrid-z_score-arithmetic_mean", "hybrid-rrf")
TOLERANCE = 0.005
RESAMPLES = 2000


def rows(s: LegsSet) -> dict[str, list[float]]:
    calibration = s.calibration()
    out = {
        "bm25": s.score(lambda _q, runs: [d for d, _ in runs[0]]),
        "dense": s.score(lambda _q, runs: [d for d, _ in runs[1]]),
    }
    fusions = fixed_fusions()
    for name in FIXED:
        out[name] = s.score(fused(fusions[name]))
    for name, policy in CANDIDATES.items():
        out[name] = s.score(by_policy(s, policy, calibration))
    return out


def cmd_rows(paths: Sequence[str], out: Path, calibrate_on: str = "train") -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        s = LegsSet.load(path)
        if calibrate_on == "test":  # what `hybrid eval` without --tune calibrates on (a check beside the rule's rows)
            s = replace(s, sample=s.qids, sample_split="test")
        candidates = {
            k: {"exact_departure": p.exact_departure, "exact_by_words": p.exact_by_words} for k, p in CANDIDATES.items()
        }
        write_report(report(s, rows(s), how("scripts/study_code_guard.py"), candidates=candidates), out)


# -- the rule (pure) ------------------------------------------------------------------------------------
def reference(means: Mapping[str, float]) -> tuple[str, float]:
    """The best untuned alternative on OpenSearch 3.x: the better leg or the best fixed fusion at 0.5 / 0.5."""
    row = max(("bm25", "dense", *FIXED), key=lambda r: means[r])
    return row, means[row]


def regret(means: Mapping[str, float], candidate: str) -> float:
    return reference(means)[1] - means[candidate]


def choose(sets: Mapping[str, Mapping[str, float]], candidates: Sequence[str] = tuple(CANDIDATES)) -> str:
    """Rule 5: the smallest worst-case regret; within TOLERANCE of it tied; then the smallest mean, then the order."""
    worst = {c: max(regret(m, c) for m in sets.values()) for c in candidates}
    mean = {c: statistics.fmean(regret(m, c) for m in sets.values()) for c in candidates}
    best = min(worst.values())
    tied = [c for c in candidates if worst[c] - best <= TOLERANCE + 1e-12]
    return min(tied, key=lambda c: (round(mean[c], 9), list(candidates).index(c)))


def paired_se(a: Sequence[float], b: Sequence[float], rng: np.random.Generator) -> float:
    diff = np.asarray(a) - np.asarray(b)
    idx = rng.integers(0, len(diff), size=(RESAMPLES, len(diff)))
    return float(diff[idx].mean(axis=1).std(ddof=1))


def cmd_choose(rows_dir: Path) -> None:
    docs = {d["dataset"]: d for d in (json.loads(p.read_text()) for p in sorted(rows_dir.glob("*.json")))}
    means = {n: {r: statistics.fmean(v) for r, v in d["per_query_ndcg@10"].items()} for n, d in docs.items()}
    rng = np.random.default_rng(39)
    cands = list(CANDIDATES)
    print("| set | queries | coverage | codes | bm25 | dense | best untuned alternative | " + " | ".join(cands) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(cands))
    for n, d in docs.items():
        m, cal = means[n], d["calibration"]
        ref = reference(m)
        print(
            f"| {n} | {len(d['queries'])} | {cal.get('coverage', float('nan')):.3f} | "
            f"{cal.get('exact_share', float('nan')):.2f} | {m['bm25']:.4f} | {m['dense']:.4f} | {ref[1]:.4f} "
            f"({ref[0].replace('hybrid-', '').replace('-arithmetic_mean', '')}) | "
            + " | ".join(f"{m[c]:.4f}" for c in cands)
            + " |"
        )
    print("\nregret (best untuned alternative - candidate) ± paired bootstrap se; worst; mean")
    print("| candidate | " + " | ".join(docs) + " | worst | mean |")
    print("|---|" + "---|" * (len(docs) + 2))
    for c in cands:
        cells = []
        for n, d in docs.items():
            per = d["per_query_ndcg@10"]
            cells.append(f"{regret(means[n], c):+.4f} ± {paired_se(per[reference(means[n])[0]], per[c], rng):.4f}")
        rs = [regret(means[n], c) for n in docs]
        print(f"| {c} | " + " | ".join(cells) + f" | {max(rs):+.4f} | {statistics.fmean(rs):+.4f} |")
    pick = choose(means)
    print(f"\nchosen on every set: {pick}")
    print(
        "\n| held out | chosen on the others | its regret there | it - better leg ± se | K - better leg ± se | held |"
    )
    print("|---|---|---|---|---|---|")
    for n, d in docs.items():
        others = {k: v for k, v in means.items() if k != n}
        c = choose(others)
        per, m = d["per_query_ndcg@10"], means[n]
        leg = "bm25" if m["bm25"] >= m["dense"] else "dense"
        r = regret(m, c)
        print(
            f"| {n} | {c} | {r:+.4f} | {m[c] - m[leg]:+.4f} ± {paired_se(per[c], per[leg], rng):.4f} ({leg}) | "
            f"{m['K'] - m[leg]:+.4f} ± {paired_se(per['K'], per[leg], rng):.4f} | "
            f"{'yes' if r <= TOLERANCE + 1e-12 else 'no'} |"
        )


def main(argv: Sequence[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["rows", "choose"])
    p.add_argument("legs", nargs="*")
    p.add_argument("--out", default="docs/evals/code-guard")
    p.add_argument(
        "--calibrate-on",
        choices=["train", "test"],
        default="train",
        help="the query texts the policy is calibrated on (the rule: train, else test)",
    )
    args = p.parse_args(argv)
    if args.command == "rows":
        cmd_rows(args.legs, Path(args.out), args.calibrate_on)
    else:
        cmd_choose(Path(args.out))


if __name__ == "__main__":
    main(sys.argv[1:])
