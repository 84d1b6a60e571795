"""The labelled sets made for this project (benchmarks/data/): each judgment names a query and a
document of its set, every query is judged, and no split shares a query with another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
SETS = sorted(p.name for p in DATA.iterdir() if (p / "corpus.jsonl").is_file())


def test_every_set_is_listed():
    assert {"soporte-es", "wsparcie-pl", "parts-en", "apropos-en", "glossary-en", "pyapi-en"} <= set(SETS)


@pytest.mark.parametrize("name", SETS)
def test_judgments_name_queries_and_documents_of_the_set(name):
    folder = DATA / name
    docs = [json.loads(line)["_id"] for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = {json.loads(line)["_id"] for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()}
    assert len(docs) == len(set(docs)), "duplicate document ids"
    judged: dict[str, set[str]] = {}
    for split in ("train", "test"):
        rows = [
            line.split("\t")
            for line in (folder / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]
        ]
        assert rows, f"{split}: no judgments"
        judged[split] = {q for q, _, _ in rows}
        assert {d for _, d, _ in rows} <= set(docs) and judged[split] <= queries
    assert not judged["train"] & judged["test"] and judged["train"] | judged["test"] == queries
