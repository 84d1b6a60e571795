"""Request bodies of the page features, in-query fusion and server MMR; analyzers rendered from the
cluster; the searcher sending them (against FakeClient, answers shaped like the real nodes')."""

from __future__ import annotations

import numpy as np
import pytest

from adapter.index.analysis import AnalysisSupport, text_analysis
from adapter.index.assets import IndexSpec, render_text_component
from adapter.index.catalog import IndexInfo
from adapter.engines import HybridRequest
from adapter.engines.opensearch import OPENSEARCH, fusion_clause
from adapter.errors import CapabilityError, ConfigurationError
from adapter.fusion import RRF, ScoreNormalization
from adapter.search.mmr import knn_mmr
from adapter.search.page import Collapse, MMRPlace, SearchOptions, SortKey
from adapter.search import Searcher
from adapter.testing import FakeClient
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.fusion.base import FusedBy
from adapter.engines.opensearch.capabilities import opensearch_capabilities

FP = EmbeddingFingerprint("m", "test:m", "0" * 64, 4, True)
INFO = IndexInfo("docs", "docs-v1", FP, max_window=10_000)
CAPS_2 = opensearch_capabilities("2.19.1")
CAPS_3 = opensearch_capabilities("3.6.0", cluster_settings={"cluster.search.enabled_system_generated_factories": ["*"]})
FUSED = opensearch_capabilities("3.10.0", cluster_settings={"plugins.neural_search.hybrid.fusion.enabled": True})
VEC = [1.0, 0.0, 0.0, 0.0]
TEXT, KNN = {"match": {"text": "x"}}, {"knn": {"embedding": {"vector": VEC, "k": 50}}}


# -- in-query fusion: the request shape of neural-search's unreleased fused mode -----------------------


def test_fused_hybrid_matches_the_recorded_bodies():
    # neural-search feature branch, HybridSearchFusedModeIT#fusedTwoLegQuery and RFC #1930 / PR #1933:
    # {"hybrid": {"fusion": {"normalization": {"technique": "min_max"}, "combination": {"technique":
    # "arithmetic_mean"}}, ...}}
    # docs/opensearch-3x notes §4: "window_size" (candidates per leg), no pagination_depth, weights under
    # combination.parameters.
    body = OPENSEARCH.hybrid_body(
        HybridRequest(TEXT, KNN, caps=FUSED, depth=100, size=10, fusion=ScoreNormalization(weights=(0.3, 0.7)))
    )
    hybrid = body["query"]["hybrid"]
    assert hybrid["fusion"] == {
        "normalization": {"technique": "min_max"},
        "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.3, 0.7]}},
        "window_size": 100,
    }
    assert "pagination_depth" not in hybrid and "search_pipeline" not in body  # the server refuses fusion with either
    # RRF (PR #1948): rank_constant at combination.rank_constant, as the 3.1+ processor reads it.
    assert fusion_clause(RRF(40, (0.6, 0.4)), FUSED, window_size=20) == {
        "combination": {"technique": "rrf", "rank_constant": 40, "parameters": {"weights": [0.6, 0.4]}},
        "window_size": 20,
    }
    with pytest.raises(CapabilityError, match="in-query fusion"):
        OPENSEARCH.hybrid_body(HybridRequest(TEXT, KNN, caps=CAPS_3, depth=10, size=10, fusion=RRF()))


def test_hybrid_filter_goes_to_the_query_on_3x_and_is_refused_on_2_19():
    f = {"bool": {"filter": [{"term": {"metadata.lang": "es"}}]}}
    body = OPENSEARCH.hybrid_body(HybridRequest(TEXT, KNN, caps=CAPS_3, depth=10, size=5, filter=f))
    assert body["query"]["hybrid"]["filter"] == f and body["query"]["hybrid"]["pagination_depth"] == 10
    with pytest.raises(CapabilityError, match="3.0"):
        OPENSEARCH.hybrid_body(HybridRequest(TEXT, KNN, caps=CAPS_2, depth=10, size=5, filter=f))


def test_server_mmr_body_and_its_limits():
    body = OPENSEARCH.server_mmr({"size": 10, "query": KNN}, field="embedding", diversity=0.3, candidates=30)
    assert body["ext"] == {"mmr": {"diversity": 0.3, "candidates": 30, "vector_field_path": "embedding"}}
    with pytest.raises(CapabilityError, match="top-level knn"):
        OPENSEARCH.server_mmr({"query": {"hybrid": {}}}, field="embedding", diversity=0.5, candidates=30)


def test_knn_mmr_is_the_servers_arithmetic():
    # cosinesimil: relevance = the k-NN score, similarity = (1 + cos) / 2, diversity 0.5
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    scores = [0.9, 0.9, 0.6]
    picked = knn_mmr(scores, vectors, k=3, diversity=0.5)
    assert [i for i, _ in picked] == [0, 2, 1]
    assert picked[0][1] == pytest.approx(0.5 * 0.9)
    assert picked[1][1] == pytest.approx(0.5 * 0.6 - 0.5 * (1 + 0) / 2)
    assert picked[2][1] == pytest.approx(0.5 * 0.9 - 0.5 * (1 + 1) / 2)
    assert [i for i, _ in knn_mmr(scores, vectors, k=3, diversity=0.0)] == [0, 1, 2]


# -- analyzers rendered from the cluster ---------------------------------------------------------------


def test_polish_prefers_stempel_then_hunspell_then_says_what_is_missing():
    stempel = text_analysis("polish", AnalysisSupport(("analysis-stempel", "analysis-icu")))
    assert stempel.analyzers == {
        "polish_folding": {
            "type": "custom",
            "tokenizer": "standard",
            "filter": ["lowercase", "polish_stop", "polish_stem", "icu_folding"],
        }
    }
    hunspell = text_analysis("polish", AnalysisSupport((), ("es_ES", "pl_PL")))
    assert hunspell.analyzer == "polish_hunspell" and hunspell.filters == {
        "pl_stem": {"type": "hunspell", "locale": "pl_PL", "dedup": True}
    }
    assert hunspell.analyzers["polish_hunspell"]["filter"] == ["lowercase", "pl_stem", "asciifolding"]
    with pytest.raises(ConfigurationError, match="analysis-stempel.*pl_PL.*opensearch 2.19.1 has neither"):
        text_analysis("polish", AnalysisSupport.of(CAPS_2))
    with pytest.raises(ConfigurationError, match="rendered from what the cluster has"):
        text_analysis("polish", None)


def test_spanish_hunspell_and_icu_folding():
    assert text_analysis("spanish_hunspell", AnalysisSupport((), ("es_ES",))).filters["es_stem"]["locale"] == "es_ES"
    with pytest.raises(ConfigurationError, match="es_ES"):
        text_analysis("spanish_hunspell", AnalysisSupport())
    icu = text_analysis("icu_folding", AnalysisSupport(("analysis-icu",)))
    assert icu.analyzers["icu_folded"] == {"type": "custom", "tokenizer": "icu_tokenizer", "filter": ["icu_folding"]}
    with pytest.raises(ConfigurationError, match="analysis-icu"):
        text_analysis("icu_folding", AnalysisSupport())
    assert text_analysis("english", None).analyzer == "english"  # built-ins need nothing


def test_text_component_carries_the_cluster_analyzer():
    caps = opensearch_capabilities("3.6.0", hunspell=("pl_PL",))
    component = render_text_component(IndexSpec(FP, analyzer="polish").for_cluster(caps))
    analysis = component["template"]["settings"]["analysis"]
    assert set(analysis["analyzer"]) == {"folding", "polish_hunspell"} and "pl_stem" in analysis["filter"]
    assert {f["analyzer"] for f in component["template"]["mappings"]["properties"].values()} == {"polish_hunspell"}
    plain = render_text_component(IndexSpec(FP, analyzer="folding"))
    assert "filter" not in plain["template"]["settings"]["analysis"]


# -- the searcher sends them ---------------------------------------------------------------------------


def hit(i, score, parent, source=True, **extra):
    h = {"_id": f"{parent}#{i}", "_score": score, "fields": {"parent_id": [parent]}, **extra}
    if source:
        h["_source"] = {"title": parent, "text": f"text {parent} {i}", "parent_id": parent, "chunk_index": i}
    return {**h}


STORED = {
    "phase_results_processors": [
        {
            "normalization-processor": {
                "normalization": {"technique": "min_max"},
                "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.5, 0.5]}},
            }
        }
    ]
}


def searcher(caps, answers):
    """A searcher whose cluster holds the default pipeline (any stored pipeline read returns it)."""
    client = FakeClient({"* /_search/pipeline/*": lambda call: {call.path.rsplit("/", 1)[1]: STORED}, **answers})
    return client, Searcher(client, INFO, caps, None)


def test_hybrid_on_2_19_fetches_the_fused_list_and_collapses_it_here():
    hits = [hit(1, 0.9, "a"), hit(0, 0.8, "a"), hit(0, 0.7, "b"), hit(2, 0.6, "a"), hit(0, 0.5, "c")]
    client, s = searcher(CAPS_2, {"POST */_search": {"took": 3, "hits": {"hits": hits}}})
    result = s.search(
        "x",
        k=2,
        from_=1,
        depth=20,
        query_vector=VEC,
        filters={"lang": "es"},
        options=SearchOptions(collapse=Collapse(inner_hits=1), min_score=0.55),
    )
    body = client.calls_to("POST */_search")[0].body
    assert "collapse" not in body and "min_score" not in body and body["size"] == 40 and "from" not in body
    assert body["docvalue_fields"] == ["parent_id"]
    legs = body["query"]["hybrid"]["queries"]
    assert (
        "filter" not in body["query"]["hybrid"] and legs[0]["bool"]["filter"] and legs[1]["knn"]["embedding"]["filter"]
    )
    assert [(h.id, h.rank) for h in result.hits] == [("b#0", 2)]  # c#0 is under min_score; a is the first group
    assert len(result.notices) == 2 and result.fused_by is FusedBy.SERVER_PIPELINE


def test_hybrid_on_3_6_asks_the_server_for_everything():
    inner = {"chunks": {"hits": {"hits": [hit(1, 0.9, "a"), hit(0, 0.8, "a")]}}}
    answer = {
        "took": 2,
        "hits": {"hits": [hit(1, 0.9, "a", inner_hits=inner, highlight={"text": ["<em>x</em>"]})]},
        "aggregations": {
            "category": {
                "sum_other_doc_count": 4,
                "buckets": [{"key": "pagos", "doc_count": 3, "documents": {"value": 2}}],
            }
        },
    }
    client, s = searcher(CAPS_3, {"POST */_search": answer})
    result = s.search(
        "x",
        k=3,
        query_vector=VEC,
        filters={"lang": "es"},
        options=SearchOptions(highlight=True, facets=("category",), collapse=Collapse(inner_hits=1), min_score=0.2),
    )
    body = client.calls_to("POST */_search")[0].body
    assert body["query"]["hybrid"]["filter"] == {"bool": {"filter": [{"term": {"metadata.lang": "es"}}]}}
    assert (
        "bool" not in body["query"]["hybrid"]["queries"][0]
        and "filter" not in body["query"]["hybrid"]["queries"][1]["knn"]["embedding"]
    )
    assert body["collapse"]["inner_hits"]["size"] == 2 and body["min_score"] == 0.2 and body["size"] == 3
    (h,) = result.hits
    assert [c.id for c in h.chunks] == ["a#0"] and h.highlight == {"text": ("<em>x</em>",)}
    facet = result.aggregations["category"]
    assert facet.other == 4 and [(b.key, b.count, b.documents) for b in facet.buckets] == [("pagos", 3, 2)]
    assert result.notices == ()


def test_client_rrf_gets_facets_in_its_msearch_and_highlights_with_the_page():
    legs = {
        "responses": [
            {"took": 1, "hits": {"hits": [hit(0, 3.0, "a", source=False), hit(1, 2.0, "a", source=False)]}},
            {"took": 1, "hits": {"hits": [hit(1, 0.9, "a", source=False), hit(0, 0.8, "b", source=False)]}},
            {"took": 1, "hits": {"hits": []}, "aggregations": {"lang": {"buckets": [{"key": "es", "doc_count": 3}]}}},
        ]
    }
    page = {
        "hits": {"hits": [hit(1, 1.0, "a", highlight={"text": ["<em>x</em> a"]}), hit(0, 1.0, "b"), hit(0, 1.0, "a")]}
    }
    client, s = searcher(CAPS_3, {"POST */_msearch": legs, "POST */_search": page})
    result = s.search(
        "x",
        technique="client-rrf",
        k=5,
        query_vector=VEC,
        options=SearchOptions(highlight=True, facets=("lang",), collapse=Collapse(inner_hits=1)),
    )
    lines = client.calls_to("POST */_msearch")[0].body
    assert (
        len(lines) == 8
        and lines[5]["size"] == 0
        and lines[5]["aggs"]
        == {
            "lang": {
                "terms": {"field": "metadata.lang", "size": 10},
                "aggs": {"documents": {"cardinality": {"field": "parent_id"}}},
            }
        }
    )
    # is the collapsed page short?
    assert lines[7]["aggs"] == {"_collapse_groups": {"cardinality": {"field": "parent_id"}}}
    assert lines[1]["docvalue_fields"] == ["parent_id"] and lines[3]["docvalue_fields"] == ["parent_id"]
    fetch = client.calls_to("POST */_search")[0].body
    assert fetch["query"] == {"ids": {"values": ["a#1", "a#0", "b#0"]}} and fetch["highlight"]["highlight_query"]
    assert [(h.id, [c.id for c in h.chunks]) for h in result.hits] == [("a#1", ["a#0"]), ("b#0", [])]
    assert result.hits[0].highlight == {"text": ("<em>x</em> a",)} and result.aggregations["lang"].buckets[0].count == 3
    assert not client.calls_to("POST */_mget")


def test_dense_mmr_runs_on_the_server_where_it_is_on():
    answer = {"took": 4, "hits": {"hits": [hit(0, 0.9, "a"), hit(0, 0.7, "c")]}}
    client, s = searcher(CAPS_3, {"POST */_search": answer})
    result = s.search("x", technique="dense", k=2, query_vector=VEC, mmr_lambda=0.9, mmr_candidates=20)
    body = client.calls_to("POST */_search")[0].body
    assert body["ext"]["mmr"] == {"diversity": pytest.approx(0.1), "candidates": 20, "vector_field_path": "embedding"}
    assert body["query"]["knn"]["embedding"]["k"] == 20 and body["size"] == 2
    assert body["_source"] == {"excludes": ["embedding", "title", "text"]} and set(body["highlight"]["fields"]) == {
        "title",
        "text",
    }
    assert result.ids == ["a#0", "c#0"] and not result.notices


def test_server_mmr_asked_where_it_cannot_run_falls_back_with_a_notice():
    vectors = {
        "took": 1,
        "hits": {
            "hits": [
                {"_id": f"d{i}", "_score": 1.0 - i / 10, "_source": {"text": "t", "embedding": [1.0, i, 0.0, 0.0]}}
                for i in range(3)
            ]
        },
    }
    for caps, why in ((CAPS_2, "3.3+"), (opensearch_capabilities("3.6.0"), "is off on this cluster")):
        client, s = searcher(caps, {"POST */_search": vectors})
        result = s.search(
            "x", technique="dense", k=2, query_vector=VEC, mmr_lambda=0.5, options=SearchOptions(mmr=MMRPlace.SERVER)
        )
        assert (
            "ext" not in client.calls_to("POST */_search")[0].body
            and why in result.notices[0]
            and "ran in the client" in result.notices[0]
        )
        assert len(result.hits) == 2 and "embedding" not in result.hits[0].source
    # auto: the server from lambda 0.9 (measured as good there), the client below; nothing to say either way
    for lam, on_server in ((0.5, False), (0.89, False), (0.9, True), (1.0, True)):
        client, s = searcher(CAPS_3, {"POST */_search": vectors})
        result = s.search("x", technique="dense", k=2, query_vector=VEC, mmr_lambda=lam)
        assert ("ext" in client.calls_to("POST */_search")[0].body) == on_server and not result.notices


def test_in_query_fusion_replaces_the_inline_pipeline():
    client, s = searcher(FUSED, {"POST */_search": {"took": 1, "hits": {"hits": [hit(0, 0.5, "a")]}}})
    result = s.search("x", k=1, query_vector=VEC, fusion=ScoreNormalization(weights=(0.2, 0.8)))
    body = client.calls_to("POST */_search")[-1].body  # after the empty shard's check
    assert result.fused_by is FusedBy.SERVER_QUERY and result.fused_by_label == "server:query:min_max-arithmetic_mean"
    assert "search_pipeline" not in body and body["query"]["hybrid"]["fusion"]["combination"]["parameters"][
        "weights"
    ] == [0.2, 0.8]


def test_field_sort_on_the_server_and_in_the_client():
    answer = {"took": 1, "hits": {"hits": [hit(0, None, "a"), hit(0, None, "b")]}}
    client, s = searcher(CAPS_3, {"POST */_search": answer})
    result = s.search("x", k=2, query_vector=VEC, options=SearchOptions(sort=(SortKey("chunk_index", "asc"),)))
    assert client.calls_to("POST */_search")[0].body["sort"] == [{"chunk_index": {"order": "asc"}}] and result.ids == [
        "a#0",
        "b#0",
    ]
    legs = {
        "responses": [
            {
                "hits": {
                    "hits": [
                        {"_id": "a#0", "_score": 2.0, "fields": {"metadata.year": [2001]}},
                        {"_id": "b#0", "_score": 1.0, "fields": {"metadata.year": [2020]}},
                    ]
                }
            },
            {"hits": {"hits": []}},
        ]
    }
    client, s = searcher(CAPS_3, {"POST */_msearch": legs, "POST */_search": {"hits": {"hits": []}}})
    result = s.search(
        "x", technique="client-rrf", k=2, query_vector=VEC, options=SearchOptions(sort=(SortKey("year"),))
    )
    assert result.ids == ["b#0", "a#0"] and client.calls_to("POST */_msearch")[0].body[1]["docvalue_fields"] == [
        "metadata.year"
    ]


def test_mmr_with_collapse_keeps_vectors_out_of_the_result():
    vec = {"embedding": [1.0, 0.0, 0.0, 0.0]}
    hits = [
        {
            "_id": f"{p}#{i}",
            "_score": 1.0 - n / 10,
            "fields": {"parent_id": [p]},
            "_source": {"text": "t", "parent_id": p, **vec},
        }
        for n, (p, i) in enumerate([("a", 0), ("a", 1), ("b", 0), ("c", 0)])
    ]
    client, s = searcher(CAPS_2, {"POST */_search": {"hits": {"hits": hits}}})
    result = s.search(
        "x", k=2, query_vector=VEC, mmr_lambda=0.5, options=SearchOptions(collapse=Collapse(inner_hits=1))
    )
    assert len(result.hits) == 2 and [c.id for h in result.hits for c in h.chunks] == ["a#1"]
    assert all("embedding" not in h.source and all("embedding" not in c.source for c in h.chunks) for h in result.hits)
