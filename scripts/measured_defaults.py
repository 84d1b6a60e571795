"""Choose the product's default fusion from measured `hybrid eval` JSONs, by leave-one-set-out regret.

    .venv/bin/python scripts/measured_defaults.py docs/evals/*.json --layouts docs/eval-scifact.json \
        docs/eval-soporte-es.json docs/eval-wsparcie-pl.json [--markdown]

Writes ``adapter/data/measured-defaults.json`` (per set, the nDCG@10 of the legs and of every
default candidate on the reported split; per kind of cluster, each candidate's regret against the
set's best fixed untuned fusion, its worst case and mean, the chosen row and the leave-one-set-out
check; see ``adapter.fusion.choice.selection`` and ``adapter.fusion.choice.defaults``) and stamps the chosen row into each
JSON's ``settings.default_technique``, so every report names the default the product now ships.
``--layouts`` names ``--compare-layouts`` runs whose train-split comparisons choose the text layout
of ``hybrid init`` (by the same rule: the smallest worst-case loss). ``--markdown`` prints the
per-set and selection tables of docs/EVALUATION.md. Give only reports whose rows were not tuned on
their reported split (``hybrid eval`` refuses that).
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


def markdown(summary: dict) -> str:
    sets = list(summary["sets"])
    os3 = summary["selection"]["opensearch-3"]
    lines = ["| nDCG@10 | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for leg in ("bm25", "dense"):
        lines.append(f"| {leg} | " + " | ".join(f"{summary['sets'][s].get(leg, float('nan')):.4f}" for s in sets) + " |")
    lines.append("| best fixed untuned fusion | " + " | ".join(f"{os3['best_fixed'][s][1]:.4f} ({os3['best_fixed'][s][0][7:]})"
                                                            for s in sets) + " |")
    lines += ["", "| candidate (OpenSearch 3.x) | " + " | ".join(f"regret {s}" for s in sets) + " | worst | mean |",
              "|---|" + "---|" * (len(sets) + 2)]
    ranked = sorted(os3["candidates"].items(), key=lambda kv: (kv[1]["worst"], kv[1]["mean"]))
    for row, c in ranked:
        mark = "**" if row == os3["chosen"] else ""
        lines.append(f"| {mark}{row}{mark} | " + " | ".join(f"{c['regret'][s]:+.4f}" for s in sets) +
                     f" | {c['worst']:+.4f} | {c['mean']:+.4f} |")
    lines += ["", "| held out | chosen on the others | its regret there |", "|---|---|---|"]
    lines += [f"| {h['held_out']} | {h['chosen']} | {h['regret']:+.4f} |" for h in os3["leave_one_out"]]
    lines += ["", "defaults per cluster kind: " + ", ".join(f"{k}: {v}" for k, v in summary["defaults"].items())]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    show = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    layouts: list[str] = []
    if "--layouts" in argv:
        at = argv.index("--layouts")
        argv, layouts = argv[:at], argv[at + 1:]
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
        data["settings"]["default_technique"] = default
        rows = {n: r["ndcg@10"] for n, r in data["results"].items() if not r.get("post_processed") and not _tuned(n)}
        regret = default_regret(rows, default)
        data["default_regret"] = regret.as_json() if regret else None  # what `hybrid eval` says with this default
        path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"defaults: {summary['defaults']}; text layout: {(summary['text_layout'] or {}).get('chosen')}")
    if show:
        print(markdown(summary))


if __name__ == "__main__":
    main(sys.argv[1:])
