"""``hybrid calibrate`` (the corpus prior of adaptive fusion, from query texts) and the adaptive
options the other commands share (``--policy``, the weights ``hybrid advise`` shows)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from adapter.cli.common import Subparsers, client, read_queries, with_url
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.fusion.choice.policy import AdaptivePolicy
    from adapter.fusion.choice.values import FusionChoice


def add_parsers(sub: Subparsers) -> None:
    cal = with_url(sub.add_parser("calibrate", help="measure how BM25 matches an index's queries (no judgments) for adaptive fusion"))
    cal.add_argument("--index", required=True)
    cal.add_argument("--queries", help="a sample of the index's queries: one per line, or BEIR queries.jsonl (no judgments needed)")
    cal.add_argument("--policy", help="an adaptive policy file to keep with the index (e.g. learned by `hybrid eval --tune`)")
    cal.set_defaults(func=run_calibrate)


def load_policy(path: str | None) -> AdaptivePolicy | None:
    """The policy in ``path`` (None: no file given)."""
    if not path:
        return None
    from adapter.fusion.choice.policy import AdaptivePolicy

    try:
        return AdaptivePolicy.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read policy file {path}: {exc}") from exc


def run_calibrate(args: argparse.Namespace) -> int:
    from adapter.fusion.choice.calibrate import calibrate_index, store_adaptive

    if not args.queries and not args.policy:
        raise InputError("give --queries to calibrate with, --policy to store, or both")
    policy = load_policy(args.policy)
    cluster = client(args)
    if args.queries:
        report = calibrate_index(cluster, args.index, read_queries(args.queries), policy=policy, source=Path(args.queries).name)
    else:
        report = store_adaptive(cluster, args.index, policy=policy)
    cal = report.calibration
    coverage = f", query terms in the index {cal.coverage:.0%}" if cal.coverage is not None else ""
    print(f"index {report.alias} ({report.index}): BM25 match quality {cal.match_quality:.3f}{coverage} (medians of {cal.queries} "
          f"queries{', ' + cal.source if cal.source else ''})")
    from adapter.fusion.choice.policy import DEFAULT_POLICY

    policy = report.policy or DEFAULT_POLICY
    print(f"policy: {report.policy.name if report.policy else 'the default'} (confidence {policy.confidence(cal):.2f}); a query "
          f"without per-query signals gets bm25 {report.weights[0]:.2f} / dense {report.weights[1]:.2f}")
    if report.pipeline:
        print(f"search pipeline {report.pipeline} updated to those weights (what a bare hybrid query from any client gets)")
    return 0


def adaptive_choices(args: argparse.Namespace, queries: list[str]) -> list[FusionChoice] | None:
    """With ``--index``: the weights the adaptive policy would choose for each query (None without)."""
    if not getattr(args, "index", None):
        return None
    from adapter.fusion.choice.policy import QuerySignals
    from adapter.search import Searcher

    searcher = Searcher.open(client(args), args.index)
    policy = load_policy(getattr(args, "policy", None)) or searcher.policy
    out = []
    for q in queries:
        quality = searcher.query_match_quality(q)[0] if policy.uses_legs else None
        out.append(policy.choose(QuerySignals.of(q, quality), searcher.calibration, z_score=searcher.caps.z_score))
    return out
