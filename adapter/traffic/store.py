"""The UBI store on a cluster: ``ubi_queries`` and ``ubi_events``, through the port.

Where OpenSearch's UBI plugin made the indices, they are used as they are; where it is not
installed (or on Elasticsearch) the store creates them with the plugin's mapping
(:func:`adapter.traffic.ubi.queries_mapping`, :func:`~adapter.traffic.ubi.events_mapping`). Writes go
through :meth:`Cluster.bulk` (429s retried there); reads page through a point in time in index
order (``_shard_doc``), so a read sees one snapshot however long it takes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter.engines import BulkOptions, Cluster, ClusterLike, cluster_for
from adapter.errors import BackendError
from adapter.traffic import ubi

PAGE = 1000
KEEP_ALIVE = "5m"
# Fast and quiet: the logger's thread is the only caller, and a log line must not wait minutes.
WRITE_OPTIONS = BulkOptions(batch_size=500, max_retries=2, initial_backoff=0.5, max_backoff=5.0)


@dataclass(frozen=True)
class WriteReport:
    written: int
    failed: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)  # the server's item answers (or exceptions)


def event_id(event: Mapping[str, Any]) -> str:
    """The document id of an event: SHA-256 of its canonical JSON (two identical events, to the
    millisecond of their timestamps, are one)."""
    text = json.dumps(event, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


class UbiStore:
    """The two UBI indices of one cluster."""

    def __init__(
        self, cluster: ClusterLike, *, queries_index: str = ubi.QUERIES_INDEX, events_index: str = ubi.EVENTS_INDEX
    ) -> None:
        self.cluster: Cluster = cluster_for(cluster)
        self.queries_index = queries_index
        self.events_index = events_index

    def ensure(self) -> list[str]:
        """Create whichever of the two indices is missing (the indices created, by name)."""
        created = []
        for name, mapping in ((self.queries_index, ubi.queries_mapping()), (self.events_index, ubi.events_mapping())):
            if self.cluster.index_exists(name, action=f"checking the UBI index {name}"):
                continue
            try:
                self.cluster.create_index(name, ubi.index_body(mapping), action=f"creating the UBI index {name}")
                created.append(name)
            except BackendError as exc:
                if "resource_already_exists" not in str(exc):  # another process made it between the check and here
                    raise
        return created

    def write(self, queries: Sequence[Mapping[str, Any]] = (), events: Sequence[Mapping[str, Any]] = ()) -> WriteReport:
        """Index query records (by ``query_id``) and events (by a digest of their content), so a
        batch sent again after a lost answer stores each record once."""
        actions = [
            {"_op_type": "index", "_index": self.queries_index, "_id": q["query_id"], "_source": q} for q in queries
        ]
        actions += [
            {"_op_type": "index", "_index": self.events_index, "_id": event_id(e), "_source": e} for e in events
        ]
        if not actions:
            return WriteReport(0)
        failed = tuple(self.cluster.bulk(actions, WRITE_OPTIONS, action="writing UBI records"))
        return WriteReport(len(actions) - len(failed), failed)

    def refresh(self) -> None:
        self.cluster.refresh([self.queries_index, self.events_index], action="refreshing the UBI indices")

    def queries(self, *, since: str | None = None, until: str | None = None) -> Iterator[ubi.QueryRecord]:
        for doc in self._read(self.queries_index, since, until):
            yield ubi.parse_query(doc)

    def events(self, *, since: str | None = None, until: str | None = None) -> Iterator[ubi.Event]:
        for doc in self._read(self.events_index, since, until):
            yield ubi.parse_event(doc)

    def delete_client(self, client_id: str) -> tuple[int, int]:
        """Remove every query record and event of ``client_id`` (a user's right to erasure): the
        numbers deleted from ``ubi_queries`` and ``ubi_events``."""
        query = {"term": {"client_id": client_id}}
        counts = []
        for index in (self.queries_index, self.events_index):
            if not self.cluster.index_exists(index, action=f"checking the UBI index {index}"):
                counts.append(0)
                continue
            counts.append(self._delete(index, query, action=f"deleting the UBI records of client {client_id!r}"))
        return counts[0], counts[1]

    def _delete(self, index: str, query: Mapping[str, Any], *, action: str) -> int:
        """``_delete_by_query`` where the cluster has it (the reindex module), else the matching ids read through a
        point in time and deleted in bulk, as the adapter's own deletes do (adapter.ingest.by_id)."""
        if self.cluster.probe().delete_by_query:
            return int(self.cluster.delete_by_query(index, query, action=action).get("deleted") or 0)
        ids = [hit["_id"] for hit in self._hits(index, query)]
        failed = list(
            self.cluster.bulk(
                ({"_op_type": "delete", "_index": index, "_id": i} for i in ids),
                BulkOptions(raise_on_exception=True),
                action=action,
            )
        )
        self.cluster.refresh([index], action=action)
        return len(ids) - len(failed)

    def _read(self, index: str, since: str | None, until: str | None) -> Iterator[Mapping[str, Any]]:
        if not self.cluster.index_exists(index, action=f"checking the UBI index {index}"):
            return
        window = {k: v for k, v in (("gte", since), ("lt", until)) if v}
        query: dict[str, Any] = {"range": {"timestamp": window}} if window else {"match_all": {}}
        yield from (hit.get("_source") or {} for hit in self._hits(index, query))

    def _hits(self, index: str, query: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        pit = self.cluster.open_point_in_time(index, keep_alive=KEEP_ALIVE)
        try:
            yield from self._pages(index, pit, query)
        finally:
            try:
                self.cluster.close_point_in_time(pit)
            except BackendError:  # it expires by itself
                pass

    def _pages(self, index: str, pit: str, query: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        body: dict[str, Any] = {
            "size": PAGE,
            "query": query,
            "sort": [{"_shard_doc": "asc"}],
            "track_total_hits": False,
            "pit": {"id": pit, "keep_alive": KEEP_ALIVE},
        }
        while True:
            try:
                answer = self.cluster.search(None, body, action=f"reading {index}")
            except BackendError as exc:
                if "_shard_doc" not in str(exc) or body["sort"] == [{"_doc": "asc"}]:
                    raise
                # OpenSearch 2.x has no _shard_doc: _doc orders the snapshot's one shard (UBI indices have one) as well.
                body["sort"] = [{"_doc": "asc"}]
                continue
            hits = (answer.get("hits") or {}).get("hits") or []
            yield from hits
            if len(hits) < PAGE:
                return
            body["pit"]["id"] = answer.get("pit_id") or body["pit"]["id"]
            body["search_after"] = hits[-1]["sort"]
