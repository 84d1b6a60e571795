"""What a search cannot serve is said before or instead of sending it: a page past the end, a filter on a field the
index lacks, a query over the server's clause limit (issue 10 item 7)."""

from __future__ import annotations

import pytest

from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.errors import InputError
from adapter.index.catalog import IndexInfo
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.testing import FakeClient, Reply

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
INFO = IndexInfo("docs", "docs-v1", FP)


# -- 7. search: past the last page, a filter on a field the index lacks, a query over the clause limit --
def paged_searcher(answers):
    from adapter.search import Searcher

    from tests.support.embedders import UnitEmbedder
    from tests.unit.search.test_shell import pipelines
    from adapter.fusion import ScoreNormalization

    client = FakeClient({"* /_search/pipeline/*": pipelines(ScoreNormalization()), **answers})
    return client, Searcher(client, INFO, opensearch_capabilities("2.19.1"), UnitEmbedder())


def test_a_hybrid_page_past_the_end_agrees_with_client_rrf_and_says_why():
    reason = "Reached end of search result, increase pagination_depth value to see more results"
    past_end = Reply(
        400,
        {
            "error": {
                "root_cause": [],
                "type": "search_phase_execution_exception",
                "reason": "The phase has failed",
                "caused_by": {"type": "illegal_argument_exception", "reason": reason},
            },
            "status": 400,
        },
    )
    legs = {"responses": [{"hits": {"hits": [{"_id": f"d{i}", "_score": 1.0 / (i + 1)} for i in range(5)]}}] * 2}
    empty_shard = {"took": 0, "hits": {"hits": []}}  # the empty shard's check, then every hybrid past the end
    _, s = paged_searcher(
        {"POST */_search": [empty_shard, past_end], "POST */_msearch": legs, "POST */_mget": {"docs": []}}
    )
    hybrid = s.search("hola", k=10, from_=50, depth=20)
    client_rrf = s.search("hola", technique="client-rrf", k=10, from_=50, depth=20)
    assert hybrid.hits == () and client_rrf.hits == ()
    for result in (hybrid, client_rrf):
        (notice,) = result.notices
        assert "page starting at 50 is past the end of the fused results" in notice and "depth" in notice


def test_a_filter_on_a_field_the_index_lacks_is_named_when_nothing_matches():
    mapping = {
        "docs-v1": {
            "mappings": {
                "properties": {
                    "text": {"type": "text"},
                    "parent_id": {"type": "keyword"},
                    "metadata": {"properties": {"lang": {"type": "keyword"}}},
                }
            }
        }
    }
    _, s = paged_searcher({"POST */_search": {"hits": {"hits": []}}, "GET */_mapping": mapping})
    result = s.search("hola", technique="bm25", filters={"lnag": "es", "lang": "es"})
    (notice,) = result.notices
    assert "'lnag'" in notice and "metadata.lnag" in notice and "not in the mapping" in notice and "lang" in notice
    assert s.search("hola", technique="bm25", filters={"lang": "es"}).notices == ()


def test_a_query_over_the_servers_clause_limit_is_refused_before_sending():
    settings = {"defaults": {"indices": {"query": {"bool": {"max_clause_count": "1024"}}}}}
    client, s = paged_searcher({"GET /_cluster/settings": settings, "POST */_search": {"hits": {"hits": []}}})
    fits = " ".join(f"w{i}" for i in range(512))  # 512 words x 2 fields = 1024 clauses: the server takes it
    s.search(fits, technique="bm25")
    with pytest.raises(InputError, match=r"513 distinct words.*2 text fields.*1026 clauses.*max_clause_count.*1024"):
        s.search(fits + " w512", technique="bm25")
    assert len(client.calls_to("POST */_search")) == 1 and len(client.calls_to("GET /_cluster/settings")) == 1
