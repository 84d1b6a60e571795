"""Writes the hand-written labelled sets (``tables_*.py``) in the BEIR layout next to this file.

    python -m benchmarks.data.build

Each set: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``,
``metadata.kind``), ``qrels/train.tsv`` and ``qrels/test.tsv``. The split alternates within each
query kind (code, paraphrase, need), so both halves hold every kind. Deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import tables_konsola_pl, tables_parts_en, tables_soporte_es, tables_wsparcie_pl

HERE = Path(__file__).resolve().parent
SETS = {
    "soporte-es": tables_soporte_es,
    "wsparcie-pl": tables_wsparcie_pl,
    "parts-en": tables_parts_en,
    "konsola-pl": tables_konsola_pl,
}


def _documents_and_queries(tables) -> tuple[list[dict], list[tuple[str, str, list[str]]]]:
    if hasattr(tables, "documents"):  # a catalogue: cards made from attribute tables, judgments by rule
        parts = tables.documents()
        docs = [
            {"_id": p["_id"], "title": p["title"], "text": p["text"], "metadata": {"family": p["family"]}}
            for p in parts
        ]
        return docs, [(kind, text, [p["_id"] for p in parts if rule(p)]) for kind, text, rule in tables.QUERIES]
    docs = [{"_id": i, "title": t, "text": x} for i, _, t, x in tables.CODED_ERRORS + tables.CODED_PRODUCTS]
    docs += [{"_id": i, "title": t, "text": x} for i, t, x in tables.HELP]
    return docs, list(tables.QUERIES)


def write_beir(folder: Path, docs: list[dict], queries: list[dict], qrels: dict[str, list[tuple[str, str]]]) -> None:
    """A labelled set in BEIR's layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (grade 1)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    for split, rows in qrels.items():
        with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            fh.writelines(f"{q}\t{d}\t1\n" for q, d in rows)


def write_set(folder: Path, tables) -> str:
    docs, judged = _documents_and_queries(tables)
    ids = {d["_id"] for d in docs}
    if len(ids) != len(docs):
        raise ValueError(f"{folder.name}: duplicate document ids")
    queries, qrels = [], {"train": [], "test": []}
    seen: dict[str, int] = {}
    for n, (kind, text, relevant) in enumerate(judged, start=1):
        if not relevant:
            raise ValueError(f"{folder.name}: query {text!r} judges no document")
        if missing := set(relevant) - ids:
            raise ValueError(f"{folder.name}: query {text!r} judges unknown documents {sorted(missing)}")
        qid = f"q{n:03d}"
        queries.append({"_id": qid, "text": text, "metadata": {"kind": kind}})
        split = "train" if seen.get(kind, 0) % 2 == 0 else "test"
        seen[kind] = seen.get(kind, 0) + 1
        qrels[split] += [(qid, doc) for doc in relevant]
    write_beir(folder, docs, queries, qrels)
    counts = {s: len({q for q, _ in rows}) for s, rows in qrels.items()}
    return (
        f"{folder.name}: {len(docs)} documents, {len(queries)} queries (train {counts['train']}, test {counts['test']})"
    )


def main() -> None:
    for name, tables in SETS.items():
        print(write_set(HERE / name, tables))


if __name__ == "__main__":
    main()
