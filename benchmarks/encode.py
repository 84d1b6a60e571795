"""Encoding at scale (issue 23): raw ``encode`` against the ingest path, one process and N.

    make bench-encode                                   # CPU: 1 and 2 processes, MiniLM (docs/BENCHMARKS.md)
    make bench-encode DEVICE=cuda                       # a GPU machine: MiniLM and e5, batch sizes 64..1024
    .venv/bin/python -m benchmarks.encode --device cuda --models minilm,st:intfloat/multilingual-e5-small \\
        --batch-sizes 64,128,256,512,1024 --docs 5000 --out -

For each configuration (model, device, processes, batch size), on the same SciFact abstracts:

- raw: ``SentenceTransformer.encode`` of every text (through the adapter's embedder, so the
  multi-process pool of sentence-transformers when processes > 1), timed alone;
- ingest: ``Ingestor.ingest`` of the same documents into a fresh index on the local node with the
  same embedder (embedding cache off), so its docs/s includes reading, building actions and the
  bulk sends that overlap the encoding.

The ratio ingest / raw is the ingest path's overhead (target >= 0.9); raw N processes / raw 1 is the
scaling (target >= 0.8 N on N free cores). The run notes the load average, since on a shared machine
the other processes take cores from the N.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def texts_and_rows(n: int):
    from adapter.index.documents import embedding_text
    from adapter.ingest.sources import SourceDoc
    from benchmarks.run import scifact_docs

    docs = scifact_docs(n)
    rows = [SourceDoc(str(d["_id"]), d["text"], d.get("title", "")) for d in docs]
    return [embedding_text(r.title, r.text) for r in rows], rows


def measure(client, spec: str, device: str, processes: int, batch: int, texts: list[str], rows) -> dict[str, Any]:
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.models.embedders import load_embedder
    from adapter.ingest.ingestor import Ingestor

    options: dict[str, Any] = {"batch_size": min(batch, 256)}
    if spec == "minilm" or spec.startswith("st:"):
        options.update(device=device, processes=processes, max_seq_length=256)
    embedder = load_embedder(spec, **options)
    embedder.embed_documents(texts[: max(8, processes * 4)])  # load, start the pool, warm up
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed_documents(texts[i : i + batch])
    raw = len(texts) / (time.perf_counter() - t0)
    alias = f"bench-encode-{processes}"
    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    init_index(client, alias, IndexSpec(embedder.fingerprint))
    report = Ingestor.open(client, alias, embedder, cache=None, batch_size=batch, progress=False).ingest(rows)
    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    close = getattr(embedder, "close", None)
    if close:
        close()
    return {
        "model": spec,
        "device": device,
        "processes": processes,
        "batch": batch,
        "raw": raw,
        "ingest": report.docs_per_second,
        "failures": len(report.failures),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="minilm")
    parser.add_argument(
        "--processes", default=None, help="comma-separated (default: 1 and the cores, on cpu; 1 on a GPU)"
    )
    parser.add_argument("--batch-sizes", default="64")
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--url")
    parser.add_argument("--out", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    args = parser.parse_args()
    from adapter.engines import connect

    cores = os.cpu_count() or 1
    procs = (
        [int(p) for p in args.processes.split(",")]
        if args.processes
        else ([1, cores] if args.device == "cpu" and cores > 1 else [1])
    )
    url = args.url
    if not url:
        from adapter.local import LocalNode, NodeConfig

        url = LocalNode(NodeConfig()).up().url
    client = connect(url, timeout=300)
    texts, rows = texts_and_rows(args.docs)
    started, load0 = time.perf_counter(), os.getloadavg()[0]
    results = [
        measure(client, m, args.device, p, b, texts, rows)
        for m in args.models.split(",")
        for b in (int(x) for x in args.batch_sizes.split(","))
        for p in procs
    ]
    one = {(r["model"], r["batch"]): r["raw"] for r in results if r["processes"] == 1}
    lines = [
        "| model | device | processes | batch | raw encode docs/s | ingest docs/s | **ingest / raw** | raw / raw with "
        "1 process (target >= 0.8 N) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        scale = r["raw"] / one[(r["model"], r["batch"])] if (r["model"], r["batch"]) in one else float("nan")
        lines.append(
            f"| {r['model']} | {r['device']} | {r['processes']} | {r['batch']} | {r['raw']:.1f} | {r['ingest']:.1f} | "
            f"{r['ingest'] / r['raw']:.2f} | {scale:.2f} |"
        )
    lines += [
        "",
        f"{len(texts)} SciFact abstracts (title + text, 256 tokens); ingest into a fresh index on the local node, "
        "embedding cache off. Processes > 1: sentence-transformers' multi-process pool, each worker given an equal "
        f"share of the cores. Command: `make bench-encode` (`python -m benchmarks.encode --device {args.device} "
        f"--models {args.models} --batch-sizes {args.batch_sizes} --docs {args.docs}`).",
        "",
        f"_Measured {time.strftime('%Y-%m-%d %H:%M')} on {cores} cores; {time.perf_counter() - started:.0f} s; load "
        f"average {load0:.1f} at its start, {os.getloadavg()[0]:.1f} at its end._",
    ]
    print("\n".join(lines))
    if args.out != "-":
        from benchmarks.run import Section, write_report

        title = "Encoding: raw encode against ingest, 1 and N processes" + (
            "" if args.device == "cpu" else f" ({args.device})"
        )
        write_report(Path(args.out), [Section(title, lines)])


if __name__ == "__main__":
    main()
