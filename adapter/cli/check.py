"""``hybrid check``: were the index's vectors written by its embedder (and not by another model)?"""

from __future__ import annotations

import argparse

from adapter.cli.common import Subparsers, connect, with_url
from adapter.cli.exits import Exit, add_with_exit_codes


def add_parsers(sub: Subparsers) -> None:
    from adapter.index.check import DEFAULT_LIMIT, DEFAULT_MIN_COSINE, DEFAULT_SAMPLE

    check = with_url(
        add_with_exit_codes(
            sub,
            "check",
            "find documents written without the adapter (one query over the whole index) and vectors written by "
            "another model (a sample, embedded again)",
        )
    )
    check.add_argument("--index", required=True)
    check.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="documents to check (default %(default)s)")
    check.add_argument(
        "--min-cosine",
        type=float,
        default=DEFAULT_MIN_COSINE,
        help="lowest cosine between stored and recomputed vectors that passes (default %(default)s)",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of the random sample (default %(default)s)")
    check.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help="documents named per problem list (all are counted; default %(default)s)",
    )
    check.add_argument("--embedder", help="default: the embedder recorded in the index")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from adapter.index.check import check_index
    from adapter.models.embedders import load_embedder

    report = check_index(
        connect(args),
        args.index,
        load_embedder(args.embedder) if args.embedder else None,
        sample=args.sample,
        min_cosine=args.min_cosine,
        seed=args.seed,
        limit=args.limit,
    )
    print(f"{report.alias} -> {report.index}: {report.documents} documents, embedder {report.model}")
    if report.foreign_total:
        counts = ", ".join(f"{name}: {count}" for name, count in report.problems.items())
        print(
            f"contract (one query over all {report.contract_checked} documents): {report.foreign_total} of "
            f"{report.contract_checked} documents were written without the adapter ({counts})"
        )
        for m in report.foreign:
            print(f"  {m.id}: {m.reason}")
        if report.foreign_total > len(report.foreign):
            print(f"  ... and {report.foreign_total - len(report.foreign)} more (--limit)")
    else:
        print(
            f"contract (one query over all {report.contract_checked} documents): every document has the adapter's "
            "fields" + (" and its model's fingerprint" if report.stamps_entries else "")
        )
    if not report.stamps_entries:
        print(
            "  note: this index predates per-document fingerprints (made before adapter 0.2): `hybrid apply` adds the "
            "field, and what is written from then on carries it"
        )
    lowest = "-" if report.lowest is None else f"{report.lowest:.4f}"
    print(
        f"vectors (a sample of {report.sampled}, embedded again): lowest cosine {lowest} (threshold "
        f"{report.min_cosine})"
    )
    for m in report.mismatches:
        print(f"  {m.id}: {m.reason}")
    if report.ok:
        print("ok: every document was written by the adapter, and every sampled vector by the index's embedder")
        return Exit.OK
    if report.mismatches:
        print(
            f"{len(report.mismatches)} of {report.sampled} sampled documents have vectors the index's embedder did not "
            "write"
        )
    print(
        "re-ingest these documents through the adapter (`hybrid ingest`, or the framework components in "
        "docs/INTEROP.md), which embeds with the recorded model and writes the contract's fields"
    )
    return Exit.FOUND
