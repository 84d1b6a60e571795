"""OpenSearch's server-fused page carrying its legs (docs/INTEROP.md, Scores): where the search asks for it
(``SearchOptions(leg_relevance=True)``, what a threshold asks: it costs the request a quarter of its time), the
index keeps both legs' relevance maps and the cluster answers named sub-queries' scores, the hybrid request names
each leg and asks ``include_named_queries_score``; each hit's relevance then comes from its legs' raw scores, as
on a client-fused page. Against FakeClient, answers shaped as 3.6.0's (``matched_queries`` as name -> score)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adapter.engines import HybridRequest
from adapter.engines.opensearch import OPENSEARCH
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.engines.responses import hits as raw_hits
from adapter.fusion.base import FusedBy
from adapter.fusion.relevance import RelevanceMap
from adapter.index.catalog import IndexInfo
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.search import Searcher
from adapter.search.page import SearchOptions
from adapter.search.planning import carries_legs
from adapter.search.relevance import LEGS_MAP, MAP
from adapter.search.request import SearchRequest
from adapter.testing import FakeClient
from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit
FP = EmbeddingFingerprint("m", "test:m", "0" * 64, 4, True)
VEC = [1.0, 0.0, 0.0, 0.0]
# BM25 0 -> 10 and k-NN 0.5 -> 1.0 linearly: a hit's base relevance is the mean of its two shares
LEG_MAPS = [RelevanceMap("leg:bm25", (0.0, 10.0)).as_json(), RelevanceMap("leg:dense", (0.5, 1.0)).as_json()]
RRF_MAP = RelevanceMap("rrf", (0.0, 0.02, 0.04)).as_json()
CAPS = opensearch_capabilities("3.6.0")
LEGS = SearchOptions(leg_relevance=True)
STORED = {"phase_results_processors": [{"score-ranker-processor": {"combination": {"technique": "rrf"}}}]}


def searcher(caps, answer, relevance=(*LEG_MAPS, RRF_MAP)):
    client = FakeClient({"* /_search/pipeline/*": {"docs-rrf": STORED}, "POST */_search": answer})
    info = IndexInfo("docs", "docs-v1", FP, max_window=10_000, relevance=list(relevance))
    return client, Searcher(client, info, caps, None)


def answer(*hits):
    return {"took": 2, "hits": {"hits": [{"_id": i, "_score": s, "_source": {}, **extra} for i, s, extra in hits]}}


NAMED = answer(
    ("a", 0.033, {"matched_queries": {"bm25": 8.0, "dense": 0.9}}),
    ("b", 0.032, {"matched_queries": {"dense": 0.95}}),  # BM25 did not match it: counts 0
    ("c", 0.03, {"matched_queries": {"bm25": 6.0, "dense": 0.6}}),
)


def test_the_server_fused_page_names_its_legs_and_takes_its_relevance_from_their_scores():
    client, s = searcher(CAPS, NAMED)
    result = s.search("x", k=3, query_vector=VEC, fusion="rrf", options=LEGS)
    sent = client.calls_to("POST */_search")[0]
    assert sent.params.get("include_named_queries_score") == "true"
    legs = sent.body["query"]["hybrid"]["queries"]
    assert legs[0]["multi_match"]["_name"] == "bm25" and legs[1]["knn"]["embedding"]["_name"] == "dense"
    assert result.fused_by is FusedBy.SERVER_PIPELINE and result.relevance_by == LEGS_MAP
    # a: (0.8 + 0.8) / 2; b: (0 + 0.9) / 2; c: (0.6 + 0.2) / 2 (the arithmetic of the client-fused page's rule)
    assert [h.relevance for h in result.hits] == [pytest.approx(0.8), pytest.approx(0.45), pytest.approx(0.4)]
    assert all(h.legs == () for h in result.hits)  # no explanation is made up: legs stay explain's


def test_a_cluster_or_index_or_page_without_them_asks_nothing_and_keeps_the_fusions_map():
    plain = answer(("a", 0.03, {}), ("b", 0.01, {}))
    cases = {
        "a plain search (not asked: the cost)": (searcher(CAPS, plain), SearchOptions()),
        "a cluster that answers no scores": (searcher(replace(CAPS, hybrid_leg_scores=False), plain), LEGS),
        "no legs' maps": (searcher(CAPS, plain, relevance=(RRF_MAP,)), LEGS),
    }
    for why, ((client, s), options) in cases.items():
        result = s.search("x", k=2, query_vector=VEC, fusion="rrf", options=options)
        sent = client.calls_to("POST */_search")[0]
        assert "include_named_queries_score" not in sent.params, why
        assert "_name" not in str(sent.body["query"]["hybrid"]["queries"]), why
        assert result.relevance_by == MAP, why
    # a server that answered the names without their scores (a list): the fusion's map, not a made-up 0
    listed = answer(("a", 0.03, {"matched_queries": ["bm25", "dense"]}), ("b", 0.01, {"matched_queries": ["dense"]}))
    _, s = searcher(CAPS, listed)
    assert s.search("x", k=2, query_vector=VEC, fusion="rrf", options=LEGS).relevance_by == MAP
    # a reranked or MMR page takes no legs' relevance, so it does not pay for them; nor a single leg
    _, s = searcher(CAPS, NAMED)
    assert carries_legs(s.state, SearchRequest("x", options=LEGS))
    assert not carries_legs(s.state, SearchRequest("x", mmr_lambda=0.5, options=LEGS))
    assert not carries_legs(s.state, SearchRequest("x", rerank_top=10, options=LEGS))
    assert not carries_legs(s.state, SearchRequest("x", technique="bm25", options=LEGS))


def test_named_scores_are_read_from_the_answer_and_the_legs_named_only_when_asked():
    (a,) = raw_hits(answer(("a", 1.0, {"matched_queries": {"bm25": 5.85, "dense": 0.94}})))
    assert a.named_scores == {"bm25": 5.85, "dense": 0.94} and set(a.matched_queries) == {"bm25", "dense"}
    (b,) = raw_hits(answer(("b", 1.0, {"matched_queries": ["bm25"]})))
    assert b.named_scores == {} and b.matched_queries == ("bm25",)
    text, knn = {"match": {"text": "x"}}, {"knn": {"embedding": {"vector": VEC, "k": 10}}}
    unnamed = OPENSEARCH.hybrid_body(HybridRequest(text, knn, caps=CAPS, depth=10, size=10))
    named = OPENSEARCH.hybrid_body(HybridRequest(text, knn, caps=CAPS, depth=10, size=10, leg_scores=True))
    assert unnamed["query"]["hybrid"]["queries"] == [text, knn]
    assert named["query"]["hybrid"]["queries"] == [
        {"match": {"text": "x", "_name": "bm25"}},
        {"knn": {"embedding": {"vector": VEC, "k": 10, "_name": "dense"}}},
    ]


@requires_extra("langchain")
def test_langchains_threshold_asks_for_the_legs_and_a_plain_relevance_search_does_not():
    from adapter.integrations.langchain import FULL_TEXT, legs_for_threshold

    asked = legs_for_threshold({"score_threshold": 0.5, "fusion": "rrf"})
    assert asked["options"] == SearchOptions(full_text=True, leg_relevance=True) and asked["fusion"] == "rrf"
    mine = legs_for_threshold({"score_threshold": 0.5, "options": SearchOptions(highlight=True)})["options"]
    assert mine == SearchOptions(highlight=True, leg_relevance=True)  # the caller's options, with the legs
    assert legs_for_threshold({"k": 3}) == {"k": 3} and FULL_TEXT.leg_relevance is False
