"""Reading a whole index in a stable order, comparing two indices entry by entry, copying entries.
Every request goes through the port (:class:`~adapter.engines.port.Cluster`).

The order is the document contract's key, ``(parent_id, chunk_index)`` (adapter.index.documents): unique
per entry, with doc values, the same in every version of an index. Pages are read with
``search_after`` inside a point in time (PIT), so one pass sees one snapshot, and a pass can be
resumed from the last key after a crash (in a new PIT: the old one expires). Neither needs the
server's reindex module (absent from some clusters, such as the Maven-built 2.19 node).

Entries are compared by a content hash over their stored fields minus the vector (the vector is
the model's, and differs on purpose after a re-embedding); an index's checksum is the hash of
its ``(id, content hash)`` list in key order, so two indices with the same entries agree.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from adapter.engines import BulkOptions, Cluster, responses
from adapter.errors import BackendError, InputError
from adapter.index.documents import CHUNK_FIELD, EMBEDDED_BY_FIELD, PARENT_FIELD

SORT = [{PARENT_FIELD: "asc"}, {CHUNK_FIELD: "asc"}]
PAGE = 500
KEEP_ALIVE = "10m"


@dataclass(frozen=True)
class Entry:
    id: str
    key: tuple[Any, ...]  # the sort values: (parent_id, chunk_index)
    source: Mapping[str, Any]


def content_hash(source: Mapping[str, Any], vector_field: str) -> str:
    """What an entry holds apart from its vector and the key of the model that wrote it
    (``embedded_by``: it changes with the vector), as a digest (key order does not matter)."""
    body = {k: v for k, v in source.items() if k not in (vector_field, EMBEDDED_BY_FIELD)}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()


def open_pit(cluster: Cluster, index: str) -> str:
    return cluster.open_point_in_time(index, keep_alive=KEEP_ALIVE)


def close_pit(cluster: Cluster, pit: str | None) -> None:
    if pit is None:
        return
    try:
        cluster.close_point_in_time(pit)
    except BackendError:  # it expires by itself; nothing is lost by leaving it
        pass


def unkeyed_count(cluster: Cluster, index: str) -> int:
    """Entries without the contract's key (written by another client): a scan cannot order them."""
    query = {
        "bool": {"should": [{"bool": {"must_not": {"exists": {"field": f}}}} for f in (PARENT_FIELD, CHUNK_FIELD)]}
    }
    return cluster.count(index, query, action=f"checking the entries of {index}")


def pages(
    cluster: Cluster,
    index: str,
    *,
    after: Sequence[Any] | None = None,
    size: int = PAGE,
    vector_field: str | None = None,
    with_vectors: bool = False,
) -> Iterator[list[Entry]]:
    """Every entry of ``index`` after key ``after``, in key order, a page at a time, within one PIT.

    ``with_vectors``: keep the vector in each source (to copy it); else it is not sent at all.
    """
    pit = open_pit(cluster, index)
    try:
        body: dict[str, Any] = {
            "size": size,
            "sort": SORT,
            "pit": {"id": pit, "keep_alive": KEEP_ALIVE},
            "track_total_hits": False,
        }
        if vector_field and not with_vectors:
            body["_source"] = {"excludes": [vector_field]}
        if (
            after
        ):  # in a new point in time: by the key itself (a PIT's own sort values, such as _shard_doc, do not carry over)
            body["query"] = after_key(after)
        while True:
            resp = cluster.search(None, body, action=f"reading {index}")
            pit = resp.get("pit_id") or pit
            body["pit"]["id"] = pit
            raw = (resp.get("hits") or {}).get("hits", [])
            if not raw:
                return
            # Elasticsearch appends a tiebreaker (_shard_doc) to a PIT's sort values: the key is the contract's fields
            # alone.
            yield [Entry(h["_id"], tuple(h["sort"][: len(SORT)]), h.get("_source") or {}) for h in raw]
            if len(raw) < size:
                return
            body["search_after"] = raw[-1]["sort"]
    finally:
        close_pit(cluster, pit)


def after_key(key: Sequence[Any]) -> dict[str, Any]:
    """The entries after ``key`` = ``(parent_id, chunk_index)`` in key order, as a query."""
    parent, chunk = key[0], key[1]
    return {
        "bool": {
            "should": [
                {"range": {PARENT_FIELD: {"gt": parent}}},
                {"bool": {"filter": [{"term": {PARENT_FIELD: parent}}, {"range": {CHUNK_FIELD: {"gt": chunk}}}]}},
            ],
            "minimum_should_match": 1,
        }
    }


@dataclass
class Comparison:
    """How ``target`` differs from ``source``: what to copy, what to delete, and each side's count and checksum."""

    to_copy: list[Entry] = field(default_factory=list)  # missing in the target, or different
    to_delete: list[str] = field(default_factory=list)  # ids in the target that the source does not have
    source_count: int = 0
    target_count: int = 0
    _source_sum: Any = field(default_factory=hashlib.sha256, repr=False)
    _target_sum: Any = field(default_factory=hashlib.sha256, repr=False)

    @property
    def same(self) -> bool:
        return not self.to_copy and not self.to_delete

    @property
    def source_checksum(self) -> str:
        return str(self._source_sum.hexdigest())

    @property
    def target_checksum(self) -> str:
        return str(self._target_sum.hexdigest())


def _entries(cluster: Cluster, index: str, vector_field: str) -> Iterator[tuple[Entry, str]]:
    for page in pages(cluster, index, vector_field=vector_field):
        for entry in page:
            yield entry, content_hash(entry.source, vector_field)


def compare(cluster: Cluster, source: str, target: str, *, source_vector: str, target_vector: str) -> Comparison:
    """Merge the two indices' entries in key order (both read in a PIT of their own) and list the differences."""
    out = Comparison()
    left, right = _entries(cluster, source, source_vector), _entries(cluster, target, target_vector)
    a, b = next(left, None), next(right, None)
    while a is not None or b is not None:
        mine = a if a is not None and (b is None or a[0].key <= b[0].key) else None  # the source's, if next
        theirs = b if b is not None and (a is None or b[0].key <= a[0].key) else None  # the target's, if next
        _record(out, mine, theirs)
        if mine is not None:
            out.source_count += 1
            out._source_sum.update(f"{mine[0].id}\0{mine[1]}\n".encode())
            a = next(left, None)
        if theirs is not None:
            out.target_count += 1
            out._target_sum.update(f"{theirs[0].id}\0{theirs[1]}\n".encode())
            b = next(right, None)
    return out


def _record(out: Comparison, mine: tuple[Entry, str] | None, theirs: tuple[Entry, str] | None) -> None:
    """Note the difference between the next entries (with their content hashes) of the source and the target
    (None: the side's next entry has a later key, or there is none)."""
    if mine is not None and theirs is not None:  # the same key on both sides
        if mine[0].id != theirs[0].id or mine[1] != theirs[1]:
            out.to_copy.append(mine[0])
        if mine[0].id != theirs[0].id:
            out.to_delete.append(theirs[0].id)
    elif mine is not None:
        out.to_copy.append(mine[0])
    elif theirs is not None:
        out.to_delete.append(theirs[0].id)


def write(
    cluster: Cluster,
    index: str,
    docs: Sequence[tuple[str, Mapping[str, Any]]],
    deletes: Sequence[str] = (),
    *,
    max_retries: int = 5,
) -> None:
    """Index ``docs`` ((id, source) pairs) and delete ``deletes`` in ``index``; every failure is an error.

    Ids are stable, so sending a page again after a crash replaces, never duplicates.
    """
    actions = [{"_op_type": "index", "_index": index, "_id": i, "_source": s} for i, s in docs]
    actions += [{"_op_type": "delete", "_index": index, "_id": i} for i in deletes]
    if not actions:
        return
    options = BulkOptions(batch_size=PAGE, max_retries=max_retries, initial_backoff=1)
    failed = list(cluster.bulk(actions, options, action=f"writing to {index}"))
    failed = [f for f in failed if not (responses.bulk_item(f)[1] == 404 and "delete" in f)]  # already gone
    if failed:
        first = responses.bulk_item(failed[0])
        raise BackendError(
            f"writing to {index}: {len(failed)} of {len(actions)} entries failed, e.g. {first[0]}: {first[2]}",
            status=first[1],
            reason=first[2],
        )


def require_keys(cluster: Cluster, index: str) -> None:
    missing = unkeyed_count(cluster, index)
    if missing:
        raise InputError(
            f"{missing} entries of {index} lack {PARENT_FIELD} or {CHUNK_FIELD} (written by another client?); the "
            f"migration reads the index in ({PARENT_FIELD}, {CHUNK_FIELD}) order and cannot place them. Re-ingest them "
            "through the adapter (or set both fields), then run the migration again"
        )
