"""The one pager behind documents.find / documents.ids and the stale-chunk finder (adapter.ingest.by_id.
hits_in_chunk_order): every hit once, in (parent_id, chunk_index) order, across pages, on the fake engine's port."""

from __future__ import annotations

import pytest

from adapter.index.documents import CHUNK_FIELD, PARENT_FIELD
from adapter.ingest.by_id import hits_in_chunk_order
from tests.support.fake_engine.cluster import FakeCluster

pytestmark = pytest.mark.unit

# (parent_id, chunk_index) written out of order: the pages come back sorted.
CHUNKS = [("b", 1), ("a", 0), ("c", 0), ("b", 0), ("a", 1)]
IN_ORDER = [f"{p}#{c}" for p, c in sorted(CHUNKS)]


def _cluster() -> FakeCluster:
    cluster = FakeCluster()
    cluster.create_index("docs", {})
    actions = [
        {"_index": "docs", "_id": f"{p}#{c}", "_source": {PARENT_FIELD: p, CHUNK_FIELD: c, "text": f"{p} {c}"}}
        for p, c in CHUNKS
    ]
    assert not list(cluster.bulk(actions))
    return cluster


@pytest.mark.parametrize(("page_size", "searches"), [(2, 3), (5, 2), (6, 1)])
def test_every_hit_once_in_chunk_order_a_short_page_ends_it(page_size, searches):
    cluster = _cluster()
    calls = []
    search = cluster.search

    def counted(index, body, **options):
        calls.append(dict(body))
        return search(index, body, **options)

    cluster.search = counted  # type: ignore[method-assign]
    hits = list(hits_in_chunk_order(cluster, "docs", {"match_all": {}}, False, page_size, "reading docs"))
    assert [h["_id"] for h in hits] == IN_ORDER and all("_source" not in h for h in hits)
    # a full page asks for the next, after its last hit; a short one (5 hits in pages of 5: an empty one) ends it
    assert len(calls) == searches and "search_after" not in calls[0]
    assert [c["search_after"] for c in calls[1:]] == [hits[i * page_size - 1]["sort"] for i in range(1, searches)]
