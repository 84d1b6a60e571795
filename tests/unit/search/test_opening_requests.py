"""What opening a searcher and one search ask the cluster, request by request (issue 37: a CLI search
sent 12 requests). Scripted answers; the real node's count is tests/integration/test_cli_requests.py."""

from __future__ import annotations

import pytest

from adapter.engines.opensearch import OPENSEARCH, OpenSearchEngine
from adapter.engines.opensearch.capabilities import opensearch_capabilities, root_capabilities
from adapter.engines.opensearch.client import root_answer
from adapter.engines.port import counting
from adapter.errors import BackendError, ConfigurationError
from adapter.fusion import ScoreNormalization
from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.catalog import IndexInfo, read_index_info
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.search import Searcher
from adapter.search.page import TEXT_MATCHES, SearchOptions
from adapter.testing import FakeClient, Reply

pytestmark = pytest.mark.unit

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
VECTOR = [1.0, 0.0, 0.0, 0.0]
ROOT_3 = {"cluster_uuid": "u3", "version": {"number": "3.6.0", "distribution": "opensearch"}}
NODES = {
    "nodes": {"n": {"version": "3.6.0", "plugins": [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}]}}
}
FUSION = ScoreNormalization(weights=(0.5, 0.5))


def index_body(name: str) -> dict:
    mapping = OPENSEARCH.render_mapping(IndexNames("docs"), IndexSpec(FP))
    return {
        name: {
            "mappings": mapping,
            "settings": {"index": {"search": {"default_pipeline": "docs-min_max-arithmetic_mean"}}},
        }
    }


def hits(*ids: str) -> dict:
    return {"took": 2, "hits": {"hits": [{"_index": "docs-v1", "_id": i, "_score": 1.0, "_source": {}} for i in ids]}}


def not_found(index: str) -> Reply:
    reason = f"no such index [{index}]"
    return Reply(
        404,
        {
            "error": {
                "root_cause": [{"type": "index_not_found_exception", "reason": reason, "index": index}],
                "type": "index_not_found_exception",
                "reason": reason,
                "index": index,
            },
            "status": 404,
        },
    )


def node(**answers) -> FakeClient:
    pipeline = OPENSEARCH.render_pipeline(FUSION, opensearch_capabilities("3.6.0"))
    return FakeClient(
        {
            "GET /": ROOT_3,
            "GET /_nodes*": NODES,
            "GET /_cluster/settings": {},
            "GET /docs": index_body("docs-v1"),
            "* /_search/pipeline/*": lambda call: {call.path.rsplit("/", 1)[-1]: pipeline},
            **answers,
        }
    )


def test_the_alias_and_its_newest_index_are_read_in_one_request():
    client = node(**{"GET /docs": {**index_body("docs-v2"), **index_body("docs-v1")}})  # during a migration: both
    info = read_index_info(client, "docs")
    assert [c.key for c in client.calls] == ["GET /docs"] and info.index == "docs-v2"
    assert (
        client.calls[0].params["include_defaults"] == "true" and "*.mappings" in client.calls[0].params["filter_path"]
    )


def test_a_plain_index_and_a_missing_name_are_still_told_apart():
    plain = FakeClient({"GET /docs": index_body("docs")})
    with pytest.raises(ConfigurationError, match="it is a plain index"):
        read_index_info(plain, "docs")
    missing = FakeClient({"GET /docs": not_found("docs")})
    with pytest.raises(ConfigurationError, match="create it with `hybrid init`"):
        read_index_info(missing, "docs")
    assert [c.key for c in plain.calls + missing.calls] == ["GET /docs", "GET /docs"]


def test_opening_a_searcher_asks_the_index_and_get_root_alone():
    client = node()
    searcher = Searcher.open(client, "docs", engine=OpenSearchEngine())
    # before: HEAD and GET _alias, GET the index, GET /, _nodes, _cluster/settings
    assert [c.key for c in client.calls] == ["GET /docs", "GET /"]
    caps = searcher.caps
    assert caps.version == "3.6.0" and caps.hybrid and caps.z_score and caps.server_mmr and not caps.switches_read
    assert caps == root_capabilities(ROOT_3)


def test_the_root_the_engine_detection_got_serves_the_probe():
    client = node()
    cluster = OpenSearchEngine().cluster(client)
    assert root_answer(cluster) == ROOT_3  # what open_cluster asks to tell the engine
    cluster.search_capabilities()
    cluster.probe()  # the full probe asks GET / itself: the detection's answer served once
    assert [c.key for c in client.calls] == ["GET /", "GET /", "GET /_nodes/plugins", "GET /_cluster/settings"]


def test_a_hidden_version_takes_the_full_probe():
    """``compatibility.override_main_response_version`` makes GET / say 7.10.2: the version comes from _nodes."""
    client = node(**{"GET /": {"cluster_uuid": "u", "version": {"number": "7.10.2", "distribution": "opensearch"}}})
    caps = OpenSearchEngine().search_probe(client)
    assert (
        caps.version == "3.6.0"
        and caps.switches_read
        and [c.key for c in client.calls][:2] == ["GET /", "GET /_nodes/plugins"]
    )


def test_the_switch_settings_are_read_once_and_only_where_a_search_needs_them():
    settings = {"defaults": {"cluster": {"search": {"enabled_system_generated_factories": ["*"]}}}}
    client = node(**{"GET /_cluster/settings": settings, "POST */_search": hits("a")})
    searcher = Searcher.open(client, "docs", engine=OpenSearchEngine())
    searcher.search("hola", query_vector=VECTOR)  # a stored pipeline: nothing switched is asked
    assert not client.calls_to("GET /_cluster/settings")
    for _ in range(2):
        searcher.search("hola", technique="dense", mmr_lambda=0.95, query_vector=VECTOR)
    assert len(client.calls_to("GET /_cluster/settings")) == 1
    # the setting turns the server's MMR on: it ran there
    assert "mmr" in client.calls_to("POST */_search")[-1].body["ext"]


def test_a_missing_empty_shard_costs_one_refused_request_then_none():
    client = node(**{"POST */_search": [not_found("hybrid-empty-shard"), hits("a"), hits("b")]})
    searcher = Searcher(
        client,
        IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean"),
        opensearch_capabilities("3.6.0"),
    )
    whole = SearchOptions(full_text=True)  # no excerpts: a hybrid without the empty shard fetches them apart
    first = searcher.search("hola", query_vector=VECTOR, options=whole)
    # the refused one counts: it cost a round trip
    assert first.ids == ["a"] and first.requests == 2 and not first.notices
    assert [c.index for c in client.calls_to("POST */_search")] == ["docs,hybrid-empty-shard", "docs"]
    assert searcher.search("hola", query_vector=VECTOR, options=whole).ids == ["b"]
    assert client.calls_to("POST */_search")[-1].index == "docs"


def test_a_missing_alias_is_not_taken_for_a_missing_empty_shard():
    client = node(**{"POST */_search": not_found("docs")})
    searcher = Searcher(
        client,
        IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean"),
        opensearch_capabilities("3.6.0"),
    )
    with pytest.raises(BackendError, match=r"no such index \[docs\]"):
        searcher.search("hola", query_vector=VECTOR)
    assert len(client.calls_to("POST */_search")) == 1


def test_the_hybrid_request_says_whether_bm25_matched():
    answer = {**hits("a"), "aggregations": {TEXT_MATCHES: {"doc_count": 0}}}
    client = node(**{"POST */_search": answer})
    searcher = Searcher(
        client,
        IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean"),
        opensearch_capabilities("3.6.0"),
    )
    result = searcher.search("hola", query_vector=VECTOR, options=SearchOptions(text_matches=True))
    (sent,) = client.calls_to("POST */_search")
    text_leg = sent.body["query"]["hybrid"]["queries"][0]
    assert sent.body["aggs"] == {TEXT_MATCHES: {"filter": text_leg}}
    assert result.aggregations[TEXT_MATCHES].buckets[0].count == 0 and result.requests == 1
    plain = searcher.search("hola", query_vector=VECTOR)  # not asked: not sent
    assert "aggs" not in client.calls_to("POST */_search")[-1].body and TEXT_MATCHES not in plain.aggregations


def test_the_client_fused_legs_say_it_from_the_bm25_leg():
    legs = {"took": 1, "responses": [{"took": 1, "hits": {"hits": []}}, hits("a")]}
    client = node(**{"POST */_msearch": legs, "POST /docs-v1/_search": hits("a")})
    searcher = Searcher(client, IndexInfo("docs", "docs-v1", FP), opensearch_capabilities("3.6.0"))
    result = searcher.search(
        "hola", technique="client-rrf", query_vector=VECTOR, options=SearchOptions(text_matches=True)
    )
    assert result.aggregations[TEXT_MATCHES].buckets[0].count == 0 and result.ids == ["a"]


def test_counting_counts_every_request_the_client_sends():
    from adapter.engines.opensearch.client import connect

    # nothing listens: each try fails, and counts
    client = connect("http://127.0.0.1:9", connect_timeout=0.2, timeout=0.2)
    client.transport.max_retries = 1
    with counting() as counted:
        with pytest.raises(Exception):
            client.info()
    assert counted[0] == 2  # the try and the transport's retry


@pytest.mark.parametrize("matched", [3, 0])
def test_the_cli_notes_ask_the_term_statistics_only_where_bm25_matched_nothing(matched):
    from adapter.cli.search import with_match_notes

    termvectors = {
        "took": 1,
        "term_vectors": {
            "title": {"field_statistics": {"doc_count": 12}, "terms": {"hola": {"term_freq": 1}}},
            "text": {"field_statistics": {"doc_count": 12}, "terms": {"hola": {"term_freq": 1}}},
        },
    }
    client = node(
        **{
            "POST */_search": {**hits("a"), "aggregations": {TEXT_MATCHES: {"doc_count": matched}}},
            "POST */_termvectors": termvectors,
        }
    )
    searcher = Searcher(
        client,
        IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean"),
        opensearch_capabilities("3.6.0"),
    )
    result = with_match_notes(
        searcher, "hola", searcher.search("hola", query_vector=VECTOR, options=SearchOptions(text_matches=True))
    )
    assert TEXT_MATCHES not in result.aggregations  # what told the notes is not part of the answer
    if matched:
        assert not client.calls_to("POST */_termvectors") and not result.notices
    else:
        assert len(client.calls_to("POST */_termvectors")) == 1
        assert result.notices == (
            "none of the query's words is in the index: BM25 matched nothing, so these hits are the dense leg's alone",
        )


def test_a_cluster_that_lost_neural_search_fuses_in_the_client():
    """The searcher's probe takes neural-search as installed (init needs it); if it is gone, the server refuses the
    hybrid query and the search falls back to the client's fusion, saying why."""
    refused = Reply(400, {"error": {"type": "parsing_exception", "reason": "unknown query [hybrid]"}, "status": 400})
    legs = {"took": 1, "responses": [hits("a"), hits("a")]}
    client = node(
        **{
            "POST /docs,hybrid-empty-shard/_search": refused,
            "POST */_msearch": legs,
            "POST /docs-v1/_search": hits("a"),
        }
    )
    searcher = Searcher(
        client,
        IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean"),
        opensearch_capabilities("3.6.0"),
    )
    result = searcher.search("hola", query_vector=VECTOR)
    assert result.ids == ["a"] and result.fused_by_label.startswith("client:")
    assert any("no hybrid query" in notice for notice in result.notices)
