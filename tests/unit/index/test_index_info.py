"""IndexInfo.from_index on a few ``GET <index>`` answers: what it reads, its defaults and its errors (in order)."""

from __future__ import annotations

from typing import Any

import pytest

from adapter.errors import ConfigurationError, IndexMismatchError, InputError
from adapter.index.catalog import DEFAULT_MAX_WINDOW, IndexInfo

FP = {
    "model": "m",
    "spec": "m",
    "weights_sha256": "0" * 64,
    "dimension": 3,
    "normalized": True,
    "query_prefix": "query: ",
    "passage_prefix": "passage: ",
}


def body(meta: dict[str, Any], props: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    return {"mappings": {"_meta": meta, "properties": {"embedding": {}} if props is None else props}, **rest}


def test_a_bare_index_gets_the_defaults():
    info = IndexInfo.from_index("a", "a-v1", body({"embedding": FP}))
    assert info.fingerprint.dimension == 3 and info.fingerprint.query_prefix == "query: "
    assert (info.alias, info.index, info.vector_field) == ("a", "a-v1", "embedding")
    assert info.text_fields == info.query_fields == ("title", "text")
    assert (info.max_window, info.default_pipeline, info.schema, info.shards) == (DEFAULT_MAX_WINDOW, None, 1, 1)
    assert (info.default_fusion, info.adaptive, info.fast_path, info.relevance) == (None, None, None, None)
    assert (info.metadata_fields, info.metadata_strict, info.stamps_entries, info.problems) == ({}, False, False, {})


def test_every_part_is_read():
    meta = {
        "embedding": FP,
        "vector_field": "vec",
        "text_fields": ["body"],
        "query_fields": ["body^2"],
        "adapter_schema": 3,
        "default_fusion": "adaptive",
        "fast_path": {"k": 1},
        "relevance": {"r": 2},
    }
    props = {
        "vec": {},
        "embedded_by": {},
        "metadata": {"dynamic": "Strict", "properties": {"lang": {"type": "keyword"}}},
    }
    settings = {"index": {"max_result_window": "500", "number_of_shards": "2", "search": {"default_pipeline": "p"}}}
    info = IndexInfo.from_index("a", "a-v2", body(meta, props, settings=settings))
    assert (info.vector_field, info.text_fields, info.query_fields) == ("vec", ("body",), ("body^2",))
    assert (info.max_window, info.default_pipeline, info.schema, info.shards) == (500, "p", 3, 2)
    assert (info.default_fusion, info.fast_path, info.relevance) == ("adaptive", {"k": 1}, {"r": 2})
    assert info.metadata_fields == {"lang": {"type": "keyword"}} and info.metadata_strict and info.stamps_entries


def test_defaults_fill_the_window_and_none_pipeline_is_none():
    rest = {"settings": {"index.search.default_pipeline": "_none"}, "defaults": {"index": {"max_result_window": 70}}}
    info = IndexInfo.from_index("a", "a-v1", body({"embedding": FP}, **rest))
    assert (info.max_window, info.default_pipeline) == (70, None)
    meta = {"embedding": FP, "fast_path": {}, "relevance": [], "adaptive": {}}
    info = IndexInfo.from_index("a", "a-v1", body(meta, {"embedding": {}, "metadata": {"dynamic": False}}))
    assert (info.fast_path, info.relevance, info.adaptive, info.metadata_strict) == (None, None, None, True)


def test_errors_come_in_order():
    with pytest.raises(
        ConfigurationError, match=r"^index 'a-v1' has no _meta.embedding fingerprint; was it created by"
    ):
        IndexInfo.from_index("a", "a-v1", body({}, {}))
    with pytest.raises(IndexMismatchError, match=r"^index 'a-v1' has no vector field 'vec'; it cannot serve dense"):
        IndexInfo.from_index("a", "a-v1", body({"embedding": FP, "vector_field": "vec"}))
    with pytest.raises(InputError, match="lacks 'spec'"):  # the fingerprint before the numbers
        IndexInfo.from_index("a", "a-v1", body({"embedding": {"model": "m"}}, settings={"max_result_window": "x"}))
    with pytest.raises(ValueError, match="'x'"):  # the window before the schema and the shards
        bad = body(
            {"embedding": FP, "adapter_schema": "y"}, settings={"max_result_window": "x", "number_of_shards": "z"}
        )
        IndexInfo.from_index("a", "a-v1", bad)
    with pytest.raises(ValueError, match="'y'"):
        IndexInfo.from_index(
            "a", "a-v1", body({"embedding": FP, "adapter_schema": "y"}, settings={"number_of_shards": "z"})
        )
