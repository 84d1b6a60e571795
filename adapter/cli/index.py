"""``hybrid render`` (print what the assets render to, no cluster) and ``hybrid init`` (apply them)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from .common import add_index_spec_options, client, index_spec, with_url
from .printers import print_init


def add_parsers(sub) -> None:
    from ..local.distribution import DEFAULT_VERSION

    render = sub.add_parser("render", help="print the index templates and search pipelines the assets render to (no cluster)")
    render.add_argument("--index", required=True)
    render.add_argument("--what", choices=["templates", "pipelines", "all"], default="all")
    render.add_argument("--opensearch-version", default=DEFAULT_VERSION,
                        help="render the pipelines this OpenSearch version runs (default %(default)s)")
    render.add_argument("--elasticsearch-version", metavar="VERSION",
                        help="render for Elasticsearch VERSION instead (a full distribution: analysis-common; no pipelines)")
    add_index_spec_options(render)
    render.set_defaults(func=run_render)

    init = with_url(sub.add_parser("init", help="apply templates, create <index>-v1 behind the alias <index>, put search pipelines"))
    init.add_argument("--index", required=True, help="alias name; the index is <index>-v1")
    add_index_spec_options(init)
    init.add_argument("--pipeline-file", action="append", help="extra search pipeline asset (JSON), applied as <index>-<file stem>")
    init.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    init.add_argument("--reattach-alias", action="store_true",
                      help="put the alias back on the newest <index>-vN when it was deleted by hand")
    init.set_defaults(func=run_init)


def run_render(args) -> int:
    from ..assets import IndexNames
    from ..capabilities import Capabilities
    from ..engines.elasticsearch import ELASTICSEARCH
    from ..engines.opensearch import OPENSEARCH
    from ..fusions import DEFAULT_WEIGHTS, parse_weights

    names = IndexNames(args.index)
    if args.elasticsearch_version:
        engine, caps = ELASTICSEARCH, Capabilities.elasticsearch(args.elasticsearch_version)
    else:
        engine, caps = OPENSEARCH, Capabilities.opensearch(args.opensearch_version)
    out = {}
    if args.what in ("templates", "all"):
        spec = index_spec(args)
        out["component_templates"] = engine.render_components(names, spec, caps)
        out["index_template"] = {names.index_template: engine.render_index_template(names, spec, caps)}
    if args.what in ("pipelines", "all") and caps.search_pipelines:
        fusions = caps.fusions(parse_weights(args.weights) or DEFAULT_WEIGHTS)
        out["pipelines"] = {names.pipeline(f): engine.render_pipeline(f, caps) for f in fusions}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def run_init(args) -> int:
    from ..admin import init_index
    from ..fusions import DEFAULT_WEIGHTS, parse_weights

    extra = {}
    for path in args.pipeline_file or []:
        p = Path(path)
        try:
            extra[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read pipeline asset {p}: {exc}") from exc
    report = init_index(client(args), args.index, index_spec(args), weights=parse_weights(args.weights) or DEFAULT_WEIGHTS,
                        extra_pipelines=extra, dry_run=args.dry_run, reattach=args.reattach_alias)
    print_init(report)
    return 0
