"""Documents by id on one hybrid index: get, delete (by ids, by parent document, by filter) and update.

Every operation goes through the engine port (:class:`adapter.engines.port.Cluster`): ``mget`` to
read, bulk deletes for ids, ``_delete_by_query`` for a parent or a filter where the cluster has it
(else the matching ids are found with searches paged by ``search_after`` and deleted in bulk, as
the ingest's stale-chunk cleanup does). Update goes through :meth:`Ingestor.update`, which embeds
again only when the text or the title changed.

A stored entry reads back as :class:`StoredDocument`, whose :meth:`~StoredDocument.as_row` is the
index contract's shape (``{"id", "title", "text", "parent_id", "chunk_index", "metadata",
"embedded_by"}``): ``hybrid ingest`` of such rows writes the same entries again (metadata not nested
once more, lineage kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from adapter.engines import BulkOptions, Cluster, ClusterLike, Engine, cluster_for, responses
from adapter.engines.dsl import Clause, filter_clauses, filter_field
from adapter.errors import BackendError, InputError
from adapter.index.catalog import IndexInfo, mapped_fields, read_index_info
from adapter.index.documents import (
    CHUNK_FIELD,
    EMBEDDED_BY_FIELD,
    METADATA_FIELD,
    PARENT_FIELD,
    hit_text,
    hit_title,
    metadata_as_written,
)
from adapter.ingest import deletion

PAGE = 1_000  # ids found per search page when the cluster has no _delete_by_query


def hits_in_chunk_order(
    cluster: Cluster, alias: str, query: Mapping[str, Any], source: Any, page_size: int, action: str
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` in ``alias`` with ``source`` (the ``_source`` option), in (parent_id, chunk_index)
    order, ``page_size`` per search, paged by ``search_after``."""
    body: dict[str, Any] = {
        "query": query,
        "size": page_size,
        "_source": source,
        "sort": [{PARENT_FIELD: "asc"}, {CHUNK_FIELD: "asc"}],
    }
    while True:
        page = cluster.search(alias, body, action=action)["hits"]["hits"]
        yield from page
        if len(page) < page_size:
            return
        body["search_after"] = page[-1]["sort"]


@dataclass(frozen=True)
class StoredDocument:
    """One entry as the index holds it; ``vector`` only when asked for (``with_vectors``)."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    parent_id: str = ""
    chunk_index: int = 0
    embedded_by: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # further text fields of the index
    vector: tuple[float, ...] | None = None

    def as_row(self, vector_field: str = "embedding") -> dict[str, Any]:
        """The index contract's shape, which ``hybrid ingest`` reads back as the same entry."""
        row: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "text": self.text,
            **self.extra,
            PARENT_FIELD: self.parent_id or self.id,
            CHUNK_FIELD: self.chunk_index,
            METADATA_FIELD: dict(self.metadata),
        }
        if self.embedded_by is not None:
            row[EMBEDDED_BY_FIELD] = self.embedded_by
        if self.vector is not None:
            row[vector_field] = list(self.vector)
        return row


@dataclass(frozen=True)
class DeleteReport:
    """What a delete matched and removed. ``dry_run``: nothing was removed, ``matched`` would be."""

    matched: int
    deleted: int
    dry_run: bool = False
    failures: tuple[str, ...] = ()
    whole_index: bool = False  # a dry run's filter matches every entry (deleting them needs all=True)


@dataclass(frozen=True)
class Selection:
    """Which entries a delete or count addresses: ids, whole parent documents (every chunk), a
    filter on metadata (the adapter's filters, :func:`adapter.engines.dsl.filter_clauses`), or a
    raw query clause (the frameworks' filter grammars render to one). Several given: all must hold."""

    ids: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    filters: Mapping[str, Any] | None = None
    clause: Mapping[str, Any] | None = None

    def query(self) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if self.ids:
            parts.append({"ids": {"values": list(self.ids)}})
        if self.parents:
            parts.append({"terms": {PARENT_FIELD: list(self.parents)}})
        parts += filter_clauses(self.filters)
        if self.clause is not None:
            parts.append(dict(self.clause))
        if not parts:
            return {"match_all": {}}
        return {"bool": {"filter": parts}}

    def fields(self) -> list[str]:
        """The index fields the filters read (``metadata.<key>``, ``parent_id``, a framework clause's fields;
        a raw ``clause`` says none)."""
        out: list[str] = []
        for key, value in (self.filters or {}).items():
            out += list(value.fields) if isinstance(value, Clause) else [filter_field(key)]
        return out


class Documents:
    """Documents by id on the hybrid index behind ``alias``. Use :meth:`open`."""

    def __init__(
        self, client: ClusterLike, info: IndexInfo, *, engine: Engine | None = None, refresh: bool = True
    ) -> None:
        self.cluster: Cluster = cluster_for(client, engine)
        self.info = info
        self.refresh = refresh  # make a delete visible to the next search at once

    @classmethod
    def open(cls, client: ClusterLike, alias: str, *, engine: Engine | None = None, refresh: bool = True) -> Documents:
        cluster = cluster_for(client, engine)
        return cls(cluster, read_index_info(cluster, alias), refresh=refresh)

    @property
    def alias(self) -> str:
        return self.info.alias

    # -- reading ---------------------------------------------------------------------------------
    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[StoredDocument]:
        """The entries ``ids`` that exist, in the order asked (missing ones are left out)."""
        wanted = _ids(ids)
        if not wanted:
            return []
        exclude = () if with_vectors else (self.info.vector_field,)
        found = self.cluster.mget(self.alias, wanted, exclude=exclude, action=f"reading documents from {self.alias}")
        return [self._stored(d) for d in found if d.get("found")]

    def _stored(self, doc: Mapping[str, Any]) -> StoredDocument:
        source, layout = doc.get("_source") or {}, self.info.layout
        vector = source.get(self.info.vector_field)
        return StoredDocument(
            id=str(doc["_id"]),
            text=hit_text(layout, source),
            title=hit_title(layout, source),
            metadata=metadata_as_written(source.get(METADATA_FIELD)),
            parent_id=str(source.get(PARENT_FIELD, doc["_id"])),
            chunk_index=int(source.get(CHUNK_FIELD) or 0),
            embedded_by=source.get(EMBEDDED_BY_FIELD),
            extra={f: str(source[f]) for f in layout.extra_fields if source.get(f)},
            vector=tuple(float(x) for x in vector) if isinstance(vector, list) else None,
        )

    def count(self, selection: Selection | None = None) -> int:
        """Entries ``selection`` matches (all without one)."""
        query = selection.query() if selection is not None else None
        return self.cluster.count(self.alias, query, action=f"counting documents of {self.alias}")

    def find(self, selection: Selection | None = None, *, with_vectors: bool = False) -> Iterator[StoredDocument]:
        """Every entry ``selection`` matches (all without one), without vectors unless asked, paged by
        ``search_after`` over (parent_id, chunk_index)."""
        query = selection.query() if selection is not None else {"match_all": {}}
        source: Any = True if with_vectors else {"excludes": [self.info.vector_field]}
        hits = hits_in_chunk_order(self.cluster, self.alias, query, source, PAGE, f"reading documents of {self.alias}")
        yield from (self._stored(h) for h in hits)

    def ids(self, selection: Selection) -> Iterator[str]:
        """The ids of the entries ``selection`` matches, paged by ``search_after`` over (parent_id, chunk_index,
        _id)."""
        hits = hits_in_chunk_order(
            self.cluster, self.alias, selection.query(), False, PAGE, f"finding documents in {self.alias}"
        )
        yield from (str(h["_id"]) for h in hits)

    # -- deleting --------------------------------------------------------------------------------
    def delete(
        self,
        ids: Sequence[str] = (),
        *,
        parents: Sequence[str] = (),
        filters: Mapping[str, Any] | None = None,
        clause: Mapping[str, Any] | None = None,
        all: bool = False,
        dry_run: bool = False,
    ) -> DeleteReport:  # noqa: A002
        """Delete the entries with these ``ids``, every entry of the ``parents`` documents, or those
        ``filters`` match (one kind per call). Ids that do not exist are no error. ``dry_run``: count only.

        The rule of :mod:`adapter.ingest.deletion`: a filter that is empty, selects everything by its form or
        matches every entry of the index needs ``all=True`` (``all=True`` alone deletes every entry); a filter
        on a field the index does not map is an :class:`InputError`. Either way nothing is deleted."""
        given = [bool(ids), bool(parents), filters is not None or clause is not None]
        if sum(given) > 1:
            raise InputError("delete takes one of: ids, parents (whole documents) or a filter")
        if not any(given) and not all:
            raise InputError(f"delete needs ids, parents (whole documents) or a filter; {deletion.ALL_HINT}")
        if ids:
            return self._delete_ids(_ids(ids), dry_run)
        selection = Selection(parents=tuple(_ids(parents)), filters=filters, clause=clause)
        if given[2]:
            what = _described(filters, clause)
            deletion.refuse_everything(selection.query(), self.alias, what, everything=all)
            if selection.fields():
                deletion.refuse_unknown_fields(
                    selection.fields(), mapped_fields(self.cluster, self.info.index), self.info.index
                )
        matched = self.count(selection)
        whole = False
        if given[2] and matched:
            scope = deletion.DeleteScope(self.alias, what, matched, self.count())
            whole = scope.whole_index
            if not dry_run:
                deletion.refuse_whole_index(scope, everything=all)
        if dry_run or not matched:
            return DeleteReport(matched, 0, dry_run, whole_index=whole)
        report = self._delete_matching(selection, matched)
        self._refresh()
        return report

    def _delete_ids(self, ids: list[str], dry_run: bool) -> DeleteReport:
        matched = len(self.get(ids)) if dry_run else 0
        if dry_run:
            return DeleteReport(matched, 0, True)
        actions = ({"_op_type": "delete", "_index": self.info.index, "_id": i} for i in ids)
        failed = list(
            self.cluster.bulk(
                actions, BulkOptions(raise_on_exception=True), action=f"deleting documents from {self.alias}"
            )
        )
        # a 404: not there, nothing to delete
        problems = tuple(_reason(f) for f in failed if responses.bulk_status(f) != 404)
        self._refresh()
        deleted = len(ids) - len(failed)
        return DeleteReport(deleted + len(problems), deleted, failures=problems)

    def _delete_matching(self, selection: Selection, matched: int) -> DeleteReport:
        if self.cluster.probe().delete_by_query:
            answer = self.cluster.delete_by_query(
                self.alias, selection.query(), action=f"deleting documents from {self.alias}"
            )
            problems = tuple(
                f"{(f.get('cause') or {}).get('type')}: {(f.get('cause') or {}).get('reason')}"
                for f in answer.get("failures") or []
            )
            if answer.get("version_conflicts"):
                problems += (
                    f"{answer['version_conflicts']} entries changed while being deleted and were left; run it again",
                )
            return DeleteReport(matched, int(answer.get("deleted") or 0), failures=problems)
        found = list(self.ids(selection))
        report = self._delete_ids(found, dry_run=False)
        return DeleteReport(matched, report.deleted, failures=report.failures)

    def _refresh(self) -> None:
        if self.refresh:
            try:
                self.cluster.refresh([self.alias], action=f"refreshing {self.alias}")
            except BackendError:
                pass  # the delete stands; it shows within the refresh interval


def _ids(ids: Sequence[str] | str) -> list[str]:
    """The ids as the index holds them: the ingest trims the spaces around an id (``"  a  "`` lands as ``a``), so get,
    delete and update trim them the same way, and find an entry by the id as it was written."""
    if isinstance(ids, str):
        raise InputError(f"ids must be a list of ids, got the string {ids!r} (write [{ids!r}])")
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (str, int)) or not str(i).strip():
            raise InputError(f"an id is text or a whole number, got {i!r}")
        out.append(stored_id(i))
    return list(dict.fromkeys(out))


def stored_id(doc_id: str | int) -> str:
    """The id an entry written as ``doc_id`` has in the index (the readers trim the spaces around it)."""
    return str(doc_id).strip()


def _described(filters: Mapping[str, Any] | None, clause: Mapping[str, Any] | None) -> str:
    """A filter as its writer gave it, short, for the refusals (a framework's clause by its body)."""
    shown = {k: (v.body if isinstance(v, Clause) else v) for k, v in (filters or {}).items()}
    text = str(shown if filters is not None else dict(clause or {}))
    return text if len(text) <= 120 else text[:117] + "..."


def _reason(info: Mapping[str, Any]) -> str:
    doc_id, status, reason = responses.bulk_item(dict(info))
    return f"{doc_id}: {status} {reason}"
