"""The Elasticsearch dialect without a node: capabilities, assets, request bodies, explanations,
refused retrievers turned into the fallback, and elasticsearch-py's exceptions in the adapter's tree.

The probe answers come from a real Elasticsearch 9.2.4 node (recordings/searcher-elasticsearch-9.2.4.json).
The rrf/linear retriever request/response pairs and the 403 licence body are written from
Elasticsearch's sources and docs (recordings/elasticsearch-retrievers.json says so): the integ-test
node has no rank-rrf module to record them from; its 400 ``unknown retriever`` answer is recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapter.fusion.choice.defaults import default_fusion_name

from adapter.index.analysis import AnalysisSupport, text_analysis
from adapter.index.catalog import IndexInfo
from adapter.engines import translate_errors
from adapter.engines import engine_for
from adapter.engines.elasticsearch import ELASTICSEARCH, capabilities_from
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import BackendError, CapabilityError, ClusterUnavailableError, ConfigurationError
from adapter.index.assets import IndexNames, IndexSpec
from adapter.fusion import score_sum
from adapter.fusion import RRF, ScoreNormalization, ScoreSum, parse_fusion
from adapter.search import Searcher
from tests.support.pages import page_answer
from adapter.testing import FakeClient, Reply
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from tests.support.extras import requires_extra
from tests.support.elastic import assert_min_max_fused_in_the_client

RECORDINGS = Path(__file__).parents[1] / "recordings"
PAIRS = json.loads((RECORDINGS / "elasticsearch-retrievers.json").read_text())
NODE = json.loads((RECORDINGS / "searcher-elasticsearch-9.2.4.json").read_text())["exchanges"]
FULL = ("analysis-common", "rank-rrf", "x-pack-core")
VECTOR = [0.5, 0.75, 0.0]  # exact in float32, as the searcher sends it


def answer(request):
    """The recorded answer to ``request`` (``"METHOD /path"``)."""
    return next(e["response"] for e in NODE if f"{e['method']} {e['path']}" == request)


def fp(dimension=3):
    return EmbeddingFingerprint("m", "s", "abc", dimension, True)


def info(default_fusion=None):
    return IndexInfo("docs", "docs-v1", fp(), default_fusion=default_fusion)


def es_error(cls_name, status, body):
    import elasticsearch
    from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig

    meta = ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )
    error = body["error"] if isinstance(body.get("error"), str) else body["error"]["type"]
    return getattr(elasticsearch, cls_name)(error, meta, body)


def legs_answer(*runs):
    return {
        "took": 3,
        "responses": [{"took": 1, "hits": {"hits": [{"_id": d, "_score": s} for d, s in run]}} for run in runs],
    }


BM25_LEG = [("a", 7.2), ("c", 5.0)]
DENSE_LEG = [("b", 0.98), ("a", 0.96)]


def searcher(caps, answers, **options):  # a real elasticsearch-py client over the fake node: the elasticsearch extra
    client = FakeClient(answers, engine_name="elasticsearch")
    return client, Searcher(client, info(options.pop("default_fusion", None)), caps, engine=ELASTICSEARCH, **options)


def sent_body(call):
    """The hybrid request's body, less its ``_source``: the vector and the text fields stay out (the
    text fields' excerpts come from the sum's own highlight, or, after a retriever, a search for the page's ids)."""
    body = dict(call.body)
    assert body.pop("_source") == {"excludes": ["embedding", "title", "text"]}
    return body


# -- capabilities --------------------------------------------------------------------------------------------


def test_the_integ_test_node_probes_as_basic_without_rank_rrf_or_analysis_common():
    caps = capabilities_from(answer("GET /_nodes/plugins"), answer("GET /_license"))
    assert (caps.engine, caps.version, caps.license) == ("elasticsearch", "9.2.4", "basic")
    assert not caps.analysis_common and caps.hunspell == ("es_ES", "pl_PL")
    assert caps.fusions((0.5, 0.5)) == [ScoreSum((0.5, 0.5))]
    ok, why = caps.supports(RRF())
    assert not ok and "rank-rrf" in why and "licence is basic" in why
    assert caps.supports(ScoreSum()) == (True, "")


def test_retrievers_need_the_module_and_an_enterprise_or_trial_licence():
    enterprise = elasticsearch_capabilities("9.2.4", modules=FULL, license="enterprise")
    assert [f.name for f in enterprise.fusions((0.5, 0.5))] == [
        "min_max-arithmetic_mean",
        "l2-arithmetic_mean",
        "rrf",
        "sum",
    ]
    assert elasticsearch_capabilities("9.2.4", modules=FULL, license="trial").rrf
    basic = elasticsearch_capabilities("9.2.4", modules=FULL, license="basic")
    ok, why = basic.supports(ScoreNormalization())
    assert not ok and "licence is basic" in why and "rank-rrf module" not in why.split(":")[-1]
    # geometric/harmonic means and z_score are OpenSearch's; l2_norm needs 8.19 or 9.1+; RRF weights 9.3+
    assert not enterprise.supports(ScoreNormalization("min_max", "geometric_mean"))[0]
    assert not elasticsearch_capabilities("9.0.0", modules=FULL, license="enterprise").supports(
        ScoreNormalization("l2")
    )[0]
    assert elasticsearch_capabilities("8.19.3", modules=FULL, license="enterprise").supports(ScoreNormalization("l2"))[
        0
    ]
    assert "9.3" in enterprise.supports(RRF(weights=(0.3, 0.7)))[1]
    assert elasticsearch_capabilities("9.3.2", modules=FULL, license="enterprise").supports(RRF(weights=(0.3, 0.7)))[0]
    # an unknown licence (a cluster that hides _license): try, and fall back if refused
    assert elasticsearch_capabilities("9.2.4", modules=FULL).rrf


def test_opensearch_has_no_score_sum():
    ok, why = opensearch_capabilities("3.6.0").supports(ScoreSum())
    assert not ok and "only by Elasticsearch" in why and "fused in the client" in why
    assert ScoreSum() not in opensearch_capabilities("3.6.0").fusions()


def test_the_score_sum_fusion_parses_and_sums_raw_scores():
    assert parse_fusion("sum", weights=(1, 20)) == ScoreSum((1.0, 20.0))
    assert ScoreSum().effective_weights == (1.0, 1.0)
    with pytest.raises(Exception, match="negative"):
        ScoreSum((-1, 1))
    fused = score_sum(
        [[("a", 10.0), ("b", 2.0)], [("b", 0.9), ("c", 0.8)]], weights=(0.5, 10.0), leg_names=("bm25", "dense")
    )
    assert [(f.id, round(f.score, 4)) for f in fused] == [("b", 10.0), ("c", 8.0), ("a", 5.0)]
    assert [leg.contribution for leg in fused[0].legs] == pytest.approx([1.0, 9.0])


# -- assets --------------------------------------------------------------------------------------------------


def test_components_render_dense_vector_spelled_out_and_no_knn_setting():
    spec = IndexSpec(fp(384), analyzer="standard", m=24, ef_construction=256, space_type="innerproduct")
    caps = elasticsearch_capabilities("9.2.4", modules=())
    comps = ELASTICSEARCH.render_components(IndexNames("docs"), spec, caps)
    vector = comps["docs-vector"]["template"]
    assert vector["mappings"]["properties"]["embedding"] == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "dot_product",
        "index_options": {"type": "hnsw", "m": 24, "ef_construction": 256},
    }
    assert vector["settings"] == {
        "index.mapping.exclude_source_vectors": False
    }  # 9.2 hides vectors from _source otherwise
    assert (
        "settings"
        not in ELASTICSEARCH.render_components(IndexNames("docs"), spec, elasticsearch_capabilities("8.19.3"))[
            "docs-vector"
        ]["template"]
    )
    template = ELASTICSEARCH.render_index_template(IndexNames("docs"), spec, caps)
    assert "index.search.default_pipeline" not in template["template"]["settings"]
    assert (
        template["template"]["mappings"]["_meta"]["default_fusion"] == spec.default_fusion == default_fusion_name()
    )  # the measured default
    assert (
        ELASTICSEARCH.render_mapping(IndexNames("docs"), spec, caps)["_meta"]["default_fusion"] == spec.default_fusion
    )
    with pytest.raises(ConfigurationError, match="Lucene"):
        ELASTICSEARCH.check_spec(IndexSpec(fp(), knn_method="faiss"), caps)
    # No search pipelines: no pipeline renderer on the engine, no pipeline facet on its port, nothing stored.
    assert not hasattr(ELASTICSEARCH, "render_pipeline") and ELASTICSEARCH.cluster(object()).pipelines is None
    assert ELASTICSEARCH.placement.stored(IndexNames("docs"), caps, weights=(0.5, 0.5), default_fusion="rrf") == {}


def render_analysis(name, caps):
    """The analysis of ``name`` on ``caps``, with the settings block it puts in the text component."""
    a = text_analysis(name, AnalysisSupport.of(caps))
    return a, {k: v for k, v in (("filter", a.filters), ("analyzer", a.analyzers)) if v}


def test_analyzers_follow_what_the_cluster_has():
    integ = elasticsearch_capabilities("9.2.4", modules=(), hunspell=("es_ES",))
    spanish, settings = render_analysis("spanish", integ)
    assert spanish.analyzer == "spanish_hunspell"
    assert settings["analyzer"]["spanish_hunspell"]["filter"] == ["lowercase", "spanish_stop", "spanish_hunspell_stem"]
    assert settings["filter"]["spanish_hunspell_stem"] == {"type": "hunspell", "locale": "es_ES", "dedup": True}
    assert spanish.notices and "es_ES" in spanish.notices[0]
    folding, settings = render_analysis("folding", integ)
    assert settings["analyzer"]["folding"]["filter"] == ["lowercase"] and "NOT folded" in folding.notices[0]
    assert render_analysis("standard", integ)[1] == {}
    with pytest.raises(ConfigurationError, match="analysis-common"):
        render_analysis("english", integ)
    with pytest.raises(ConfigurationError, match="es_ES"):
        render_analysis("spanish", elasticsearch_capabilities("9.2.4", modules=()))
    # a cluster with analysis-common renders exactly what OpenSearch always rendered
    spec = IndexSpec(fp(), analyzer="spanish")
    full = elasticsearch_capabilities("9.2.4", modules=FULL)
    assert (
        ELASTICSEARCH.render_components(IndexNames("d"), spec, full)["d-text"]
        == OPENSEARCH.render_components(IndexNames("d"), spec)["d-text"]
    )
    text = ELASTICSEARCH.render_components(IndexNames("d"), spec, integ)["d-text"]["template"]
    assert text["mappings"]["properties"]["text"]["analyzer"] == "spanish_hunspell"


# -- request bodies and answers: recorded pairs ------------------------------------------------------------------


@requires_extra("elasticsearch")
@pytest.mark.parametrize("name, fusion", [("rrf", RRF()), ("linear", ScoreNormalization(weights=(0.3, 0.7)))])
def test_retriever_requests_and_explanations_match_the_pairs(name, fusion):
    pair = PAIRS[name]
    caps = elasticsearch_capabilities("9.2.4", modules=FULL, license="enterprise")
    client, s = searcher(
        caps, {"POST */_search": pair["response"], "POST */_msearch": legs_answer(BM25_LEG, DENSE_LEG)}
    )
    result = s.search("error E-4012", fusion=fusion, k=3, depth=20, explain=True, query_vector=VECTOR)
    assert sent_body(client.calls_to("POST */_search")[0]) == pair["request"]
    assert result.fused_by is FusedBy.SERVER_RETRIEVER and result.fused_by_label == f"server:retriever:{fusion.name}"
    assert result.ids == ["a", "b", "c"] and not result.notices
    for hit in result.hits:
        assert sum(leg.contribution for leg in hit.legs) == pytest.approx(hit.score, rel=1e-6)
    a, b, _ = result.hits
    if name == "rrf":
        assert [leg.normalized_score for leg in a.legs] == pytest.approx([1 / 61, 1 / 62])
        assert [leg.rank for leg in a.legs] == [1, 2]
    else:
        assert [leg.normalized_score for leg in a.legs] == pytest.approx([1.0, 0.7])
    assert b.legs[0].normalized_score is None and b.legs[0].contribution == 0.0


@requires_extra("elasticsearch")
def test_weighted_rrf_uses_the_9_3_form():
    caps = elasticsearch_capabilities("9.3.2", modules=FULL, license="enterprise")
    client, s = searcher(caps, {"POST */_search": PAIRS["rrf"]["response"]})
    s.search("error E-4012", fusion=RRF(weights=(0.3, 0.7)), k=3, depth=20, query_vector=VECTOR)
    assert sent_body(client.calls_to("POST */_search")[0]) == PAIRS["rrf_weighted_request_9_3"]


@requires_extra("elasticsearch")
def test_the_free_tier_sum_is_query_plus_knn_with_boosts():
    caps = capabilities_from(answer("GET /_nodes/plugins"), answer("GET /_license"))
    hits = {
        "hits": {
            "hits": [
                {
                    "_id": "a",
                    "_score": 4.0,
                    "matched_queries": ["bm25", "dense"],
                    "_explanation": {
                        "value": 4.0,
                        "description": "sum of:",
                        "details": [
                            {
                                "value": 3.6,
                                "description": "weight(text:e in 0) [PerFieldSimilarity], result of:",
                                "details": [],
                            },
                            {"value": 0.4, "description": "within top k documents", "details": []},
                        ],
                    },
                }
            ]
        }
    }
    client, s = searcher(caps, {"POST */_search": hits, "POST */_msearch": legs_answer([("a", 7.2)], [("a", 0.8)])})
    result = s.search("error E-4012", fusion=ScoreSum((0.5, 0.5)), k=1, depth=20, explain=True, query_vector=VECTOR)
    body = sent_body(client.calls_to("POST */_search")[0])
    text = {
        "multi_match": {"query": "error E-4012", "fields": ["title", "text"], "type": "most_fields", "operator": "or"}
    }
    # The sum is a plain search: it carries the text fields' excerpts itself (no request after it).
    excerpts = body.pop("highlight")
    assert (
        set(excerpts["fields"]) == {"title", "text"}
        and excerpts["max_analyzed_offset"] == 100_000
        and len(client.calls_to("POST */_search")) == 1
    )
    assert body == {
        "query": {"bool": {"should": [text], "boost": 0.5, "_name": "bm25"}},
        "knn": {
            "field": "embedding",
            "query_vector": VECTOR,
            "k": 20,
            "num_candidates": 30,
            "boost": 0.5,
            "_name": "dense",
        },
        "size": 1,
        "explain": True,
    }
    assert result.fused_by is FusedBy.SERVER_SUM and result.fusion == ScoreSum((0.5, 0.5)) and not result.notices
    legs = result.hits[0].legs
    assert [leg.normalized_score for leg in legs] == pytest.approx([7.2, 0.8])  # raw scores: nothing normalises them
    assert [leg.contribution for leg in legs] == pytest.approx([3.6, 0.4])


@requires_extra("elasticsearch")
def test_a_score_fusion_the_licence_lacks_is_fused_in_the_client_by_the_same_formula():
    # A basic licence has no linear retriever: the index's default min_max runs in the client (it ran as the
    # server's unnormalised sum before: 0.6657 against 0.7100 nDCG@10 on SciFact, docs/ELASTICSEARCH.md).
    caps = capabilities_from(answer("GET /_nodes/plugins"), answer("GET /_license"))
    docs = page_answer({d: {"title": d} for d in ("a", "b", "c")})
    client, s = searcher(caps, {"POST */_msearch": legs_answer(BM25_LEG, DENSE_LEG), "POST */_search": docs})
    result = s.search("error E-4012", k=3, depth=20, query_vector=VECTOR)
    assert [c.body["query"] for c in client.calls_to("POST */_search")] == [
        {"ids": {"values": ["a", "b", "c"]}}
    ]  # the page's documents alone
    assert_min_max_fused_in_the_client(result)
    # min_max per leg (the minimum becomes 0.001), then 0.5 / 0.5 arithmetic mean; a missing leg counts 0.
    a = (0.5 * 1.0 + 0.5 * 0.001) / 1.0
    b = (0.5 * 0.0 + 0.5 * 1.0) / 1.0
    c = (0.5 * 0.001 + 0.5 * 0.0) / 1.0
    assert [(h.id, round(h.score, 6)) for h in result.hits] == [("a", round(a, 6)), ("b", b), ("c", round(c, 6))]


@requires_extra("elasticsearch")
def test_the_sum_with_filters_pre_filters_the_knn_leg_and_filters_the_text_leg():
    caps = elasticsearch_capabilities("9.2.4", modules=())
    client, s = searcher(caps, {"POST */_search": {"hits": {"hits": [{"_id": "a", "_score": 1.0}]}}})
    s.search("error", fusion=ScoreSum((1, 20)), filters={"lang": "es"}, k=5, depth=10, query_vector=VECTOR)
    body = sent_body(client.calls_to("POST */_search")[0])
    assert (
        body["knn"]["filter"] == {"bool": {"filter": [{"term": {"metadata.lang": "es"}}]}}
        and body["knn"]["boost"] == 20
    )
    assert body["query"]["bool"]["should"][0]["bool"]["filter"] == [{"term": {"metadata.lang": "es"}}]


@requires_extra("elasticsearch")
def test_a_pipeline_has_no_meaning_on_elasticsearch():
    _, s = searcher(elasticsearch_capabilities("9.2.4", modules=()), {})
    with pytest.raises(CapabilityError, match="no search pipelines"):
        s.search("x", pipeline="docs-rrf", query_vector=VECTOR)


# -- refused retrievers become the fallback ---------------------------------------------------------------


@requires_extra("elasticsearch")
def test_a_licence_refusal_of_the_linear_retriever_falls_back_to_the_client_and_is_remembered():
    caps = elasticsearch_capabilities("9.2.4", modules=FULL)  # licence hidden: assumed to allow it
    refused = Reply(403, PAIRS["license_403"])  # elasticsearch-py raises it as AuthorizationException
    docs = page_answer({d: {"title": d} for d in ("a", "b", "c")})
    client, s = searcher(caps, {"POST */_search": [refused, docs], "POST */_msearch": legs_answer(BM25_LEG, DENSE_LEG)})
    result = s.search("error", fusion=ScoreNormalization(weights=(0.3, 0.7)), k=1, depth=10, query_vector=VECTOR)
    assert result.fused_by is FusedBy.CLIENT and result.fusion == ScoreNormalization(weights=(0.3, 0.7))
    assert "current license is non-compliant for [linear retriever]" in result.notices[0]
    first, page = client.calls_to("POST */_search")
    assert "retriever" in first.body and "ids" in page.body["query"]
    assert [r.path.rsplit("/", 1)[-1] for r in result.sent] == ["_msearch", "_search"]  # what the result came from
    s.search("error", fusion=ScoreNormalization(weights=(0.3, 0.7)), k=1, depth=10, query_vector=VECTOR)
    assert ["retriever" in c.body for c in client.calls_to("POST */_search")] == [
        True,
        False,
        False,
    ]  # the refusal is remembered
    assert len(client.calls_to("POST */_msearch")) == 2


@requires_extra("elasticsearch")
def test_an_unknown_rrf_retriever_falls_back_to_client_rrf():
    caps = elasticsearch_capabilities("9.2.4", modules=FULL, license="trial")
    refused = Reply(400, PAIRS["unknown_retriever_400"])
    docs = page_answer({d: {"title": d} for d in ("a", "b", "c")})
    client, s = searcher(caps, {"POST */_search": [refused, docs], "POST */_msearch": legs_answer(BM25_LEG, DENSE_LEG)})
    result = s.search("error", fusion=RRF(), k=3, depth=10, query_vector=VECTOR)
    assert result.fused_by is FusedBy.CLIENT and result.technique is Technique.CLIENT and result.fusion == RRF()
    assert "unknown retriever [rrf]" in result.notices[0]
    assert result.ids == ["a", "b", "c"]
    _, strict = searcher(caps, {"POST */_search": refused}, allow_fallback=False)
    with pytest.raises(CapabilityError, match="unknown retriever"):
        strict.search("error", fusion=RRF(), k=3, query_vector=VECTOR)


@requires_extra("elasticsearch")
def test_other_errors_are_not_taken_for_a_refused_retriever():
    caps = elasticsearch_capabilities("9.2.4", modules=FULL, license="enterprise")
    broken = Reply(400, {"error": {"type": "parsing_exception", "reason": "unknown field [nope]"}, "status": 400})
    _, s = searcher(caps, {"POST */_search": broken})
    with pytest.raises(BackendError, match="unknown field"):
        s.search("error", fusion=RRF(), query_vector=VECTOR)


@requires_extra("elasticsearch")
def test_the_index_default_fusion_comes_from_meta():
    _, s = searcher(elasticsearch_capabilities("9.2.4", modules=()), {}, default_fusion="rrf-40")
    assert s.fusion == RRF(40)
    plan = s.plan_fusion()
    assert plan.fused_by is FusedBy.CLIENT and plan.fusion == RRF(40) and "rank-rrf" in plan.notice


# -- the client -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, status, body, reason",
    [
        ("BadRequestError", 400, PAIRS["unknown_retriever_400"], "unknown retriever [rrf]"),
        (
            "AuthorizationException",
            403,
            PAIRS["license_403"],
            "current license is non-compliant for [linear retriever]",
        ),
        (
            "NotFoundError",
            404,
            {
                "error": {
                    "root_cause": [{"type": "index_not_found_exception", "reason": "no such index [x]"}],
                    "type": "index_not_found_exception",
                    "reason": "no such index [x]",
                },
                "status": 404,
            },
            "no such index [x]",
        ),
        (
            "ApiError",
            405,
            {"error": "Incorrect HTTP method for uri [/] and method [GET], allowed: [DELETE]", "status": 405},
            "Incorrect HTTP method",
        ),
        (
            "ApiError",
            429,
            {"error": {"type": "es_rejected_execution_exception", "reason": "rejected execution"}, "status": 429},
            "rejected execution",
        ),
        (
            "ApiError",
            503,
            {"error": {"type": "unavailable_shards_exception", "reason": "primary shard is not active"}, "status": 503},
            "primary shard",
        ),
    ],
)
@requires_extra("elasticsearch")
def test_elasticsearch_errors_join_the_adapter_tree(cls, status, body, reason):
    with pytest.raises(BackendError) as caught:
        with translate_errors("searching docs"):
            raise es_error(cls, status, body)
    assert (
        caught.value.status == status
        and reason in caught.value.reason
        and not isinstance(caught.value, ClusterUnavailableError)
    )


@requires_extra("elasticsearch")
@pytest.mark.parametrize("name", ["ConnectionError", "ConnectionTimeout"])
def test_elasticsearch_connection_errors_are_cluster_unavailable(name):
    import elastic_transport

    with pytest.raises(ClusterUnavailableError, match="cannot reach Elasticsearch"):
        with translate_errors("searching docs"):
            raise getattr(elastic_transport, name)("connection refused")


@requires_extra("elasticsearch")
def test_the_engine_follows_the_client():
    from adapter.engines.elasticsearch.client import connect_elasticsearch

    assert engine_for(connect_elasticsearch("http://localhost:9200")) is ELASTICSEARCH
    assert (
        engine_for(FakeClient(engine_name="elasticsearch")) is ELASTICSEARCH and engine_for(FakeClient()) is OPENSEARCH
    )


@requires_extra("elasticsearch")
def test_bulk_to_an_unreachable_node_fails_every_row_with_no_answer():
    """elasticsearch-py raises connection errors out of streaming_bulk; the engine reports the rows instead."""
    from adapter.engines.elasticsearch.client import connect_elasticsearch

    client = connect_elasticsearch("http://127.0.0.1:1")
    actions = [{"_op_type": "index", "_index": "docs-v1", "_id": str(i), "_source": {"text": "x"}} for i in range(3)]
    failed = list(ELASTICSEARCH.cluster(client).bulk(actions))
    assert [(item["index"]["_id"], item["index"]["status"]) for item in failed] == [
        ("0", "N/A"),
        ("1", "N/A"),
        ("2", "N/A"),
    ]
    assert all(
        isinstance(item["index"]["exception"], ClusterUnavailableError) for item in failed
    )  # the port's error, not the client's


def test_the_bulk_counter_survives_the_helpers_client_copy():
    from adapter.engines.base_cluster import _Counting
    from adapter.engines.port import BulkCounts

    class Inner:
        def options(self, **kwargs):
            return self

        def bulk(self, **kwargs):
            return {"items": [{"index": {"_id": "1", "status": 429}}, {"index": {"_id": "2", "status": 201}}]}

    counts = BulkCounts()
    _Counting(Inner(), counts).options().bulk(operations=[b"{}", b"{}"])
    assert counts.rejected_429 == 1


@pytest.mark.parametrize(
    "root, elastic",
    [
        (
            {"name": "n", "version": {"number": "9.2.4", "build_flavor": "default"}, "tagline": "You Know, for Search"},
            True,
        ),
        (
            {"error": "Incorrect HTTP method for uri [/] and method [GET], allowed: [DELETE]", "status": 405},
            True,
        ),  # the integ-test zip
        (
            {
                "version": {"distribution": "opensearch", "number": "3.6.0"},
                "tagline": "The OpenSearch Project: https://opensearch.org/",
            },
            False,
        ),
        (
            {"version": {"number": "7.10.2"}, "tagline": "The OpenSearch Project: https://opensearch.org/"},
            False,
        ),  # override_main_response_version
    ],
)
def test_one_get_root_tells_the_engines_apart(root, elastic):
    from adapter.engines import registry

    client = FakeClient({"GET /": Reply(root.get("status", 200), root)})  # the integ-test zip's 405 with its status
    answer = registry.root_answer(client.port)
    assert (registry.recognised(answer) == "elasticsearch") is elastic
    assert (
        len(client.calls_to("GET /")) == 1
    )  # a 405 is an answer here (asked with ignore=405), not an error raised or retried


@requires_extra("elasticsearch")
def test_each_port_says_which_statuses_its_clients_transport_asks_again():
    """One retry policy per request: what the transport retries (a user's client as it is set), the
    search does not retry on top (adapter.search.recovery)."""
    from elasticsearch import Elasticsearch
    from opensearchpy import OpenSearch

    from adapter.engines.elasticsearch.client import connect_elasticsearch
    from adapter.engines.opensearch.client import connect

    assert OPENSEARCH.cluster(connect("http://127.0.0.1:9")).retried_statuses == {502, 503, 504}
    assert ELASTICSEARCH.cluster(connect_elasticsearch("http://127.0.0.1:9")).retried_statuses == {502, 503, 504}
    assert ELASTICSEARCH.cluster(Elasticsearch("http://127.0.0.1:9")).retried_statuses == {
        429,
        502,
        503,
        504,
    }  # its default
    assert OPENSEARCH.cluster(OpenSearch("http://127.0.0.1:9", max_retries=0)).retried_statuses == frozenset()
    assert FakeClient().port.retried_statuses == {502, 503, 504}  # the fake's client is set as connect() sets it
