"""A stored evaluation: everything ``hybrid eval --report DIR`` measured, in files other tools read.

    DIR/eval.json          the means (the ``hybrid eval --json`` document, docs/EVALUATION.md)
    DIR/queries.jsonl      the queries, BEIR style ({"_id", "text"}), with their class (adapter.fusion.choice.advise)
    DIR/qrels.txt          the judgments, TREC qrels (qid 0 docid grade)
    DIR/runs/<name>.run    one TREC run file per technique (adapter.evaluation.runfiles)
    DIR/details.json       per query and technique: client and server milliseconds, the fusion it
                           ran (adaptive: the weights chosen for it); the titles of listed documents

:func:`load` reads it back (the run files through ir-measures), so a report can be rebuilt, or
served by ``hybrid serve --report DIR``, without the cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from adapter.errors import InputError
from adapter.evaluation.metrics import Dataset
from adapter.evaluation.perquery import TOP, FusionUsed, QueryRun
from adapter.evaluation.report import EvalReport
from adapter.evaluation.runfiles import read_qrels, read_run, write_qrels, write_run
from adapter.fusion.choice.advise import classify

DETAILS_VERSION = 1
RUNS = "runs"


@dataclass(frozen=True)
class StoredEval:
    summary: Mapping[str, Any]  # eval.json
    queries: Mapping[str, str]
    classes: Mapping[str, str]  # query id -> "exact" | "natural"
    qrels: Mapping[str, Mapping[str, int]]
    runs: Mapping[str, Mapping[str, QueryRun]]  # technique -> query id -> run, in the summary's order
    titles: Mapping[str, str]
    root: Path

    @property
    def techniques(self) -> list[str]:
        return list(self.runs)


def run_path(root: str | Path, technique: str) -> Path:
    return Path(root) / RUNS / f"{technique}.run"


def write(report: EvalReport, dataset: Dataset, root: str | Path) -> Path:
    """The evaluation's files under ``root`` (created; existing files of an earlier eval are replaced)."""
    from adapter.evaluation.report import write_json

    root = Path(root)
    (root / RUNS).mkdir(parents=True, exist_ok=True)
    missing = [name for name, r in report.results.items() if not r.per_query]
    if missing:
        raise InputError(f"no per-query runs for {', '.join(missing)}: a stored eval needs the runs of run_eval")
    write_json(report, root / "eval.json")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for qid, text in dataset.queries.items():
            fh.write(json.dumps({"_id": qid, "text": text, "class": classify(text).kind}, ensure_ascii=False) + "\n")
    write_qrels(root / "qrels.txt", dataset.qrels)
    details: dict[str, Any] = {"version": DETAILS_VERSION, "techniques": {}, "titles": {}}
    for name, result in report.results.items():
        write_run(run_path(root, name), {q: r.ranking for q, r in result.per_query.items()}, name)
        details["techniques"][name] = {
            q: {
                "client_ms": round(r.client_ms, 3),
                "server_ms": round(r.server_ms, 3),
                "fusion": r.fusion.as_json() if r.fusion else None,
            }
            for q, r in result.per_query.items()
        }
        for run in result.per_query.values():
            for (doc, _), title in zip(run.ranking, run.titles):
                if title:
                    details["titles"].setdefault(doc, title)
    (root / "details.json").write_text(json.dumps(details, ensure_ascii=False) + "\n", encoding="utf-8")
    return root


def load(root: str | Path) -> StoredEval:
    """A stored evaluation; a missing or damaged file is an error naming it."""
    root = Path(root)
    for name in ("eval.json", "queries.jsonl", "qrels.txt", "details.json"):
        if not (root / name).is_file():
            raise InputError(
                f"{root} is not a stored evaluation (no {name}); write one with `hybrid eval ... --report {root}`"
            )
    try:
        summary = json.loads((root / "eval.json").read_text(encoding="utf-8"))
        details = json.loads((root / "details.json").read_text(encoding="utf-8"))
        rows = [
            json.loads(line)
            for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    except ValueError as exc:
        raise InputError(f"{root}: a damaged JSON file ({exc})") from exc
    queries = {str(r["_id"]): r["text"] for r in rows}
    classes = {str(r["_id"]): r.get("class") or classify(r["text"]).kind for r in rows}
    runs: dict[str, dict[str, QueryRun]] = {}
    titles = details.get("titles", {})
    for name in summary["results"]:
        path = run_path(root, name)
        if not path.is_file():
            raise InputError(f"{root}: eval.json lists {name!r} but {path} is missing")
        ranked = read_run(path)
        kept = details["techniques"].get(name, {})
        runs[name] = {
            q: QueryRun(
                tuple(ranked.get(q, ())),
                float(kept.get(q, {}).get("client_ms", 0.0)),
                float(kept.get(q, {}).get("server_ms", 0.0)),
                FusionUsed.from_json(kept.get(q, {}).get("fusion")),
                tuple(titles.get(d, "") for d, _ in ranked.get(q, ())[:TOP]),
            )
            for q in queries
        }
    return StoredEval(summary, queries, classes, read_qrels(root / "qrels.txt"), runs, titles, root)
