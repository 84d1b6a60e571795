"""What the commands print: progress on a piped stderr, and a diff that promises only what apply does (issue 22)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys


def test_progress_bars_leave_no_blank_lines_when_piped():
    """Before: each finished bar left an empty line on a piped stderr (12 in an eval)."""
    code = (
        "from adapter._progress import Bar, track\n"
        "list(track(range(3), 'score'))\nlist(track(range(3), 'score'))\n"
        "bar = Bar('ingest docs', total=2); bar.update(2); bar.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [out.stderr.splitlines()[0]] and out.stderr.startswith("ingest docs: 2/2 in ")


def _plan(rebuild: bool):
    from adapter.index.plan import Change, Plan

    changes = [
        Change("index_template", "docs", "create", reason="missing on the cluster"),
        Change("component_template", "docs-text", "unchanged"),
    ]
    if rebuild:
        changes.append(Change("index", "docs-v1", "rebuild", reason="embedding model: ..."))
    return Plan(
        "docs",
        "docs-v1",
        tuple(changes),
        ("embedding model: ...",) if rebuild else (),
        "docs-v2",
        "docs-adaptive",
        "spec",
    )


def test_diff_promises_no_in_place_fix_that_apply_refuses(capsys):
    """Before: diff said "`hybrid apply` fixes 1 in place", then apply refused the whole plan for its rebuild."""
    from adapter.cli.printers import print_diff

    print_diff(_plan(rebuild=True), spec_file="docs.yaml")
    out = capsys.readouterr().out
    assert (
        "fixes" not in out
        and "`hybrid apply` changes nothing while the index needs that (the other change comes with it)" in out
    )
    assert (
        "drift for docs: 2 of 3 objects compared (not the index's mapping and _meta: the index needs rebuilding)" in out
    )
    print_diff(_plan(rebuild=False), spec_file="docs.yaml")
    assert "`hybrid apply docs.yaml` fixes 1 in place" in capsys.readouterr().out


def test_a_search_prints_adaptive_fusions_reasons_only_with_explain(capsys):
    """Issue 39: `hybrid search` printed the adaptive explanation (the corpus, the query's signals, the guard)
    on every search; without --explain it is one line of weights now."""
    from adapter.cli.printers import print_result
    from adapter.fusion.choice.policy import AdaptivePolicy, QuerySignals
    from adapter.search.results import Hit, SearchResult, Technique

    choice = AdaptivePolicy().choose(QuerySignals(kind="natural", reasons=(), match_quality=0.2))
    result = SearchResult(
        "hola", Technique.HYBRID, (Hit("a", 0.9, rank=1, title="Uno"),), choice=choice, total_ms=3.0, took_ms=1.0
    )
    print_result(result, explain=False)
    plain = capsys.readouterr().out
    w = choice.weights
    assert f"adaptive fusion: min_max bm25 {w[0]:.2f} / dense {w[1]:.2f} (natural query; --explain says why)" in plain
    assert not any(reason in plain for reason in choice.reasons)  # "baseline ...", "corpus: ...": none of them
    print_result(result, explain=True)
    explained = capsys.readouterr().out
    assert all(reason[:40] in explained for reason in choice.reasons) and choice.reasons[0].startswith("baseline ")


def _table_text(explain: bool) -> str:
    from rich.console import Console

    from adapter.cli.printers import result_table
    from adapter.fusion.base import FusedBy, LegScore
    from adapter.search.results import Hit, SearchResult, Technique

    legs = (LegScore("bm25", 1, 12.3456, 1.0, 0.5, 0.5), LegScore("dense", None, None, None, 0.5, 0.0))
    hits = (
        Hit(
            "a#1",
            0.9,
            {},
            1,
            legs,
            0.4,
            rerank_score=0.9,
            title="Devoluciones",
            relevance=0.91,
            highlight={"text": ("las <em>devoluciones</em> se aceptan",)},
            chunks=(Hit("a#0", 0.8),),
        ),
        Hit("b#0", 0.5, {}, 2, legs[:1], 0.3, text="  Pagos   con\ntarjeta  "),
        Hit("a-rather-long-identifier-of-a-document", 0.25, {}, 3),
    )
    with open(os.devnull, "w") as devnull:
        out = Console(width=160, record=True, color_system=None, file=devnull)
        out.print(result_table(SearchResult("q", Technique.HYBRID, hits, FusedBy.CLIENT), explain=explain))
    return out.export_text()


def test_the_result_table_is_pinned_with_and_without_explain():
    """The table's exact text (leg, first-stage, more-chunks and snippet columns, a hit with fewer
    legs, a long id), pinned by its hash; the headers and a row are spelled out."""
    explained, plain = _table_text(True), _table_text(False)
    assert "bm25    bm25    bm25     bm25  dense  dense  dense    dense   first  more" in explained
    assert (
        "1  0.9000      0.910  a#1                       Devoluciones       0.4000  a#0     las devoluciones" in plain
    )
    assert hashlib.sha256(explained.encode()).hexdigest() == (
        "f287602b5f275dbbc7ee557d1afac433b70ec73b79639a269fe890b261ec7968"
    )
    assert hashlib.sha256(plain.encode()).hexdigest() == (
        "4826182d7e06ea2263d6ee90401b5da6ae2e6c7bf502b0c1f5f032d3bb36cd3f"
    )
