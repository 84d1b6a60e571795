"""``hybrid render`` (print what the assets render to, no cluster) and ``hybrid init`` (apply them)."""

from __future__ import annotations

import argparse
import json

from typing import TYPE_CHECKING

from adapter.cli.common import Subparsers, add_index_spec_options, connect, index_spec, pipeline_files, with_url
from adapter.cli.printers import print_init
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.engines import Cluster
    from adapter.engines.capabilities import Capabilities
    from adapter.index.assets import IndexSpec
    from adapter.admin.init import InitReport
    from adapter.index.language import AnalysisChoice
    from adapter.index.spec import Spec


def add_parsers(sub: Subparsers) -> None:
    _add_render_parser(sub)
    _add_init_parser(sub)


def _add_render_parser(sub: Subparsers) -> None:
    """``hybrid render``: the assets rendered for an OpenSearch or Elasticsearch version, without a cluster."""
    from adapter.local.distribution import DEFAULT_VERSION

    render = sub.add_parser(
        "render", help="print the index templates and search pipelines the assets render to (no cluster)"
    )
    render.add_argument("--index", required=True)
    render.add_argument("--what", choices=["templates", "pipelines", "all"], default="all")
    render.add_argument(
        "--opensearch-version",
        default=DEFAULT_VERSION,
        help="render the pipelines this OpenSearch version runs (default %(default)s)",
    )
    render.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="NAME",
        help="a plugin the target cluster has, for analyzers that depend on it (analysis-stempel, analysis-icu)",
    )
    render.add_argument(
        "--hunspell",
        default="",
        metavar="LOCALES",
        help="Hunspell dictionaries the target cluster's nodes have, e.g. pl_PL,es_ES (for --analyzer polish)",
    )
    render.add_argument(
        "--elasticsearch-version",
        metavar="VERSION",
        help="render for Elasticsearch VERSION instead (a full distribution: analysis-common; no pipelines)",
    )
    add_index_spec_options(render)
    render.set_defaults(func=run_render)


def _add_init_parser(sub: Subparsers) -> None:
    """``hybrid init``: templates, the first index behind its alias and the search pipelines, applied."""
    init = with_url(
        sub.add_parser("init", help="apply templates, create <index>-v1 behind the alias <index>, put search pipelines")
    )
    init.add_argument("--index", required=True, help="alias name; the index is <index>-v1")
    add_index_spec_options(init)
    init.add_argument(
        "--sample",
        metavar="FILE",
        help="documents (JSONL, CSV or a folder, as ingest reads them) whose language "
        "chooses a new index's analyzer; without it (and without --analyzer) the "
        "first `hybrid ingest` chooses it",
    )
    init.add_argument(
        "--pipeline-file", action="append", help="extra search pipeline asset (JSON), applied as <index>-<file stem>"
    )
    init.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    init.add_argument(
        "--reattach-alias",
        action="store_true",
        help="put the alias back on the newest <index>-vN when it was deleted by hand",
    )
    init.add_argument(
        "--server-mmr",
        action="store_true",
        help="turn on the k-NN plugin's MMR processors for the cluster (a persistent cluster setting; OpenSearch "
        "3.3+), so that dense searches with --mmr run it on the server",
    )
    init.add_argument(
        "--wait-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the index to be yellow (every primary shard assigned); red after it: "
        "exit 2 with why (default %(default)s; 0: do not wait)",
    )
    init.set_defaults(func=run_init)


def run_render(args: argparse.Namespace) -> int:
    from adapter.engines import Engine
    from adapter.engines.engine import measured_kind
    from adapter.engines.elasticsearch import ELASTICSEARCH
    from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
    from adapter.engines.opensearch import OPENSEARCH
    from adapter.engines.opensearch.capabilities import opensearch_capabilities
    from adapter.fusion import DEFAULT_WEIGHTS, parse_weights
    from adapter.fusion.choice.defaults import default_fusion_name
    from adapter.index.assets import IndexNames

    names = IndexNames(args.index)
    hunspell = [h.strip() for h in args.hunspell.split(",") if h.strip()]
    engine: Engine
    caps: Capabilities
    if args.elasticsearch_version:
        engine, caps = ELASTICSEARCH, elasticsearch_capabilities(args.elasticsearch_version, hunspell=hunspell)
    else:
        engine, caps = (
            OPENSEARCH,
            opensearch_capabilities(args.opensearch_version, plugins=args.plugin, hunspell=hunspell),
        )
    out = {}
    if args.what in ("templates", "all"):
        spec = index_spec(args, caps)
        if (
            args.plugin or args.hunspell or args.elasticsearch_version
        ):  # else analyzers that depend on the cluster say how to describe it
            spec = spec.for_cluster(caps)
        out["component_templates"] = engine.render_components(names, spec, caps)
        out["index_template"] = {names.index_template: engine.render_index_template(names, spec, caps)}
    if args.what in ("pipelines", "all"):
        # adaptive: before calibration
        default = args.default_fusion or default_fusion_name(measured_kind(engine, caps))
        stored = engine.placement.stored(
            names, caps, weights=parse_weights(args.weights) or DEFAULT_WEIGHTS, default_fusion=default
        )
        if stored:  # an engine that stores no fusions (Elasticsearch) has none to show
            out["pipelines"] = stored
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def run_init(args: argparse.Namespace) -> int:
    from adapter.fusion import DEFAULT_WEIGHTS, parse_weights
    from adapter.admin.init import init_index
    from adapter.index.live import live_spec

    extra = pipeline_files(args.pipeline_file)
    asked = {
        option: getattr(args, option) for option in ("analyzer", "embedder") if getattr(args, option)
    }  # before defaults fill them
    cluster = connect(args)
    caps = cluster.probe()
    print(
        f"cluster: {caps.engine} {caps.version} at {cluster.describe()}"
    )  # which one: --url, OPENSEARCH_URL, the config or the local node
    live = live_spec(cluster, args.index)
    if live is not None and args.sample:
        print(
            f"--sample {args.sample} is not read: {args.index} exists and keeps its analyzer (a new one: `hybrid "
            "reindex --analyzer`)"
        )
    choice = _choice(args, cluster) if live is None and "analyzer" not in asked else None
    spec = index_spec(args, caps, live=live, analyzer=choice.analyzer if choice else None)
    report = init_index(
        cluster,
        args.index,
        spec,
        weights=parse_weights(args.weights) or DEFAULT_WEIGHTS,
        extra_pipelines=extra,
        dry_run=args.dry_run,
        reattach=args.reattach_alias,
        server_mmr=args.server_mmr,
        wait_timeout=args.wait_timeout,
    )
    pending = choice is not None and not args.sample
    if live is None and not args.dry_run:
        _record_choice(cluster, report, spec, choice, pending)
    print_init(report)
    print(_analysis_line(args, spec, live, choice, pending, asked))
    _print_defaults(args, caps, cluster, spec, live)
    return 0


def _record_choice(
    cluster: Cluster, report: InitReport, spec: IndexSpec, choice: AnalysisChoice | None, pending: bool
) -> None:
    """A new index records its analyzer and embedder, and why (chosen from a sample, as asked, or pending ingest)."""
    from dataclasses import replace

    from adapter.index.choose import record_choice
    from adapter.index.language import AnalysisChoice

    made = choice or AnalysisChoice(spec.analyzer, spec.fingerprint.spec, "as asked")
    record_choice(
        cluster,
        report.index,
        replace(made, analyzer=spec.analyzer, embedder=spec.fingerprint.spec),
        pending=pending,
    )


def _print_defaults(
    args: argparse.Namespace, caps: Capabilities, cluster: Cluster, spec: IndexSpec, live: Spec | None
) -> None:
    """Why the defaults not asked for were chosen: the fusion for this cluster and the text layout."""
    from adapter.engines.engine import measured_kind
    from adapter.fusion.choice.defaults import why

    if not args.default_fusion:
        print(f"{caps.engine} {caps.version}: {why(measured_kind(cluster.engine, caps))}")
    if not args.text_layout:
        print(
            f"text layout: {spec.text_layout} ("
            + (
                "the existing index's"
                if live
                else "the measured default for new indexes, chosen on the labelled sets' train splits"
            )
            + "; --text-layout to choose)"
        )


def _choice(args: argparse.Namespace, cluster: Cluster) -> AnalysisChoice:
    """A new index's analyzer and embedder by the one rule (adapter.index.language): from --sample's documents,
    else from none (the first ingest chooses)."""
    from adapter.index.choose import choose_analysis

    if not args.sample:
        return choose_analysis(cluster, None)
    from adapter.ingest.sources import SourceDoc, read_source

    from pathlib import Path

    if not Path(args.sample).exists():
        raise InputError(f"--sample {args.sample}: no such file or folder")
    rows = read_source(args.sample)
    texts = (f"{r.title}\n{r.text}" for r in rows if isinstance(r, SourceDoc))
    return choose_analysis(cluster, texts, source=Path(args.sample).name)


def _analysis_line(
    args: argparse.Namespace,
    spec: IndexSpec,
    live: Spec | None,
    choice: AnalysisChoice | None,
    pending: bool,
    asked: dict[str, str],
) -> str:
    """The one line that says which analyzer and embedder the index has, why, and how to choose others."""
    from adapter.index.language import OVERRIDE

    from adapter.cli.demo import hybrid_command

    hybrid = hybrid_command()
    said = f"analyzer: {spec.analyzer}, embedder: {spec.fingerprint.spec}"
    embedder = (
        "embedder as asked" if "embedder" in asked else "the default embedder, multilingual; --embedder to choose"
    )
    if live is not None:
        return (
            f"{said} (the existing index's; "
            f"another needs a new index: `{hybrid} reindex --index {args.index} --analyzer ...`)"
        )
    if choice is None:
        return f"{said} (as asked)" if len(asked) == 2 else f"{said} (analyzer as asked; {embedder})"
    if pending:
        return (
            f"{said} for now: the first `{hybrid} ingest` reads its documents' language and chooses the analyzer "
            f"(--analyzer to choose now, --sample FILE to choose from a file)"
        )
    return f"{said} ({choice.why}; {embedder if 'embedder' in asked else OVERRIDE})"
