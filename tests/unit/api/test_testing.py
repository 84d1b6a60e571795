"""adapter.testing: the real client over a scripted node, and a recording of it that replays."""

from __future__ import annotations

import pytest
from opensearchpy import ConnectionError as OSConnectionError
from opensearchpy import NotFoundError, OpenSearch, TransportError

from adapter.engines import engine_for
from adapter.engines.elasticsearch import ELASTICSEARCH
from adapter.engines.opensearch import OPENSEARCH
from adapter.testing import FakeClient, RecordingClient, Reply, Request, bulk_actions, bulk_answer
from tests.support.extras import requires_extra


def test_a_fake_client_is_the_real_client_and_keeps_each_request_as_the_node_got_it():
    client = FakeClient({"POST */_search": {"hits": {"hits": []}}})
    assert isinstance(client, OpenSearch) and engine_for(client) is OPENSEARCH
    assert client.search(index="docs", body={"query": {"match_all": {}}}, params={"search_pipeline": "p"}) == {
        "hits": {"hits": []}
    }
    (call,) = client.calls
    assert call == Request("POST", "/docs/_search", {"search_pipeline": "p"}, {"query": {"match_all": {}}})
    assert call.index == "docs" and call.key == "POST /docs/_search"


def test_an_exact_key_wins_then_the_first_pattern_in_order():
    client = FakeClient({"GET /*": "any", "GET /docs/_mapping": "exact", "GET */_mapping": "pattern"})
    assert client.indices.get_mapping(index="docs") == "exact"
    assert client.indices.get_mapping(index="other") == "any"  # "GET /*" comes first
    assert [c.key for c in client.calls_to("GET */_mapping")] == ["GET /docs/_mapping", "GET /other/_mapping"]


def test_lists_are_used_in_turn_functions_get_the_request_and_head_takes_booleans():
    client = FakeClient(
        {
            "GET /": [{"n": 1}, {"n": 2}],
            "HEAD */_alias/*": [True, False],
            "POST */_count": lambda call: {"count": len(call.body["query"])},
        }
    )
    assert [client.info()["n"] for _ in range(3)] == [1, 2, 2]  # the last one repeats
    assert [client.indices.exists_alias(name="a") for _ in range(2)] == [True, False]
    assert client.count(index="docs", body={"query": {"match_all": {}}}) == {"count": 1}


def test_a_status_is_raised_by_the_client_as_its_own_error_and_retried_as_it_retries():
    client = FakeClient(
        {
            "GET /docs": Reply(
                404, {"error": {"type": "index_not_found_exception", "reason": "no such index"}, "status": 404}
            ),
            "GET /_cluster/health": Reply(503, {"error": "busy"}),
            "GET /_cluster/settings": OSConnectionError("N/A", "refused", None),
        }
    )
    with pytest.raises(NotFoundError) as caught:
        client.indices.get(index="docs")
    assert caught.value.info["error"]["reason"] == "no such index" and len(client.calls_to("GET /docs")) == 1
    with pytest.raises(TransportError):
        client.cluster.health()
    assert len(client.calls_to("GET /_cluster/health")) == 4  # 503: asked again three times, as connect()'s client does
    with pytest.raises(OSConnectionError):
        client.cluster.get_settings()


def test_ndjson_bodies_are_parsed_and_bulk_answers_follow_them():
    from opensearchpy import helpers

    client = FakeClient(
        {"POST /_bulk": lambda call: bulk_answer(call, lambda op, doc_id: 400 if doc_id == "b" else 201)}
    )
    actions = [{"_index": "docs", "_id": i, "text": i} for i in ("a", "b")]
    ok, errors = helpers.bulk(client, actions, raise_on_error=False)
    assert ok == 1 and [e["index"]["_id"] for e in errors] == ["b"]
    assert bulk_actions(client.calls[0]) == [({"index": {"_index": "docs", "_id": i}}, {"text": i}) for i in ("a", "b")]


def test_a_request_nobody_answers_is_named():
    with pytest.raises(AssertionError, match="no answer for GET /_cat/indices"):
        FakeClient().transport.perform_request("GET", "/_cat/indices")


@pytest.mark.parametrize("engine", ["opensearch", pytest.param("elasticsearch", marks=requires_extra("elasticsearch"))])
def test_a_recording_replays_in_order_and_a_different_request_is_named(engine):
    node = FakeClient(
        {
            "GET /": {"version": {"number": "9.2.4"}},
            "POST */_search": {"hits": {"hits": [{"_id": "a"}]}},
            "HEAD */_alias/*": False,
        },
        engine_name=engine,
    )
    recorder = RecordingClient(node)
    recorder.info()
    recorder.search(index="docs", body={"query": {"match_all": {}}})
    assert not recorder.indices.exists_alias(name="x")
    assert [(e["method"], e["path"], e["status"]) for e in recorder.exchanges] == [
        ("GET", "/", 200),
        ("POST", "/docs/_search", 200),
        ("HEAD", "/_alias/x", 404),
    ]
    assert recorder.exchanges[1]["body"] == {"query": {"match_all": {}}} and len(node.calls) == 3
    replay = FakeClient(recording=recorder.exchanges, engine_name=engine)
    assert engine_for(replay) is (ELASTICSEARCH if engine == "elasticsearch" else OPENSEARCH)
    assert replay.info()["version"]["number"] == "9.2.4"
    assert replay.search(index="docs", body={"query": {"match_all": {}}})["hits"]["hits"] == [{"_id": "a"}]
    with pytest.raises(AssertionError, match="request 3 is HEAD /_alias/y, the recording has HEAD /_alias/x there"):
        replay.indices.exists_alias(name="y")
