"""The support documents (tests.conftest's ``support_docs_path``) as a BEIR folder with judged queries: the dataset
``hybrid eval`` and ``hybrid advise`` run on in the integration tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

# Queries on the support documents, each with the ids judged relevant to it (the best first).
SUPPORT_QUERIES = {
    "t1": ("error E-4012", ["e-4012"]),
    "t2": ("¿cómo devuelvo un pedido?", ["reembolso", "devoluciones", "etiqueta-devolucion"]),
    "t3": ("cambiar mi contraseña", ["contrasena"]),
    "t4": ("envíos a las islas", ["envios-canarias"]),
    "t5": ("descargar la factura en pdf", ["facturacion"]),
    "t6": ("borrar mis datos", ["cuenta-borrar"]),
}


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


def tuning_args(folder: Path) -> list[str]:
    """``--tune`` with its three outputs in ``folder``: the tuned pipeline (tuned.json), the adaptive policy
    (policy.json) and the learned model (model.json); extra arguments for :func:`eval_args`."""
    tuned, policy, model = (str(folder / name) for name in ("tuned.json", "policy.json", "model.json"))
    return ["--tune", "--tune-output", tuned, "--policy-output", policy, "--model-output", model]
