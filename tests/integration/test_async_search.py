"""The asyncio API on a real node: AsyncSearcher over AsyncOpenSearch / AsyncElasticsearch finds what
the sync Searcher finds (same ids, same order, same fusion), alone and with many searches at once
on one event loop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from adapter.engines import cluster_for, engine_name
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.sources import FieldMap, read_source
from adapter.search import Searcher
from adapter.search.async_searcher import AsyncSearcher
from tests.integration.test_search import support  # noqa: F401  (fixture: the Spanish support documents)

pytestmark = [pytest.mark.integration, pytest.mark.engine("opensearch", "elasticsearch")]
TECHNIQUES = ("bm25", "dense", "hybrid", "client-rrf")
QUERIES = ("devoluciones y reembolsos", "error E-4012", "cómo cambio mi contraseña")


def async_client(client, url):
    """The asyncio client of the session's engine, from the same URL."""
    if engine_name(client) == "elasticsearch":
        from adapter.engines.elasticsearch.async_client import connect_elasticsearch_async

        return connect_elasticsearch_async(url)
    from adapter.engines.opensearch.async_client import connect_async

    return connect_async(url)


def ranked(result):
    return [h.id for h in result.hits], result.technique, result.fused_by


def test_async_hits_equal_sync_hits_for_every_technique(client, opensearch_url, support, e5):
    searcher = Searcher.open(client, support, e5)
    vectors = {q: e5.embed_query(q) for q in QUERIES}  # the async searcher embeds each query itself
    wanted = {
        (q, t): ranked(searcher.search(q, technique=t, k=5, query_vector=vectors[q]))
        for q in QUERIES
        for t in TECHNIQUES
    }

    async def run():
        aclient = async_client(client, opensearch_url)
        try:
            asearcher = await AsyncSearcher.open(aclient, support, e5)
            return {(q, t): ranked(await asearcher.search(q, technique=t, k=5)) for q in QUERIES for t in TECHNIQUES}
        finally:
            await aclient.close()

    got = asyncio.run(run())
    assert all(ids for ids, _, _ in wanted.values())
    assert got == wanted


def test_many_async_searches_at_once_on_one_loop(client, opensearch_url, support, e5, caplog):
    """32 searches gathered on one loop answer what each answers alone (the query vectors given: the
    searches wait on the node only), and each sends its requests under its own X-Opaque-Id."""
    searcher = Searcher.open(client, support, e5)
    vectors = {q: e5.embed_query(q) for q in QUERIES}
    queries = [(QUERIES[i % len(QUERIES)], TECHNIQUES[i % len(TECHNIQUES)]) for i in range(32)]
    wanted = {(q, t): ranked(searcher.search(q, technique=t, k=5, query_vector=vectors[q])) for q, t in set(queries)}

    async def run():
        aclient = async_client(client, opensearch_url)
        try:
            asearcher = await AsyncSearcher.open(aclient, support, e5)
            results = await asyncio.gather(
                *(asearcher.search(q, technique=t, k=5, query_vector=vectors[q]) for q, t in queries)
            )
        finally:
            await aclient.close()
        return results

    caplog.set_level(logging.DEBUG, logger="adapter.requests")
    results = asyncio.run(run())
    assert [ranked(r) for r in results] == [wanted[q] for q in queries]
    lines = [r.getMessage() for r in caplog.records if r.name == "adapter.requests"]
    # the search requests (the stored pipeline's fusion, read once per searcher, and the check that the
    # empty shard answers, are not among a result's requests)
    ids = [
        line.rsplit(" id=", 1)[1]
        for line in lines
        if " id=hybrid-" in line
        and "/_search/pipeline/" not in line
        and "POST /hybrid-empty-shard/_search " not in line
    ]
    per_search = sorted(ids.count(i) for i in set(ids))
    assert per_search == sorted(r.requests for r in results)  # 32 ids, each on exactly its own search's requests


def test_async_ingest_writes_what_the_sync_one_writes(
    client, opensearch_url, index_name, e5, support_docs_path, caplog
):
    """AsyncIngestor (async_streaming_bulk over the asyncio client) lands every row, bad rows reported as the sync
    ingestor reports them; the index then answers the sync searcher as one the sync ingestor wrote."""
    from adapter.ingest.async_ingestor import AsyncIngestor
    from adapter.ingest.sources import RowError

    caplog.set_level(logging.DEBUG, logger="adapter.requests")
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    rows = [*read_source(support_docs_path, FieldMap(metadata=("category", "lang"))), RowError(99, "not JSON", None)]

    async def run():
        aclient = async_client(client, opensearch_url)
        try:
            return await (await AsyncIngestor.open(aclient, index_name, e5, bulk_batch_size=5)).ingest(rows)
        finally:
            await aclient.close()

    report = asyncio.run(run())
    assert (report.documents, report.chunks, [f.line for f in report.failures]) == (12, 12, [99])
    assert cluster_for(client).count(index_name) == 12
    bulks = [r.getMessage() for r in caplog.records if r.name == "adapter.requests" and "/_bulk" in r.getMessage()]
    # 12 rows in requests of 5, on the asyncio client
    assert len(bulks) == 3 and all(" 200 " in line for line in bulks), bulks
    ids = [h.id for h in Searcher.open(client, index_name, e5).search(QUERIES[0], technique="bm25", k=5).hits]
    assert ids and set(ids) <= {r.id for r in rows if not isinstance(r, RowError)}
