"""IR metrics through ir-measures (trec_eval via pytrec-eval-terrier), and BEIR dataset loading.

Runs are scored by rank, not by the techniques' raw scores: trec_eval re-sorts by score and breaks
ties by document id, which would silently reorder tied hits; ``len - rank`` keeps our order.
Every judged query counts: a query the technique returned nothing for scores 0.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from adapter._optional import require
from adapter.errors import InputError

# name in reports -> ir-measures measure
MEASURES = {"ndcg@10": "nDCG@10", "recall@10": "R@10", "recall@100": "R@100", "mrr@10": "RR@10"}

Qrels = Mapping[str, Mapping[str, int]]


def run_from_rankings(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """``{qid: [doc ids best first]}`` -> a run whose scores preserve that order exactly."""
    return {
        qid: {doc: float(len(docs) - i) for i, doc in enumerate(dict.fromkeys(docs))} for qid, docs in rankings.items()
    }


def evaluate(
    qrels: Qrels, rankings: Mapping[str, Sequence[str]], measures: Mapping[str, str] = MEASURES
) -> dict[str, float]:
    """Mean of each measure over every query in ``qrels`` (missing or empty rankings count 0)."""
    ir_measures = require("ir_measures", "scoring retrieval metrics")
    parsed = {name: ir_measures.parse_measure(m) for name, m in measures.items()}
    by_measure = {m: name for name, m in parsed.items()}
    run = {q: docs for q, docs in run_from_rankings(rankings).items() if q in qrels and docs}
    qrels_dict = {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    totals = {name: 0.0 for name in measures}
    for metric in ir_measures.iter_calc(list(parsed.values()), qrels_dict, run):
        totals[by_measure[metric.measure]] += metric.value
    n = len(qrels)
    return {name: (total / n if n else 0.0) for name, total in totals.items()}


def per_query(qrels: Qrels, rankings: Mapping[str, Sequence[str]], measure: str = "ndcg@10") -> dict[str, float]:
    """One measure (a name of :data:`MEASURES`) for every query in ``qrels`` (0 where nothing was returned)."""
    ir_measures = require("ir_measures", "scoring retrieval metrics")
    parsed = ir_measures.parse_measure(MEASURES[measure])
    run = {q: docs for q, docs in run_from_rankings(rankings).items() if q in qrels and docs}
    qrels_dict = {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    out = {q: 0.0 for q in qrels}
    for metric in ir_measures.iter_calc([parsed], qrels_dict, run):
        out[metric.query_id] = float(metric.value)
    return out


@dataclass(frozen=True)
class Dataset:
    """A BEIR-layout dataset: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``."""

    name: str
    root: Path
    split: str
    queries: dict[str, str]  # only the queries judged in this split
    qrels: dict[str, dict[str, int]]

    @property
    def corpus(self) -> Path:
        return self.root / "corpus.jsonl"

    def limited(self, n: int | None) -> Dataset:
        """The first ``n`` judged queries (all when ``n`` is None), for quick runs."""
        if not n:
            return self
        keep = list(self.queries)[:n]
        return Dataset(
            self.name, self.root, self.split, {q: self.queries[q] for q in keep}, {q: self.qrels[q] for q in keep}
        )


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None:
            raise InputError(f"{path} is empty")
        if header[:2] != ["query-id", "corpus-id"]:
            fh.seek(0)
            reader = csv.reader(fh, delimiter="\t")
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) < 3:
                raise InputError(f"{path} line {line_no}: expected query-id, corpus-id, score")
            qrels.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    return qrels


def load_beir(root: str | Path, split: str = "test") -> Dataset:
    root = Path(root)
    if not root.is_dir():
        what = "is a file, not a folder" if root.exists() else "does not exist"
        here = (
            " (labelled sets in this clone: benchmarks/data/*, e.g. benchmarks/data/soporte-es)"
            if Path("benchmarks/data").is_dir()
            else ""
        )
        raise InputError(
            f"{root} {what}: a BEIR dataset is a folder with corpus.jsonl, queries.jsonl and qrels/{split}.tsv{here}"
        )
    missing = [p for p in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv") if not (root / p).exists()]
    if missing:
        raise InputError(f"{root} is not a BEIR dataset with split {split!r}: missing {', '.join(missing)}")
    qrels = load_qrels(root / "qrels" / f"{split}.tsv")
    queries: dict[str, str] = {}
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if str(row["_id"]) in qrels:
                    queries[str(row["_id"])] = row["text"]
    unknown = set(qrels) - set(queries)
    if unknown:
        raise InputError(
            f"{len(unknown)} judged queries of {split!r} are missing from queries.jsonl (e.g. {sorted(unknown)[:3]})"
        )
    return Dataset(root.name, root, split, queries, qrels)
