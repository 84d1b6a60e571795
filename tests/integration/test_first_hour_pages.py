"""The pages' part of issue 32 (what a newcomer sees), in a real headless Chromium; no cluster needed."""

from __future__ import annotations

import random
from pathlib import Path


from adapter.search.excerpt import excerpt
from tests.support.browser import SCREENSHOTS, watched_page

STATIC = Path(__file__).resolve().parents[2] / "adapter" / "web" / "static"


def test_the_compare_page_cuts_a_text_as_the_search_does(chromium):
    """Before: the compare page showed a hit without snippets as text.slice(0, 220), cut inside a word, with no "…"."""
    page = watched_page(chromium)
    page.page.set_content("<!doctype html><meta charset=utf-8><body></body>")
    page.page.add_script_tag(path=str(STATIC / "dom.js"))
    rng = random.Random(32)
    alphabet = "ab c,.\n\t()é\u0301日本xyz"
    cases = [
        ("The container was killed because it used too much memory. " * 5, 220),
        ("OOMKilled (exit code 137)", 220),
        ("a" * 300, 220),
        ("日本語のテキストです。" * 30, 220),
    ]
    cases += [
        ("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))), rng.randrange(2, 50)) for _ in range(500)
    ]
    got = page.page.evaluate("cases => cases.map(([t, n]) => window.Dom.excerpt(t, n))", cases)
    assert got == [excerpt(t, n) for t, n in cases]
    assert got[0].endswith("because it used too…") and len(got[0]) <= 220 and got[1] == "OOMKilled (exit code 137)"
    assert page.errors == []


def test_the_per_query_table_shows_the_defaults_column_at_1280_px(chromium, tmp_path):
    """Issue 39: with the 14 rows of a default eval on OpenSearch 3.x, the per-query table was 1319 px wide
    in a 1230 px box at a 1280 px window, and the default's column (the last) was cut off until scrolled to."""
    from adapter.evaluation import stored
    from adapter.evaluation.html import write_report
    from tests.support.tiny_eval import QUERIES, WIDE_TECHNIQUES, write_wide_evaluation

    _, root = write_wide_evaluation(tmp_path)
    url = write_report(stored.load(root), resamples=200).as_uri()
    for width in (1280, 1024):
        page = watched_page(chromium, width=width, height=800)
        page.page.goto(url)
        page.page.wait_for_function("window.REPORT && window.REPORT.ready")
        page.page.locator("#queries").scroll_into_view_if_needed()
        assert page.page.locator("#pq-table th.tech").count() == len(WIDE_TECHNIQUES)
        assert page.page.locator("#pq-table td.is-default").count() == len(QUERIES)
        # Within the table's scroll box as it opens (not scrolled sideways) and within the window: the
        # default's header and every one of its cells, and the column that compares it with the better leg.
        assert page.page.evaluate(OUT_OF_VIEW) == [], width
        assert page.page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.page.locator("#queries").screenshot(path=str(SCREENSHOTS / f"report-per-query-{width}.png"))
        assert page.errors == []


# The default's cells and the Δ best leg header that lie outside the per-query table's scroll box or the window.
OUT_OF_VIEW = """(() => {
    const box = document.querySelector('#pq-table').closest('.scroll').getBoundingClientRect();
    const right = Math.min(box.right, document.documentElement.clientWidth);
    const cells = [...document.querySelectorAll('#pq-table .is-default'),
                   document.querySelector("#pq-table th[data-key='delta']")];
    return cells.filter(c => { const r = c.getBoundingClientRect();
                               return r.left < box.left - 0.5 || r.right > right + 0.5; })
                .map(c => c.textContent); })()"""
