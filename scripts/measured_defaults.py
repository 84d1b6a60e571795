"""Choose the product's default fusion from measured per-set rows, by the rule of docs/EVALUATION.md.

    .venv/bin/python scripts/measured_defaults.py docs/evals/default-rule/*.json \
        --layouts docs/results/eval-scifact.json docs/results/eval-soporte-es.json \
        docs/results/eval-wsparcie-pl.json [--markdown]

Reads per-set reports: the offline rows of ``scripts/study_default_rule.py`` (each row's nDCG@10 per
query, so regrets get their bootstrap standard errors and near worst cases are tied), or ``hybrid
eval --json`` reports (means only: no standard errors). Writes ``adapter/data/measured-defaults.json``
(per set, the mean nDCG@10 of the legs and every default candidate on the reported split; per kind
of cluster, each candidate's regret and its standard error per set, worst and mean, the paired
standard error against the best worst case, whether it is tied, the chosen row and the
leave-one-set-out check; see ``adapter.fusion.choice.selection`` and ``adapter.fusion.choice.defaults``)
and stamps the chosen row into each ``hybrid eval`` JSON's ``settings.default_technique``.
``--layouts`` names ``--compare-layouts`` runs whose train-split comparisons choose the text layout
of ``hybrid init``. ``--markdown`` prints the tables of docs/EVALUATION.md. Give only reports whose
rows were not tuned on their reported split.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.fusion.choice.defaults import MEASURED_FILE, summarize  # noqa: E402
from adapter.evaluation.regret import default_regret  # noqa: E402


def _tuned(row: str) -> bool:
    """Rows learned from judgments (not what the report's default is compared with)."""
    return row.startswith("hybrid-tuned-") or row in ("hybrid-learned", "client-learned")


def markdown(summary: dict, kind: str = "opensearch-3") -> str:
    sets = list(summary["sets"])
    table = summary["selection"][kind]
    head = [s.replace(" test", "") for s in sets]
    lines = [
        "| nDCG@10 (test) | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(sets),
        "| queries | " + " | ".join(str(summary.get("queries", {}).get(s, "")) for s in sets) + " |",
    ]
    for leg in ("bm25", "dense"):
        lines.append(
            f"| {leg} | " + " | ".join(f"{summary['sets'][s].get(leg, float('nan')):.4f}" for s in sets) + " |"
        )
    lines.append(
        "| best untuned alternative | "
        + " | ".join(
            f"{table['reference'][s][1]:.4f} "
            f"({table['reference'][s][0].replace('hybrid-', '').replace('-arithmetic_mean', '')})"
            for s in sets
        )
        + " |"
    )
    lines += [
        "",
        f"| candidate ({kind}) | "
        + " | ".join(f"regret {h} ± se" for h in head)
        + " | worst | mean | worst - best's ± paired se | tied |",
        "|---|" + "---|" * (len(sets) + 4),
    ]
    for row, c in table["candidates"].items():
        mark = "**" if row == table["chosen"] else ""
        se = c.get("standard_error") or {}
        cells = [f"{c['regret'][s]:+.4f} ± {se[s]:.4f}" if s in se else f"{c['regret'][s]:+.4f}" for s in sets]
        best = min(v["worst"] for v in table["candidates"].values())
        tie = "" if c.get("tie_error") is None else f"{c['worst'] - best:+.4f} ± {c['tie_error']:.4f}"
        lines.append(
            f"| {mark}{row}{mark} | " + " | ".join(cells) + f" | {c['worst']:+.4f} | {c['mean']:+.4f} | {tie} | "
            f"{'yes' if c.get('tied') else ''} |"
        )
    lines += ["", "| held out | chosen on the others | its regret there ± se |", "|---|---|---|"]
    lines += [
        f"| {h['held_out'].replace(' test', '')} | {h['chosen']} | {h['regret']:+.4f} ± "
        f"{h.get('standard_error', 0.0):.4f} |"
        for h in table["leave_one_out"]
    ]
    lines += ["", "defaults per cluster kind: " + ", ".join(f"{k}: {v}" for k, v in summary["defaults"].items())]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    show = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    layouts: list[str] = []
    if "--layouts" in argv:
        at = argv.index("--layouts")
        argv, layouts = argv[:at], argv[at + 1 :]
    paths = argv
    reports = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        label = f"{data['dataset']} {data['split']}"
        if label in reports:
            raise SystemExit(f"two reports for {label}: give one per labelled set")
        if data["split"] == (data.get("tuning") or {}).get("split"):
            raise SystemExit(f"{path} was tuned on its reported split")
        reports[label] = (Path(path), data)
    layout_reports = {p: json.loads(Path(p).read_text()) for p in layouts}
    summary = summarize({label: data for label, (_, data) in reports.items()}, layout_reports)
    summary["sources"] = {label: str(path) for label, (path, _) in reports.items()}
    summary["layout_sources"] = layouts
    (ROOT / "adapter" / "data" / MEASURED_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    default = summary["defaults"]["opensearch-3"]
    for label, (path, data) in reports.items():
        if "results" not in data:
            continue  # offline rows (scripts/study_default_rule.py): not a `hybrid eval` report
        data["settings"]["default_technique"] = default
        rows = {n: r["ndcg@10"] for n, r in data["results"].items() if not r.get("post_processed") and not _tuned(n)}
        regret = default_regret(rows, default)
        data["default_regret"] = regret.as_json() if regret else None  # what `hybrid eval` says with this default
        path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"defaults: {summary['defaults']}; text layout: {(summary['text_layout'] or {}).get('chosen')}")
    if show:
        for kind in summary["selection"]:
            print(f"\n### {kind}\n")
            print(markdown(summary, kind))


if __name__ == "__main__":
    main(sys.argv[1:])
