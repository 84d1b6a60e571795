"""How results look in a terminal. ``--json`` is for scripts; these are for people."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from adapter.admin.migrate import MigrationReport
    from adapter.cli.search import QueryTiming
    from adapter.evaluation import EvalReport
    from adapter.fusion.base import LegScore
    from adapter.fusion.choice.advise import Advice
    from adapter.fusion.choice.values import FusionChoice
    from adapter.admin.init import InitReport
    from adapter.index.plan import Change, Plan
    from adapter.search.results import Hit, SearchResult


def print_init(report: InitReport) -> None:
    for change in report.changes:
        print(f"{change.action:>12}  {change.kind:<18} {change.name}")
        if change.diff:
            print("\n".join("              " + line for line in change.diff.splitlines()))
    print(
        "nothing to change: the cluster already matches the assets"
        if not report.changed
        else f"index {report.alias} -> {report.index}"
    )
    if report.default_pipeline:
        print(f"default search pipeline: {report.default_pipeline} (a hybrid query sent without one is fused by it)")
    if report.default_fusion:
        print(
            f"default fusion: {report.default_fusion} (recorded in the index's _meta; the adapter sends it with each "
            "hybrid search)"
        )
    for notice in report.notices:
        print(f"note: {notice}")


def console() -> Console:
    """Rich output on stdout; piped or captured output gets a fixed wide layout and no colour."""
    import sys

    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _number_column(table: Table, header: str, cells: list[str]) -> None:
    """A right-aligned figure column, as wide as its widest header line or cell."""
    table.add_column(
        header,
        justify="right",
        no_wrap=True,
        min_width=max([len(line) for line in header.splitlines()] + [len(c) for c in cells]),
    )


def _explained_legs(hits: Sequence[Hit], explain: bool) -> list[str]:
    """The legs the table explains: the first hit's, with ``explain``."""
    return [leg.leg for leg in hits[0].legs] if explain and hits and hits[0].legs else []


def _figure_columns(hits: Sequence[Hit], legs: list[str]) -> dict[str, list[str]]:
    """The figures' columns by header: rank, score, relevance, then per leg its rank, raw,
    normalised score and contribution, then the first stage's score when a post-process reordered."""
    post = any(h.rerank_score is not None or h.mmr_score is not None for h in hits)
    columns: dict[str, list[str]] = {
        "#": [str(h.rank) for h in hits],
        "score": [f"{h.score:.4f}" for h in hits],
        "relevance": [_num(h.relevance, 3) for h in hits],
    }
    for i, leg in enumerate(legs):
        cells = [_leg_cells(h.legs[i]) if len(h.legs) > i else ["", "", "", ""] for h in hits]
        for j, part in enumerate(("rank", "raw", "norm", "contrib")):
            columns[f"{leg}\n{part}"] = [c[j] for c in cells]
    if post:
        columns["first\nstage"] = [_num(h.first_stage_score, 4) for h in hits]
    return columns


def _extra_columns(table: Table, hits: Sequence[Hit]) -> list[list[str | Text]]:
    """The more-chunks (with collapse) and snippet (with highlights) columns, added to ``table``; their cells."""
    snippets = any(h.highlight for h in hits)
    collapsed = any(h.chunks for h in hits)
    extra: list[list[str | Text]] = []
    if collapsed:
        table.add_column("more\nchunks", no_wrap=True, overflow="ellipsis", max_width=30)
        extra.append([", ".join(c.id for c in h.chunks) for h in hits])
    if snippets:
        table.add_column("snippet", overflow="fold", max_width=70)
        extra.append([snippet(h.highlight) for h in hits])
    return extra


def result_table(result: SearchResult, *, explain: bool) -> Table:
    """The hits as a table; with ``explain`` one column per leg figure, aligned whatever the titles.
    Only the title gives way (wraps) in a narrow terminal."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    hits = result.hits
    columns = _figure_columns(hits, _explained_legs(hits, explain))
    ids = [h.id for h in hits]
    titles = [" ".join((h.title or h.text).split())[:60] for h in hits]
    _number_column(table, "#", columns.pop("#"))
    _number_column(table, "score", columns.pop("score"))
    relevance = columns.pop("relevance")
    _number_column(table, "relevance", relevance)
    table.add_column("id", no_wrap=True, overflow="ellipsis", max_width=24, min_width=min(24, max([2, *map(len, ids)])))
    table.add_column("title", overflow="fold", max_width=60)
    for header, column in columns.items():
        _number_column(table, header, column)
    extra = _extra_columns(table, hits)
    for k, h in enumerate(hits):
        table.add_row(
            str(h.rank),
            f"{h.score:.4f}",
            relevance[k],
            h.id,
            titles[k],
            *(cells[k] for cells in columns.values()),
            *(cells[k] for cells in extra),
        )
    return table


def snippet(highlight: Mapping[str, Sequence[str]]) -> Text:
    """The first snippet of a hit (body field first), its matched words in bold."""
    import re

    from rich.text import Text

    fragments = [f for name in sorted(highlight, key=lambda n: n in ("title",)) for f in highlight[name]]
    text = Text()
    if not fragments:
        return text
    for i, part in enumerate(re.split(r"</?em>", " ".join(fragments[0].split()))):
        text.append(part, style="bold" if i % 2 else "")
    return text


def facet_lines(result: SearchResult) -> list[str]:
    """One line per facet: its values with their counts (and documents, when collapsed)."""
    lines = []
    for name, facet in result.aggregations.items():
        values = [
            f"{b.key} {b.count}" + (f" ({b.documents} docs)" if b.documents is not None else "") for b in facet.buckets
        ]
        more = f", other {facet.other}" if facet.other else ""
        lines.append(f"facet {name}: " + (", ".join(values) or "no values") + more)
    return lines


def _leg_cells(leg: LegScore) -> list[str]:
    if leg.rank is None and leg.normalized_score is None:
        return ["-", "-", "-", "-"]
    return [str(leg.rank or "-"), _num(leg.raw_score, 3), _num(leg.normalized_score, 4), f"{leg.contribution:.4f}"]


def print_result(
    result: SearchResult, *, explain: bool, show_query: bool = False, timing: QueryTiming | None = None
) -> None:
    """The hits for people; ``timing`` (adapter.cli.search.QueryTiming) says what the client spent
    besides the search: the model's load apart from the query's embedding."""
    out = console()
    for notice in result.notices:
        out.print(f"note: {notice}", markup=False)
    spent = timing.line(result.total_ms or 0.0) if timing is not None else f"{result.total_ms:.0f} ms (total)"
    out.print(
        f"{result.technique.value} | fused by {result.fused_by_label} | relevance by {result.relevance_by} | "
        f"{len(result.hits)} hits | took {result.took_ms:.0f} ms (server), {spent}",
        markup=False,
    )
    if result.choice is not None:
        out.print(adaptive_line(result, explain=explain), markup=False)
    out.print(result_table(result, explain=explain))
    for line in facet_lines(result):
        out.print(line, markup=False)
    if show_query:
        print_requests(result)


def adaptive_line(result: SearchResult, *, explain: bool) -> str:
    """Adaptive fusion's choice: the weights in one line, and with ``explain`` why (the corpus, the query's signals)."""
    choice = result.choice
    if choice is None:
        return ""
    if explain:
        return "adaptive fusion: " + "; ".join(choice.reasons)
    w = choice.weights
    return (
        f"adaptive fusion: {choice.normalization} bm25 {w[0]:.2f} / dense {w[1]:.2f} "
        f"({choice.kind} query; --explain says why)"
    )


def print_requests(result: SearchResult) -> None:
    """Each request the search sent, as a console would send it (vectors on one line)."""
    for i, sent in enumerate(result.sent, 1):
        print(f"== request {i}/{len(result.sent)}")
        print(compact_numbers(sent.as_text()))


def compact_numbers(text: str) -> str:
    """Put JSON arrays of numbers (query vectors) on one line."""
    import re

    return re.sub(
        r"\[\s*(-?[0-9][0-9.eE+-]*(?:,\s*-?[0-9][0-9.eE+-]*)*)\s*\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
        text,
    )


def print_advice(advice: Advice, choices: Sequence[FusionChoice] | None = None) -> None:
    """The class of each query and, with ``choices`` (one FusionChoice per query), the adaptive
    weights: per query when the policy weighs each query, else once, for the whole index (a policy
    without per-query terms gives every query the same weights, whatever its class)."""
    chosen = list(choices or ())
    per_query = any(c.per_query for c in chosen)
    for i, q in enumerate(advice.queries):
        line = f"{q.kind:>7}  {q.text[:70]:<70}  {'; '.join(q.reasons)}"
        if per_query:
            w = chosen[i].weights
            line += f"  -> {chosen[i].policy}: bm25 {w[0]:.2f} / dense {w[1]:.2f}"
        print(line)
    print(
        f"\n{len(advice.queries)} queries: {advice.natural_share:.0%} natural language, {advice.exact_share:.0%} exact "
        "terms"
    )
    print(f"recommendation: {advice.recommendation} ({advice.reason})")
    if chosen and not per_query:
        c = chosen[0]
        print(
            f"adaptive fusion on this index ({c.policy}): {c.normalization} bm25 {c.weights[0]:.2f} / dense "
            f"{c.weights[1]:.2f} for every query, exact-term or not: the weights follow the corpus, not the query "
            f"(confidence {c.confidence:.2f})"
        )
        for reason in c.reasons[:-1]:
            print(f"  {reason}")


def print_eval(report: EvalReport) -> None:
    from adapter.evaluation import format_table

    print(format_table(report))
    for name, result in report.results.items():
        for notice in result.notices:
            print(f"note ({name}): {notice}")
    skipped = report.settings.get("skipped_empty_documents")
    if skipped:
        print(
            f"note: {len(skipped)} corpus documents have neither title nor text and were left out: "
            f"{', '.join(skipped[:10])}"
        )
    classes = [(name, r.by_class) for name, r in report.results.items() if r.by_class]
    if classes:
        print("\nnDCG@10 by query class (adapter.fusion.choice.advise): exact-term | natural language")
        for name, by in classes:
            cells = [f"{by[k]['ndcg@10']:.4f} ({by[k]['queries']})" if k in by else "-" for k in ("exact", "natural")]
            print(f"  {name:<40} {cells[0]:>16} | {cells[1]:>16}")
    if report.settings.get("default_technique"):
        print(f"the product's default: {report.settings['default_technique']}")
    regret = report.default_regret
    if regret is not None:
        noise = (
            ""
            if regret.standard_error is None
            else f" ± {regret.standard_error:.4f}"
            + (" (within one standard error: a tie)" if regret.within_noise else "")
        )
        print(
            f"default regret: {regret.regret:+.4f}{noise} against the best fixed fusion of this run "
            f"({regret.best_fixed} {regret.best_fixed_ndcg:.4f}; default {regret.ndcg:.4f}, better leg "
            f"{regret.best_leg} {regret.best_leg_ndcg:.4f})"
        )
        for line in regret.warnings:
            print(f"warning: {line}")
    elif (loss := report.leg_loss) is not None:  # no fixed fusion in the run: no regret, but a loss to a leg is said
        print(f"warning: {loss}")
    if report.learned:
        print(
            f"learned adaptive policy ({report.learned['family']}; cross-validated on the train split: "
            f"{report.learned['cross_validated_ndcg@10']}): {report.learned['policy']['parameters']}"
        )
    parity = report.settings.get("rrf_parity")
    if parity:
        print(
            f"server RRF vs client-rrf: {parity['identical_up_to_ties']}/{parity['queries']} queries ranked "
            f"identically up to the order of tied scores ({parity['identical_order']} in exactly the same order)"
        )


_MARKS = {
    "create": "+",
    "created": "+",
    "would create": "+",
    "update": "~",
    "updated": "~",
    "would update": "~",
    "delete": "-",
    "deleted": "-",
    "would delete": "-",
    "rebuild": "!",
}


def _print_changes(changes: Sequence[Change], *, indent: str = "  ") -> None:
    for change in changes:
        reason = f"  ({change.reason})" if change.reason and change.action != "rebuild" else ""
        print(f"{indent}{_MARKS.get(change.action, ' ')} {change.action:<13} {change.kind:<18} {change.name}{reason}")
        if change.action == "rebuild":
            print(f"{indent}    {change.reason}")
        if change.diff:
            print("\n".join(f"{indent}      {line}" for line in change.diff.splitlines()))


def _rebuild_hint(plan: Plan, spec_file: str | None) -> str:
    what = spec_file or f"--index {plan.alias} ..."
    return (
        f"{plan.index} cannot take this change in place: it needs a new index ({plan.next_index}). "
        f"`hybrid reindex {what}` builds it, then swaps the alias (docs/OPERATIONS.md)"
    )


def print_plan(plan: Plan, *, spec_file: str | None = None, applied: bool = False) -> None:
    """What a plan changes (or, ``applied``, what was changed); unchanged objects are counted."""
    drift = [c for c in plan.changes if c.action != "unchanged"]
    _print_changes(drift)
    unchanged = len(plan.changes) - len(drift)
    if plan.rebuild:
        print(f"nothing applied: {_rebuild_hint(plan, spec_file)}")
    elif not drift:
        print(f"in sync: the cluster matches the spec for {plan.alias} ({unchanged} objects checked)")
    else:
        verb = "changed" if applied else "to change"
        print(f"{len(drift)} {verb}, {unchanged} unchanged; index {plan.alias} -> {plan.index}")
    if plan.default_pipeline:
        print(f"default search pipeline: {plan.default_pipeline}")


def _changes(n: int) -> str:
    return "change comes" if n == 1 else f"{n} changes come"


def print_diff(plan: Plan, *, spec_file: str | None = None) -> None:
    """Drift only, for CI logs: each object that differs, how, and what fixes it."""
    drift = [c for c in plan.changes if c.action != "unchanged"]
    if not drift:
        print(f"in sync: the cluster matches the spec for {plan.alias} ({len(plan.changes)} objects checked)")
        return
    compared = (
        f"{len(plan.changes)} objects compared (not the index's mapping and _meta: the index needs rebuilding)"
        if plan.rebuild
        else f"{len(plan.changes)} objects"
    )
    print(f"drift for {plan.alias}: {len(drift)} of {compared} differ from the spec")
    _print_changes(drift)
    in_place = [c for c in drift if c.action != "rebuild"]
    if plan.rebuild:
        # apply refuses a plan with a rebuild as a whole: it must not promise the in-place part.
        print(
            _rebuild_hint(plan, spec_file)
            + "; `hybrid apply` changes nothing while the index needs that"
            + (f" (the other {_changes(len(in_place))} with it)" if in_place else "")
        )
    elif in_place:
        print(f"`hybrid apply {spec_file or '...'}` fixes {len(in_place)} in place")


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "alias": plan.alias,
        "index": plan.index,
        "in_sync": plan.in_sync,
        "rebuild": list(plan.rebuild),
        "next_index": plan.next_index,
        "default_pipeline": plan.default_pipeline,
        "changes": [
            {"kind": c.kind, "name": c.name, "action": c.action, "reason": c.reason, "diff": c.diff}
            for c in plan.changes
        ],
    }


def print_migration(report: MigrationReport) -> None:
    """A reindex or rollback: where the alias went, what was copied, embedded and caught up, how long."""
    secs = report.seconds
    if report.swapped:
        print(
            f"alias {report.alias}: {report.source} -> {report.target} ({report.entries} entries, checksum "
            f"{report.checksum[:16]})"
        )
    else:
        print(
            f"{report.target} built from {report.source} ({report.entries} entries); the alias was not moved "
            "(--no-swap)"
        )
    if report.resumed_after:
        print(
            f"resumed after {report.resumed_after} entries copied by an earlier run (not read, embedded or written "
            "again)"
        )
    print(
        f"copied: {report.copied}  embedded: {report.embedded}  from cache: {report.from_cache}  vectors reused: "
        f"{report.reused}"
    )
    print(
        f"caught up: {report.caught_up} written or changed during the migration, {report.deleted} deleted; "
        f"{report.passes} passes"
    )
    if report.gate is not None:
        g = report.gate
        print(
            f"gate: nDCG@10 {g.old:.4f} -> {g.new:.4f} on {g.queries} queries (allowed drop {g.max_drop}): "
            f"{'passed' if g.passed else 'FAILED'}"
        )
    print("time: " + ", ".join(f"{k.replace('_', ' ')} {v:.1f}s" for k, v in secs.items()))
