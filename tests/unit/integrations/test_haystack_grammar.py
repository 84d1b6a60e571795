"""Haystack's filter grammar on ``content`` (the index's body text) and the metadata facets' pure
parts: the keys a mapping declares and values read back in their key's type."""

from __future__ import annotations

import pytest

from adapter.index.facets import metadata_types, typed
from adapter.integrations._filters import FilterGrammarError, haystack_clause

pytestmark = pytest.mark.unit


def test_content_is_a_phrase_of_the_body_field():
    clause = haystack_clause({"field": "content", "operator": "==", "value": "gift cards"}, content_field="body")
    assert clause.body == {"match_phrase": {"body": {"query": "gift cards"}}}
    assert clause.fields == ("body",)
    unequal = haystack_clause({"field": "content", "operator": "!=", "value": "gift cards"})
    assert unequal.body == {"bool": {"must_not": [{"match_phrase": {"text": {"query": "gift cards"}}}]}}


def test_content_in_a_logical_filter_and_its_lists():
    both = haystack_clause(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.lang", "operator": "==", "value": "en"},
                {"field": "content", "operator": "in", "value": ["a b", "c"]},
            ],
        }
    )
    assert both.body == {
        "bool": {
            "filter": [
                {"term": {"metadata.lang": "en"}},
                {
                    "bool": {
                        "should": [
                            {"match_phrase": {"text": {"query": "a b"}}},
                            {"match_phrase": {"text": {"query": "c"}}},
                        ],
                        "minimum_should_match": 1,
                    }
                },
            ]
        }
    }
    assert both.fields == ("metadata.lang", "text")
    none_of = haystack_clause({"field": "content", "operator": "not in", "value": ["x"]}).body
    assert none_of == {
        "bool": {
            "must_not": [{"bool": {"should": [{"match_phrase": {"text": {"query": "x"}}}], "minimum_should_match": 1}}]
        }
    }


def test_content_against_none_and_what_it_refuses():
    assert haystack_clause({"field": "content", "operator": "==", "value": None}).body == {
        "bool": {"must_not": [{"match_all": {}}]}
    }
    assert haystack_clause({"field": "content", "operator": "!=", "value": None}).body == {"match_all": {}}
    with pytest.raises(FilterGrammarError, match="never ordered"):
        haystack_clause({"field": "content", "operator": ">", "value": "a"})
    with pytest.raises(FilterGrammarError, match="takes a string"):
        haystack_clause({"field": "content", "operator": "==", "value": 3})
    with pytest.raises(FilterGrammarError, match="list of strings"):
        haystack_clause({"field": "content", "operator": "in", "value": "a"})
    with pytest.raises(FilterGrammarError, match="meta.<key>, id or content"):
        haystack_clause({"field": "body", "operator": "==", "value": "a"})


def test_metadata_types_are_the_declared_leaves_dotted():
    answer = {
        "docs-v1": {
            "mappings": {
                "properties": {
                    "text": {"type": "text"},
                    "metadata": {
                        "dynamic": "strict",
                        "properties": {
                            "category": {"type": "keyword"},
                            "priority": {"type": "long"},
                            "author": {"properties": {"name": {"type": "keyword"}, "age": {"type": "long"}}},
                        },
                    },
                }
            }
        }
    }
    assert metadata_types(answer) == {
        "category": "keyword",
        "priority": "long",
        "author.name": "keyword",
        "author.age": "long",
    }
    assert metadata_types({"docs-v1": {"mappings": {"properties": {"text": {"type": "text"}}}}}) == {}


def test_values_come_back_in_their_keys_type():
    assert typed(1.0, "long") == 1 and isinstance(typed(1.0, "long"), int)
    assert typed(0.6000000238418579, "float") == 0.6  # float32's widened double, as written
    assert typed(1, "boolean") is True and typed("false", "boolean") is False
    assert typed("A", "keyword") == "A" and typed(None, "long") is None
