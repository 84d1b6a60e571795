"""Partial results on the real node (issue 38 item 6): a shard that fails in a 200, and a collapsed hybrid
page short of the groups its query matched. Each is a notice on the result by default, and an error
(:class:`PartialResultError`; `hybrid search --no-partial-results`: exit 2) where the search allows no
partial results.

A failing shard: the alias also holds an index whose text fields are numbers, so every query of words
fails on its shard ("failed to create query") while the hybrid index's shard answers; the knn leg fails
there too (no knn_vector field). The short page: one document whose six chunks are the best matches of
both legs fills every candidate slot at a depth of 5, so the hybrid query's collapse finds one group of
the seven the query matched (the same query at depth 10 gives five).
"""

from __future__ import annotations

import pytest

from adapter.cli import main
from adapter.errors import PartialResultError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.search import Searcher
from adapter.search.page import Collapse, SearchOptions
from tests.conftest import HashingEmbedder

EMBEDDER = HashingEmbedder(16)
STRICT = SearchOptions(allow_partial_results=False)


@pytest.fixture
def broken_shard(client, index_name):
    """``index_name``: a hybrid index of five documents, and beside it in its alias an index on which every query
    fails."""
    init_index(client, index_name, IndexSpec(EMBEDDER.fingerprint))
    report = Ingestor.open(client, index_name, EMBEDDER, progress=False).ingest(
        [SourceDoc(f"d{i}", f"hola mundo {i}", f"titulo {i}") for i in range(5)]
    )
    assert report.documents == 5 and not report.failures
    other = f"{index_name}-numbers"
    numbers = {field: {"type": "long"} for field in ("text", "title", "all_text", "embedding")}
    client.indices.create(
        index=other,
        body={"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": numbers}},
    )
    client.indices.update_aliases(body={"actions": [{"add": {"index": other, "alias": index_name}}]})
    return index_name


@pytest.mark.parametrize("technique", ["bm25", "dense", "hybrid", "client-rrf"])
def test_a_failed_shard_is_a_notice_and_an_error_where_partial_results_are_not_allowed(client, broken_shard, technique):
    searcher = Searcher.open(client, broken_shard, EMBEDDER)
    result = searcher.search("hola", technique=technique, k=3)
    notices = [n for n in result.notices if n.startswith("partial result: ")]
    assert (
        result.ids
        and notices
        and all("shards failed even when asked again" in n and "failed to create query" in n for n in notices)
    )
    with pytest.raises(
        PartialResultError, match="shards failed even when asked again.*allows no partial results"
    ) as raised:
        searcher.search("hola", technique=technique, k=3, options=STRICT)
    assert raised.value.kind == "shards"


def test_the_command_line_fails_on_a_partial_result_only_when_asked(capsys, opensearch_url, broken_shard):
    code = main(["search", "hola", "--index", broken_shard, "-t", "bm25", "--url", opensearch_url])
    out, _ = capsys.readouterr()
    assert code == 0 and "note: partial result: 1 of 2 shards failed" in out
    code = main(
        ["search", "hola", "--index", broken_shard, "-t", "bm25", "--no-partial-results", "--url", opensearch_url]
    )
    out, err = capsys.readouterr()
    assert code == 2 and not out and "\nerror: partial result: 1 of 2 shards failed" in err  # after the retry's warning


@pytest.fixture
def crowded(client, index_name):
    """One document of six chunks that both legs rank first, and six one-chunk documents below them."""
    init_index(client, index_name, IndexSpec(EMBEDDER.fingerprint))
    rows = [SourceDoc(f"big#{i}", f"alpha beta alpha beta part{i}", parent_id="big", chunk_index=i) for i in range(6)]
    rows += [SourceDoc(f"d{g}", f"alpha gamma delta epsilon {g}") for g in "BCDEFG"]
    report = Ingestor.open(client, index_name, EMBEDDER, progress=False).ingest(rows)
    assert report.chunks == 12 and not report.failures
    return Searcher.open(client, index_name, EMBEDDER)


def test_a_collapsed_hybrid_page_short_of_the_groups_its_query_matched_says_so(crowded):
    if not crowded.caps.hybrid_collapse:
        pytest.skip(f"{crowded.caps.version} has no collapse in the hybrid query (the client collapses the fused list)")
    collapse = SearchOptions(collapse=Collapse())
    short = crowded.search("alpha beta", k=5, depth=5, options=collapse)
    assert short.ids == ["big#0"] and "collapse" in short.request_body
    (notice,) = short.notices
    assert notice.startswith(
        "short collapsed page: 1 of the 5 hits asked for (one per parent_id), though the query matched 7 values"
    )
    with pytest.raises(PartialResultError, match="short collapsed page: 1 of the 5") as raised:
        crowded.search(
            "alpha beta", k=5, depth=5, options=SearchOptions(collapse=Collapse(), allow_partial_results=False)
        )
    assert raised.value.kind == "collapse"
    deeper = crowded.search(
        "alpha beta", k=5, depth=10, options=SearchOptions(collapse=Collapse(), allow_partial_results=False)
    )
    assert len(deeper.ids) == 5 and len({h.source["parent_id"] for h in deeper.hits}) == 5 and not deeper.notices
    # At depth 10 the candidates hold five of the seven groups: the next page is short too; at 20 all seven,
    # and groups 6 and 7 are a last page, not a short one.
    assert any(
        n.startswith("short collapsed page: 0 of the 5")
        for n in crowded.search("alpha beta", k=5, from_=5, depth=10, options=collapse).notices
    )
    last = crowded.search("alpha beta", k=5, from_=5, depth=20, options=collapse)
    assert len(last.ids) == 2 and not last.notices


def test_the_clients_collapse_of_client_rrf_says_so_too(crowded):
    """client-rrf collapses the fused list of both legs' candidates: the same crowding, counted in its _msearch."""
    collapse = SearchOptions(collapse=Collapse())
    short = crowded.search("alpha beta", technique="client-rrf", k=5, depth=5, options=collapse)
    assert short.ids == ["big#0"] or short.ids[0].startswith("big#")
    assert any(
        n.startswith(f"short collapsed page: {len(short.ids)} of the 5 hits") and "matched 7 values" in n
        for n in short.notices
    )
    deeper = crowded.search("alpha beta", technique="client-rrf", k=5, depth=20, options=collapse)
    assert len(deeper.ids) == 5 and not deeper.notices
