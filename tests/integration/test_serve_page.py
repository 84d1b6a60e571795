"""`hybrid serve` against a real node: /search is `hybrid search --json`, validated by its schema; the
compare page driven in a real headless Chromium; read-only; credentials never reach a page."""

import json
import re
import urllib.error
import urllib.request

import pytest

from adapter.cli import main
from adapter.index.contracts import validate
from adapter.search.page import TEXT_MATCHES
from adapter.engines import connect_cluster, describe_url
from adapter.search import Searcher
from adapter.serve import SearchService, create_app
from tests.support.browser import wait_until, watched_page
from tests.support.serving import served
from tests.support.indexes import support_index  # noqa: F401  (the fixture)

QUERY = "¿cómo devuelvo un pedido?"
SECRET = "s3cret-Passw0rd-not-for-pages"


@pytest.fixture
def app_url(support_index, opensearch_url, e5, monkeypatch):
    # Credentials as a deployment gives them (the environment): the page must never see them.
    monkeypatch.setenv("OPENSEARCH_USERNAME", "reader")
    monkeypatch.setenv("OPENSEARCH_PASSWORD", SECRET)
    cluster = connect_cluster(opensearch_url)
    service = SearchService(Searcher.open(cluster, support_index, e5), cluster=describe_url(cluster))
    service.warm()
    with served(create_app(service)) as url:
        yield url


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def post(url: str, body) -> tuple[int, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def without_timing(doc, *also):
    return {k: v for k, v in doc.items() if k not in ("took_ms", "total_ms", *also)}


def snapshot(client, target, index):
    """What a read-only server must leave as it was: the index (and its document count), and the
    templates and pipelines named after it (everything the adapter makes for an index is). Only
    those: the node is shared with other sessions' tests, which make and drop their own meanwhile."""
    from adapter.engines import translate_errors

    mine = lambda name: name.startswith(index)  # noqa: E731
    with translate_errors("reading the cluster", client):
        indices = {i["index"]: i["docs.count"] for i in client.cat.indices(format="json") if mine(i["index"])}
        templates = sorted(
            t["name"] for t in client.indices.get_index_template().get("index_templates", []) if index in t["name"]
        )
        pipelines = (
            sorted(
                p
                for p in client.transport.perform_request("GET", "/_search/pipeline", params={"ignore": 404}) or {}
                if mine(p)
            )
            if target.engine == "opensearch"
            else []
        )
    assert indices, f"{index} is not on the cluster"
    return indices, templates, pipelines


@pytest.mark.engine("opensearch", "elasticsearch")
def test_search_is_the_clis_json_and_the_server_is_read_only(
    app_url, support_index, opensearch_url, client, capsys, target
):
    before = snapshot(client, target, support_index)
    code = main(["search", QUERY, "--index", support_index, "--url", opensearch_url, "--fusion", "rrf", "--json"])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    status, body = get(f"{app_url}/search?q={urllib.request.quote(QUERY)}&fusion=rrf&explain=false&highlight=false")
    assert status == 200, body
    served_doc = json.loads(body)
    validate("search", served_doc)
    # The CLI's document counts every request of its command (reading the index and cluster too), the server's
    # its search's; the CLI's search also asks whether BM25 matched (a filter aggregation, for its notes). A server
    # fusion is one request; client-side fusion (Elasticsearch without the rank-rrf module or an enterprise/trial
    # licence, as its test distribution) is two: the legs' _msearch of ids and scores, then the page's documents by id.
    searches = 2 if served_doc["technique"] == "client" else 1
    if target.engine == "opensearch":
        assert served_doc["technique"] == "hybrid"  # OpenSearch fuses rrf on the server
    assert served_doc["requests"] == searches and cli["requests"] >= 3
    if searches == 2:
        legs, page = served_doc["sent"]
        assert legs["path"] == "/_msearch" and page["path"].endswith("/_search")
        assert set(page["body"]["query"]["ids"]["values"]) == {h["id"] for h in served_doc["hits"]}
    # the hybrid query takes the aggregation (Elasticsearch's request asks _termvectors after)
    if target.engine == "opensearch":
        assert set(cli["sent"][0]["body"].pop("aggs")) == {TEXT_MATCHES}
    assert "aggs" not in served_doc["sent"][0]["body"]
    assert without_timing(served_doc, "requests") == without_timing(cli, "requests")

    # Every technique and several fusions, as the compare page asks: each column a valid search document.
    columns = [
        {"technique": "bm25"},
        {"technique": "dense"},
        {"technique": "hybrid", "fusion": "min_max-harmonic_mean", "weights": [0.3, 0.7]},
        {"technique": "client", "fusion": "dbsf"},
    ]
    status, body = post(f"{app_url}/api/compare", {"q": QUERY, "columns": columns})
    assert status == 200, body
    for column in json.loads(body)["columns"]:
        assert "result" in column, column
        validate("search", column["result"])
        assert column["result"]["hits"]
    assert snapshot(client, target, support_index) == before  # nothing created, changed or deleted


@pytest.mark.engine("opensearch", "elasticsearch")
def test_requests_are_capped_and_credentials_never_reach_a_page(app_url, support_index, opensearch_url):
    pages = [
        get(f"{app_url}/"),
        get(f"{app_url}/api/info"),
        get(f"{app_url}/search?q=pedido&explain=true"),
        get(f"{app_url}/search?q=pedido&k=1000"),
        get(f"{app_url}/search?q={'x' * 1200}"),
        get(f"{app_url}/search?q=pedido&technique=magic"),
        post(f"{app_url}/api/compare", {"q": "pedido", "columns": [{}] * 5}),
        post(f"{app_url}/search", {"q": "pedido", "size": 5}),
    ]
    for status, body in pages:
        assert SECRET not in body and "reader:" not in body
    assert [status for status, _ in pages] == [200, 200, 200, 400, 400, 400, 400, 400]
    assert "k must be from 1 to 100" in pages[3][1] and "at most 1000" in pages[4][1] and "at most 4" in pages[6][1]
    info = json.loads(pages[1][1])
    assert (
        info["index"] == support_index
        and info["read_only"]
        and info["cluster"] == describe_url(connect_cluster(opensearch_url))
    )
    with urllib.request.urlopen(f"{app_url}/", timeout=30) as r:
        assert "default-src 'self'" in r.headers["Content-Security-Policy"]
    big = post(f"{app_url}/api/compare", {"q": "x", "pad": "y" * 70_000})
    assert big[0] == 413


@pytest.mark.engine("opensearch", "elasticsearch")
def test_a_person_compares_four_configurations(app_url, chromium, target):
    page = watched_page(chromium, width=1600, height=1100)
    page.page.goto(app_url)
    assert target.engine in page.page.inner_text("header") and "read-only" in page.page.inner_text("header")
    assert page.page.evaluate("document.activeElement.id") == "q"  # the query box has the focus on arrival
    page.page.locator("header h1").click()
    page.page.keyboard.press("/")  # and gets it back from anywhere with /
    assert page.page.evaluate("document.activeElement.id") == "q"
    page.page.keyboard.type(QUERY)
    page.page.keyboard.press("Enter")
    page.page.wait_for_selector("body[data-state=done]", timeout=60_000)
    columns = page.page.locator("#columns .column")
    assert columns.count() == 4
    for i in range(4):
        assert columns.nth(i).locator("ol.hits li[data-doc]").count() >= 3, columns.nth(i).inner_text()
    assert "devoluciones" in columns.nth(2).inner_text() or "Reembolsos" in columns.nth(2).inner_text()
    # The fourth column is RRF on every engine (on Elasticsearch's basic licence the page did not offer
    # it, and the column ran the index's default again: columns 3 and 4 the same).
    assert "rrf" in columns.nth(3).locator("h2 .label").inner_text()
    assert "rrf" in columns.nth(3).locator(".foot").inner_text()
    # The request count says why there are several (issue 32 item 12: "3 requests" had no word of why).
    requests = columns.nth(2).locator(".foot abbr.requests")
    assert "explain" in (requests.get_attribute("title") or "")
    shown = requests.inner_text()  # the reason in words on the page, not only in a tooltip
    assert re.fullmatch(r"\d+ requests: the search( \+ (excerpts|the legs' scores \(explain\)))+", shown), shown
    # Moves against the first column are marked; each hybrid hit shows both legs' ranks.
    assert columns.nth(1).locator(".moved").count() >= 1, columns.nth(0).inner_text()
    first = columns.nth(2).locator("li[data-doc]").first.inner_text()
    assert "bm25 #" in first and "dense #" in first, first
    if target.engine == "elasticsearch":  # a basic licence: the page says the fusion fell back, and to what
        assert "fell back" in columns.nth(2).locator(".notices").inner_text()
    # The explanation on demand, by keyboard: Tab to the hit, Enter opens it.
    first_hit = columns.nth(2).locator("summary").first
    first_hit.focus()
    page.page.keyboard.press("Enter")
    table = columns.nth(2).locator("table.explain").first
    assert table.is_visible() and "contrib." in table.inner_text()
    # ... and fits its column: no column of it hidden behind a sideways scroll (cut before).
    assert columns.nth(2).locator(".why").first.evaluate("w => w.scrollWidth <= w.clientWidth"), table.inner_text()
    page.page.keyboard.press("ArrowDown")
    assert page.page.evaluate("document.activeElement.tagName") == "SUMMARY"
    page.screenshot(f"compare-{target.engine}", full_page=False)
    # Change a column: RRF with rank constant 20 in column 4, search again.
    column = columns.nth(3)
    column.locator("input[aria-label$='RRF rank constant']").fill("20")
    column.locator("input[aria-label$='RRF rank constant']").dispatch_event("change")
    page.page.click("#go")
    wait_until(
        page.page,
        "document.body.dataset.state === 'done' && document.querySelector('#columns .column:nth-child(4) "
        ".label').textContent.includes('k=20')",
    )
    assert "rrf-20" in columns.nth(3).locator(".foot").inner_text()
    assert page.errors == []


@pytest.mark.engine("opensearch", "elasticsearch")
def test_the_report_of_a_stored_eval_is_served_under_the_servers_policy(
    support_index, opensearch_url, e5, tmp_path, chromium
):
    """`hybrid serve --report DIR`: the compare page links to the report, which opens and works under
    the server's Content-Security-Policy (external scripts only; no eval), as it does from the file system."""
    from adapter.evaluation import stored
    from adapter.evaluation.html import write_report
    from tests.support.tiny_eval import write_tiny_evaluation

    _, root = write_tiny_evaluation(tmp_path)
    write_report(stored.load(root), resamples=200)
    cluster = connect_cluster(opensearch_url)
    service = SearchService(Searcher.open(cluster, support_index, e5), cluster=describe_url(cluster))
    with served(create_app(service, report_dir=root)) as url:
        page = watched_page(chromium, width=1440, height=900)
        page.page.goto(url)
        page.page.click("header a[href='/report/']")
        wait_until(page.page, "window.REPORT && window.REPORT.ready === true")
        assert page.page.url == f"{url}/report/"
        assert page.page.locator("#summary-table tbody tr").count() == 4
        assert page.page.evaluate("Object.values(window.REPORT.charts).every(c => c.$pointLabels.length === 4)")
        page.page.focus("#pq-table tbody tr[data-qid='q2']")
        page.page.keyboard.press("Enter")
        page.page.wait_for_selector("#drill:not([hidden])")
        assert page.page.locator("#drill-body .lists .col").count() == 3
        with urllib.request.urlopen(f"{url}/report/", timeout=30) as r:
            assert "default-src 'self'" in r.headers["Content-Security-Policy"]
        assert page.errors == []
