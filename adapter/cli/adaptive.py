"""``hybrid calibrate`` (the corpus prior of adaptive fusion, from query texts) and the adaptive
options the other commands share (``--policy``, the weights ``hybrid advise`` shows)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from adapter.cli.common import Subparsers, connect, read_queries, with_url
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.fusion.choice.calibrate import CalibrationReport
    from adapter.fusion.choice.policy import AdaptivePolicy
    from adapter.fusion.choice.values import FusionChoice


def add_parsers(sub: Subparsers) -> None:
    cal = with_url(sub.add_parser("calibrate", help="measure how BM25 matches an index's queries (no judgments) for adaptive fusion"))
    cal.add_argument("--index", required=True)
    cal.add_argument("--queries", help="a sample of the index's queries: one per line, or BEIR queries.jsonl (no judgments needed)")
    cal.add_argument("--policy", help="an adaptive policy file to keep with the index (e.g. learned by `hybrid eval --tune`)")
    cal.add_argument("--replace", action="store_true", help="store this calibration even when it has fewer queries (under 10) "
                                                            "than the one it replaces")
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
    from adapter.index.live import live_spec

    policy = load_policy(args.policy)
    cluster = connect(args)
    live = live_spec(cluster, args.index)
    if live is not None:  # else calibrate says the index is missing
        print(f"index {args.index}: analyzer: {live.analyzer}, embedder: {live.embedder}")
    if args.queries:
        report = calibrate_index(cluster, args.index, read_queries(args.queries), policy=policy, source=Path(args.queries).name,
                                 replace=args.replace)
    else:
        report = store_adaptive(cluster, args.index, policy=policy)
    print_calibration(report)
    return 0


def print_calibration(report: CalibrationReport) -> None:
    """What sets the weights first (term coverage, confidence, the weights); BM25's match quality last,
    as the diagnostic it now is (it no longer sets weights: README, Adaptive fusion)."""
    from adapter.fusion.choice.policy import DEFAULT_POLICY, leg_evidence

    cal = report.calibration
    policy = report.policy or DEFAULT_POLICY
    coverage = (f"{cal.coverage:.0%} of a query's terms are in the index (median)" if cal.coverage is not None
                else "term coverage not measured (an older calibration)")
    print(f"index {report.alias} ({report.index}): {coverage}, over {cal.queries} queries{' from ' + cal.source if cal.source else ''}")
    print(f"weights: bm25 {report.weights[0]:.2f} / dense {report.weights[1]:.2f} for a query without per-query signals "
          f"(policy {report.policy.name if report.policy else 'the default'}, confidence {policy.confidence(cal):.2f})")
    for line in leg_evidence(policy, cal, z_score=report.z_score).lines():
        print(line)
    for note in report.notes:
        print(f"note: {note}")
    if report.pipeline and report.pipeline_changed:
        print(f"search pipeline {report.pipeline} updated to those weights (what a bare hybrid query from any client gets)")
    elif report.pipeline:
        print(f"search pipeline {report.pipeline} unchanged: it already fuses with those weights")
    print(f"diagnostic: BM25 match quality {cal.match_quality:.3f} (median; it does not set the weights)")


def adaptive_choices(args: argparse.Namespace, queries: list[str]) -> list[FusionChoice] | None:
    """With ``--index``: the weights the adaptive policy would choose for each query (None without)."""
    if not getattr(args, "index", None):
        return None
    from adapter.fusion.choice.policy import QuerySignals
    from adapter.search import Searcher

    searcher = Searcher.open(connect(args), args.index)
    policy = load_policy(getattr(args, "policy", None)) or searcher.policy
    out = []
    for q in queries:
        quality = searcher.query_match_quality(q)[0] if policy.uses_legs else None
        out.append(policy.choose(QuerySignals.of(q, quality), searcher.calibration, z_score=searcher.caps.z_score))
    return out
