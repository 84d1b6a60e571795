"""Partial answers (issue 38 item 6), with scripted answers: a shard that failed in a 200, a document of
the page on a shard that failed, a collapsed page short of the groups the query matched. Each path a
search sends a request on asks once more, then keeps the answer with a notice saying what it lacks, or,
with ``SearchOptions(allow_partial_results=False)``, raises :class:`PartialResultError`. Elasticsearch's
retrievers (which drop failed shards silently, elastic #157810) are sent with
``allow_partial_search_results=false``, and their refusal is asked again, then raised.

The short collapsed page met on the real 3.6.0 node is tests/integration/test_partial_results.py."""

from __future__ import annotations

import pytest

from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.errors import PartialResultError
from adapter.fusion import RRF
from adapter.fusion.choice.policy import AdaptivePolicy
from adapter.index.catalog import IndexInfo
from adapter.search import Searcher, assemble
from adapter.search.page import COLLAPSE_GROUPS, Collapse, SearchOptions
from adapter.testing import FakeClient, Reply
from adapter.errors import InputError
from tests.support.extras import requires_extra
from tests.support.embedders import FP, VECTOR, UnitEmbedder

pytestmark = pytest.mark.unit

INFO = IndexInfo("docs", "docs-v1", FP, text_fields=("text",), query_fields=("text",))
CAPS_2 = opensearch_capabilities("2.19.1")
CAPS_3 = opensearch_capabilities("3.6.0")
STRICT = SearchOptions(allow_partial_results=False)
FAILURE = {
    "shard": 1,
    "index": "docs-v1",
    "reason": {"type": "search_context_missing_exception", "reason": "No search context found"},
}
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


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)


def hits(*ids, score=1.0, **extra) -> dict:
    return {
        "took": 2,
        "hits": {
            "hits": [{"_id": d, "_score": score - i / 10, "_source": {"text": f"text {d}"}} for i, d in enumerate(ids)]
        },
        "_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0},
        **extra,
    }


def partial(answer: dict) -> dict:
    """``answer`` as a 200 in which one of three shards failed (its hits missing)."""
    return {**answer, "_shards": {"total": 3, "successful": 2, "skipped": 0, "failed": 1, "failures": [FAILURE]}}


def searcher(answers: dict, caps=CAPS_2, **options) -> tuple[FakeClient, Searcher]:
    client = FakeClient({"* /_search/pipeline/*": lambda call: {call.path.rsplit("/", 1)[1]: STORED}, **answers})
    return client, Searcher(client, INFO, caps, UnitEmbedder(), **options)


def by_body(**answers):
    """A ``POST */_search`` handler answering by what the body asks: ``ids`` (the page's documents or
    excerpts), ``hybrid``, ``signals`` (BM25's best hit: size 1), else ``leg``."""

    def answer(call):
        body = call.body
        if "ids" in (body.get("query") or {}):
            return answers["ids"]
        if "hybrid" in (body.get("query") or {}):
            return answers["hybrid"]
        if body.get("size") == 1 and body.get("_source") is False:
            return answers["signals"]
        return answers["leg"]

    return answer


def legs(bm25, dense, *extra) -> dict:
    return {"took": 3, "responses": [bm25, dense, *extra]}


# Each request a search sends, answered partially every time it is asked: (the technique and options, the
# scripted answers, what the notice says the result lacks).
PATHS = {
    "single leg": (dict(technique="bm25"), {"POST */_search": partial(hits("a"))}, "their hits are missing"),
    "msearch legs": (
        dict(technique="client-rrf", options=SearchOptions(full_text=True)),
        {
            "POST */_msearch": legs(partial(hits("a")), hits("a")),
            "POST */_mget": {"docs": [{"_id": "a", "found": True}]},
        },
        "their hits are missing",
    ),
    "facets beside the legs": (
        dict(technique="client-rrf", options=SearchOptions(facets=("lang",), full_text=True)),
        {
            "POST */_msearch": legs(hits("a"), hits("a"), partial(hits(aggregations={"lang": {"buckets": []}}))),
            "POST */_mget": {"docs": [{"_id": "a", "found": True}]},
        },
        "the facet counts leave out their documents",
    ),
    "the page's documents": (
        dict(technique="client-rrf", options=SearchOptions(highlight=True, full_text=True)),
        {"POST */_msearch": legs(hits("a", "b"), hits("a")), "POST */_search": partial(hits("a"))},
        "come without their documents",
    ),
    "the page's documents by mget": (
        dict(technique="client-rrf", options=SearchOptions(full_text=True)),
        {
            "POST */_msearch": legs(hits("a", "b"), hits("a")),
            "POST */_mget": {
                "docs": [
                    {"_id": "a", "found": True, "_source": {"text": "uno"}},
                    {
                        "_id": "b",
                        "_index": "docs-v1",
                        "error": {
                            "type": "no_shard_available_action_exception",
                            "reason": "No shard available for [get [docs-v1][b]]",
                        },
                    },
                ]
            },
        },
        "1 of the page's 2 documents could not be fetched",
    ),
    # one shard alone (the empty shard refused): excerpts after
    "the page's excerpts": (
        dict(technique="hybrid", fusion=RRF()),
        {
            "POST /docs,hybrid-empty-shard/_search": Reply(
                404, {"error": {"type": "index_not_found_exception", "reason": "no such index [hybrid-empty-shard]"}}
            ),
            "POST /docs/_search": hits("a"),
            "POST /docs-v1/_search": partial(hits("a")),
        },
        "come without their excerpts",
    ),
    "adaptive fusion's evidence": (
        dict(technique="hybrid", fusion=AdaptivePolicy(query=1.0)),
        {
            "POST */_search": by_body(signals=partial(hits("a", score=3.0)), hybrid=hits("a"), ids=hits("a")),
            "POST */_termvectors": {
                "took": 1,
                "term_vectors": {
                    "text": {"field_statistics": {"doc_count": 9}, "terms": {"hola": {"term_freq": 1, "doc_freq": 2}}}
                },
            },
        },
        "adaptive fusion weighed the query without them",
    ),
}


@pytest.mark.parametrize("path", PATHS)
def test_every_request_of_a_search_that_stays_partial_is_a_notice_or_an_error(path):
    kwargs, answers, lacks = PATHS[path]
    client, s = searcher(answers)
    result = s.search("hola", k=2, query_vector=VECTOR, **kwargs)
    notices = [n for n in result.notices if n.startswith("partial result: ")]
    assert len(notices) == 1 and "even when asked again" in notices[0] and lacks in notices[0], result.notices
    options = kwargs.get("options", SearchOptions())
    strict = {**kwargs, "options": SearchOptions(**{**options.__dict__, "allow_partial_results": False})}
    client, s = searcher(answers)
    with pytest.raises(PartialResultError, match="partial result: .*allows no partial results") as raised:
        s.search("hola", k=2, query_vector=VECTOR, **strict)
    assert raised.value.kind == "shards" and lacks in str(raised.value)


def test_an_answer_whole_when_asked_again_is_used_without_a_word_strict_or_not():
    for options in (SearchOptions(), STRICT):
        client, s = searcher({"POST */_search": [partial(hits("b")), hits("a", "b")]})
        result = s.search("hola", technique="bm25", k=3, options=options)
        assert result.ids == ["a", "b"] and not result.notices and len(client.calls_to("POST */_search")) == 2


def test_a_document_deleted_meanwhile_is_not_a_partial_answer():
    """``found: false`` is a document deleted between the legs and the fetch, not a failed shard: no notice."""
    client, s = searcher(
        {
            "POST */_msearch": legs(hits("a", "b"), hits("a")),
            "POST */_mget": {
                "docs": [{"_id": "a", "found": True, "_source": {"text": "uno"}}, {"_id": "b", "found": False}]
            },
        }
    )
    result = s.search(
        "hola",
        technique="client-rrf",
        k=2,
        query_vector=VECTOR,
        options=SearchOptions(full_text=True, allow_partial_results=False),
    )
    assert result.ids == ["a", "b"] and not result.notices and len(client.calls_to("POST */_mget")) == 1


def test_allow_partial_results_takes_only_a_boolean():
    with pytest.raises(InputError, match="allow_partial_results must be True or False, got 'false'"):
        SearchOptions(allow_partial_results="false")


# -- a collapsed page short of groups --------------------------------------------------------------------


def collapsed(ids, groups: int) -> dict:
    answer = hits(*ids)
    for h in answer["hits"]["hits"]:
        h["fields"] = {"parent_id": [h["_id"].split("#")[0]]}
    return {**answer, "aggregations": {COLLAPSE_GROUPS: {"value": groups}}}


def test_a_collapsed_hybrid_page_counts_the_groups_its_query_matched():
    client, s = searcher({"POST */_search": collapsed(["big#0"], 7)}, caps=CAPS_3)
    result = s.search("hola", k=5, depth=5, query_vector=VECTOR, options=SearchOptions(collapse=Collapse()))
    sent = client.calls_to("POST */_search")[0]  # the hybrid (then the page's excerpts)
    assert sent.body["collapse"] == {"field": "parent_id"} and sent.body["aggs"][COLLAPSE_GROUPS] == {
        "cardinality": {"field": "parent_id"}
    }
    (notice,) = result.notices
    assert notice.startswith(
        "short collapsed page: 1 of the 5 hits asked for (one per parent_id), though the query matched 7 "
    )
    assert "each leg's best 5" in notice and "--depth" in notice
    client, s = searcher({"POST */_search": collapsed(["big#0"], 7)}, caps=CAPS_3)
    with pytest.raises(PartialResultError, match="short collapsed page: 1 of the 5") as raised:
        s.search(
            "hola",
            k=5,
            depth=5,
            query_vector=VECTOR,
            options=SearchOptions(collapse=Collapse(), allow_partial_results=False),
        )
    assert raised.value.kind == "collapse"


def test_the_client_collapse_of_a_2_19_hybrid_counts_them_too():
    client, s = searcher({"POST */_search": collapsed(["big#0", "big#1"], 3)}, caps=CAPS_2)
    result = s.search("hola", k=2, depth=5, query_vector=VECTOR, options=SearchOptions(collapse=Collapse()))
    body = client.calls_to("POST */_search")[0].body
    assert "collapse" not in body and body["aggs"][COLLAPSE_GROUPS] == {"cardinality": {"field": "parent_id"}}
    assert result.ids == ["big#0"] and any(
        n.startswith("short collapsed page: 1 of the 2 hits") for n in result.notices
    )


def test_client_rrfs_collapse_counts_the_groups_in_its_msearch():
    def leg(*ids):
        return {
            "took": 1,
            "hits": {
                "hits": [
                    {"_id": d, "_score": 1.0 - i / 10, "fields": {"parent_id": [d.split("#")[0]]}}
                    for i, d in enumerate(ids)
                ]
            },
        }

    answer = legs(
        leg("big#0", "big#1"),
        leg("big#1", "big#0"),
        {"took": 1, "hits": {"hits": []}, "aggregations": {COLLAPSE_GROUPS: {"value": 4}}},
    )
    client, s = searcher({"POST */_msearch": answer, "POST */_mget": {"docs": [{"_id": "big#0", "found": True}]}})
    result = s.search(
        "hola",
        technique="client-rrf",
        k=3,
        depth=2,
        query_vector=VECTOR,
        options=SearchOptions(collapse=Collapse(), full_text=True),
    )
    lines = client.calls_to("POST */_msearch")[0].body
    assert (
        len(lines) == 6
        and lines[5]["size"] == 0
        and lines[5]["aggs"] == {COLLAPSE_GROUPS: {"cardinality": {"field": "parent_id"}}}
    )
    assert result.ids == ["big#0"] and any(
        n.startswith("short collapsed page: 1 of the 3 hits") for n in result.notices
    )


def test_a_page_short_because_the_query_matched_no_more_groups_is_not_partial():
    client, s = searcher({"POST */_search": collapsed(["a#0", "b#0"], 2)}, caps=CAPS_3)
    assert not s.search(
        "hola", k=5, query_vector=VECTOR, options=SearchOptions(collapse=Collapse(), allow_partial_results=False)
    ).notices
    client, s = searcher({"POST */_search": collapsed(["c#0"], 3)}, caps=CAPS_3)  # the last page: groups 3 of 3
    assert not s.search("hola", k=2, from_=2, query_vector=VECTOR, options=SearchOptions(collapse=Collapse())).notices
    # a score floor shortens pages on purpose: nothing counted
    client, s = searcher({"POST */_search": hits("a#0")}, caps=CAPS_3)
    s.search("hola", k=5, query_vector=VECTOR, options=SearchOptions(collapse=Collapse(), min_score=0.5))
    assert "aggs" not in client.calls_to("POST */_search")[0].body


@pytest.mark.parametrize(
    "page, asked, from_, matched, short",
    [
        (1, 5, 0, 7, True),
        (5, 5, 0, 7, False),
        (2, 5, 0, 2, False),
        (2, 5, 3, 5, False),
        (2, 5, 3, 6, True),
        (0, 5, 0, None, False),
        (0, 5, 0, 0, False),
    ],
)
def test_short_collapse_is_a_page_under_its_size_with_groups_left(page, asked, from_, matched, short):
    notice = assemble.short_collapse(page, asked=asked, from_=from_, matched=matched, field="parent_id", depth=100)
    assert (notice is not None) == short


# -- the counter -----------------------------------------------------------------------------------------


def test_partial_answers_are_counted_by_kind_and_what_the_search_did():
    from adapter.observability import metrics

    if not metrics.enabled():
        # the test extra brings it: see pyproject.toml
        pytest.skip("prometheus-client is not installed (the metrics extra)")
    from prometheus_client import REGISTRY

    def count(kind, outcome):
        return (
            REGISTRY.get_sample_value("hybrid_search_partial_results_total", {"kind": kind, "outcome": outcome}) or 0.0
        )

    before = {(k, o): count(k, o) for k in ("shards", "collapse") for o in ("asked_again", "notice", "error")}
    _, s = searcher({"POST */_search": partial(hits("a"))})
    s.search("hola", technique="bm25", k=2)
    with pytest.raises(PartialResultError):
        s.search("hola", technique="bm25", k=2, options=STRICT)
    _, s = searcher({"POST */_search": collapsed(["big#0"], 7)}, caps=CAPS_3)
    s.search("hola", k=5, query_vector=VECTOR, options=SearchOptions(collapse=Collapse()))
    after = {key: count(*key) - value for key, value in before.items()}
    assert after == {
        ("shards", "asked_again"): 2,
        ("shards", "notice"): 1,
        ("shards", "error"): 1,
        ("collapse", "asked_again"): 0,
        ("collapse", "notice"): 1,
        ("collapse", "error"): 0,
    }


# -- Elasticsearch's retrievers ------------------------------------------------------------------------------
# The refusal's body is written from Elasticsearch's sources (SearchPhaseExecutionException "Partial shards
# failure", AbstractSearchAsyncAction with allow_partial_search_results=false), not recorded from a node: no
# Elasticsearch node runs on this shared machine, and its integ-test zip has no rank-rrf module either.
PARTIAL_SHARDS = {
    "error": {
        "root_cause": [FAILURE["reason"]],
        "type": "search_phase_execution_exception",
        "reason": "Partial shards failure",
        "phase": "query",
        "grouped": True,
        "failed_shards": [FAILURE],
    },
    "status": 500,
}
RETRIEVED = {
    "took": 4,
    "hits": {"hits": [{"_id": "a", "_score": 0.03}, {"_id": "b", "_score": 0.02}]},
    "_shards": {"total": 3, "successful": 3, "skipped": 0, "failed": 0},
}


def es_searcher(answers):
    from adapter.engines.elasticsearch import ELASTICSEARCH
    from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities

    caps = elasticsearch_capabilities(
        "9.2.4", modules=("analysis-common", "rank-rrf", "x-pack-core"), license="enterprise"
    )
    client = FakeClient(answers, engine_name="elasticsearch")
    return client, Searcher(client, INFO, caps, UnitEmbedder(), engine=ELASTICSEARCH)


@requires_extra("elasticsearch")
def test_a_retriever_allows_no_partial_results_so_a_failed_shard_is_not_silence():
    page = hits("a", "b")
    client, s = es_searcher({"POST */_search": [RETRIEVED, page]})
    result = s.search("hola", fusion=RRF(), k=2, query_vector=VECTOR)
    retriever, fetch = client.calls_to("POST */_search")
    assert "retriever" in retriever.body and retriever.params == {"allow_partial_search_results": "false"}
    assert "allow_partial_search_results" not in fetch.params  # the page's excerpts: a plain search reports its shards
    assert result.ids == ["a", "b"] and not result.notices
    assert result.sent[0].params == {"allow_partial_search_results": "false"}  # --show-query prints it

    # refused once: asked again
    client, s = es_searcher({"POST */_search": [Reply(500, PARTIAL_SHARDS), RETRIEVED, page]})
    assert s.search("hola", fusion=RRF(), k=2, query_vector=VECTOR).ids == ["a", "b"]
    client, s = es_searcher({"POST */_search": Reply(500, PARTIAL_SHARDS)})
    with pytest.raises(PartialResultError, match="Partial shards failure.*no partial results") as raised:
        # without allow_partial_results=False too: no hits to keep
        s.search("hola", fusion=RRF(), k=2, query_vector=VECTOR)
    assert raised.value.kind == "shards" and raised.value.status == 500 and len(client.calls_to("POST */_search")) == 2


def test_a_strict_searcher_makes_each_of_its_searches_strict():
    """Issue 38 item 6: the option on the searcher, not only per search through SearchOptions."""
    from adapter.errors import InputError
    from adapter.search import Searcher
    from adapter.search.page import SearchOptions

    strict = Searcher.__new__(Searcher)
    strict.allow_partial_results = False
    assert strict._options(None).allow_partial_results is False
    assert strict._options(SearchOptions(highlight=True)) == SearchOptions(highlight=True, allow_partial_results=False)
    lenient = Searcher.__new__(Searcher)
    lenient.allow_partial_results = True
    assert lenient._options(SearchOptions(allow_partial_results=False)).allow_partial_results is False
    import pytest

    with pytest.raises(InputError, match="True or False"):
        Searcher(None, None, None, allow_partial_results="false")  # type: ignore[arg-type]
