"""`hybrid eval --report` end to end: the stored evaluation's files, read by other tools, and its page
in a real headless Chromium (sorted, filtered, drilled into), on each engine."""

import json

import pytest

from adapter.cli import main
from adapter.index.contracts import validate
from tests.support import datasets
from tests.support.browser import SCREENSHOTS, watched_page

QUERIES = datasets.SUPPORT_QUERIES


@pytest.fixture
def support_beir(tmp_path, support_docs_path):
    return datasets.support_beir(tmp_path / "support-beir", support_docs_path, {"test": QUERIES}, first_grade=2)


@pytest.mark.engine("opensearch", "elasticsearch")
def test_the_report_opens_offline_and_a_person_can_use_it(
    support_beir, opensearch_url, index_name, tmp_path, chromium, target
):
    out = tmp_path / "report"
    code = main(
        datasets.eval_args(
            support_beir,
            index_name,
            opensearch_url,
            "--analyzer",
            "spanish",
            "--mmr",
            "0.5",
            "--report",
            out,
            "--quiet",
            "--cache",
            tmp_path / "c.sqlite",
        )
    )
    assert code == 0
    summary = json.loads((out / "eval.json").read_text())
    validate("eval", summary)

    # The run files give the eval's numbers in ir-measures (trec_eval underneath), every technique.
    import ir_measures

    qrels = list(ir_measures.read_trec_qrels(str(out / "qrels.txt")))
    measures = {"ndcg@10": ir_measures.nDCG @ 10, "recall@100": ir_measures.R @ 100, "mrr@10": ir_measures.RR @ 10}
    for name, row in summary["results"].items():
        got = ir_measures.calc_aggregate(
            list(measures.values()), qrels, ir_measures.read_trec_run(str(out / "runs" / f"{name}.run"))
        )
        for key, measure in measures.items():
            assert got[measure] == pytest.approx(row[key], abs=1e-9), (name, key)

    page = watched_page(chromium, width=1600, height=1000)
    page.page.goto((out / "index.html").as_uri())
    page.page.wait_for_function("window.REPORT && window.REPORT.ready")
    rows = page.page.locator("#summary-table tbody tr")
    assert rows.count() == len(summary["results"])
    assert "Holm-Bonferroni" in page.page.inner_text("#summary")
    page.screenshot(f"report-{target.engine}-summary", full_page=False)

    # Every point labelled, no two labels overlapping, none over a point's marker, in both charts.
    charts = page.page.evaluate("Object.values(window.REPORT.charts).map(c => c.$pointLabels)")
    for boxes in charts:
        assert len(boxes) == len(summary["results"])
        assert not any(b["clash"] for b in boxes)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not (a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]), (
                    a["text"],
                    b["text"],
                )
    page.page.locator("#charts").screenshot(path=str(SCREENSHOTS / f"report-{target.engine}-charts.png"))

    # A crowded chart thins out from its key: hiding the reranked/diversified hybrids takes their labels too.
    post = sorted(n for n, r in summary["results"].items() if n.startswith(("hybrid", "client")) and n.endswith("+mmr"))
    assert post  # the eval ran with --mmr
    x, y = page.page.evaluate("""(() => { const ch = Object.values(window.REPORT.charts)[0];
        const i = ch.legend.legendItems.findIndex(l => l.text === 'hybrid + rerank/MMR');
        const h = ch.legend.legendHitBoxes[i];
        const r = ch.canvas.getBoundingClientRect();
        return [r.left + h.left + h.width / 2, r.top + h.top + h.height / 2]; })()""")
    page.page.mouse.click(x, y)
    page.page.wait_for_function(
        f"Object.values(window.REPORT.charts)[0].$pointLabels.length === {len(summary['results']) - len(post)}"
    )
    shown = page.page.evaluate(
        "Object.values(window.REPORT.charts)[0].$pointLabels.map(b => b.text.replace('★ ', '').replace(' (<1 ms)', ''))"
    )
    assert not set(shown) & set(post) and "bm25+mmr" in shown
    page.page.mouse.click(x, y)
    page.page.wait_for_function(
        f"Object.values(window.REPORT.charts)[0].$pointLabels.length === {len(summary['results'])}"
    )

    # Sort the per-query table by bm25's nDCG@10: one click, best first; another, worst first.
    keys = page.page.evaluate("Array.from(document.querySelectorAll('#pq-table thead th')).map(th => th.dataset.key)")
    column = keys.index("t:bm25")
    read = (
        "Array.from(document.querySelectorAll('#pq-table tbody tr'))"
        f".map(tr => Number(tr.children[{column}].textContent))"
    )
    page.page.click("#pq-table th[data-key='t:bm25'] button")
    assert page.page.get_attribute("#pq-table th[data-key='t:bm25']", "aria-sort") == "descending"
    values = page.page.evaluate(read)
    assert values == sorted(values, reverse=True) and len(values) == len(QUERIES)
    page.page.click("#pq-table th[data-key='t:bm25'] button")
    assert page.page.evaluate(read) == sorted(values)

    # Filter: the queries where the default lost to BM25, as the eval's numbers say.
    data = page.page.evaluate("window.REPORT_DATA")
    default = data["default"]  # the product's default row, or the fixed default fusion where the engine cannot run it
    assert default in summary["results"]
    page.page.click("#pq-presets button:has-text('lost to bm25')")
    shown = page.page.evaluate(
        "Array.from(document.querySelectorAll('#pq-table tbody tr:not([hidden])')).map(tr => tr.dataset.qid)"
    )
    qids = [q["id"] for q in data["queries"]]
    lost = [
        q
        for i, q in enumerate(qids)
        if data["scores"]["ndcg@10"][default][i] < data["scores"]["ndcg@10"]["bm25"][i] - 1e-9
    ]
    assert sorted(shown) == sorted(lost)
    assert f"{len(lost)} of {len(QUERIES)} queries" in page.page.inner_text("#pq-count")

    # Drill into a query with the keyboard: each leg's top 10 and the fused list, with grades and leg ranks.
    page.page.click("#pq-presets button:has-text('all queries')")
    page.page.focus("#pq-table tbody tr[data-qid='t2']")
    page.page.keyboard.press("Enter")
    page.page.wait_for_selector("#drill:not([hidden])")
    lists = page.page.locator("#drill-body .lists .col")
    assert lists.count() == 3
    fused = page.page.locator("#drill-body table.fused tbody tr")
    assert fused.count() >= 3
    first = fused.first.inner_text()
    assert "#" in first  # a leg rank
    assert page.page.locator("#drill-body .grade.g2, #drill-body .grade.g1").count() >= 1  # judged documents marked
    page.screenshot(f"report-{target.engine}-drill", full_page=False)

    # Every technique's name reads whole in the per-query table's (vertical) header, none clipped.
    clipped = page.page.evaluate("""Array.from(document.querySelectorAll('#pq-table th.tech')).filter(th => {
        const range = document.createRange(); range.selectNodeContents(th.querySelector('button'));
        const text = range.getBoundingClientRect(), cell = th.getBoundingClientRect();
        return text.top < cell.top - 0.5 || text.bottom > cell.bottom + 0.5; }).map(th => th.textContent)""")
    assert clipped == []

    # On a laptop's window the page does not widen: the charts shrink with it, the drill-down's lists
    # rewrap and show every column (a cut list only scrolled sideways before).
    page.page.set_viewport_size({"width": 1024, "height": 800})
    page.page.wait_for_function(FITS, timeout=10_000)
    assert page.page.evaluate(CUT) == []
    page.screenshot(f"report-{target.engine}-drill-1024", full_page=False)
    assert page.errors == []


# The page is no wider than the window, and so is each chart.
FITS = """document.documentElement.scrollWidth <= document.documentElement.clientWidth
    && Array.from(document.querySelectorAll('#charts canvas'))
        .every(c => c.getBoundingClientRect().right <= document.documentElement.clientWidth)"""
# The drill-down's lists whose content is wider than their column.
CUT = (
    "Array.from(document.querySelectorAll('#drill-body .lists .col'))"
    ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.querySelector('h3').textContent)"
)
