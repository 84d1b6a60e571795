"""How results look in a terminal. ``--json`` is for scripts; these are for people."""

from __future__ import annotations


def print_init(report) -> None:
    for change in report.changes:
        print(f"{change.action:>12}  {change.kind:<18} {change.name}")
        if change.diff:
            print("\n".join("              " + line for line in change.diff.splitlines()))
    print("nothing to change: the cluster already matches the assets" if not report.changed else f"index {report.alias} -> {report.index}")
    if report.default_pipeline:
        print(f"default search pipeline: {report.default_pipeline} (a hybrid query sent without one is fused by it)")
    if report.default_fusion:
        print(f"default fusion: {report.default_fusion} (recorded in the index's _meta; the adapter sends it with each hybrid search)")
    for notice in report.notices:
        print(f"note: {notice}")


def console():
    """Rich output on stdout; piped or captured output gets a fixed wide layout and no colour."""
    import sys

    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def _num(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def result_table(result, *, explain: bool):
    """The hits as a table; with ``explain`` one column per leg figure, aligned whatever the titles.
    Only the title gives way (wraps) in a narrow terminal."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)

    def number(header: str, cells: list[str]) -> None:
        table.add_column(header, justify="right", no_wrap=True,
                         min_width=max([len(line) for line in header.splitlines()] + [len(c) for c in cells]))

    hits = result.hits
    legs = [leg.leg for leg in hits[0].legs] if explain and hits and hits[0].legs else []
    post = any(h.rerank_score is not None or h.mmr_score is not None for h in hits)
    columns: dict[str, list[str]] = {"#": [str(h.rank) for h in hits], "score": [f"{h.score:.4f}" for h in hits]}
    ids = [h.id for h in hits]
    titles = [" ".join((h.title or h.text).split())[:60] for h in hits]
    for i, leg in enumerate(legs):
        cells = [_leg_cells(h.legs[i]) if len(h.legs) > i else ["", "", "", ""] for h in hits]
        for j, part in enumerate(("rank", "raw", "norm", "contrib")):
            columns[f"{leg}\n{part}"] = [c[j] for c in cells]
    if post:
        columns["first\nstage"] = [_num(h.first_stage_score, 4) for h in hits]
    number("#", columns.pop("#"))
    number("score", columns.pop("score"))
    table.add_column("id", no_wrap=True, overflow="ellipsis", max_width=24, min_width=min(24, max([2, *map(len, ids)])))
    table.add_column("title", overflow="fold", max_width=60)
    for header, cells in columns.items():
        number(header, cells)
    for k, h in enumerate(hits):
        table.add_row(str(h.rank), f"{h.score:.4f}", h.id, titles[k], *(cells[k] for cells in columns.values()))
    return table


def _leg_cells(leg) -> list[str]:
    if leg.rank is None and leg.normalized_score is None:
        return ["-", "-", "-", "-"]
    return [str(leg.rank or "-"), _num(leg.raw_score, 3), _num(leg.normalized_score, 4), f"{leg.contribution:.4f}"]


def print_result(result, *, explain: bool, show_query: bool = False) -> None:
    out = console()
    for notice in result.notices:
        out.print(f"note: {notice}", markup=False)
    out.print(f"{result.technique.value} | fused by {result.fused_by_label} | {len(result.hits)} hits | took {result.took_ms:.0f} ms "
              f"(server), {result.total_ms:.0f} ms (total)", markup=False)
    out.print(result_table(result, explain=explain))
    if show_query:
        print_requests(result)


def print_requests(result) -> None:
    """Each request the search sent, as a console would send it (vectors on one line)."""
    for i, sent in enumerate(result.sent, 1):
        print(f"== request {i}/{len(result.sent)}")
        print(compact_numbers(sent.as_text()))


def compact_numbers(text: str) -> str:
    """Put JSON arrays of numbers (query vectors) on one line."""
    import re

    return re.sub(r"\[\s*(-?[0-9][0-9.eE+-]*(?:,\s*-?[0-9][0-9.eE+-]*)*)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def print_advice(advice) -> None:
    for c in advice.queries:
        print(f"{c.kind:>7}  {c.text[:70]:<70}  {'; '.join(c.reasons)}")
    print(f"\n{len(advice.queries)} queries: {advice.natural_share:.0%} natural language, {advice.exact_share:.0%} exact terms")
    print(f"recommendation: {advice.recommendation} ({advice.reason})")


def print_eval(report) -> None:
    from ..evaluation import format_table

    print(format_table(report))
    for name, result in report.results.items():
        for notice in result.notices:
            print(f"note ({name}): {notice}")
    skipped = report.settings.get("skipped_empty_documents")
    if skipped:
        print(f"note: {len(skipped)} corpus documents have no text and were left out: {', '.join(skipped[:10])}")
    parity = report.settings.get("rrf_parity")
    if parity:
        print(f"server RRF vs client-rrf: {parity['identical_up_to_ties']}/{parity['queries']} queries ranked identically up to the "
              f"order of tied scores ({parity['identical_order']} in exactly the same order)")
