"""TREC run files and qrels: what trec_eval, ir-measures and ranx read.

A run line is ``qid Q0 docid rank score tag``; a qrels line ``qid 0 docid grade``. Those tools
order a query's documents by score (ties by document id), not by the rank column, and trec_eval
(so pytrec_eval, so ir-measures) keeps scores as 32-bit floats. So the score column is the
technique's own score as a float32 (the engines' scores are float32 already), lowered where the
list does not strictly decrease (tied scores; the unpicked tail after MMR, which keeps first-stage
scores) to the next float32 below the score above it. Every tool then reads exactly the ranking
the evaluation scored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from adapter._optional import require
from adapter.errors import InputError
from adapter.evaluation.metrics import Qrels

_TAG = re.compile(r"[^A-Za-z0-9_.+-]")


def run_tag(name: str) -> str:
    """A technique name as a run tag (one token, no whitespace)."""
    return _TAG.sub("_", name) or "run"


def decreasing(scores: Sequence[float]) -> list[float]:
    """``scores`` as float32 values, each lowered, only where needed, to just below the one before it."""
    out: list[np.float32] = []
    for score in scores:
        value = np.float32(score)
        if out and not value < out[-1]:
            value = np.nextafter(out[-1], np.float32(-np.inf))
        out.append(value)
    return [float(v) for v in out]


def run_lines(rankings: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> Iterable[str]:
    for qid, ranking in rankings.items():
        for rank, ((doc, _), score) in enumerate(zip(ranking, decreasing([s for _, s in ranking])), start=1):
            yield f"{qid} Q0 {doc} {rank} {score!r} {tag}\n"


def write_run(path: str | Path, rankings: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """One technique's rankings (``{qid: [(doc, score), ...]}``, best first) as a TREC run file."""
    for qid, ranking in rankings.items():
        for doc, _ in ranking:
            if not doc or any(c.isspace() for c in doc) or any(c.isspace() for c in qid):
                raise InputError(f"query {qid!r}, document {doc!r}: TREC run files cannot hold ids with whitespace")
    Path(path).write_text("".join(run_lines(rankings, run_tag(tag))), encoding="utf-8")


def write_qrels(path: str | Path, qrels: Qrels) -> None:
    Path(path).write_text(
        "".join(f"{q} 0 {d} {int(g)}\n" for q, docs in qrels.items() for d, g in docs.items()), encoding="utf-8"
    )


def read_run(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    """A TREC run file as ``{qid: [(doc, score), ...]}``, by score descending (the order every
    tool reads; a tie keeps the file's order). Parsed here, line by line: ir-measures' reader takes
    four times as long on a 12-technique SciFact eval's 390,000 lines (the tests read these files
    with ir-measures, to show they get the eval's numbers)."""
    out: dict[str, list[tuple[str, float]]] = {}
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                qid, _, doc, _, score, _ = parts
                out.setdefault(qid, []).append((doc, float(score)))
            except ValueError:
                raise InputError(
                    f"{path} line {number} is not a TREC run line (qid Q0 docid rank score tag): {line.strip()!r}"
                ) from None
    return {q: sorted(docs, key=lambda d: -d[1]) for q, docs in out.items()}


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    ir_measures = require("ir_measures", "reading TREC qrels")
    out: dict[str, dict[str, int]] = {}
    try:
        for q in ir_measures.read_trec_qrels(str(path)):
            out.setdefault(q.query_id, {})[q.doc_id] = int(q.relevance)
    except (ValueError, IndexError) as exc:
        raise InputError(f"{path} is not a TREC qrels file (qid 0 docid grade): {exc}") from exc
    return out
