"""Choose the product's default fusion from measured `hybrid eval` JSONs.

    .venv/bin/python scripts/measured_defaults.py docs/eval-scifact.json docs/eval-xquad-es.json ...

Writes ``adapter/data/measured-defaults.json`` (per set, the nDCG@10 of every default candidate on
the reported split; see ``adapter.defaults``) and stamps the chosen row into each JSON's
``settings.default_technique``, so every report names the default the product now ships. Give
only reports whose rows were not tuned on their reported split (``hybrid eval`` refuses that).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.defaults import MEASURED_FILE, summarize  # noqa: E402


def main(paths: list[str]) -> None:
    reports = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        label = f"{data['dataset']} {data['split']}"
        if label in reports:
            raise SystemExit(f"two reports for {label}: give one per labelled set")
        reports[label] = (Path(path), data)
    summary = summarize({label: data for label, (_, data) in reports.items()})
    summary["sources"] = {label: str(path) for label, (path, _) in reports.items()}
    (ROOT / "adapter" / "data" / MEASURED_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    for label, (path, data) in reports.items():
        data["settings"]["default_technique"] = summary["default"]
        path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"default: {summary['default']}")
    for label, rows in summary["sets"].items():
        print(f"  {label}: " + ", ".join(f"{k} {v:.4f}" for k, v in rows.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
