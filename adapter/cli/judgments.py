"""``hybrid judgments export|import``: query sets and judgments to and from OpenSearch's Search
Relevance Workbench (adapter.evaluation.srw has the formats)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from adapter.cli.exits import Exit, add_with_exit_codes
from adapter.errors import InputError

QUERY_SET, QUERY_SET_NDJSON, JUDGMENTS = "query-set.json", "query-set.ndjson", "judgments.json"


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    top = sub.add_parser(
        "judgments", help="query sets and judgments to and from OpenSearch's Search Relevance Workbench (3.1+)"
    )
    verbs = top.add_subparsers(dest="verb", required=True)

    _add_export_parser(verbs)
    _add_import_parser(verbs)


def _add_export_parser(verbs: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``hybrid judgments export``: a BEIR dataset as the workbench's query set and judgment list."""
    out = add_with_exit_codes(
        verbs,
        "export",
        "a BEIR dataset's queries and qrels as the workbench's query set and judgment list",
        command="judgments export",
    )
    out.add_argument(
        "--dataset", required=True, help="folder with queries.jsonl and qrels/<split>.tsv (a corpus is not needed)"
    )
    out.add_argument("--split", default="test")
    out.add_argument(
        "--out",
        required=True,
        help=f"folder for {QUERY_SET} and {JUDGMENTS} (the PUT bodies) and {QUERY_SET_NDJSON} (the Dashboards upload)",
    )
    out.add_argument(
        "--name", help="name of the query set and judgment list, at most 50 characters (default <dataset> <split>)"
    )
    out.add_argument(
        "--with-ids",
        action="store_true",
        help=f"keep each query's id as the custom field {json.dumps('queryId')} "
        "(the workbench keeps custom fields; a later import reads them back)",
    )
    out.add_argument(
        "--drop-refused",
        action="store_true",
        help="leave out queries the workbench refuses (quotes, backslashes, < or >), naming them, instead of failing",
    )
    out.add_argument("--force", action="store_true", help="replace files already in --out")
    out.set_defaults(func=run_export)


def _add_import_parser(verbs: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``hybrid judgments import``: the workbench's query set and judgment list as a BEIR dataset."""
    inp = verbs.add_parser(
        "import", help="the workbench's query set and judgment list as BEIR queries.jsonl and qrels/<split>.tsv"
    )
    inp.add_argument(
        "--judgments",
        required=True,
        help="a judgment list: the PUT body, or what GET _plugins/_search_relevance/judgments/<id> answers",
    )
    inp.add_argument(
        "--query-set",
        help="its query set (PUT body, GET's answer, or the NDJSON upload): query ids from it; "
        "without it the ids are q1, q2... in the judgments' order",
    )
    inp.add_argument(
        "--out",
        required=True,
        help="folder for queries.jsonl and qrels/<split>.tsv (put corpus.jsonl beside them for hybrid eval)",
    )
    inp.add_argument("--split", default="test")
    inp.add_argument(
        "--round", action="store_true", help="round fractional ratings (implicit judgments) to whole grades"
    )
    inp.add_argument("--force", action="store_true", help="replace files already in --out")
    inp.set_defaults(func=run_import)


def _writable(paths: list[Path], force: bool) -> None:
    there = [str(p) for p in paths if p.exists()]
    if there and not force:
        raise InputError(f"{', '.join(there)} already exist; nothing was written (--force replaces them)")


def run_export(args: argparse.Namespace) -> int:
    from adapter.evaluation import srw
    from adapter.evaluation.metrics import load_qrels

    root = Path(args.dataset)
    qrels_path = root / "qrels" / f"{args.split}.tsv"
    if not qrels_path.is_file() or not (root / "queries.jsonl").is_file():
        raise InputError(f"{root} has no queries.jsonl and qrels/{args.split}.tsv")
    qrels = load_qrels(qrels_path)
    texts = {}
    for number, line in enumerate((root / "queries.jsonl").read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                row = json.loads(line)
                texts[str(row["_id"])] = row["text"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f'{root / "queries.jsonl"} line {number}: expected {{"_id", "text"}} ({exc})') from exc
    missing = [q for q in qrels if q not in texts]
    if missing:
        raise InputError(f"{len(missing)} judged queries have no text in queries.jsonl (e.g. {missing[:3]})")
    kept, refused = srw.exportable({q: texts[q] for q in qrels}, drop_refused=args.drop_refused)
    name = args.name or f"{root.name} {args.split}"[: srw.NAME_MAX]
    description = f"{len(kept)} judged queries of {root.name} ({args.split}), exported by hybrid judgments export"
    body = srw.query_set(kept, name=name, description=description[: srw.DESCRIPTION_MAX], with_ids=args.with_ids)
    judgments = srw.judgment_list(kept, qrels, name=name, description=description[: srw.DESCRIPTION_MAX])
    out = Path(args.out)
    paths = [out / QUERY_SET, out / QUERY_SET_NDJSON, out / JUDGMENTS]
    _writable(paths, args.force)
    out.mkdir(parents=True, exist_ok=True)
    paths[0].write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[1].write_text(srw.query_set_ndjson(body), encoding="utf-8")
    paths[2].write_text(json.dumps(judgments, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    ratings = sum(len(r["ratings"]) for r in judgments["judgmentRatings"])
    print(
        f"{len(kept)} queries and {ratings} judgments written to {out} ({QUERY_SET}, {QUERY_SET_NDJSON}, {JUDGMENTS})"
    )
    for qid, why in refused.items():
        print(f"left out: query {qid} {texts[qid]!r}: {why}")
    print(
        "load them: curl -XPUT <cluster>/_plugins/_search_relevance/query_sets -H 'Content-Type: application/json' -d "
        f"@{paths[0]}"
    )
    print(
        "           curl -XPUT <cluster>/_plugins/_search_relevance/judgments -H 'Content-Type: application/json' -d "
        f"@{paths[2]}"
    )
    return Exit.INCOMPLETE if refused else Exit.OK


def _read(path: str, what: str) -> object:
    from adapter.evaluation import srw

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc
    return srw.read_document(text, what=what)


def run_import(args: argparse.Namespace) -> int:
    from adapter.evaluation import srw

    queries = srw.parse_query_set(_read(args.query_set, "query set")) if args.query_set else None
    exchange = srw.parse_judgments(_read(args.judgments, "judgment list"), queries, round_fractions=args.round)
    out = Path(args.out)
    paths = [out / "queries.jsonl", out / "qrels" / f"{args.split}.tsv"]
    _writable(paths, args.force)
    paths[1].parent.mkdir(parents=True, exist_ok=True)
    paths[0].write_text(
        "".join(json.dumps({"_id": q, "text": t}, ensure_ascii=False) + "\n" for q, t in exchange.queries.items()),
        encoding="utf-8",
    )
    rows = [f"{q}\t{d}\t{g}" for q, docs in exchange.qrels.items() for d, g in docs.items()]
    paths[1].write_text("query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    unjudged = len(exchange.queries) - len(exchange.qrels)
    print(
        f"{len(exchange.queries)} queries ({unjudged} without judgments) and {len(rows)} judgments written to "
        f"{paths[0]} and {paths[1]}"
    )
    return 0
