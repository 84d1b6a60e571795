import json
from pathlib import Path

import pytest

from adapter.engines import HybridRequest
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import InputError
from adapter.engines.dsl import TextLeg, clean_query, filter_clauses, msearch_lines, search_body, text_query
from adapter.engines.opensearch.capabilities import opensearch_capabilities


def test_text_leg_uses_match_type_queries_only():
    assert TextLeg(("text",)).body("hola") == {"match": {"text": {"query": "hola", "operator": "or"}}}
    body = TextLeg(("title^2", "text")).body("E-4012")
    assert body == {
        "multi_match": {"query": "E-4012", "fields": ["title^2", "text"], "type": "most_fields", "operator": "or"}
    }


def test_user_text_never_reaches_query_string():
    # Query-syntax characters stay inside a match query as plain text.
    nasty = 'title:(x OR y) AND text:* "\\'
    body = json.dumps(text_query(nasty, TextLeg(), {"lang": "es"}))
    assert "query_string" not in body and "simple_query_string" not in body
    source = "".join(p.read_text() for p in (Path(__file__).parents[3] / "adapter").rglob("*.py"))
    assert "query_string" not in source  # no code path can build one


def test_filters_become_term_terms_and_range_on_metadata():
    clauses = filter_clauses(
        {"lang": "es", "tags": ["a", "b"], "year": {"gte": 2020}, "parent_id": "x", "metadata.k": 1}
    )
    assert clauses == [
        {"term": {"metadata.lang": "es"}},
        {"terms": {"metadata.tags": ["a", "b"]}},
        {"range": {"metadata.year": {"gte": 2020}}},
        {"term": {"parent_id": "x"}},
        {"term": {"metadata.k": 1}},
    ]
    with pytest.raises(InputError):
        filter_clauses({"year": {"between": 1}})


def test_filters_go_on_both_legs_and_inside_knn():
    text = text_query("q", TextLeg(("text",)), {"lang": "es"})
    assert text == {
        "bool": {
            "must": [{"match": {"text": {"query": "q", "operator": "or"}}}],
            "filter": [{"term": {"metadata.lang": "es"}}],
        }
    }
    knn = OPENSEARCH.knn_query([0.5, 1], field="embedding", k=7, filters={"lang": "es"})
    assert knn == {
        "knn": {
            "embedding": {
                "vector": [0.5, 1.0],
                "k": 7,
                "filter": {"bool": {"filter": [{"term": {"metadata.lang": "es"}}]}},
            }
        }
    }
    assert "filter" not in OPENSEARCH.knn_query([1.0], field="v", k=1)["knn"]["v"]


def test_hybrid_body_orders_legs_and_sets_pagination_depth():
    t, v = {"match": {"text": {"query": "q"}}}, {"knn": {"v": {"vector": [1.0], "k": 5}}}
    body = OPENSEARCH.hybrid_body(
        HybridRequest(
            t,
            v,
            caps=opensearch_capabilities("2.19.1"),
            depth=50,
            size=10,
            from_=20,
            exclude=["v"],
            explain=True,
            inline_pipeline={"x": 1},
        )
    )
    legs = [
        {"match": {"text": {"query": "q", "_name": "bm25"}}},
        {"knn": {"v": {"vector": [1.0], "k": 5, "_name": "dense"}}},
    ]
    assert body == {
        "size": 10,
        "from": 20,
        "query": {"hybrid": {"queries": legs, "pagination_depth": 50}},
        "_source": {"excludes": ["v"]},
        "explain": True,
        "search_pipeline": {"x": 1},
    }
    old = OPENSEARCH.hybrid_body(HybridRequest(t, v, caps=opensearch_capabilities("2.18.0"), depth=50, size=10))
    assert "pagination_depth" not in old["query"]["hybrid"] and "search_pipeline" not in old


def test_hybrid_legs_are_named_only_for_the_servers_explanation():
    # A named sub-query is evaluated again for every returned hit (matched_queries): 1-2 ms of a
    # 9 ms hybrid on 3.6, 3-7 ms on 2.19 (docs/BENCHMARKS.md). Only the server's explanation needs the names.
    t, v = {"match": {"text": {"query": "q"}}}, {"knn": {"v": {"vector": [1.0], "k": 5}}}
    plain = OPENSEARCH.hybrid_body(HybridRequest(t, v, caps=opensearch_capabilities("3.6.0"), depth=50, size=10))
    assert plain["query"]["hybrid"]["queries"] == [t, v] and "explain" not in plain


def test_search_body_and_msearch_lines():
    body = search_body({"match_all": {}}, size=5, from_=10, exclude_source=["embedding"], explain=True)
    assert body == {
        "size": 5,
        "query": {"match_all": {}},
        "from": 10,
        "_source": {"excludes": ["embedding"]},
        "explain": True,
    }
    assert msearch_lines("idx", [{"a": 1}, {"b": 2}]) == [{"index": "idx"}, {"a": 1}, {"index": "idx"}, {"b": 2}]


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", None])
def test_empty_queries_are_refused(bad):
    with pytest.raises(InputError, match="empty"):
        clean_query(bad)


def test_queries_are_stripped_and_bounded():
    assert clean_query("  hola ") == "hola"
    with pytest.raises(InputError):
        clean_query("x" * 10_001)


def test_named_queries_put_the_name_inside_the_clause():
    from adapter.engines.dsl import named_query

    assert named_query({"multi_match": {"query": "q", "fields": ["a"]}}, "bm25") == {
        "multi_match": {"query": "q", "fields": ["a"], "_name": "bm25"}
    }
    assert named_query({"bool": {"must": []}}, "bm25") == {"bool": {"must": [], "_name": "bm25"}}
    assert named_query({"knn": {"v": {"vector": [1.0], "k": 3}}}, "dense") == {
        "knn": {"v": {"vector": [1.0], "k": 3, "_name": "dense"}}
    }
