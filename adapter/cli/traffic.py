"""``hybrid traffic report|judgments|forget``: what the logged UBI traffic says (adapter.traffic).

- ``report``: the interleaving experiments in ``ubi_queries`` / ``ubi_events``: wins, losses and ties
  of each candidate against its baseline, the sign test's p-value and Chapelle et al.'s Δ;
- ``judgments``: COEC judgments from the clicks, as BEIR ``queries.jsonl`` + ``qrels/<split>.tsv``
  (whole grades: what ``hybrid eval`` reads, with the corpus beside them) and as the Search
  Relevance Workbench's judgment list (``judgments.json``, the COEC itself as each rating);
- ``forget``: delete every record of one ``client_id`` (a user's erasure request).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapter.cli.common import Subparsers, with_url
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.traffic.store import UbiStore

JUDGMENTS = "judgments.json"


def add_parsers(sub: Subparsers) -> None:
    top = sub.add_parser("traffic", help="learn from live traffic: interleaving reports and judgments from UBI clicks")
    verbs = top.add_subparsers(dest="verb", required=True)

    report = verbs.add_parser("report", help="interleaving wins, losses and ties per experiment, with a sign test")
    _store_options(report)
    report.add_argument("--json", action="store_true", help="the report as JSON")
    report.set_defaults(func=run_report)

    judge = verbs.add_parser(
        "judgments", help="COEC judgments from the clicks, for hybrid eval and the Search Relevance Workbench"
    )
    _store_options(judge)
    judge.add_argument("--out", required=True, help=f"folder for queries.jsonl, qrels/<split>.tsv and {JUDGMENTS}")
    judge.add_argument("--split", default="test")
    add_judgment_options(judge)
    judge.add_argument(
        "--depth", type=int, help="count only the first DEPTH positions of each page (the workbench's max rank)"
    )
    judge.add_argument(
        "--name", default="hybrid traffic judgments", help="the judgment list's name (at most 50 characters)"
    )
    judge.add_argument("--force", action="store_true", help="replace files already in --out")
    judge.set_defaults(func=run_judgments)

    forget = verbs.add_parser("forget", help="delete every UBI query record and event of one client_id")
    _store_options(forget, window=False)
    forget.add_argument("--client-id", required=True)
    forget.set_defaults(func=run_forget)


def add_judgment_options(parser: argparse._ActionsContainer) -> None:
    """How clicks become judgments (COEC, :mod:`adapter.traffic.clicks`), as ``traffic judgments`` and
    ``calibrate --from-traffic`` both take it."""
    parser.add_argument(
        "--min-impressions",
        type=int,
        default=3,
        help="judge a (query, document) shown at least this often (default %(default)s)",
    )
    parser.add_argument(
        "--thresholds", default="1,2", help="COEC values that earn grades 1, 2, ... (default %(default)s)"
    )


def _store_options(parser: argparse.ArgumentParser, *, window: bool = True) -> None:
    with_url(parser)
    parser.add_argument("--queries-index", default="ubi_queries", help="default %(default)s")
    parser.add_argument("--events-index", default="ubi_events", help="default %(default)s")
    if window:
        parser.add_argument(
            "--since", help="only records from this time on (ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00:00Z)"
        )
        parser.add_argument("--until", help="only records before this time")


def _store(args: argparse.Namespace) -> UbiStore:
    from adapter.cli.common import connect
    from adapter.traffic.store import UbiStore

    return UbiStore(connect(args), queries_index=args.queries_index, events_index=args.events_index)


def _read(args: argparse.Namespace) -> tuple[Any, Any]:
    from adapter.traffic import report

    store = _store(args)
    queries = {q.query_id: q for q in store.queries(since=args.since, until=args.until)}
    return queries, report.join(queries, store.events(since=args.since, until=args.until))


def run_report(args: argparse.Namespace) -> int:
    from adapter.traffic import report

    queries, joined = _read(args)
    found = report.experiments(queries, joined)
    rows = [e.as_json() for e in found]
    if args.json:
        print(json.dumps({"searches": len(queries), "unmatched_clicks": joined.orphans, "experiments": rows}, indent=2))
        return 0
    print(f"{len(queries)} searches read, {joined.orphans} clicks matched no search")
    if not rows:
        print("no interleaved searches: serve an Interleaver (adapter.traffic.experiment) to compare fusions")
    for r in rows:
        print(
            f"{r['candidate']} against {r['baseline']}: {r['wins']} wins, {r['losses']} losses, {r['ties']} ties over "
            f"{r['searches']} searches; delta {r['delta']:+.4f}, sign test p = {r['p_value']:.4g}: {r['verdict']}"
        )
    return 0


def _thresholds(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"--thresholds takes numbers separated by commas, e.g. 1,2; got {text!r}") from None


def run_judgments(args: argparse.Namespace) -> int:
    from adapter.traffic import clicks, report

    thresholds = _thresholds(args.thresholds)
    out = Path(args.out)
    paths = [out / "queries.jsonl", out / "qrels" / f"{args.split}.tsv", out / JUDGMENTS]
    there = [str(p) for p in paths if p.exists()]
    if there and not args.force:
        raise InputError(f"{', '.join(there)} already exist; nothing was written (--force replaces them)")
    queries, joined = _read(args)
    shown, clicked = report.impressions_and_clicks(queries, joined, depth=args.depth)
    judged = clicks.coec_judgments(shown, clicked, min_impressions=args.min_impressions, thresholds=thresholds)
    texts = sorted({j.query for j in judged if not j.query.startswith("sha256:")})
    hashed = len({j.query for j in judged}) - len(texts)
    ids = {text: f"c{n}" for n, text in enumerate(texts, start=1)}
    paths[1].parent.mkdir(parents=True, exist_ok=True)
    paths[0].write_text(
        "".join(json.dumps({"_id": ids[t], "text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8"
    )
    rows = [f"{ids[j.query]}\t{j.doc}\t{j.grade}" for j in judged if j.query in ids]
    paths[1].write_text("query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    paths[2].write_text(
        json.dumps(_judgment_list(judged, args.name), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(
        f"{len(judged)} judgments of {len(texts)} queries from {len(queries)} searches written to {out} "
        f"(queries.jsonl, qrels/{args.split}.tsv, {JUDGMENTS})"
    )
    if hashed:
        print(
            f"{hashed} queries were logged without their text: they are in {JUDGMENTS} by their key, not in the qrels"
        )
    return 0


def _judgment_list(judged: list[Any], name: str) -> dict[str, Any]:
    """The workbench's judgment list, the COEC as each rating (its implicit judgments are fractions too)."""
    from adapter.evaluation import srw

    by_query: dict[str, list[dict[str, str]]] = {}
    for j in judged:
        by_query.setdefault(j.query, []).append({"docId": j.doc, "rating": f"{j.coec:.3f}"})
    refused = {q for q in by_query if srw.refused_text(q)}
    if srw.refused_text(name, limit=srw.NAME_MAX):
        raise InputError(
            f"--name {name!r} would be refused by the workbench: {srw.refused_text(name, limit=srw.NAME_MAX)}"
        )
    ratings = [{"query": q, "ratings": r} for q, r in by_query.items() if q not in refused]
    return {
        "name": name,
        "description": f"COEC judgments from {len(judged)} (query, document) pairs of UBI clicks",
        "type": "IMPORT_JUDGMENT",
        "judgmentRatings": ratings,
    }


def run_forget(args: argparse.Namespace) -> int:
    queries, events = _store(args).delete_client(args.client_id)
    print(f"deleted {queries} query records and {events} events of client {args.client_id!r}")
    return 0
