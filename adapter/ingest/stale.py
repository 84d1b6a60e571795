"""Deleting the chunks a shorter text left behind: a document re-ingested with fewer chunks than
before keeps none of its older ones beyond its new count. Deletes that fail are returned as
failures, never dropped."""

from __future__ import annotations

from typing import Any

from adapter.engines import BulkOptions, Cluster, responses
from adapter.engines.capabilities import Capabilities
from adapter.index.documents import CHUNK_FIELD, PARENT_FIELD
from adapter.ingest.by_id import hits_in_chunk_order
from adapter.ingest.failures import failure
from adapter.ingest.report import FailureSource, ItemFailure

STALE_PAGE = 1_000  # stale chunk ids fetched per search page


def delete_stale_chunks(
    cluster: Cluster, caps: Capabilities, index: str, counts: dict[str, int], *, max_retries: int
) -> list[ItemFailure]:
    """Delete chunks beyond a document's new chunk count (left from an older, longer text).

    With ``_delete_by_query`` (the reindex module: 3.x zips, the managed service, Elasticsearch's
    full distribution) one request per 500 documents. Elsewhere (2.19's minimal zip, Elasticsearch's
    integ-test zip) they are found with searches paged by ``search_after`` over (parent_id,
    chunk_index), so any number of stale chunks is found, and removed with bulk deletes.
    """
    cluster.refresh([index])
    items = list(counts.items())
    queries = [
        {
            "bool": {
                "should": [
                    {"bool": {"filter": [{"term": {PARENT_FIELD: doc_id}}, {"range": {CHUNK_FIELD: {"gte": n}}}]}}
                    for doc_id, n in items[start : start + 500]
                ],
                "minimum_should_match": 1,
            }
        }
        for start in range(0, len(items), 500)
    ]
    if caps.delete_by_query:
        return _delete_by_query(cluster, index, queries)
    return _delete_found(cluster, index, queries, max_retries)


def _delete_by_query(cluster: Cluster, index: str, queries: list[dict[str, Any]]) -> list[ItemFailure]:
    failures: list[ItemFailure] = []
    for query in queries:
        resp = cluster.delete_by_query(index, query, action=f"deleting stale chunks in {index}")
        for f in resp.get("failures") or []:
            cause = f.get("cause") or {}
            failures.append(
                ItemFailure(
                    f.get("id"),
                    f"{cause.get('type')}: {cause.get('reason')}",
                    status=f.get("status"),
                    source=FailureSource.DELETE_STALE,
                )
            )
        if resp.get("version_conflicts"):
            failures.append(
                ItemFailure(
                    None,
                    f"{resp['version_conflicts']} stale chunks were written by someone else while being "
                    "deleted (version conflicts) and were left in place; run the ingest again",
                    source=FailureSource.DELETE_STALE,
                )
            )
    return failures


def _delete_found(cluster: Cluster, index: str, queries: list[dict[str, Any]], max_retries: int) -> list[ItemFailure]:
    stale: list[str] = []
    for query in queries:
        hits = hits_in_chunk_order(cluster, index, query, False, STALE_PAGE, f"finding stale chunks in {index}")
        stale += [h["_id"] for h in hits]
    if not stale:
        return []
    actions = ({"_op_type": "delete", "_index": index, "_id": i} for i in stale)
    failed = list(
        cluster.bulk(
            actions,
            BulkOptions(max_retries=max_retries, raise_on_exception=True),
            action=f"deleting stale chunks in {index}",
        )
    )
    # A chunk already gone is what we wanted.
    return [
        failure(info, {}, stage=FailureSource.DELETE_STALE) for info in failed if responses.bulk_status(info) != 404
    ]
