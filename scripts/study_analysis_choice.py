"""Issue 39: the automatic analyzer / embedder choice against the pairs chosen by hand, judged by the rule
written in docs/EVALUATION.md ("The analyzer and embedder chosen from the documents") before the pairs were measured.

Reads the stored evaluations ``hybrid eval --report`` wrote, one folder per set and pair, named
``<set>-<tag>`` under ``--reports``: ``auto`` (no --analyzer / --embedder) and ``<analyzer>-multilingual`` /
``<analyzer>-minilm`` for the hand-chosen pairs (a pair that equals the automatic choice is not run again: the
auto folder stands for it). Prints the table of pairs, each candidate rule's regret per set with its paired
bootstrap standard error, and the leave-one-set-out check, as markdown.

    .venv/bin/python scripts/study_analysis_choice.py --reports out/h39/reports

With ``--rules CE``: the section "The language's stems beside the words as written (candidate E)", where E is
the ``<language>_stems-multilingual`` folder's pair (``analysis_choice_runs.sh`` with STEMS=...), C's pair where
a set has none.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROW = "hybrid-adaptive-min_max"  # the product's default row on OpenSearch 3.x (--row: hybrid-adaptive on 2.19)
EMBEDDERS = {"multilingual": "multilingual-e5-small", "minilm": "minilm"}
RULES = "ABCD"  # in the doc's order of preference (--rules CE: the stems candidate's section)
TOLERANCE = 0.005
RESAMPLES = 2000


def per_query(folder: Path) -> dict[str, float]:
    """nDCG@10 of the default row per judged query (ir-measures, as hybrid eval scores it)."""
    import ir_measures

    qrels = list(ir_measures.read_trec_qrels(str(folder / "qrels.txt")))
    run = list(ir_measures.read_trec_run(str(folder / "runs" / f"{ROW}.run")))
    scores = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
    judged = {q.query_id for q in qrels}
    return {q: scores.get(q, 0.0) for q in judged}


def load(reports: Path) -> dict[str, dict[tuple[str, str], dict[str, float]]]:
    """set -> (analyzer, embedder) -> per-query nDCG@10; the auto run under its own pair and under ("auto", "auto")."""
    out: dict[str, dict[tuple[str, str], dict[str, float]]] = {}
    for folder in sorted(p for p in reports.iterdir() if (p / "eval.json").is_file()):
        name, _, tag = folder.name.rpartition("-")
        if tag != "auto":
            name, _, analyzer = name.rpartition("-")
            tag = f"{analyzer}-{tag}"
        summary = json.loads((folder / "eval.json").read_text())
        analyzer = summary["settings"]["analyzer"]
        embedder = "minilm" if "MiniLM" in summary["embedder"] else "multilingual-e5-small"
        scores = per_query(folder)
        pairs = out.setdefault(name, {})
        pairs[(analyzer, embedder)] = scores
        if tag == "auto":
            pairs[("auto", "auto")] = scores
            pairs[("auto-pair", "auto-pair")] = {"analyzer": analyzer, "embedder": embedder}  # type: ignore[assignment]
    return out


def rule_pair(rule: str, language: str, english: bool) -> tuple[str, str]:
    """The pair a candidate rule gives a set whose language's analyzer on the node is ``language``."""
    analyzer = language if rule in "AB" else "folding"
    embedder = "minilm" if rule in "BD" and english else "multilingual-e5-small"
    return analyzer, embedder


def stems_pair(pairs: dict[tuple[str, str], dict[str, float]]) -> tuple[str, str]:
    """E's pair: the set's `<language>_stems` analyzer with e5-small where it was run, else C's (folding)."""
    stems = next((a for a, _ in pairs if a.endswith("_stems")), "folding")
    return stems, "multilingual-e5-small"


def mean(scores: dict[str, float]) -> float:
    return float(np.mean(list(scores.values())))


def main() -> None:
    global ROW, RULES  # before the parser reads them as defaults: Python refuses a global declared after a use
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, required=True)
    parser.add_argument(
        "--row", default=ROW, help=f"the default row's technique (default {ROW}; OpenSearch 2.19: hybrid-adaptive)"
    )
    parser.add_argument(
        "--english",
        default="parts-en,apropos-en,glossary-en,pyapi-en,scifact,med,lisa",
        help="the sets whose corpus the detector reads as English",
    )
    parser.add_argument(
        "--rules",
        default=RULES,
        help="the candidates in order of preference: ABCD (default), or CE (the stems section)",
    )
    args = parser.parse_args()
    ROW, RULES = args.row, args.rules
    english = set(args.english.split(","))
    data = load(args.reports)
    sets = sorted(data)
    regret: dict[str, dict[str, tuple[float, float]]] = {}
    shown = ("A", "C") if RULES == "ABCD" else (RULES[0], RULES[-1])  # the two whose shortfall the table shows
    print(
        f"| set | queries | the automatic run (its pair) | every pair | best | {shown[0]}'s shortfall (SE) "
        f"| {shown[1]}'s shortfall (SE) |"
    )
    print("|---|---|---|---|---|---|---|")
    for s in sets:
        pairs = dict(data[s])
        auto_pair = pairs.pop(("auto-pair", "auto-pair"))
        auto = (auto_pair["analyzer"], auto_pair["embedder"])  # type: ignore[index]
        pairs.pop(("auto", "auto"))
        # A's analyzer: the language's, where the node has one (the pair that is not folding), else folding.
        language = next((a for a, _ in pairs if a != "folding" and not a.endswith("_stems")), "folding")
        best_pair = max(pairs, key=lambda p: mean(pairs[p]))
        regret[s] = {}
        qids = sorted(pairs[best_pair])
        rng = np.random.default_rng(39)
        draws = rng.integers(0, len(qids), size=(RESAMPLES, len(qids)))
        for rule in RULES:
            mine = pairs.get(stems_pair(pairs) if rule == "E" else rule_pair(rule, language, s in english))
            if mine is None:
                regret[s][rule] = (float("nan"), float("nan"))
                continue
            diff = np.array([pairs[best_pair][q] - mine.get(q, 0.0) for q in qids])
            regret[s][rule] = (float(diff.mean()), float(diff[draws].mean(axis=1).std()))
        cells = ", ".join(
            f"{a}+{'e5' if e.startswith('multi') else 'MiniLM'} {mean(v):.4f}" for (a, e), v in sorted(pairs.items())
        )
        (ra, sa), (rc, sc) = regret[s][shown[0]], regret[s][shown[1]]
        print(
            f"| {s} | {len(qids)} | {auto[0]}+{'e5' if auto[1].startswith('multi') else 'MiniLM'} "
            f"{mean(pairs[auto]):.4f} | {cells} | "
            f"{best_pair[0]}+{'e5' if best_pair[1].startswith('multi') else 'MiniLM'} | {ra:.4f} ({sa:.4f}) | {rc:.4f} "
            f"({sc:.4f}) |"
        )
    missing = [s for s in sets if any(np.isnan(regret[s][rule][0]) for rule in RULES)]
    if missing:
        print(f"\nleft out of the rules' comparison, a pair not measured yet: {', '.join(missing)}")
    sets = [s for s in sets if s not in missing]
    print()
    print("| rule | " + " | ".join(sets) + " | worst | mean |")
    print("|---|" + "---|" * (len(sets) + 2))
    for rule in RULES:
        values = [regret[s][rule][0] for s in sets]
        print(
            f"| {rule} | "
            + " | ".join(f"{regret[s][rule][0]:.4f} ({regret[s][rule][1]:.4f})" for s in sets)
            + f" | {max(values):.4f} | {np.mean(values):.4f} |"
        )
    print()

    def choose(group: list[str]) -> str:
        worst = {rule: max(regret[s][rule][0] for s in group) for rule in RULES}
        low = min(worst.values())
        return next(rule for rule in RULES if worst[rule] <= low + TOLERANCE)

    print(f"chosen on every set: {choose(sets)}")
    print("| held out | chosen on the others | its regret there (SE) |")
    print("|---|---|---|")
    for s in sets:
        rule = choose([t for t in sets if t != s])
        print(f"| {s} | {rule} | {regret[s][rule][0]:.4f} ({regret[s][rule][1]:.4f}) |")


if __name__ == "__main__":
    main()
