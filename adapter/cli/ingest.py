"""``hybrid ingest``: embed and index JSONL, CSV or a folder of .txt/.md files."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from adapter.cli.common import Subparsers, connect, embedder_for, with_allow_model, with_url
from adapter.cli.exits import Exit, add_with_exit_codes

if TYPE_CHECKING:
    from typing import Iterator

    from adapter.index.catalog import IndexInfo
    from adapter.engines import Cluster
    from adapter.ingest.report import IngestReport, ItemFailure
    from adapter.ingest.sources import FieldMap, RowError, SourceDoc


# Exit codes of `hybrid ingest` (the table for every command: adapter/cli/exits.py, printed in the README).
EXIT_ALL_LANDED = Exit.OK
EXIT_ERROR = Exit.ERROR  # an error stopped it: rows not confirmed written are in the failures file
EXIT_SOME_ROWS_FAILED = Exit.INCOMPLETE  # the ingest finished, but some rows did not land (listed in the failures file)


def add_parsers(sub: Subparsers) -> None:
    ingest = with_url(add_with_exit_codes(sub, "ingest", "embed and index JSONL, CSV or a folder of .txt/.md files"))
    _input_arguments(ingest)
    _embedding_arguments(ingest)
    _run_arguments(ingest)
    ingest.set_defaults(func=run)


def _input_arguments(ingest: argparse.ArgumentParser) -> None:
    """What is read and where it goes: the input, the index, the embedder, the format and its fields."""
    ingest.add_argument("path")
    ingest.add_argument("--index", required=True)
    ingest.add_argument("--embedder", help="default: the embedder recorded in the index")
    with_allow_model(ingest)
    ingest.add_argument("--format", choices=["jsonl", "csv", "folder"])
    ingest.add_argument("--id-field", help="default: the first of id, _id, doc_id")
    ingest.add_argument("--title-field", default="title")
    ingest.add_argument("--text-field", default="text")
    ingest.add_argument(
        "--metadata-fields", help="comma-separated fields kept as metadata (default: every other field)"
    )


def _embedding_arguments(ingest: argparse.ArgumentParser) -> None:
    """How texts become vectors: chunks, batches, devices and processes, and the longest text taken."""
    ingest.add_argument("--chunk-size", type=int, help="split texts into chunks of this many words")
    ingest.add_argument(
        "--chunk-overlap", type=int, default=40, help="words shared by consecutive chunks (default %(default)s)"
    )
    ingest.add_argument("--batch-size", type=int, default=64, help="documents embedded per batch (default %(default)s)")
    ingest.add_argument(
        "--device",
        help="where a sentence-transformers model encodes: cpu (default), cuda, cuda:1, or several "
        "GPUs as cuda:0,cuda:1 (one encode process each)",
    )
    ingest.add_argument(
        "--encode-processes",
        type=int,
        metavar="N",
        help="encode in N processes on the device (sentence-transformers' multi-process pool; on CPUs "
        "each gets an equal share of the cores); raise --batch-size with it (e.g. 64 per process)",
    )
    ingest.add_argument(
        "--max-chars",
        type=int,
        default=None,
        metavar="N",
        help="refuse documents (or chunks) whose text is over N characters, before embedding them "
        "(default 100,000; 0: no limit). Longer texts: --chunk-size",
    )


def _run_arguments(ingest: argparse.ArgumentParser) -> None:
    """How the run goes: bad rows, the failures file, the embedding cache, partitions and the progress bar."""
    ingest.add_argument("--strict", action="store_true", help="any bad row is fatal, before anything is written")
    ingest.add_argument(
        "--failures",
        help="where to write failed rows (JSONL); default ingest-failures-<index>-<time>-<pid>-<random>.jsonl, mode "
        "600",
    )
    ingest.add_argument(
        "--cache",
        help="embedding cache file (default embeddings.sqlite in HYBRID_CACHE_DIR, else ~/.cache/opensearch-hybrid; "
        "env HYBRID_EMBEDDING_CACHE)",
    )
    ingest.add_argument("--no-cache", action="store_true", help="always call the model")
    ingest.add_argument(
        "--partition",
        metavar="I/N",
        help="index only partition I of N (from 1; by a stable hash of the id), so N processes or machines "
        "can index one input at the same time with no coordination and no duplicates; each writes "
        "its own failures file (<name>.part-I-of-N.jsonl). The index records the round: a run with "
        "another N is refused until every partition of it has run, and each run says which are left",
    )
    ingest.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def failure_line(failure: ItemFailure) -> str:
    """``line 4: d7: reason``, leaving out what the failure does not have (no ``None`` for a missing id)."""
    parts = [f"line {failure.line}" if failure.line is not None else None, failure.id, failure.reason]
    return ": ".join(p for p in parts if p is not None)


def _field_map(args: argparse.Namespace) -> FieldMap:
    from adapter.ingest.sources import FieldMap

    return FieldMap(
        id=args.id_field,
        title=args.title_field or None,
        text=args.text_field,
        metadata=tuple(args.metadata_fields.split(",")) if args.metadata_fields else None,
    )


def _max_chars(args: argparse.Namespace) -> int | None:
    """``--max-chars``: the default when not given, None for 0 (no limit); a negative one is refused."""
    from adapter.errors import InputError
    from adapter.ingest.sources import DEFAULT_MAX_CHARS

    if args.max_chars is not None and args.max_chars < 0:
        raise InputError(f"--max-chars must be 0 (no limit) or more, got {args.max_chars}")
    return DEFAULT_MAX_CHARS if args.max_chars is None else (args.max_chars or None)


def _print_summary(report: IngestReport) -> None:
    """What landed, what came from the cache, what was retried and how long it took."""
    counted = (
        f"  ({report.documents + report.failed} rows: the progress bar's, each landed or failed)"
        if report.failed
        else ""
    )
    print(f"documents: {report.documents}  chunks: {report.chunks}  failures: {report.failed}{counted}")
    print(f"embedded: {report.embedded}  from cache: {report.cache_hits}")
    if report.cache_rejected:
        print(f"cache: {report.cache_rejected} entries failed their integrity check and were embedded again")
    if report.retried_429 or report.retried_5xx or report.split_requests:
        print(
            f"retries: {report.retried_429} items refused with 429 (write queue full) and retried, "
            f"{report.retried_5xx} sent again after a 5xx, {report.split_requests} requests refused as a whole and "
            "split"
        )
    print(
        f"time: {report.seconds_total:.1f}s ({report.docs_per_second:.1f} docs/s); embedding "
        f"{report.seconds_embedding:.1f}s, indexing {report.seconds_indexing:.1f}s (overlapping)"
    )


def _outcome(report: IngestReport, info: IndexInfo) -> int:
    """Whether every row landed (then the next steps), or the first failures; the exit code."""
    if report.complete:
        print(
            "every row landed"
            if report.partition is None
            else f"every row of partition {report.partition.partition.label} landed"
        )
        _next_steps(info)
        return EXIT_ALL_LANDED
    print(f"NOT every row landed: {report.failed} failed (exit code {int(EXIT_SOME_ROWS_FAILED)})")
    for f in report.failures[:10]:
        print(f"  {failure_line(f)}")
    print(f"all failures written to {report.failures_file}")
    return EXIT_SOME_ROWS_FAILED


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from adapter.errors import InputError
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.partition import Partition
    from adapter.ingest.report import IngestInterrupted
    from adapter.ingest.sources import Chunking, count_rows, input_fingerprint, read_source
    from adapter.models.cache import EmbeddingCache

    # A partitioned round records its input: another input's partitions are refused (issue 38).
    partition = replace(Partition.parse(args.partition), input=input_fingerprint(args.path)) if args.partition else None
    cluster = connect(args)
    encode = {k: v for k, v in (("device", args.device), ("processes", args.encode_processes)) if v is not None}
    embedder = embedder_for(args, cluster, **encode)
    fields = _field_map(args)
    chunking = Chunking(args.chunk_size, args.chunk_overlap) if args.chunk_size else None
    max_chars = _max_chars(args)
    rows = _first_documents_choose(
        cluster,
        args,
        read_source(args.path, fields, format=args.format, max_chars=max_chars),
        partitioned=partition is not None,
    )
    ingestor = Ingestor.open(
        cluster,
        args.index,
        embedder,
        cache=None if args.no_cache else EmbeddingCache(args.cache),
        batch_size=args.batch_size,
        chunking=chunking,
        strict=args.strict,
        failures_path=args.failures,
        write_failures=True,
        progress=not args.quiet,
        max_chars=max_chars,
    )
    try:
        report = ingestor.ingest(rows, total=count_rows(args.path), partition=partition)
    except IngestInterrupted as stop:
        _say_interrupted(stop.report)
        raise stop.__cause__ or stop  # the signal's own exit code (130, 143)
    if not report.documents and not report.failed and (report.partition is None or not report.partition.others):
        raise InputError(f"{args.path} holds no rows: nothing was written (is it the input you meant?)")
    if partition is None:  # the whole input: every row written or listed, so a partitioned round on record is over
        from adapter.ingest import rounds

        rounds.end(ingestor.cluster, ingestor.info.index)
    if report.partition is not None:
        print(report.partition.summary)
    _print_summary(report)
    return _outcome(report, ingestor.info)


def _first_documents_choose(
    cluster: Cluster, args: argparse.Namespace, rows: Iterator[SourceDoc | RowError], *, partitioned: bool
) -> Iterator[SourceDoc | RowError]:
    """Where `hybrid init` left the analyzer to the first documents (adapter.index.choose), choose it from
    these rows' first ones before any is written; returns the rows, none lost."""
    import itertools
    from pathlib import Path

    from adapter.admin.init import settle_pending
    from adapter.index.choose import is_pending
    from adapter.index.language import SAMPLE_DOCUMENTS
    from adapter.ingest.sources import SourceDoc

    if not is_pending(cluster, args.index):
        return rows
    if partitioned:  # several processes at once: none may rebuild the index under the others
        print(
            f"analyzer: {args.index} keeps its analyzer for now (a partitioned ingest does not choose it; "
            "`hybrid reindex --index ... --analyzer ...` changes it later)"
        )
        return rows
    head = list(itertools.islice(rows, SAMPLE_DOCUMENTS))
    texts = [f"{r.title}\n{r.text}" for r in head if isinstance(r, SourceDoc)]
    choice = settle_pending(cluster, args.index, texts, source=Path(args.path).name)
    if choice is not None:
        from adapter.cli.demo import hybrid_command

        print(
            choice.line(override=f"to choose another: `{hybrid_command()} reindex --index {args.index} --analyzer ...`")
        )
    return itertools.chain(head, rows)


def _say_interrupted(report: IngestReport) -> None:
    """What an ingest stopped by Ctrl-C or SIGTERM did, and how to finish it."""
    print(
        f"interrupted after {report.rows_read} rows read: landed: {report.chunks} entries; "
        f"not confirmed written: {report.failed} rows"
    )
    print(
        f"failures file: {report.failures_file}"
        if report.failures_file
        else "failures file: none (no row was left unconfirmed)"
    )
    print(
        f"interrupted (the rows after the first {report.rows_read} of the input were not read): run the same command "
        "again to finish; ids are stable, so the rows that landed are written again, not duplicated",
        file=sys.stderr,
    )


def _next_steps(info: IndexInfo) -> None:
    """An adaptive index runs its 0.5 / 0.5 baseline until calibrated: say how, once its rows are in."""
    from adapter.cli.demo import hybrid_command
    from adapter.fusion.choice.policy import stored_policy

    policy, calibration = stored_policy(info.adaptive)
    if (
        info.default_fusion == "adaptive" and policy.departs and calibration is None
    ):  # the command as it runs here (.venv/bin/hybrid)
        print(
            f"next: {hybrid_command()} calibrate --index {info.alias} --queries FILE (a sample of your users' queries, "
            "one per line: the adaptive default keeps 0.5 / 0.5 until it has seen how they match this corpus)"
        )
