"""``hybrid calibrate`` (the corpus prior of adaptive fusion, from query texts) and the adaptive
options the other commands share (``--policy``, the weights ``hybrid advise`` shows)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from adapter.cli.common import Subparsers, connect, read_queries, with_url
from adapter.cli.traffic import add_judgment_options
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.admin.calibrate import CalibrationReport
    from adapter.fusion.choice.policy import AdaptivePolicy
    from adapter.fusion.choice.values import FusionChoice
    from adapter.traffic.calibrate import TrafficCalibration


def add_parsers(sub: Subparsers) -> None:
    cal = with_url(
        sub.add_parser(
            "calibrate", help="measure how BM25 matches an index's queries (no judgments) for adaptive fusion"
        )
    )
    cal.add_argument("--index", required=True)
    cal.add_argument(
        "--queries", help="a sample of the index's queries: one per line, or BEIR queries.jsonl (no judgments needed)"
    )
    cal.add_argument(
        "--policy",
        help="an adaptive policy file to keep with the index (e.g. learned by `hybrid eval --tune`); with "
        "--from-traffic, the candidate to decide on instead of fitting one",
    )
    cal.add_argument(
        "--replace",
        action="store_true",
        help="store this calibration even when it has fewer queries (under 10) than the one it replaces",
    )
    cal.add_argument(
        "--no-relevance",
        dest="relevance",
        action="store_false",
        help="do not fit the relevance maps (by default --queries also fits each fusion's map of scores to a "
        "relevance in [0, 1] with one meaning under every fusion: hybrid searches, the index's embedder)",
    )
    live = cal.add_argument_group(
        "from live traffic",
        "fit the policy from the index's UBI clicks (COEC judgments) and ship it "
        "only if a held-out split or an interleaving run says it is better",
    )
    live.add_argument(
        "--from-traffic", action="store_true", help="fit from the clicks in --queries-index / --events-index"
    )
    live.add_argument("--queries-index", default="ubi_queries", help="default %(default)s")
    live.add_argument("--events-index", default="ubi_events", help="default %(default)s")
    live.add_argument("--since", help="only records from this time on (ISO 8601)")
    live.add_argument("--until", help="only records before this time")
    live.add_argument(
        "--held-out",
        type=float,
        default=0.3,
        help="share of the judged queries held out to test the fit (default %(default)s)",
    )
    add_judgment_options(live)
    live.add_argument("--dry-run", action="store_true", help="decide and say why, write nothing")
    live.add_argument(
        "--policy-output", help="write the fitted candidate policy here (e.g. to interleave it before shipping)"
    )
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
    from adapter.admin.calibrate import calibrate_index, store_adaptive

    if args.from_traffic:
        return run_from_traffic(args)
    if not args.queries and not args.policy:
        raise InputError("give --queries to calibrate with, --policy to store, or both")
    from adapter.index.live import live_spec

    policy = load_policy(args.policy)
    cluster = connect(args)
    live = live_spec(cluster, args.index)
    if live is not None:  # else calibrate says the index is missing
        print(f"index {args.index}: analyzer: {live.analyzer}, embedder: {live.embedder}")
    if args.queries:
        report = calibrate_index(
            cluster,
            args.index,
            read_queries(args.queries),
            policy=policy,
            source=Path(args.queries).name,
            replace=args.replace,
            relevance=args.relevance,
        )
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
    coverage = (
        f"{cal.coverage:.0%} of a query's terms are in the index (median)"
        if cal.coverage is not None
        else "term coverage not measured (an older calibration)"
    )
    print(
        f"index {report.alias} ({report.index}): {coverage}, over {cal.queries} "
        f"queries{' from ' + cal.source if cal.source else ''}"
    )
    print(
        f"weights: bm25 {report.weights[0]:.2f} / dense {report.weights[1]:.2f} for a query without per-query signals "
        f"(policy {report.policy.name if report.policy else 'the default'}, confidence {policy.confidence(cal):.2f})"
    )
    for line in leg_evidence(policy, cal, z_score=report.z_score).lines():
        print(line)
    for note in report.notes:
        print(f"note: {note}")
    if report.relevance:
        fitted = report.relevance[0]
        print(
            f"relevance maps fitted and stored in _meta.relevance for {', '.join(m.fusion for m in report.relevance)} "
            f"({fitted.sample} {fitted.reference} reference hits each): a hit's relevance in [0, 1] now means the same "
            f"under each (hybrid search, the frameworks' thresholds)"
        )
    if report.pipeline and report.pipeline_changed:
        print(
            f"search pipeline {report.pipeline} updated to those weights (what a bare hybrid query from any client "
            "gets)"
        )
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


def run_from_traffic(args: argparse.Namespace) -> int:
    """``hybrid calibrate --from-traffic``: the fit, the evidence, and in one line whether it shipped and why."""
    from adapter.cli.traffic import _thresholds
    from adapter.traffic.calibrate import calibrate_from_traffic
    from adapter.traffic.store import UbiStore

    if args.queries:
        raise InputError(
            "--from-traffic fits the policy from clicks, not from --queries (a calibration of query texts): give one "
            "of them"
        )
    cluster = connect(args)
    store = UbiStore(cluster, queries_index=args.queries_index, events_index=args.events_index)
    found = calibrate_from_traffic(
        cluster,
        args.index,
        store=store,
        since=args.since,
        until=args.until,
        held_out_share=args.held_out,
        min_impressions=args.min_impressions,
        thresholds=_thresholds(args.thresholds),
        candidate=load_policy(args.policy),
        dry_run=args.dry_run,
    )
    _print_fit(args, found)
    _print_evidence(found)
    _print_outcome(args, found)
    return 0


def _print_fit(args: argparse.Namespace, found: TrafficCalibration) -> None:
    """What the traffic held and the candidate fitted (or given) from it, beside the running fusion."""
    t, cand = found.traffic, found.candidate
    print(
        f"traffic: {t.searches} searches of {args.index}, {t.clicks} clicks, {t.judged_pairs} judged (query, document) "
        f"pairs; {len(t.queries)} queries with a relevant document: {found.fit_queries} to fit on, "
        f"{len(t.queries) - found.fit_queries} held out"
    )
    if t.without_text:
        print(
            f"note: {t.without_text} judged queries were logged without their text and cannot be searched again: left "
            "out"
        )
    weights = cand.bare_weights(found.calibration)
    how = "given" if found.family == "given" else f"fitted, family {found.family}"
    print(
        f"candidate {cand.name} ({how}): bm25 {weights[0]:.2f} / dense {weights[1]:.2f} for a query without "
        f"per-query signals; running: {found.running.name}"
    )


def _print_evidence(found: TrafficCalibration) -> None:
    """The two pieces of evidence: held-out nDCG@10 from the clicks, and the interleaving tally."""
    from adapter.traffic.evidence import MIN_HELD_OUT

    cand = found.candidate
    held = found.held_out
    if held is None:
        print(f"held-out: too few queries to test on (at least {MIN_HELD_OUT})")
    else:
        print(
            f"held-out nDCG@10: running {held.old:.4f}, candidate {held.new:.4f} ({held.gain:+.4f}) over "
            f"{held.queries} queries, paired randomization p = {held.p_value:.3g}"
        )
    if found.interleaved is None:
        print(f"interleaving: no run of {cand.name} against the index's fusion in the records")
    else:
        tally = found.interleaved.tally
        print(
            f"interleaving: {tally.wins} wins, {tally.losses} losses, {tally.ties} ties over {tally.searches} "
            f"searches, p = {tally.p_value:.3g}: {tally.verdict}"
        )


def _print_outcome(args: argparse.Namespace, found: TrafficCalibration) -> None:
    """Where the candidate went: its file, shipped or kept and why, the report, and what was written."""
    from adapter.traffic.calibrate import META_KEY

    cand = found.candidate
    if args.policy_output:
        Path(args.policy_output).write_text(cand.dumps(), encoding="utf-8")
        print(
            f"candidate policy written to {args.policy_output} (interleave it: Interleaver(searcher, "
            "AdaptivePolicy.loads(...)))"
        )
    if found.decision.ship:
        print(
            f"{'would ship' if args.dry_run else 'SHIPPED'}: {cand.name} replaces {found.running.name}: "
            f"{found.decision.reason}"
        )
    else:
        print(f"{'would keep' if args.dry_run else 'KEPT'} {found.running.name}: {found.decision.reason}")
    if found.report is not None:
        print_calibration(found.report)
    if found.written:
        print(f"evidence written to the index's _meta.{META_KEY}")
    else:
        print("dry run: nothing was written")
