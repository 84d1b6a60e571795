"""``hybrid get`` and ``hybrid delete``: documents by id (adapter.ingest.by_id).

``get`` prints each entry as one JSON line in the index contract's shape, which ``hybrid ingest``
reads back as the same entry. ``delete`` removes entries by id, whole documents (every chunk) by
``--parent``, or what ``--filter`` matches; ``--dry-run`` only counts them. A filter that matches every
entry is refused unless ``--all`` is given (``--all`` alone deletes every entry); a filter on a field the
index does not map is an error (:mod:`adapter.ingest.deletion`).
"""

from __future__ import annotations

import argparse
import json
import sys

from adapter.cli.common import Subparsers, connect, with_url
from adapter.cli.exits import Exit, add_with_exit_codes


def add_parsers(sub: Subparsers) -> None:
    get = with_url(add_with_exit_codes(sub, "get", "print documents by id as JSON lines (the index contract's shape)"))
    get.add_argument("--index", required=True)
    get.add_argument("ids", nargs="+", metavar="ID")
    get.add_argument(
        "--with-vectors",
        action="store_true",
        help="include each entry's vector (with embedded_by, it is "
        "used again when the rows are ingested into an index of the same model)",
    )
    get.set_defaults(func=run_get)

    delete = with_url(
        add_with_exit_codes(sub, "delete", "delete documents by id, by parent document (all its chunks) or by filter")
    )
    delete.add_argument("--index", required=True)
    delete.add_argument("ids", nargs="*", metavar="ID", help="entry ids (a chunk's is <parent>#<n>)")
    delete.add_argument("--parent", action="append", default=[], help="a document id: every entry of it (repeatable)")
    delete.add_argument(
        "--filter",
        action="append",
        help="field=value (value1|value2 for any of), as `hybrid search` takes it; all must hold",
    )
    delete.add_argument(
        "--all",
        action="store_true",
        help="allow a filter that matches every entry; alone: delete every entry "
        "(without it such a delete is refused and nothing is deleted)",
    )
    delete.add_argument("--dry-run", action="store_true", help="count what would be deleted; delete nothing")
    delete.set_defaults(func=run_delete)


def run_get(args: argparse.Namespace) -> int:
    from adapter.ingest.by_id import Documents, stored_id

    documents = Documents.open(connect(args), args.index)
    found = documents.get(args.ids, with_vectors=args.with_vectors)
    for doc in found:
        print(json.dumps(doc.as_row(documents.info.vector_field), ensure_ascii=False))
    missing = [i for i in dict.fromkeys(args.ids) if stored_id(i) not in {d.id for d in found}]
    for doc_id in missing:
        print(f"not found: {doc_id}", file=sys.stderr)
    return Exit.INCOMPLETE if missing else Exit.OK


def run_delete(args: argparse.Namespace) -> int:
    from adapter.cli.search import parse_filters
    from adapter.ingest.by_id import Documents

    filters = parse_filters(args.filter) if args.filter else None
    report = Documents.open(connect(args), args.index).delete(
        args.ids, parents=args.parent, filters=filters, all=args.all, dry_run=args.dry_run
    )
    what = (
        f"{len(args.ids)} ids"
        if args.ids
        else f"parents {', '.join(args.parent)}"
        if args.parent
        else f"filter {filters}"
        if filters is not None
        else "every entry (--all)"
    )
    if report.dry_run:
        whole = "; that is every entry: deleting them needs --all" if report.whole_index and not args.all else ""
        print(f"dry run: {report.matched} entries of {args.index} match {what}{whole}; nothing was deleted")
        return Exit.OK
    print(f"deleted {report.deleted} of {report.matched} matching entries of {args.index} ({what})")
    for problem in report.failures:
        print(f"  not deleted: {problem}", file=sys.stderr)
    return Exit.ERROR if report.failures else Exit.OK
