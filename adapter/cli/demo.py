"""``hybrid demo``, the main job end to end: a local node, a hybrid index of the seed's Spanish
support documents, and the seed's two queries run by each technique."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from adapter.cli.common import live_layout, with_url
from adapter.cli.printers import print_init, print_result
from adapter.errors import InputError


def add_parsers(sub: Any) -> None:
    demo = with_url(
        sub.add_parser("demo", help="start a local node, index the seed's Spanish support documents, run hybrid searches"))
    demo.add_argument("--index", default="demo-support")
    demo.add_argument("--port", type=int, help="HTTP port of the local node it starts (default: the running node's, else a free "
                                               "one; `make demo PORT=9250`)")
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("OPENSEARCH_URL")
    if url and args.port:
        raise InputError(f"--port is the port of the local node the demo starts; with --url {url} it starts none")
    return run_demo(url=url, index=args.index, port=args.port)


def run_demo(*, url: str | None = None, index: str = "demo-support", port: int | None = None) -> int:
    from adapter.engines import open_cluster
    from adapter.fusion.choice.calibrate import calibrate_index
    from adapter.fusion.choice.defaults import default_fusion_name, default_layout
    from adapter.index.assets import IndexSpec
    from adapter.index.init import init_index
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import FieldMap, read_jsonl
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher

    node = None
    if url is None:
        from adapter.local import LocalNode, NodeConfig

        node = LocalNode(NodeConfig(port=port), log=lambda m: print(m, file=sys.stderr)).up()
        url = node.url
    print(f"== OpenSearch at {url}")
    cluster = open_cluster(url, engine="opensearch")  # the demo runs on OpenSearch (its own node, or the one at --url)
    embedder = load_embedder("multilingual-e5-small")  # the documents are Spanish
    # As `hybrid init`: a new index gets the measured text layout, an existing one (an earlier demo's) keeps its own.
    layout = live_layout(cluster, index) or default_layout()
    print(f"== init {index} (spanish analyzer, {embedder.fingerprint.model}, {layout} text layout)")
    spec = IndexSpec(embedder.fingerprint, analyzer="spanish", default_fusion=default_fusion_name(), text_layout=layout)
    print_init(init_index(cluster, index, spec))
    sample = resources.files("adapter") / "data" / "support_es.jsonl"
    with resources.as_file(sample) as path:
        ingest = Ingestor.open(cluster, index, embedder, cache=EmbeddingCache(), progress=False, write_failures=True).ingest(
            read_jsonl(path, FieldMap(metadata=("category", "lang")))
        )
    print(f"== ingested {ingest.documents} documents ({ingest.embedded} embedded, {ingest.cache_hits} from cache), "
          f"{ingest.failed} failures")
    # Adaptive fusion's corpus prior: how BM25 matches typical queries of this index (texts only, no judgments).
    with resources.as_file(resources.files("adapter") / "data" / "support_es_queries.txt") as path:
        report = calibrate_index(cluster, index, path.read_text(encoding="utf-8").splitlines(), source=path.name)
    coverage = report.calibration.coverage
    print(f"== calibrated on {report.calibration.queries} sample queries"
          + (f": {coverage:.0%} of a query's terms are in the index" if coverage is not None else "")
          + f"; default weights bm25 {report.weights[0]:.2f} / dense {report.weights[1]:.2f}")
    searcher = Searcher.open(cluster, index, embedder)
    for query in ("error E-4012", "¿cómo devuelvo un pedido?"):
        for technique in ("bm25", "dense", "hybrid"):
            print(f"\n== {technique}: {query}")
            print_result(searcher.search(query, technique=technique, k=3, explain=technique == "hybrid"), explain=technique == "hybrid")
    print_next_steps(str(url), index, node)
    return 0


def print_next_steps(url: str, index: str, node: Any, *, clone: bool | None = None) -> None:
    """The demo's ending: what is still running, where, and what to do next, in the order a newcomer
    goes: see the techniques side by side, their own data in five commands, measure it on judged
    queries. Every command runs as printed (``clone``: a Makefile is here, so make targets run)."""
    from adapter._optional import install_hint
    from adapter.models.embedders import default_embedder

    clone = Path("Makefile").is_file() and Path("benchmarks/data/soporte-es").is_dir() if clone is None else clone
    where = f" --url {url}" if node is None else ""  # the local node is found without it
    hybrid = hybrid_command()
    print()
    if node is not None:
        print(f"== {node.engine} {node.version} is still running at {url} (its files: {node.home}); the index {index!r} stays on it")
    else:
        print(f"== the index {index!r} stays on {url}")
    print(f"   search it:         {hybrid} search \"¿cómo devuelvo un pedido?\" --index {index} --explain{where}")
    print(f"   compare it:        {hybrid} serve --index {index}{where}     (bm25, dense and hybrid side by side at "
          "http://127.0.0.1:8765/)")
    if importlib.util.find_spec("starlette") is None:
        print(f"                      (it needs the serve extra: {install_hint('serve')})")
    print(f"\n== your own data in five commands (embedder {default_embedder()}; the analyzer from the documents' language, "
          "or --analyzer english, spanish, ...):")
    print(f"   {hybrid} init --index docs{where}")
    print(f"   {hybrid} ingest docs.jsonl --index docs{where}     (JSONL with id, title, text; CSV; or a folder of .txt/.md)")
    print(f"   {hybrid} calibrate --index docs --queries queries.txt{where}     (10+ real queries, one a line: the fusion's weights)")
    print(f"   {hybrid} search \"your question\" --index docs --explain{where}")
    print(f"   {hybrid} serve --index docs{where}")
    print("\n== measure it on judged queries (nDCG@10 per technique, significance, each query's legs side by side):")
    if clone:
        print("   make demo-report     (installs the eval and report extras, ~450 MB; a labelled Spanish support set, 63 queries "
              "-> out/demo-report/index.html)")
    else:
        print(f"   {install_hint('eval,report')}")
    print(f"   {hybrid} eval --dataset DIR --report out/mine{where}     (DIR: corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    if node is not None:
        print(f"\n== stop the node:    {hybrid} local down     ({hybrid} local status: what runs; `make demo` starts it again)")


def hybrid_command(argv0: str | None = None) -> str:
    """How the user runs this command: ``hybrid`` when it is on PATH, else the path it was started
    by (after ``make demo`` that is ``.venv/bin/hybrid``: the printed commands must run as printed)."""
    import os
    import shutil
    from pathlib import Path

    started = Path(argv0 if argv0 is not None else sys.argv[0])
    found = shutil.which("hybrid")
    if started.name != "hybrid" or (found and Path(found).resolve() == started.resolve()):
        return "hybrid"
    relative = os.path.relpath(started.resolve())
    return relative if not relative.startswith("..") else str(started.resolve())
