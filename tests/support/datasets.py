"""The support documents (tests.conftest's ``support_docs_path``) as a BEIR folder with judged queries: the dataset
``hybrid eval`` and ``hybrid advise`` run on in the integration tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence


def support_beir(
    root: Path, support_docs_path: Path, queries: Mapping[str, Mapping[str, tuple[str, Sequence[str]]]], first_grade=1
) -> Path:
    """``root`` as a BEIR folder: the support documents as corpus.jsonl, every split's queries in queries.jsonl, and
    qrels/<split>.tsv from ``queries`` (split -> query id -> (text, relevant ids)); each query's first relevant id is
    graded ``first_grade``, the others 1."""
    (root / "qrels").mkdir(parents=True)
    docs = [json.loads(line) for line in support_docs_path.read_text(encoding="utf-8").splitlines()]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d["id"], "title": d["title"], "text": d["text"]}) + "\n" for d in docs)
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for split in queries.values() for q, (t, _) in split.items())
    )
    for split, judged in queries.items():
        rows = ["query-id\tcorpus-id\tscore"] + [
            f"{q}\t{d}\t{first_grade if i == 0 else 1}" for q, (_, rel) in judged.items() for i, d in enumerate(rel)
        ]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    return root


def eval_args(dataset: Path, index: str, url: str, *extra, embedder: str = "multilingual-e5-small") -> list[str]:
    """``hybrid eval`` of ``dataset`` into ``index`` at ``url`` with ``embedder``; ``extra`` after (strings made of
    paths): the arguments for ``adapter.cli.main``."""
    return ["eval", "--dataset", str(dataset), "--embedder", embedder, "--index", index, "--url", url, *map(str, extra)]
