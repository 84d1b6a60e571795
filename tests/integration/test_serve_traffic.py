"""``hybrid serve --ubi`` and ``--interleave`` against a real node (issue 40, the service): every
search answered leaves a UBI query record and carries its query_id, ``POST /events`` takes the
page's clicks (validated, 202 / 400), an interleaved search is the team draft of the running fusion
and the candidate with its teams logged and its clicks credited in ``/metrics`` and ``hybrid traffic
report``, and the compare page posts one valid event when a person clicks a hit."""

from __future__ import annotations

import json

import pytest

from adapter.engines import connect_cluster
from adapter.index.contracts import SEARCH_SCHEMA_VERSION, validate
from adapter.search import Searcher
from adapter.serve import SearchService, create_app
from adapter.serve.traffic import Traffic, TrafficSettings
from adapter.traffic import ubi
from tests.support.browser import wait_until, watched_page
from tests.support.serving import call, counter, post_json, served
from tests.support.indexes import hashing, small_index  # noqa: F401  (fixtures)
from tests.support.traffic import traffic_command

pytestmark = [pytest.mark.engine("opensearch", "elasticsearch"), pytest.mark.min_version("3.0")]

QUERY = "¿cómo devuelvo un pedido?"


@pytest.fixture
def service(small_index, opensearch_url, target, hashing):
    return SearchService(
        Searcher.open(connect_cluster(opensearch_url, engine=target.engine), small_index, hashing), cluster="test"
    )


@pytest.fixture
def settings(small_index):
    """UBI indices of this test's own (named after its index, so the clean-up removes them)."""
    return TrafficSettings(queries_index=f"{small_index}-ubi-queries", events_index=f"{small_index}-ubi-events")


def stored(traffic: Traffic) -> tuple[dict, list]:
    assert traffic.logger.flush(30)
    traffic.logger.store.refresh()
    raw = traffic.logger.store.cluster.search(
        traffic.logger.store.queries_index, {"size": 100, "query": {"match_all": {}}}
    )
    return {h["_source"]["query_id"]: h["_source"] for h in raw["hits"]["hits"]}, list(traffic.logger.store.events())


def click(query_id: str, doc: str, position: int, client_id: str = "browser-7") -> dict:
    return ubi.click_event(
        query_id=query_id, client_id=client_id, object_id=doc, position=position, timestamp="2026-12-07T10:00:00.000Z"
    )


def test_every_search_answered_is_logged_and_carries_its_query_id(service, settings, small_index):
    traffic = Traffic.open(service.searcher, settings)
    with served(create_app(service, traffic=traffic)) as url:
        posted = post_json(f"{url}/search", {"q": QUERY, "k": 5, "client_id": "browser-7"})
        got = call(f"{url}/search?q=pedido&technique=bm25")
        compared = post_json(
            f"{url}/api/compare",
            {"q": QUERY, "client_id": "browser-7", "columns": [{"technique": "bm25"}, {"technique": "dense"}]},
        )
        bad_client = post_json(f"{url}/search", {"q": QUERY, "client_id": "x" * 101})
    answers = [json.loads(posted[2]), json.loads(got[2]), *(c["result"] for c in json.loads(compared[2])["columns"])]
    for answer in answers:
        validate("search", answer)
        assert answer["schema_version"] == SEARCH_SCHEMA_VERSION and len(answer["query_id"]) == 36, answer.get(
            "query_id"
        )
    assert bad_client[0] == 400 and "client_id" in json.loads(bad_client[2])["error"]
    records, _ = stored(traffic)
    assert set(records) == {a["query_id"] for a in answers}
    for answer in answers:
        record = records[answer["query_id"]]
        ubi.validate("query", record)
        assert record["query_response_hit_ids"] == [h["id"] for h in answer["hits"]]
        assert record["query_attributes"]["hybrid"]["index"] == small_index
    first = records[answers[0]["query_id"]]
    assert (first["client_id"], first["user_query"]) == ("browser-7", QUERY)
    assert records[answers[1]["query_id"]]["client_id"] == "anonymous"  # no client_id sent
    traffic.close()


def test_without_ubi_nothing_is_logged_and_the_answer_has_no_query_id(service, settings, client):
    with served(create_app(service)) as url:
        answer = json.loads(post_json(f"{url}/search", {"q": QUERY, "client_id": "browser-7"})[2])
        event = post_json(f"{url}/events", click("q-1", "a", 0))
    assert "query_id" not in answer and "interleaving" not in answer
    validate("search", answer)
    assert event[0] == 404 and "--ubi" in json.loads(event[2])["error"]
    assert not client.indices.exists(index=settings.queries_index)


def test_no_query_text_is_stored_when_asked(service, settings):
    traffic = Traffic.open(
        service.searcher,
        TrafficSettings(
            store_query_text=False, queries_index=settings.queries_index, events_index=settings.events_index
        ),
    )
    with served(create_app(service, traffic=traffic)) as url:
        answer = json.loads(post_json(f"{url}/search", {"q": QUERY})[2])
    records, _ = stored(traffic)
    record = records[answer["query_id"]]
    assert record["user_query"] == "" and "devuelvo" not in json.dumps(record, ensure_ascii=False)
    assert record["query_attributes"]["hybrid"]["query_key"] == ubi.query_key(QUERY)
    traffic.close()


def test_events_are_validated_and_queued(service, settings):
    traffic = Traffic.open(service.searcher, settings)
    with served(create_app(service, traffic=traffic)) as url:
        answer = json.loads(post_json(f"{url}/search", {"q": QUERY, "client_id": "browser-7"})[2])
        doc = answer["hits"][1]["id"]
        good = post_json(f"{url}/events", click(answer["query_id"], doc, 1))
        no_action = post_json(
            f"{url}/events", {k: v for k, v in click(answer["query_id"], doc, 1).items() if k != "action_name"}
        )
        negative = post_json(f"{url}/events", click(answer["query_id"], doc, -1))
        not_json = call(f"{url}/events", method="POST", body=b"{nope", headers={"Content-Type": "application/json"})
        not_object = post_json(f"{url}/events", [1, 2])
        metrics = call(f"{url}/metrics")[2].decode()
        documented = json.loads(call(f"{url}/openapi.json")[2])
    assert good[0] == 202 and json.loads(good[2]) == {"queued": True}
    assert (
        "post" in documented["paths"]["/events"]
        and "client_id" in documented["components"]["schemas"]["SearchBody"]["properties"]
    )
    assert no_action[0] == 400 and "action_name" in json.loads(no_action[2])["error"]
    assert negative[0] == 400 and "ordinal" in json.loads(negative[2])["error"]
    assert not_json[0] == 400 and "not JSON" in json.loads(not_json[2])["error"]
    assert not_object[0] == 400
    assert counter(metrics, "hybrid_serve_requests_total", route="/events", status="202") == 1
    _, events = stored(traffic)
    assert [(e.query_id, e.object_id, e.position, e.client_id) for e in events] == [
        (answer["query_id"], doc, 1, "browser-7")
    ]
    after = traffic.logger.stats
    assert (after.queued, after.written, after.dropped, after.failed) == (2, 2, 0, 0)
    traffic.close()


def test_an_interleaved_search_is_drafted_logged_and_its_clicks_credited(service, settings, opensearch_url, capsys):
    traffic = Traffic.open(
        service.searcher,
        TrafficSettings(interleave="rrf", queries_index=settings.queries_index, events_index=settings.events_index),
    )
    with served(create_app(service, traffic=traffic)) as url:
        answer = json.loads(post_json(f"{url}/search", {"q": QUERY, "k": 6, "client_id": "browser-7"})[2])
        plain = json.loads(
            post_json(f"{url}/search", {"q": QUERY, "technique": "bm25"})[2]
        )  # not the running fusion: not interleaved
        records, _ = stored(traffic)
        teams = records[answer["query_id"]]["query_attributes"]["hybrid"]["interleaving"]["teams"]
        position = teams.index("candidate")
        doc = answer["hits"][position]["id"]
        assert post_json(f"{url}/events", click(answer["query_id"], doc, position))[0] == 202
        assert traffic.logger.flush(30)
        metrics = call(f"{url}/metrics")[2].decode()
    validate("search", answer)
    assert answer["interleaving"] == {"baseline": "index-default", "candidate": "rrf"}
    assert [h["rank"] for h in answer["hits"]] == list(range(1, 7)) and len(teams) == 6
    assert (
        "interleaving" not in plain and "interleaving" not in records[plain["query_id"]]["query_attributes"]["hybrid"]
    )
    assert records[answer["query_id"]]["query_response_hit_ids"] == [h["id"] for h in answer["hits"]]
    assert counter(metrics, "hybrid_serve_interleaving_searches", outcome="win") == 1
    assert counter(metrics, "hybrid_serve_interleaving_searches", outcome="loss") == 0
    assert counter(metrics, "hybrid_serve_ubi_records_total", state="written") == 3
    assert counter(metrics, "hybrid_serve_ubi_records_total", state="dropped") == 0
    traffic.logger.store.refresh()
    (stored_click,) = traffic.logger.store.cluster.search(
        settings.events_index, {"size": 10, "query": {"match_all": {}}}
    )["hits"]["hits"]
    ubi.validate("event", stored_click["_source"])
    assert stored_click["_source"]["event_attributes"]["hybrid"] == {
        "team": "candidate"
    }  # tagged by the server, not the page
    assert traffic_command("report", opensearch_url, settings, "--json") == 0
    (experiment,) = json.loads(capsys.readouterr().out)["experiments"]
    assert (experiment["baseline"], experiment["candidate"], experiment["wins"], experiment["losses"]) == (
        "index-default",
        "rrf",
        1,
        0,
    )
    traffic.close()


def test_an_unknown_candidate_is_refused_before_serving(service, settings):
    from adapter.errors import InputError

    with pytest.raises(InputError, match="nope"):
        Traffic.open(
            service.searcher,
            TrafficSettings(
                interleave="nope", queries_index=settings.queries_index, events_index=settings.events_index
            ),
        )


def test_a_click_on_the_page_posts_one_valid_event(service, settings, chromium):
    traffic = Traffic.open(service.searcher, settings)
    service.warm()
    with served(create_app(service, traffic=traffic)) as url:
        page = watched_page(chromium, width=1440, height=1000)
        posted: list = []
        page.page.on("request", lambda r: posted.append(r) if r.url.endswith("/events") else None)
        page.page.goto(url)
        page.page.fill("#q", QUERY)
        page.page.keyboard.press("Enter")
        page.page.wait_for_selector("body[data-state=done]", timeout=60_000)
        column = page.page.locator("#columns .column").nth(2)
        hit = column.locator("li[data-doc]").nth(1)
        doc = hit.get_attribute("data-doc")
        hit.locator("summary").click()
        assert "logs searches and clicks (UBI)" in page.page.inner_text("header")
        wait_until(page.page, "window.COMPARE.state.events === 1")
        query_id = page.page.evaluate("window.COMPARE.state.results[2].result.query_id")
        assert page.errors == []
    (request,) = posted
    event = json.loads(request.post_data)
    ubi.validate("event", event)
    assert request.response().status == 202 and event["application"] == ubi.APPLICATION
    assert (
        event["query_id"],
        event["event_attributes"]["object"]["object_id"],
        event["event_attributes"]["position"]["ordinal"],
    ) == (query_id, doc, 1)
    _, events = stored(traffic)
    assert [(e.query_id, e.object_id, e.position) for e in events] == [(query_id, doc, 1)]
    records, _ = stored(traffic)
    assert records[query_id]["client_id"] == event["client_id"]
    traffic.close()


def test_the_command_line_turns_it_on(small_index, settings, opensearch_url, client):
    import signal

    from tests.support.serving import serve_command

    process, base = serve_command(
        small_index,
        opensearch_url,
        "--ubi-no-query-text",
        "--interleave",
        "rrf",
        "--ubi-queries-index",
        settings.queries_index,
        "--ubi-events-index",
        settings.events_index,
    )
    try:
        answer = json.loads(post_json(f"{base}/search", {"q": QUERY, "client_id": "browser-9"})[2])
        event = post_json(f"{base}/events", click(answer["query_id"], answer["hits"][0]["id"], 0, "browser-9"))
        info = json.loads(call(f"{base}/api/info")[2])
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert (
        "UBI logging on" in out and "without query text" in out and "interleaving the running fusion with rrf" in out
    ), out
    assert answer["interleaving"] == {"baseline": "index-default", "candidate": "rrf"} and event[0] == 202
    assert info["ubi"] is True and info["interleaving"] == {"baseline": "index-default", "candidate": "rrf"}
    client.indices.refresh(
        index=f"{settings.queries_index},{settings.events_index}"
    )  # written before the process ended (SIGTERM flushes)
    record = client.get(index=settings.queries_index, id=answer["query_id"])["_source"]
    assert record["user_query"] == "" and record["client_id"] == "browser-9"
    assert client.count(index=settings.events_index)["count"] == 1
