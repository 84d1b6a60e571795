"""What the framework components share, without a framework: filters, rows, ids, hit metadata."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from adapter.errors import InputError
from adapter.fusion import RRF, Combination, Normalization, ScoreNormalization, ScoreSum
from adapter.fusion.dbsf import DBSF
from adapter.integrations._common import (
    FrameworkRow,
    adapter_filters,
    content_id,
    hit_info,
    hit_metadata,
    raise_on_failures,
    relevance,
    source_rows,
    split_title,
)
from adapter.ingest.sources import RowError, SourceDoc
from adapter.fusion.base import FusedBy, LegScore
from adapter.search.results import Hit, SearchResult, Technique
from adapter.ingest.report import IngestReport, ItemFailure

pytestmark = pytest.mark.unit


def test_haystack_filters_become_the_adapters():
    assert adapter_filters(None) is None
    assert adapter_filters({"lang": "es"}) == {"lang": "es"}
    assert adapter_filters({"field": "meta.lang", "operator": "==", "value": "es"}) == {"lang": "es"}
    both = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.category", "operator": "in", "value": ["a", "b"]},
            {"field": "meta.year", "operator": ">=", "value": 2020},
            {"field": "meta.year", "operator": "<", "value": 2025},
            {"operator": "AND", "conditions": [{"field": "parent_id", "operator": "==", "value": "d1"}]},
        ],
    }
    assert adapter_filters(both) == {"category": ["a", "b"], "year": {"gte": 2020, "lt": 2025}, "parent_id": "d1"}
    for refused, match in (
        ({"operator": "OR", "conditions": []}, "only AND"),
        ({"operator": "NOT", "conditions": []}, "only AND"),
        ({"field": "meta.lang", "operator": "!=", "value": "es"}, "'!=' on 'meta.lang' is not supported"),
        ({"field": "meta.lang", "operator": "in", "value": "es"}, "needs a list"),
        (
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.a", "operator": "==", "value": 1},
                    {"field": "meta.a", "operator": "==", "value": 2},
                ],
            },
            "two conditions",
        ),
    ):
        with pytest.raises(InputError, match=match):
            adapter_filters(refused)


def test_llamaindex_style_filters_become_the_adapters():
    """MetadataFilters as duck types (attributes filters/condition; key/operator/value with enum values)."""
    op = lambda v: SimpleNamespace(value=v)  # noqa: E731
    filters = SimpleNamespace(
        condition=op("and"),
        filters=[
            SimpleNamespace(key="lang", operator=op("=="), value="es"),
            SimpleNamespace(key="n", operator=op("<="), value=3),
        ],
    )
    assert adapter_filters(filters) == {"lang": "es", "n": {"lte": 3}}
    with pytest.raises(InputError, match="only AND"):
        adapter_filters(SimpleNamespace(condition=op("or"), filters=[]))
    with pytest.raises(InputError, match="'text_match'"):
        adapter_filters(
            SimpleNamespace(
                condition=op("and"), filters=[SimpleNamespace(key="t", operator=op("text_match"), value="x")]
            )
        )


def test_rows_are_checked_as_the_readers_check_a_file():
    rows = list(
        source_rows(
            FrameworkRow(*r)
            for r in [
                ("a", "text a", "Title", {"lang": "es"}),
                ("b", "", "", None),
                (None, "x", "", None),
                ("a", "again", "", None),
                ("c", "ok", None, "not a mapping"),
            ]
        )
    )
    assert rows[0] == SourceDoc("a", "text a", "Title", {"lang": "es"}, 1)
    assert isinstance(rows[1], RowError) and rows[1].line == 2 and "no text" in rows[1].reason and rows[1].id == "b"
    assert isinstance(rows[2], RowError) and "no value in id field" in rows[2].reason
    assert isinstance(rows[3], RowError) and "duplicate id 'a' (first on line 1)" in rows[3].reason
    assert isinstance(rows[4], RowError) and "metadata must be a mapping" in rows[4].reason


def test_ids_from_content_are_stable_and_titles_travel_in_metadata():
    assert content_id("t", "T", {"a": 1, "b": 2}) == content_id("t", "T", {"b": 2, "a": 1})
    assert content_id("t", "T", {}) != content_id("t", "", {}) and len(content_id("t", "", {})) == 32
    assert split_title({"title": "T", "lang": "es"}) == ("T", {"lang": "es"})
    assert split_title(None) == ("", {})
    # a title that is not a string is metadata like any other, read back as written (42 stays 42, None stays None)
    assert split_title({"title": None, "lang": "es"}) == ("", {"title": None, "lang": "es"})
    assert split_title({"title": 42}) == ("", {"title": 42})


def test_a_hits_metadata_is_what_was_written_and_the_adapters_fields_come_apart():
    legs = (LegScore("bm25", 2, 3.1, 0.5, 0.3, 0.15), LegScore("dense", 1, 0.9, 1.0, 0.7, 0.7))
    hit = Hit(
        "d#1",
        0.85,
        {"metadata": {"lang": "es", "rank": "user's"}, "parent_id": "d", "chunk_index": 1},
        rank=1,
        legs=legs,
        title="T",
        text="x",
    )
    result = SearchResult(
        "q", Technique.HYBRID, (hit,), FusedBy.SERVER_PIPELINE, ScoreNormalization(), pipeline="docs-adaptive"
    )
    assert hit_metadata(hit) == {"lang": "es", "rank": "user's", "title": "T"}  # the user's own "rank" is theirs
    assert hit_metadata(Hit("e", 1.0, {"metadata": {"a": 1}})) == {"a": 1}  # no title: none added
    assert hit_info(hit, result).as_dict() == {
        "id": "d#1",
        "parent_id": "d",
        "chunk_index": 1,
        "score": 0.85,
        "relevance": 0.85,
        "rank": 1,
        "fused_by": "server:docs-adaptive",
        "legs": [
            {"leg": "bm25", "rank": 2, "raw_score": 3.1, "normalized_score": 0.5, "weight": 0.3, "contribution": 0.15},
            {"leg": "dense", "rank": 1, "raw_score": 0.9, "normalized_score": 1.0, "weight": 0.7, "contribution": 0.7},
        ],
        "query_id": None,
    }


@pytest.mark.parametrize(
    "fusion,score,expected",
    [
        (RRF(), 2 / 61, 1.0),  # first in both legs: the best an RRF score can be
        (RRF(), 1 / 61, 0.5),  # first in one leg only
        (RRF(rank_constant=10, weights=(0.3, 0.7)), 0.3 / 11 + 0.7 / 12, 0.3 + 0.7 * 11 / 12),
        (ScoreNormalization(), 0.75, 0.75),
        (ScoreNormalization(Normalization.L2, Combination.HARMONIC_MEAN), 1.0000001, 1.0),
        (ScoreNormalization(Normalization.Z_SCORE), 3.0, 0.75),  # s / (1 + s)
        (ScoreSum(), 5.2, 5.2 / 6.2),
        (DBSF(), 1.5, 0.75),  # over the sum of the weights
    ],
)
def test_every_fusion_maps_its_score_into_zero_one(fusion, score, expected):
    hit = Hit("a", score)
    assert relevance(hit, SearchResult("q", Technique.HYBRID, (hit,), FusedBy.CLIENT, fusion)) == pytest.approx(
        expected
    )


def test_single_legs_reranks_and_mmr_map_into_zero_one():
    def rel(hit, technique):
        return relevance(hit, SearchResult("q", technique, (hit,)))

    assert rel(Hit("a", 0.93), Technique.DENSE) == pytest.approx(0.93)  # the engine's (1 + cosine) / 2
    assert rel(Hit("a", 4.0), Technique.BM25) == pytest.approx(0.8)
    assert rel(Hit("a", 0.0, rerank_score=0.0), Technique.BM25) == pytest.approx(0.5)  # the logistic of a logit
    assert rel(Hit("a", -0.2, first_stage_score=4.0, mmr_score=-0.2), Technique.BM25) == pytest.approx(0.8)


def test_failed_rows_are_named_once_the_others_landed():
    report = IngestReport(
        1,
        1,
        (ItemFailure("b", "no text in field 'text'", line=2, source="input"),),
        1,
        0,
        0.1,
        0.05,
        0.05,
        failures_file="f.jsonl",
    )
    with pytest.raises(
        InputError, match=r"add_texts: 1 of 2 documents did not land \(the others did\): b: no text.*f\.jsonl"
    ):
        raise_on_failures(report, "add_texts", 2)
    raise_on_failures(IngestReport(2, 2, (), 2, 0, 0.1, 0.05, 0.05), "add_texts", 2)


@pytest.mark.parametrize(
    "module,package,extra",
    [
        ("haystack", "haystack", "haystack"),
        ("llamaindex", "llama_index", "llamaindex"),
        ("langchain", "langchain_core", "langchain"),
    ],
)
def test_a_missing_framework_names_its_extra(module, package, extra):
    import subprocess
    import sys

    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "from adapter.errors import ConfigurationError\n"
        f"try:\n    import adapter.integrations.{module}\nexcept ConfigurationError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # this clone's line (issue 32)
    assert f"install -c constraints.txt -e '.[{extra}]'" in out.stdout, out.stdout + out.stderr


def test_llamaindex_filters_become_one_clause_with_the_meanings_of_llamaindexs_own_store():
    from adapter.integrations._filters import FilterGrammarError, llamaindex_clause

    def f(key, value, operator="=="):
        return SimpleNamespace(key=key, value=value, operator=operator)

    def filters(*items, condition="and"):
        return SimpleNamespace(filters=list(items), condition=condition)

    clause = llamaindex_clause(
        filters(f("topic", "a"), filters(f("year", 2020, ">="), f("tags", ["x", "y"], "all"), condition="or"))
    )
    assert clause.fields == ("metadata.topic", "metadata.year", "metadata.tags")
    assert clause.body == {
        "bool": {
            "filter": [
                {"term": {"metadata.topic": "a"}},
                {
                    "bool": {
                        "should": [
                            {"range": {"metadata.year": {"gte": 2020}}},
                            {"bool": {"filter": [{"term": {"metadata.tags": "x"}}, {"term": {"metadata.tags": "y"}}]}},
                        ],
                        "minimum_should_match": 1,
                    }
                },
            ]
        }
    }
    # NOT: none of its filters holds (LlamaIndex's reading), and != / nin also match an entry without the key.
    assert llamaindex_clause(filters(f("a", 1), f("b", 2), condition="not")).body == {
        "bool": {
            "must_not": [
                {
                    "bool": {
                        "filter": [
                            {
                                "bool": {
                                    "should": [{"term": {"metadata.a": 1}}, {"term": {"metadata.b": 2}}],
                                    "minimum_should_match": 1,
                                }
                            }
                        ]
                    }
                }
            ]
        }
    }
    assert llamaindex_clause(filters(f("a", ["x"], "nin"))).body == {
        "bool": {"filter": [{"bool": {"must_not": [{"terms": {"metadata.a": ["x"]}}]}}]}
    }
    assert llamaindex_clause(filters(f("a", None, "is_empty"))).body["bool"]["filter"][0]["bool"]["should"][1] == {
        "term": {"metadata.a": ""}
    }
    with pytest.raises(FilterGrammarError, match="text_match"):
        llamaindex_clause(filters(f("a", "x", "text_match")))
    with pytest.raises(FilterGrammarError, match="'in' on 'meta.a' takes a list"):
        llamaindex_clause(filters(f("a", "x", "in")))
