"""An index whose ``_meta`` was edited by hand is named with the key and the way back, never a
traceback and never a search that quietly loses a leg (issue 33, items 5 and 6). On the port-level
fake: the subject is how the adapter reads ``_meta``, not the server."""

from __future__ import annotations

from typing import Any

import pytest

from adapter.errors import IndexMismatchError
from adapter.admin.calibrate import store_adaptive
from adapter.fusion.choice.policy import Calibration
from adapter.index.assets import IndexSpec
from adapter.index.catalog import index_meta
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.engines.dsl import TextLeg
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster
from tests.unit.engines.test_fake_engine import DOCS

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(16)


def tampered(key: str, value: Any, **spec: Any) -> FakeCluster:
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint, **spec))
    Ingestor.open(cluster, "docs", EMBEDDER, progress=False).ingest(DOCS)
    meta = index_meta(cluster, "docs-v1")
    meta[key] = value
    cluster.put_mapping("docs-v1", {"_meta": meta})
    return cluster


@pytest.mark.parametrize("value", ["x", [1, 2], 3, True])
def test_an_adaptive_meta_that_is_not_an_object_is_named_not_a_traceback(value):
    cluster = tampered("adaptive", value, default_fusion="adaptive")
    with pytest.raises(
        IndexMismatchError, match=r"docs-v1's _meta.adaptive is (a|an) \w+, not an object.*hybrid calibrate"
    ):
        Searcher.open(cluster, "docs", EMBEDDER)


def test_calibrate_writes_a_tampered_adaptive_meta_anew():
    cluster = tampered("adaptive", "x", default_fusion="adaptive")
    store_adaptive(cluster, "docs", calibration=Calibration(0.7, 10))
    assert Searcher.open(cluster, "docs", EMBEDDER).search("refund order", technique="hybrid").hits


@pytest.mark.parametrize("fields, named", [(["nope"], "'nope'"), (["title^2", "body"], "'body'"), ("text", "a str")])
def test_query_fields_naming_a_missing_field_are_named_before_bm25_silently_matches_nothing(fields, named):
    cluster = tampered("query_fields", fields)
    with pytest.raises(IndexMismatchError, match=rf"docs-v1's _meta.query_fields .*{named}.*hybrid init"):
        Searcher.open(cluster, "docs", EMBEDDER)


def test_text_fields_given_by_the_caller_stand_instead_of_the_tampered_ones():
    cluster = tampered("query_fields", ["nope"])
    result = Searcher.open(cluster, "docs", EMBEDDER, text_leg=TextLeg(("title", "text"))).search(
        "refund", technique="bm25"
    )
    assert [h.id for h in result.hits][:1] == ["refund"]


def test_init_with_the_spec_writes_the_query_fields_back():
    cluster = tampered("query_fields", ["nope"])
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    assert [h.id for h in Searcher.open(cluster, "docs", EMBEDDER).search("refund", technique="bm25").hits][:1] == [
        "refund"
    ]


@pytest.mark.parametrize(
    "key, value",
    [
        ("query_fields", 7),
        ("query_fields", []),
        ("text_fields", "text"),
        ("text_fields", [1]),
        ("default_fusion", 3),
        ("default_fusion", {"rrf": 1}),
    ],
)
def test_every_tampering_names_its_key(key, value):
    with pytest.raises(IndexMismatchError, match=rf"docs-v1's _meta.{key} is "):
        Searcher.open(tampered(key, value), "docs", EMBEDDER)


def test_a_fast_path_check_this_version_cannot_read_is_not_taken():
    # Not a problem: the kept check only earns a faster path (adapter.search.fast_path), and an unreadable one is not
    # taken.
    assert Searcher.open(tampered("fast_path", "x"), "docs", EMBEDDER).state.fast_path is None


# -- issue 38: an object _meta.adaptive of the wrong shape was read as the default policy without a word -------------
@pytest.mark.parametrize(
    "value, named",
    [
        (None, r"is null, not an object"),
        ({"weights": "abc"}, r"has 'weights', which it never holds"),
        ({"policy": None}, r"holds 'policy' as null, not an object"),
        ({"calibration": "x"}, r"holds 'calibration' as a str, not an object"),
        ({"policy": {"name": "adaptive", "weights": "abc"}}, r"cannot be read"),
    ],
    ids=["null", "unknown key", "null policy", "string calibration", "malformed policy"],
)
def test_an_adaptive_meta_of_the_wrong_shape_inside_is_named(value, named):
    cluster = tampered("adaptive", value, default_fusion="adaptive")
    with pytest.raises(IndexMismatchError, match=rf"docs-v1's _meta.adaptive {named}.*hybrid calibrate"):
        Searcher.open(cluster, "docs", EMBEDDER)


def test_a_calibrated_adaptive_meta_has_no_problem():
    cluster = tampered("query_fields", ["title", "text"], default_fusion="adaptive")
    store_adaptive(cluster, "docs", calibration=Calibration(0.7, 10))
    assert Searcher.open(cluster, "docs", EMBEDDER).search("refund order", technique="hybrid").hits
