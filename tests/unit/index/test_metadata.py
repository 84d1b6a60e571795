"""The metadata the ingest declares (adapter.index.metadata), the contract query of `hybrid check`, and one default
fusion."""

from __future__ import annotations

import pytest

from adapter.index.assets import IndexSpec, load_asset
from adapter.index.catalog import IndexInfo
from adapter.index.check import NO_FINGERPRINT, OTHER_FINGERPRINT, contract_body, contract_problems
from adapter.index.metadata import merge, put_body, undeclared, value_mapping
from adapter.models.fingerprint import EmbeddingFingerprint

pytestmark = pytest.mark.unit
FP = EmbeddingFingerprint("m", "minilm", "abc", 384, True)


def test_values_are_declared_as_dynamic_mapping_with_the_keyword_template_declared_them():
    assert value_mapping("es") == {"type": "keyword"} and value_mapping("2024-01-01") == {"type": "keyword"}
    assert (
        value_mapping(3) == {"type": "long"}
        and value_mapping(2.5) == {"type": "float"}
        and value_mapping(True) == {"type": "boolean"}
    )
    assert value_mapping(["a", "b"]) == {"type": "keyword"} and value_mapping([None, 4]) == {"type": "long"}
    assert value_mapping(None) is None and value_mapping([]) is None and value_mapping({}) is None
    assert value_mapping({"team": "x", "n": 1}) == {
        "type": "object",
        "properties": {"team": {"type": "keyword"}, "n": {"type": "long"}},
    }


def test_only_what_the_mapping_lacks_is_declared_and_the_first_value_decides():
    declared = {"lang": {"type": "keyword"}, "owner": {"properties": {"team": {"type": "keyword"}}}}
    docs = [
        {"lang": "es", "year": 2024, "owner": {"team": "a", "site": "b"}, "empty": None},
        {"year": "not a year", "tags": ["x"], "empty": []},
    ]
    added = undeclared(declared, docs)
    assert added == {
        "year": {"type": "long"},
        "owner": {"type": "object", "properties": {"site": {"type": "keyword"}}},
        "tags": {"type": "keyword"},
        "empty": {"type": "keyword"},
    }  # only empty values: keyword (issue 38)
    assert undeclared(merge(declared, added), docs) == {}
    assert merge(declared, added)["owner"]["properties"] == {"team": {"type": "keyword"}, "site": {"type": "keyword"}}
    assert put_body({"year": {"type": "long"}}) == {
        "properties": {"metadata": {"properties": {"year": {"type": "long"}}}}
    }
    assert undeclared(declared, [{"lang": "en"}]) == {}


def test_the_metadata_component_is_strict_and_has_the_fingerprint_field():
    props = load_asset("mappings", "component-metadata")["template"]["mappings"]["properties"]
    assert props["metadata"] == {"type": "object", "dynamic": "strict"} and props["embedded_by"] == {"type": "keyword"}


def test_the_contract_query_counts_each_problem_over_the_whole_index():
    info = IndexInfo("docs", "docs-v1", FP, stamps_entries=True)
    problems = contract_problems(info)
    assert list(problems) == [
        NO_FINGERPRINT,
        OTHER_FINGERPRINT,
        "no parent_id",
        "no chunk_index",
        "no text",
        "no embedding",
    ]
    assert problems[OTHER_FINGERPRINT]["bool"]["must_not"] == [{"term": {"embedded_by": FP.key}}]
    body = contract_body(info, 5)
    assert body["size"] == 5 and body["track_total_hits"] is True and body["_source"] is False
    # counted over every document, not the listed ones
    assert body["aggs"]["problems"]["filters"]["filters"] == problems
    assert [q["bool"]["_name"] for q in body["query"]["bool"]["should"]] == list(problems)
    older = contract_problems(IndexInfo("docs", "docs-v1", FP))  # made before per-entry fingerprints: only the fields
    assert NO_FINGERPRINT not in older and "no parent_id" in older


def test_python_and_the_cli_default_to_the_same_measured_fusion():
    """Before: IndexSpec made min_max indexes while `hybrid init` made adaptive ones."""
    import argparse

    from adapter.cli.common import add_index_spec_options
    from adapter.fusion.choice.defaults import default_fusion_name

    parser = argparse.ArgumentParser()
    add_index_spec_options(parser)
    assert IndexSpec(FP).default_fusion == default_fusion_name()
    assert (parser.parse_args([]).default_fusion or default_fusion_name()) == IndexSpec(FP).default_fusion


def test_a_list_of_mixed_scalars_is_declared_keyword_so_it_reads_back_as_written():
    from adapter.index.metadata import value_mapping

    assert value_mapping([1, "a"]) == {"type": "keyword"}  # the first element (long) would refuse "a"
    assert value_mapping(["a", 1, True]) == {"type": "keyword"}
    assert value_mapping([True, 1]) == {"type": "keyword"}
    assert value_mapping([1, 2.5]) == {"type": "float"}  # numbers: a long would keep 2.5 as 2 for filters
    assert value_mapping([None, 3]) == {"type": "long"}
    assert value_mapping([[1], ["a"]]) == {"type": "keyword"}


def test_metadata_the_index_cannot_hold_as_written_is_named():
    from adapter.index.metadata import metadata_problem

    assert metadata_problem({"lang": "es", "tags": [1, "a"], "author": {"name": "x"}}) is None
    assert "'metadata'" in metadata_problem({"metadata": {"a": 1}})
    problem = metadata_problem({"tags": [{"a": 1}, "b"]})
    assert "'tags'" in problem and "objects and plain values" in problem
    assert "'author.roles'" in metadata_problem({"author": {"roles": ["x", {"y": 1}]}})
