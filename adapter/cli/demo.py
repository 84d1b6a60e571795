"""``hybrid demo``, the main job end to end: a local node, a hybrid index of the seed's Spanish
support documents, and the seed's two queries run by each technique. The index's analyzer and
embedder follow the rule ``hybrid init --sample`` follows (:mod:`adapter.index.language`), read from
the documents it indexes, and the demo says which and why."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from adapter.cli.common import live_layout, with_url
from adapter.cli.printers import print_init, print_result
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.engines import Cluster
    from adapter.index.language import AnalysisChoice
    from adapter.local.config import NodeStatus
    from adapter.search import Searcher

SAMPLE = "support_es.jsonl"  # the seed's Spanish support documents, packaged in adapter/data


def add_parsers(sub: Any) -> None:
    demo = with_url(
        sub.add_parser(
            "demo", help="start a local node, index the seed's Spanish support documents, run hybrid searches"
        )
    )
    demo.add_argument("--index", default="demo-support")
    demo.add_argument(
        "--port",
        type=int,
        help="HTTP port of the local node it starts (default: the running node's, else a free "
        "one; `make demo PORT=9250`)",
    )
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("OPENSEARCH_URL")
    if url and args.port:
        raise InputError(f"--port is the port of the local node the demo starts; with --url {url} it starts none")
    return run_demo(url=url, index=args.index, port=args.port)


def run_demo(*, url: str | None = None, index: str = "demo-support", port: int | None = None) -> int:
    from adapter.engines import open_cluster
    from adapter.fusion.choice.defaults import default_fusion_name, default_layout
    from adapter.index.assets import IndexSpec
    from adapter.admin.init import init_index
    from adapter.ingest.ingestor import Ingestor
    from adapter.index.choose import record_choice
    from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl
    from adapter.models.cache import EmbeddingCache
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher

    url, node = _node_url(url, port)
    print(f"== OpenSearch at {url}")
    cluster = open_cluster(url, engine="opensearch")  # the demo runs on OpenSearch (its own node, or the one at --url)
    sample = resources.files("adapter") / "data" / SAMPLE
    with resources.as_file(sample) as path:
        rows = list(read_jsonl(path, FieldMap(metadata=("category", "lang"))))
    # As `hybrid init --sample`: the analyzer and embedder from the documents, an existing index (an earlier demo's)
    # keeps its own; a new index gets the measured text layout.
    texts = (f"{r.title}\n{r.text}" for r in rows if isinstance(r, SourceDoc))
    choice, new = demo_analysis(cluster, index, texts, source=f"the demo's {SAMPLE}")
    embedder = load_embedder(choice.embedder)
    layout = live_layout(cluster, index) or default_layout()
    print(f"== init {index} ({layout} text layout)")
    print(f"   {choice.line(override='hybrid init --analyzer / --embedder to choose for your own index')}")
    spec = IndexSpec(
        embedder.fingerprint, analyzer=choice.analyzer, default_fusion=default_fusion_name(), text_layout=layout
    )
    made = init_index(cluster, index, spec)
    if new:  # as init records it (_meta.analysis)
        record_choice(cluster, made.index, choice)
    print_init(made)
    ingest = Ingestor.open(
        cluster, index, embedder, cache=EmbeddingCache(), progress=False, write_failures=True
    ).ingest(rows)
    print(
        f"== ingested {ingest.documents} documents ({ingest.embedded} embedded, {ingest.cache_hits} from cache), "
        f"{ingest.failed} failures"
    )
    _calibrate(cluster, index)
    searcher = Searcher.open(cluster, index, embedder)
    _search_examples(searcher)
    print_next_steps(str(url), index, node)
    return 0


def _node_url(url: str | None, port: int | None) -> tuple[str | None, NodeStatus | None]:
    """The cluster's URL: the one given, else a local node's, started (or found running) on ``port``."""
    if url is not None:
        return url, None
    from adapter.local import LocalNode, NodeConfig

    node = LocalNode(NodeConfig(port=port), log=lambda m: print(m, file=sys.stderr)).up()
    return node.url, node


def _calibrate(cluster: Cluster, index: str) -> None:
    """Adaptive fusion's corpus prior: how BM25 matches typical queries of this index (texts only, no judgments)."""
    from adapter.admin.calibrate import calibrate_index

    with resources.as_file(resources.files("adapter") / "data" / "support_es_queries.txt") as path:
        report = calibrate_index(cluster, index, path.read_text(encoding="utf-8").splitlines(), source=path.name)
    coverage = report.calibration.coverage
    print(
        f"== calibrated on {report.calibration.queries} sample queries"
        + (f": {coverage:.0%} of a query's terms are in the index" if coverage is not None else "")
        + f"; default weights bm25 {report.weights[0]:.2f} / dense {report.weights[1]:.2f}"
    )


def _search_examples(searcher: Searcher) -> None:
    """The seed's two queries by each technique, the hybrid one explained."""
    for query in ("error E-4012", "¿cómo devuelvo un pedido?"):
        for technique in ("bm25", "dense", "hybrid"):
            print(f"\n== {technique}: {query}")
            print_result(
                searcher.search(query, technique=technique, k=3, explain=technique == "hybrid"),
                explain=technique == "hybrid",
            )


def demo_analysis(cluster: Cluster, index: str, texts: Iterable[str], *, source: str) -> tuple[AnalysisChoice, bool]:
    """The demo index's analyzer and embedder, and whether the index is new: an existing index (an earlier
    demo's) keeps its own, a new one gets what ``hybrid init --sample`` gives the same documents
    (:func:`adapter.index.choose.choose_analysis`)."""
    from adapter.index.choose import choose_analysis
    from adapter.index.language import AnalysisChoice
    from adapter.index.live import live_spec

    live = live_spec(cluster, index)
    if live is not None:
        return AnalysisChoice(live.analyzer, live.embedder, f"the existing index {index}'s"), False
    return choose_analysis(cluster, texts, source=source), True


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
        print(
            f"== {node.engine} {node.version} is still running at {url} (its files: {node.home}); the index {index!r} "
            "stays on it"
        )
    else:
        print(f"== the index {index!r} stays on {url}")
    print(f'   search it:         {hybrid} search "¿cómo devuelvo un pedido?" --index {index} --explain{where}')
    print(
        f"   compare it:        {hybrid} serve --index {index}{where}     (bm25, dense and hybrid side by side at "
        "http://127.0.0.1:8765/)"
    )
    if importlib.util.find_spec("starlette") is None:
        print(f"                      (it needs the serve extra: {install_hint('serve')})")
    print(
        f"\n== your own data in five commands (embedder {default_embedder()}; the analyzer from the documents' "
        "language, or --analyzer english, spanish, ...):"
    )
    print(f"   {hybrid} init --index docs{where}")
    print(
        f"   {hybrid} ingest docs.jsonl --index docs{where}     (JSONL with id, title, text; CSV; or a folder of "
        ".txt/.md)"
    )
    print(
        f"   {hybrid} calibrate --index docs --queries queries.txt{where}     (10+ real queries, one a line: the "
        "fusion's weights)"
    )
    print(f'   {hybrid} search "your question" --index docs --explain{where}')
    print(f"   {hybrid} serve --index docs{where}")
    print("\n== measure it on judged queries (nDCG@10 per technique, significance, each query's legs side by side):")
    if clone:
        print(
            "   make demo-report     (installs the eval and report extras, ~450 MB; a labelled Spanish support set, 63 "
            "queries -> out/demo-report/index.html)"
        )
    else:
        print(f"   {install_hint('eval,report')}")
    print(
        f"   {hybrid} eval --dataset DIR --report out/mine{where}     (DIR: corpus.jsonl, queries.jsonl, "
        "qrels/test.tsv)"
    )
    if node is not None:
        print(
            f"\n== stop the node:    {hybrid} local down     ({hybrid} local status: what runs; `make demo` starts it "
            "again)"
        )


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
