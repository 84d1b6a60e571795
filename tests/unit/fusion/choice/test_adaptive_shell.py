"""Adaptive fusion in the shell, without a cluster: which requests the searcher sends for a policy,
where the chosen weights go, what calibration stores and what init keeps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adapter.fusion.choice.policy import AdaptivePolicy, Calibration
from adapter.admin.init import init_index
from adapter.index.assets import IndexNames, IndexSpec
from adapter.admin.calibrate import calibrate_index
from adapter.index.catalog import IndexInfo
from adapter.engines.opensearch import OPENSEARCH
from adapter.fusion import ScoreNormalization
from adapter.search import Searcher
from adapter.testing import FakeClient, Reply
from adapter.fusion.base import FusedBy
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from tests.support.embedders import FP, UnitEmbedder
from tests.support.existing_index import existing_index

pytestmark = pytest.mark.unit

CAPS = opensearch_capabilities("2.19.1")
NODE = {
    "GET /": {"cluster_uuid": "unit-adaptive", "version": {"number": "2.19.1", "distribution": "opensearch"}},
    "GET /_nodes*": {
        "nodes": {
            "n": {"version": "2.19.1", "plugins": [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}]}
        }
    },
}


def hits(*pairs) -> dict:
    return {"took": 3, "hits": {"hits": [{"_id": d, "_score": s, "_source": {}} for d, s in pairs]}}


def no_pipelines(call):
    return Reply(404, {"error": "not found", "status": 404})


def termvectors(doc_count=12, **terms) -> dict:
    """A ``_termvectors`` answer for the text field: term -> doc_freq (None: not in the index)."""
    return {
        "took": 1,
        "term_vectors": {
            "text": {
                "field_statistics": {"doc_count": doc_count},
                "terms": {
                    t: ({"term_freq": 1} if df is None else {"term_freq": 1, "doc_freq": df}) for t, df in terms.items()
                },
            }
        },
    }


def info(adaptive=None, default_fusion=None, default_pipeline=None) -> IndexInfo:
    return IndexInfo(
        "docs",
        "docs-v1",
        FP,
        text_fields=("text",),
        query_fields=("text",),
        default_fusion=default_fusion,
        adaptive=adaptive,
        default_pipeline=default_pipeline,
    )


def inline_weights(call) -> list[float]:
    return call.body["search_pipeline"]["phase_results_processors"][0]["normalization-processor"]["combination"][
        "parameters"
    ]["weights"]


def test_the_default_policy_costs_no_request_and_sends_its_weights_inline():
    client = FakeClient({"* /_search/pipeline/*": no_pipelines, "POST */_search": hits(("a", 0.9))})
    calibrated = {"calibration": Calibration(0.39, 1000, coverage=0.3).to_meta()}
    s = Searcher(client, info(calibrated), CAPS, UnitEmbedder(), fusion=AdaptivePolicy())
    result = s.search("¿cómo devuelvo un pedido?")
    (search,) = client.calls_to(
        "POST */_search"
    )  # the hybrid beside the empty shard (taken as there), with its excerpts
    assert search.index == "docs,hybrid-empty-shard"
    assert set(search.body["highlight"]["fields"]) == {"text"}
    assert not client.calls_to("POST */_termvectors") and result.requests == 1
    assert result.fused_by is FusedBy.SERVER_INLINE and inline_weights(search) == [0.1, 0.9]
    assert result.fusion == ScoreNormalization(weights=(0.1, 0.9)) and result.choice.weights == (0.1, 0.9)
    assert (
        "70% of a query's terms are missing from the index (median of 1000 calibration queries)"
        in result.choice.reasons[1]
    )
    assert result.choice.normalization == "min_max"  # 2.19 has no z_score


def test_an_index_whose_default_is_adaptive_gets_adaptive_searches_through_its_stored_pipeline():
    corpus = ScoreNormalization(weights=(0.05, 0.95))  # what the stored pipeline docs-adaptive holds

    def pipelines(call):
        name = call.path.rsplit("/", 1)[-1]
        if name == "docs-adaptive":
            return {name: OPENSEARCH.render_pipeline(corpus, CAPS)}
        return Reply(404, {"error": "not found", "status": 404})

    client = FakeClient({"* /_search/pipeline/*": pipelines, "POST */_search": hits(("a", 0.9))})
    calibrated = info(
        {"calibration": Calibration(0.39, 1000, coverage=0.3).to_meta()},
        default_fusion="adaptive",
        default_pipeline="docs-adaptive",
    )
    s = Searcher(client, calibrated, CAPS, UnitEmbedder())
    result = s.search("hola")
    assert result.choice.weights == (0.05, 0.95)  # the better-leg guard: a natural-language query, full confidence
    assert result.fused_by is FusedBy.SERVER_PIPELINE and result.pipeline == "docs-adaptive"
    assert client.calls_to("POST */_search")[0].params == {"search_pipeline": "docs-adaptive"}
    # A bare code keeps the baseline, a code among words follows the departure by their share (issue 39: 1 of 2 words,
    # 0.5 - 0.5 * 0.45 = 0.275 -> 0.3): other weights than the pipeline's, so they go inline.
    code = s.search("E-4012")
    assert code.choice.weights == (0.5, 0.5) and code.fused_by is FusedBy.SERVER_INLINE
    assert s.search("error E-4012").choice.weights == (0.3, 0.7)
    explicit = s.search("hola", fusion=ScoreNormalization(weights=(0.7, 0.3)))  # an explicit fusion wins
    assert explicit.choice is None and inline_weights(client.calls_to("POST */_search")[-1]) == [0.7, 0.3]


def test_a_per_query_policy_asks_bm25_and_the_term_statistics_first():
    # BM25's best hit scores 1.417 for a query whose terms are cómo (df 0), devuelv (df 0), pedid (df 4).
    client = FakeClient(
        {
            "* /_search/pipeline/*": no_pipelines,
            "POST */_search": [hits(("facturacion", 1.417)), hits(("a", 0.9))],
            "POST */_termvectors": termvectors(cómo=None, devuelv=None, pedid=4),
        }
    )
    policy = AdaptivePolicy(query=1.0)
    result = Searcher(
        client, info({"calibration": Calibration(2.12, 40).to_meta()}), CAPS, UnitEmbedder(), fusion=policy
    ).search("¿cómo devuelvo un pedido?")
    first, hybrid = client.calls_to("POST */_search")  # BM25's best hit, the hybrid
    assert first.body == {
        "size": 1,
        "query": {"match": {"text": {"query": "¿cómo devuelvo un pedido?", "operator": "or"}}},
        "_source": False,
    }
    (tv,) = client.calls_to("POST */_termvectors")
    assert (
        tv.index == "docs-v1" and tv.body["doc"] == {"text": "¿cómo devuelvo un pedido?"} and tv.body["term_statistics"]
    )
    quality = 1.417 * 2.2 / (2 * math.log(26) + math.log(1 + 8.5 / 4.5))
    assert result.choice.features["match_quality"] == pytest.approx(quality, abs=1e-4)
    assert result.requests == 3 and result.took_ms == 3 + 1 + 3  # both signals' took counted with the hybrid's
    assert inline_weights(hybrid) == list(result.choice.weights) and result.choice.weights[0] < 0.5
    assert "hybrid" in hybrid.body["query"]


def test_calibration_is_stored_with_the_index_and_sets_its_adaptive_pipeline():
    meta = {
        "embedding": FP.to_meta(),
        "vector_field": "embedding",
        "text_fields": ["text"],
        "query_fields": ["text"],
        "default_fusion": "adaptive",
        "other": "kept",
    }
    index_body = {
        "docs-v1": {
            "mappings": {"_meta": meta, "properties": {"embedding": {"type": "knn_vector"}, "text": {"type": "text"}}},
            "settings": {"index": {"search": {"default_pipeline": "docs-adaptive"}}},
        }
    }
    client = FakeClient(
        {
            **NODE,
            "HEAD */_alias*": True,
            "GET */_alias*": {"docs-v1": {"aliases": {"docs": {}}}},
            "GET /docs-v1": index_body,
            "GET /docs": index_body,
            "GET */_mapping": index_body,
            "PUT */_mapping": {"acknowledged": True},
            # the index's count first (issue 32: an empty index is named, not blamed on the queries)
            "POST */_search": [
                {"hits": {"total": {"value": 12, "relation": "eq"}, "hits": []}},
                hits(("a", 0.5)),
                hits(("b", 9.0)),
            ],
            "POST */_termvectors": termvectors(pedid=4),
            "* /_search/pipeline/*": {"acknowledged": True},
        }
    )
    report = calibrate_index(client, "docs", ["un pedido", "otro pedido"], source="log.txt")
    expected_median = float(np.median([q * 2.2 / math.log(1 + 8.5 / 4.5) for q in (0.5, 9.0)]))
    assert report.calibration.match_quality == pytest.approx(expected_median)
    assert (report.calibration.queries, report.calibration.source) == (2, "log.txt")
    (put,) = client.calls_to("PUT */_mapping")
    stored = put.body["_meta"]
    assert stored["other"] == "kept" and stored["adaptive"]["calibration"]["queries"] == 2
    (pipeline,) = [c for c in client.calls_to("* /_search/pipeline/*") if c.method == "PUT"]
    assert pipeline.path == "/_search/pipeline/docs-adaptive" and report.pipeline == "docs-adaptive"
    weights = pipeline.body["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"][
        "weights"
    ]
    assert tuple(weights) == report.weights


def test_init_with_an_adaptive_default_keeps_the_calibration_and_its_weights():
    spec = IndexSpec(FP, default_fusion="adaptive")
    calibrated = {**spec.meta, "adaptive": {"calibration": Calibration(0.39, 1000, coverage=0.3).to_meta()}}
    live_mapping = {**OPENSEARCH.render_mapping(IndexNames("docs"), spec), "_meta": calibrated}
    stored = {}

    def perform(call):
        name = call.path.rsplit("/", 1)[-1]
        if call.method == "GET":
            return {name: stored[name]} if name in stored else Reply(404, {"error": "missing", "status": 404})
        stored[name] = call.body
        return {"acknowledged": True}

    client = FakeClient(
        {**NODE, **existing_index(spec, mapping=live_mapping, default_pipeline="docs-adaptive", pipelines=perform)}
    )
    report = init_index(client, "docs", spec, engine=OPENSEARCH)
    assert report.default_pipeline == "docs-adaptive"
    assert not client.calls_to("PUT */_mapping")  # the calibration in _meta is not the assets' to remove
    body = stored["docs-adaptive"]["phase_results_processors"][0]["normalization-processor"]
    assert body["combination"]["parameters"]["weights"] == [0.1, 0.9]  # the calibrated corpus weights, not 0.5 / 0.5
