"""``hybrid plan | apply | diff`` (a spec file against the cluster) and ``hybrid reindex | rollback | prune``
(zero-downtime migrations to a new index version). See docs/OPERATIONS.md.

Each takes a spec file (YAML or JSON) or the same options as ``hybrid init``, which build one
(``--write-spec FILE`` saves it, with the embedder's fingerprint pinned so CI needs no model).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from adapter.cli.common import (
    Subparsers,
    add_index_spec_options,
    allowed,
    chosen_embedder,
    connect,
    pipeline_files,
    text_layout,
    with_allow_model,
    with_url,
)
from adapter.cli.exits import Exit, add_with_exit_codes
from adapter.errors import HybridError, InputError

if TYPE_CHECKING:
    from adapter.engines import Cluster
    from adapter.index.plan import Plan
    from adapter.index.spec import Spec
    from adapter.models.cache import EmbeddingCache

# `hybrid diff` exit codes, as `terraform plan -detailed-exitcode` has them: 2 means drift, so an
# error (which the other commands report with 2) is 1 here, bad arguments included (adapter/cli/exits.py).
DIFF_IN_SYNC = Exit.OK
DIFF_ERROR = Exit.FOUND
DIFF_DRIFT = Exit.ERROR
_SPEC_DESTS = (
    "embedder",
    "analyzer",
    "space_type",
    "knn_method",
    "m",
    "ef_construction",
    "shards",
    "title_boost",
    "text_layout",
    "weights",
    "default_fusion",
    "pipeline_file",
)


def _spec_options(p: argparse.ArgumentParser, *, reattach: bool = False) -> None:
    p.add_argument("spec", nargs="?", help="the index spec file (YAML or JSON); or give --index and init's options")
    p.add_argument("--index", help="alias name, when no spec file is given (options as for `hybrid init`)")
    add_index_spec_options(p)
    p.add_argument(
        "--pipeline-file", action="append", help="extra search pipeline asset (JSON), stored as <index>-<file stem>"
    )
    p.add_argument(
        "--write-spec", metavar="FILE", help="save the spec the options describe (.yaml or .json; fingerprint pinned)"
    )
    with_url(p)


def add_parsers(sub: Subparsers) -> None:
    plan = sub.add_parser("plan", help="show what `apply` would change on the cluster, drift made by hand included")
    _spec_options(plan)
    plan.add_argument("--json", action="store_true", help="the plan as JSON")
    plan.set_defaults(func=run_plan)

    apply = sub.add_parser(
        "apply", help="make the cluster match the spec (idempotent; refuses changes that need a new index)"
    )
    _spec_options(apply)
    apply.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    apply.set_defaults(func=run_apply)

    _add_diff_parser(sub)
    _add_reindex_parser(sub)
    _add_rollback_parser(sub)
    _add_prune_parser(sub)


def _add_diff_parser(sub: Subparsers) -> None:
    """``hybrid diff``: the drift for CI, with its own exit codes (a usage error is not drift)."""
    diff = add_with_exit_codes(
        sub, "diff", "compare the cluster with the spec, for CI: exit 0 in sync, 2 on drift, 1 on error"
    )
    _spec_options(diff)
    diff.add_argument("--json", action="store_true", help="the drift as JSON")
    diff.set_defaults(func=run_diff, usage_error_code=DIFF_ERROR)
    # argparse's own exit 2 would read as drift
    diff.error = lambda message: _diff_usage_error(diff, message)  # type: ignore[method-assign]


def _add_reindex_parser(sub: Subparsers) -> None:
    """``hybrid reindex``: a new version from the live index, its gate, its catch-up and the swap."""
    re = sub.add_parser(
        "reindex",
        help="build <alias>-v(N+1) from the live index with the spec's mapping and model, then swap the alias",
        description="Zero-downtime: searches keep using the live index until one atomic alias swap; writes made "
        "meanwhile are caught up; a crash resumes from the checkpoint. See docs/OPERATIONS.md.",
    )
    _spec_options(re)
    re.add_argument(
        "--checkpoint", help="progress file (default: under the embedding cache folder, per cluster and alias)"
    )
    re.add_argument("--no-swap", action="store_true", help="build, catch up and check, but leave the alias where it is")
    re.add_argument(
        "--force", action="store_true", help="build a new version even when the live index could take the spec in place"
    )
    re.add_argument(
        "--gate-dataset",
        metavar="DIR",
        help="a BEIR folder of this index's documents: refuse the swap when nDCG@10 drops by more than --gate-max-drop",
    )
    re.add_argument("--gate-split", default="test")
    re.add_argument(
        "--gate-max-drop", type=float, default=0.02, help="allowed nDCG@10 drop, absolute (default %(default)s)"
    )
    re.add_argument("--gate-limit-queries", type=int, help="only the first N judged queries")
    with_allow_model(re)  # the gate searches the live index with the model it names
    re.add_argument(
        "--batch-size", type=int, default=64, help="entries embedded and written per batch (and per checkpoint)"
    )
    re.add_argument("--max-passes", type=int, default=5, help="catch-up passes before the swap (default %(default)s)")
    re.add_argument(
        "--cache",
        help="embedding cache file (default embeddings.sqlite in HYBRID_CACHE_DIR, else ~/.cache/opensearch-hybrid; "
        "env HYBRID_EMBEDDING_CACHE)",
    )
    re.add_argument("--no-cache", action="store_true")
    re.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    re.set_defaults(func=run_reindex, spec_overrides=("embedder",))


def _add_rollback_parser(sub: Subparsers) -> None:
    """``hybrid rollback``: the alias back on the previous version, with the writes since the swap."""
    rb = with_url(
        sub.add_parser(
            "rollback", help="point the alias back at the previous version (writes since the swap are copied back)"
        )
    )
    rb.add_argument("alias", help="the alias (or a spec file naming it)")
    rb.add_argument(
        "--embedder", help="the previous version's model (default: the one its fingerprint names, if allowed)"
    )
    with_allow_model(rb)
    rb.add_argument("--cache", help="embedding cache file")
    rb.add_argument("--no-cache", action="store_true")
    rb.set_defaults(func=run_rollback)


def _add_prune_parser(sub: Subparsers) -> None:
    """``hybrid prune``: the versions an alias has left, deleted."""
    pr = with_url(sub.add_parser("prune", help="delete the versions an alias has moved away from"))
    pr.add_argument("alias", help="the alias (or a spec file naming it)")
    pr.add_argument(
        "--keep", type=int, default=0, help="keep the newest N old versions, to roll back to (default %(default)s)"
    )
    pr.add_argument("--unfinished", action="store_true", help="also delete newer versions a migration left unswapped")
    pr.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    pr.set_defaults(func=run_prune)


def _diff_usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    sys.exit(DIFF_ERROR)


# -- building the spec ---------------------------------------------------------------------------------
def spec_from_args(args: argparse.Namespace, cluster: Cluster | None = None) -> Spec:
    """The spec file, or one built from init's options over what the live index has (an option not
    given is the index's own; a new index gets init's defaults); with its fingerprint resolved (a pinned
    one is used as is, else the model package is loaded to compute it). ``cluster``: where the live index
    is read (connected when needed and not given)."""
    from adapter.index.spec import load_spec

    if args.spec:
        overrides = getattr(args, "spec_overrides", ())
        given = [
            f"--{d.replace('_', '-')}" for d in ("index", *_SPEC_DESTS) if d not in overrides and _explicit(args, d)
        ]
        if given:
            raise InputError(f"{', '.join(given)} cannot be combined with a spec file: the file says it all")
        spec = load_spec(args.spec)
        if "embedder" in getattr(args, "spec_overrides", ()) and _explicit(args, "embedder"):
            spec = replace(spec, embedder=args.embedder, fingerprint=None)  # migrating to another model
    elif args.index:
        from adapter.index.live import live_spec

        live = live_spec(cluster or connect(args), args.index)
        spec = _spec_from_flags(args, live)
        said = (
            "the live index's, where no option said otherwise"
            if live is not None
            else "a new index: the options given, else init's defaults; `hybrid init --sample FILE` chooses the "
            "analyzer from documents"
        )
        print(
            f"{args.index}: {_described(spec)} ({said})",
            file=sys.stderr if getattr(args, "json", False) else sys.stdout,
        )
    else:
        raise InputError("give a spec file, or --index with the options of `hybrid init`")
    spec = resolve(spec)
    if args.write_spec:
        from adapter.index.spec import dump_spec

        print(f"spec written to {dump_spec(spec, args.write_spec)}")
    return spec


def _described(spec: Spec) -> str:
    return f"analyzer: {spec.analyzer}, embedder: {spec.embedder}"


def _explicit(args: argparse.Namespace, dest: str) -> bool:
    return getattr(args, dest, None) is not None


def _spec_from_flags(args: argparse.Namespace, live: Spec | None = None) -> Spec:
    """The spec init's options describe; ``live``: the existing index's, which stands for every option not given."""
    from adapter.cli.common import INDEX_OPTIONS, index_option
    from adapter.fusion import DEFAULT_WEIGHTS, parse_fusion, parse_weights
    from adapter.fusion.choice.defaults import default_fusion_name
    from adapter.fusion.choice.values import ADAPTIVE
    from adapter.index.language import DEFAULT_ANALYZER
    from adapter.index.spec import Spec

    extra = {**(live.pipelines if live is not None else {}), **pipeline_files(args.pipeline_file)}
    # as init: the measured default
    default = args.default_fusion or (live.default if live is not None else default_fusion_name())
    if default not in extra and default != ADAPTIVE:
        default = parse_fusion(default).name
    if args.embedder or live is None:
        embedder, fingerprint = chosen_embedder(args), None
    else:
        embedder, fingerprint = live.embedder, live.fingerprint  # pinned: the index's own model, none loaded
    return Spec(
        alias=args.index,
        embedder=embedder,
        fingerprint=fingerprint,
        analyzer=args.analyzer or (live.analyzer if live is not None else DEFAULT_ANALYZER),
        **{option: index_option(args, option, live) for option in INDEX_OPTIONS},
        text_layout=text_layout(args, live.text_layout if live is not None else None),
        weights=parse_weights(args.weights) or (live.weights if live is not None else DEFAULT_WEIGHTS),
        extra_pipelines=tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in extra.items())),
        default=default,
        text_fields=live.text_fields if live is not None else Spec.text_fields,
        vector_field=live.vector_field if live is not None else Spec.vector_field,
        replicas=live.replicas if live is not None else Spec.replicas,
    )


def resolve(spec: Spec) -> Spec:
    """The spec with its fingerprint: pinned, or computed by loading the embedder's package."""
    from adapter.models.embedders import load_embedder

    if spec.fingerprint is not None:
        return spec
    try:
        return spec.resolved(lambda name: load_embedder(name).fingerprint)
    except HybridError as exc:
        raise type(exc)(
            f"{exc}. To plan without the model, pin its fingerprint in the spec (`--write-spec FILE` "
            "on a machine that has it writes one)"
        ) from exc


# -- the commands ------------------------------------------------------------------------------------
def _plan(args: argparse.Namespace) -> tuple[Spec, Any, Plan]:
    from adapter.admin.planning import plan_spec

    cluster = connect(args)
    spec = spec_from_args(args, cluster)
    planned, _ = plan_spec(cluster, spec)
    return spec, cluster, planned


def run_plan(args: argparse.Namespace) -> int:
    from adapter.cli.printers import plan_json, print_plan

    spec, _, planned = _plan(args)
    if args.json:
        print(json.dumps(plan_json(planned), indent=2))
    else:
        print_plan(planned, spec_file=args.spec)
    return 0


def run_apply(args: argparse.Namespace) -> int:
    from adapter.admin.planning import apply_plan
    from adapter.cli.printers import print_plan

    spec, cluster, planned = _plan(args)
    hint = (
        f"`hybrid apply` does not do that: `hybrid reindex {args.spec or '--index ' + spec.alias + ' ...'}` "
        "builds it and swaps the alias"
    )
    done = apply_plan(cluster, planned, dry_run=args.dry_run, rebuild_hint=hint)
    print_plan(replace(planned, changes=done), spec_file=args.spec, applied=not args.dry_run)
    return 0


def run_diff(args: argparse.Namespace) -> int:
    from adapter.cli.printers import plan_json, print_diff

    try:
        spec, _, planned = _plan(args)
    except HybridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return DIFF_ERROR
    if args.json:
        print(json.dumps(plan_json(planned), indent=2))
    else:
        print_diff(planned, spec_file=args.spec)
    return DIFF_IN_SYNC if planned.in_sync else DIFF_DRIFT


def _cache(args: argparse.Namespace) -> EmbeddingCache | None:
    from adapter.models.cache import EmbeddingCache

    return None if args.no_cache else EmbeddingCache(args.cache)


def run_reindex(args: argparse.Namespace) -> int:
    from adapter.admin.gate import Gate
    from adapter.admin.migrate import reindex
    from adapter.cli.printers import print_migration
    from adapter.index.plan import desired_from_spec
    from adapter.models.embedders import check_fingerprint, load_embedder

    spec = spec_from_args(args)
    embedder = load_embedder(spec.embedder)
    if spec.fingerprint is not None:  # resolved by spec_from_args
        check_fingerprint(f"{spec.alias} (the spec's pinned fingerprint)", spec.fingerprint, embedder)
    gate = None
    if args.gate_dataset:
        from adapter.evaluation.metrics import load_beir

        gate = Gate(load_beir(args.gate_dataset, args.gate_split).limited(args.gate_limit_queries), args.gate_max_drop)
    report = reindex(
        connect(args),
        desired_from_spec(spec),
        embedder,
        cache=_cache(args),
        checkpoint=args.checkpoint,
        gate=gate,
        allowed=allowed(args),
        swap=not args.no_swap,
        force=args.force,
        batch=args.batch_size,
        max_passes=args.max_passes,
        progress=not args.quiet,
    )
    print_migration(report)
    return 0


def _alias(value: str) -> str:
    from adapter.index.spec import load_spec

    return load_spec(value).alias if value.endswith((".yaml", ".yml", ".json")) and Path(value).exists() else value


def run_rollback(args: argparse.Namespace) -> int:
    from adapter.admin.rollback import rollback
    from adapter.cli.printers import print_migration
    from adapter.models.embedders import load_embedder

    embedder = load_embedder(args.embedder) if args.embedder else None
    report = rollback(connect(args), _alias(args.alias), embedder=embedder, allowed=allowed(args), cache=_cache(args))
    print_migration(report)
    return 0


def run_prune(args: argparse.Namespace) -> int:
    from adapter.admin.rollback import prune

    report = prune(connect(args), _alias(args.alias), keep=args.keep, unfinished=args.unfinished, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(
        f"{report.alias} -> {report.current}; {verb}: {', '.join(report.deleted) or 'nothing'}"
        + (f"; kept: {', '.join(report.kept)}" if report.kept else "")
    )
    left = [u for u in report.unfinished if u not in report.deleted]
    if left:
        print(
            f"unfinished migration targets kept: {', '.join(left)} (resume with `hybrid reindex`, or `prune "
            "--unfinished`)"
        )
    return 0
