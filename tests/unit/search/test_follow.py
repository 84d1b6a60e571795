"""A searcher whose alias moved (a migration swapped it) follows it and never mixes models (no cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.catalog import IndexInfo
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import IndexMismatchError
from adapter.fusion import ScoreNormalization
from adapter.search import Searcher
from adapter.testing import FakeClient
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.engines.opensearch.capabilities import opensearch_capabilities

OLD = EmbeddingFingerprint("old", "test:old", "aa", 4, True)
NEW = EmbeddingFingerprint("new", "test:new", "bb", 4, True)
CAPS = opensearch_capabilities("2.19.1")
FUSION = ScoreNormalization(weights=(0.5, 0.5))


class Fixed:
    def __init__(self, fp, value):
        self.fingerprint, self.dimension, self.normalized, self.value = fp, 4, True, value
        self.queries = 0

    def embed_query(self, text):
        self.queries += 1
        return np.array([self.value, 0, 0, 0], dtype=np.float32)


def _index(fp, name):
    spec = IndexSpec(fp)
    mapping = OPENSEARCH.render_mapping(IndexNames("docs"), spec)
    return {
        name: {
            "mappings": mapping,
            "settings": {"index": {"search": {"default_pipeline": "docs-min_max-arithmetic_mean"}}},
        }
    }


def _client(new_fp):
    pipeline = OPENSEARCH.render_pipeline(FUSION, CAPS)
    answers = [
        # the alias moved
        {"took": 1, "hits": {"hits": [{"_index": "docs-v2", "_id": "a", "_score": 1.0, "_source": {}}]}},
        {"took": 1, "hits": {"hits": [{"_index": "docs-v2", "_id": "a", "_score": 1.0, "_source": {}}]}},
    ]
    return FakeClient(
        {
            "POST */_search": answers,
            "HEAD */_alias*": True,
            "GET */_alias*": {"docs-v2": {"aliases": {"docs": {}}}},
            "GET /docs": _index(new_fp, "docs-v2"),  # read_index_info: the alias and its index in one request
            "GET /docs-v2": _index(new_fp, "docs-v2"),
            "* /_search/pipeline/*": lambda call: {call.path.rsplit("/", 1)[-1]: pipeline},
        }
    )


def _searcher(client, embedder=None):
    """A searcher of alias docs as it was opened: on docs-v1, built with OLD (``embedder``: given, else the index's)."""
    return Searcher(
        client, IndexInfo("docs", "docs-v1", OLD, default_pipeline="docs-min_max-arithmetic_mean"), CAPS, embedder
    )


def test_a_moved_alias_with_another_model_is_followed_with_that_model(monkeypatch):
    import adapter.search.state

    old, new = Fixed(OLD, 1.0), Fixed(NEW, -1.0)
    monkeypatch.setattr(
        adapter.search.state, "load_index_embedder", lambda spec, **_: {"test:old": old, "test:new": new}[spec]
    )
    client = _client(NEW)
    searcher = _searcher(client)
    result = searcher.search("q")
    assert result.ids == ["a"] and searcher.info.index == "docs-v2" and searcher.info.fingerprint == NEW
    first, second = [c for c in client.calls_to("POST */_search") if "hybrid" in c.body.get("query", {})]
    vector = lambda call: call.body["query"]["hybrid"]["queries"][1]["knn"]["embedding"]["vector"]  # noqa: E731
    assert vector(first)[0] == 1.0 and vector(second)[0] == -1.0  # asked again with the new model's vector
    assert old.queries == 1 and new.queries == 1


def test_a_given_embedder_is_not_swapped_behind_the_callers_back():
    client = _client(NEW)
    searcher = _searcher(client, Fixed(OLD, 1.0))
    with pytest.raises(IndexMismatchError, match="moved from docs-v1 to docs-v2, built with new.*Open a new searcher"):
        searcher.search("q")


def test_the_same_model_behind_a_moved_alias_is_followed_quietly():
    client = _client(OLD)
    searcher = _searcher(client, Fixed(OLD, 1.0))
    assert searcher.search("q").ids == ["a"] and searcher.info.index == "docs-v2"


def test_beside_the_empty_shard_a_dimension_refused_by_one_shard_is_followed_too(monkeypatch):
    """Searched beside the empty shard, the moved index refusing the old model's vector is a failed
    shard of a 200 (the empty shard answers), not a 400: it was taken for a partial answer, asked again,
    then returned with no hits (tests/integration/test_concurrent_searches.py, 1 run in 2)."""
    import adapter.search.state

    old, new = Fixed(OLD, 1.0), Fixed(NEW, -1.0)
    monkeypatch.setattr(
        adapter.search.state, "load_index_embedder", lambda spec, **_: {"test:old": old, "test:new": new}[spec]
    )
    refused = {
        "took": 1,
        "_shards": {
            "total": 2,
            "successful": 1,
            "failed": 1,
            "failures": [
                {
                    "shard": 0,
                    "index": "docs-v2",
                    "reason": {
                        "type": "illegal_argument_exception",
                        "reason": "Query vector has invalid dimension: 4. Dimension should be: 8",
                    },
                }
            ],
        },
        "hits": {"hits": []},
    }
    client = _client(NEW)
    # the hybrid beside the empty shard (taken as there: no check first)
    client.server.answers["POST */_search"] = [
        refused,
        {"took": 1, "hits": {"hits": [{"_index": "docs-v2", "_id": "a", "_score": 1.0, "_source": {}}]}},
    ]
    searcher = _searcher(client)
    result = searcher.search("q")
    assert result.ids == ["a"] and searcher.info.index == "docs-v2" and not result.notices
