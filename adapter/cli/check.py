"""``hybrid check``: were the index's vectors written by its embedder (and not by another model)?"""

from __future__ import annotations

from .common import client, with_url
from .exits import Exit, help_epilog


def add_parsers(sub) -> None:
    from ..check import DEFAULT_MIN_COSINE, DEFAULT_SAMPLE

    check = with_url(sub.add_parser(
        "check", help="sample documents, embed their text again with the index's embedder, and report vectors written by another model",
        epilog=help_epilog("check"), formatter_class=__import__("argparse").RawDescriptionHelpFormatter))
    check.add_argument("--index", required=True)
    check.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="documents to check (default %(default)s)")
    check.add_argument("--min-cosine", type=float, default=DEFAULT_MIN_COSINE,
                       help="lowest cosine between stored and recomputed vectors that passes (default %(default)s)")
    check.add_argument("--seed", type=int, default=0, help="seed of the random sample (default %(default)s)")
    check.add_argument("--embedder", help="default: the embedder recorded in the index")
    check.set_defaults(func=run)


def run(args) -> int:
    from ..check import check_index
    from ..embedders import load_embedder

    report = check_index(client(args), args.index, load_embedder(args.embedder) if args.embedder else None, sample=args.sample,
                         min_cosine=args.min_cosine, seed=args.seed)
    lowest = "-" if report.lowest is None else f"{report.lowest:.4f}"
    print(f"{report.alias} -> {report.index}: {report.sampled} of {report.documents} documents checked against {report.model}; "
          f"lowest cosine {lowest} (threshold {report.min_cosine})")
    for m in report.mismatches:
        print(f"  {m.id}: {m.reason}")
    if report.ok:
        print("ok: every sampled vector is the index's embedder's")
        return Exit.OK
    print(f"{len(report.mismatches)} of {report.sampled} sampled documents have vectors the index's embedder did not write; "
          "re-ingest them through the adapter (or `hybrid ingest`), which embeds with the recorded model")
    return Exit.FOUND
