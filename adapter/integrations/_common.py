"""What the framework components share, with no framework imported: the fusion and filters they
take, the metadata a hit becomes, and the rows the adapter's ingest reads from their documents.

Every component searches through :meth:`adapter.Searcher.search` (the server's hybrid, with the
index's fusion unless told another) and writes through :meth:`adapter.Ingestor.ingest` (the
index's own embedder, the fingerprint check, stable ids, validation, failures); none builds a
request of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable, Iterator, Mapping

from adapter.errors import InputError
from adapter.fusion import Fusion, parse_fusion
from adapter.fusion.choice.policy import AdaptivePolicy
from adapter.fusion.choice.values import ADAPTIVE
from adapter.ingest.report import IngestReport, ItemFailure
from adapter.ingest.sources import FieldMap, RowError, SourceDoc, _dedupe
from adapter.index.documents import CHUNK_FIELD, METADATA_FIELD, PARENT_FIELD, metadata_as_written
from adapter.search.relevance import hit_relevance
from adapter.search.results import Hit, SearchResult

# Filter operators the adapter's filters can say (a conjunction of term / terms / range clauses on
# metadata), spelled as Haystack and LlamaIndex spell them.
_RANGES = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
_FIELDS = FieldMap(id="id", title="title", text="text", metadata=())
TITLE = "title"  # the metadata key a framework document's title travels in


def resolve_fusion(searcher: Any, fusion: Fusion | AdaptivePolicy | str | None) -> Fusion | AdaptivePolicy | None:
    """``None``: the index's default; ``"adaptive"``: the index's policy; a name (``"rrf"``,
    ``"min_max-arithmetic_mean"``, ``"rrf-40"``) or a fusion object as :meth:`Searcher.search` takes it."""
    if fusion is None or not isinstance(fusion, str):
        return fusion
    if fusion == ADAPTIVE:
        return searcher.policy  # type: ignore[no-any-return]
    return parse_fusion(fusion)


def adapter_filters(filters: Any) -> dict[str, Any] | None:
    """The adapter's filters (``{"lang": "es", "tags": ["a", "b"], "year": {"gte": 2020}}``) from
    themselves, from Haystack's filter dicts (``{"field": "meta.lang", "operator": "==", "value": "es"}``,
    ``AND`` of those) or from LlamaIndex ``MetadataFilters`` (``==``, ``in``, ranges, ``and``).

    What the adapter's filters cannot say (``OR``, ``NOT``, ``!=``, ``nin``, text match) is refused
    with :class:`InputError`, never dropped."""
    if filters is None:
        return None
    if hasattr(filters, "filters") and hasattr(filters, "condition"):  # llama_index MetadataFilters
        return _conjunction(filters.condition, filters.filters, "LlamaIndex MetadataFilters")
    if not isinstance(filters, Mapping):
        raise InputError(f"filters must be a mapping or MetadataFilters, got {type(filters).__name__}")
    if "operator" in filters:  # Haystack's syntax
        if "conditions" in filters:
            return _conjunction(filters["operator"], filters["conditions"], "Haystack filters")
        return _comparison(filters.get("field"), filters["operator"], filters.get("value"), "Haystack filters")
    return {metadata_key(k): v for k, v in filters.items()}


def metadata_key(key: Any) -> Any:
    """A filter key as the index names it: a dotted key is a path inside a metadata object
    (``nested.team`` -> ``metadata.nested.team``; an adapter index has no other objects), one
    already under ``metadata.`` stays; an undotted key the engine's filters put under ``metadata``."""
    if isinstance(key, str) and "." in key and not key.startswith(f"{METADATA_FIELD}."):
        return f"{METADATA_FIELD}.{key}"
    return key


def refuse_unknown_keys(searcher: Any, filters: Mapping[str, Any] | None, result: SearchResult) -> None:
    """A search that found nothing under a filter naming a field the index does not map (no entry
    was ever written with that key) did not mean what it says: :class:`InputError`, naming the key
    and the keys there are, instead of a silent empty answer. Only the adapter's own keys (a
    conjunction: one unknown key empties the answer) are checked, only when the answer is empty
    (one ``GET _mapping`` then, none otherwise)."""
    if result.hits or not filters:
        return
    from adapter.engines.dsl import Clause, filter_field
    from adapter.index.catalog import mapped_fields

    asked = [filter_field(k) for k, v in filters.items() if not isinstance(v, Clause) and k != "node_ids"]
    if not asked:
        return
    mapped = mapped_fields(searcher.cluster, searcher.info.index)
    unknown = [f for f in dict.fromkeys(asked) if f not in mapped]
    if unknown:
        keys = sorted(f[len(METADATA_FIELD) + 1 :] for f in mapped if f.startswith(f"{METADATA_FIELD}."))
        raise InputError(
            f"the filter names {', '.join(repr(f) for f in unknown)}, which no entry of {searcher.alias} was ever "
            f"written with, so it matches nothing; metadata keys: {', '.join(keys) or 'none'} (a key inside an "
            "object is dotted: {'nested.team': 'ops'})"
        )


def log_notices(logger: logging.Logger, result: SearchResult) -> None:
    """Each of the result's notices (a fallback, a partial answer, a server that ignored part of the
    request: what the caller must know) as a WARNING of the integration's logger."""
    for notice in result.notices:
        logger.warning("%s (query %r, %s)", notice, result.query, result.fused_by_label)


def _conjunction(condition: Any, items: Iterable[Any], where: str) -> dict[str, Any]:
    name = str(getattr(condition, "value", condition) or "and").lower()
    if name != "and":
        raise InputError(
            f"{where}: only AND is supported (the adapter's filters are a conjunction of term, terms and "
            f"range clauses on metadata), got {name.upper()}"
        )
    out: dict[str, Any] = {}
    for item in items:
        if isinstance(item, Mapping):
            part = adapter_filters(item)
        elif hasattr(item, "filters"):
            part = adapter_filters(item)
        else:
            part = _comparison(item.key, item.operator, item.value, where)
        for key, value in (part or {}).items():
            if key in out and isinstance(out[key], dict) and isinstance(value, dict):
                out[key] = {**out[key], **value}  # two bounds of one range
            elif key in out:
                raise InputError(f"{where}: two conditions on {key!r}; give one value or a list of values (`in`)")
            else:
                out[key] = value
    return out


def _comparison(field: Any, operator: Any, value: Any, where: str) -> dict[str, Any]:
    op = str(getattr(operator, "value", operator))
    if not isinstance(field, str) or not field:
        raise InputError(f"{where}: a condition needs a field, got {field!r}")
    key = metadata_key(field[len("meta.") :] if field.startswith("meta.") else field)
    if op == "==":
        return {key: value}
    if op == "in":
        if not isinstance(value, (list, tuple)):
            raise InputError(f"{where}: `in` on {field!r} needs a list of values, got {value!r}")
        return {key: list(value)}
    if op in _RANGES:
        return {key: {_RANGES[op]: value}}
    raise InputError(
        f"{where}: operator {op!r} on {field!r} is not supported; the adapter filters with ==, in, >, >=, <, <= "
        "(all of them must hold)"
    )


@dataclass(frozen=True)
class HitInfo:
    """What the adapter knows of a hit beyond the document itself, kept apart from the framework's
    metadata dict (which holds exactly what the user wrote): its lineage (``parent_id``,
    ``chunk_index``), the fused ``score`` and its ``relevance`` in [0, 1] (:func:`relevance`), the
    1-based ``rank``, ``fused_by`` (``server:<pipeline>``, ...), when the search explained
    itself, ``legs`` (each leg's rank, raw and normalised score, weight and contribution), and with
    the component's UBI opt-in the ``query_id`` of the search's UBI query record (``adapter.integrations._ubi``)."""

    id: str
    parent_id: str
    chunk_index: int
    score: float
    relevance: float
    rank: int
    fused_by: str
    legs: tuple[dict[str, Any], ...] = ()
    query_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "legs": [dict(leg) for leg in self.legs]}


def hit_info(hit: Hit, result: SearchResult, query_id: str | None = None) -> HitInfo:
    return HitInfo(
        id=hit.id,
        parent_id=str(hit.source.get(PARENT_FIELD, hit.id)),
        chunk_index=int(hit.source.get(CHUNK_FIELD) or 0),
        score=hit.score,
        relevance=relevance(hit, result),
        rank=hit.rank,
        fused_by=result.fused_by_label,
        legs=tuple(asdict(leg) for leg in hit.legs),
        query_id=query_id,
    )


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A framework document's metadata: the hit's metadata as written, and ``title`` when it has one
    (the title a framework document gave travels in its metadata). Nothing of the adapter's own."""
    meta = metadata_as_written(hit.source.get(METADATA_FIELD))
    if hit.title:
        meta[TITLE] = hit.title
    return meta


def relevance(hit: Hit, result: SearchResult) -> float:
    """The hit's relevance in [0, 1] (docs/INTEROP.md, Scores): the one the search gave it
    (:mod:`adapter.search.relevance`: the index's maps of the legs where the page's hits carry their legs,
    else its relevance map for the fusion that ran, else the fusion's formula; ``result.relevance_by`` says
    which); a hit built elsewhere, by its formula."""
    if hit.relevance is not None:
        return hit.relevance
    return hit_relevance(hit, result.technique, result.fusion, None)


def content_id(text: str, title: str, metadata: Mapping[str, Any]) -> str:
    """A stable id for a document given without one (LangChain texts): the same text, title and
    metadata get the same id, so adding them again replaces instead of duplicating."""
    blob = json.dumps([text, title, metadata], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class FrameworkRow:
    """One framework document on its way to the ingest: its id, text, title, metadata (as the user
    wrote it), its lineage when a framework split it off a document (``parent_id``, ``chunk_index``)
    and a vector it carries with the fingerprint key of the model that made it (``embedded_by``)."""

    id: Any
    text: Any
    title: str = ""
    metadata: Any = None
    parent_id: str | None = None
    chunk_index: int | None = None
    vector: Any = None
    embedded_by: str | None = None


def source_rows(items: Iterable[FrameworkRow]) -> Iterator[SourceDoc | RowError]:
    """Framework rows as the adapter's readers yield a file's rows, checked the same way (an id,
    some text, valid Unicode, no id twice); ``line`` is the 1-based position."""

    def rows() -> Iterator[SourceDoc | RowError]:
        for line, item in enumerate(items, 1):
            doc_id = None if item.id is None else str(item.id)
            if item.metadata is not None and not isinstance(item.metadata, Mapping):
                yield RowError(line, f"metadata must be a mapping, got {type(item.metadata).__name__}", doc_id)
                continue
            row = _FIELDS.row({"id": item.id, "text": item.text, "title": item.title or ""}, line)
            if not isinstance(row, SourceDoc):
                yield row
                continue
            vector = None if item.vector is None else tuple(float(x) for x in item.vector)
            yield replace(
                row,
                metadata=dict(item.metadata or {}),
                parent_id=item.parent_id,
                chunk_index=item.chunk_index,
                vector=vector,
                embedded_by=item.embedded_by,
            )

    return _dedupe(rows())


def split_title(metadata: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A framework document's metadata -> (the adapter's title, the rest as metadata). Only a string
    title is the entry's title; any other (``None``, ``42``) stays a metadata key like the others,
    so it reads back as written (a title field holds text)."""
    rest = dict(metadata or {})
    if not isinstance(rest.get(TITLE), str):
        return "", rest
    return rest.pop(TITLE), rest


def failures_json(failures: Iterable[ItemFailure]) -> list[dict[str, Any]]:
    return [asdict(f) for f in failures]


def raise_on_failures(report: IngestReport, what: str, total: int) -> None:
    """The rows that landed stay; the others (of ``total`` given) are named in one :class:`InputError`."""
    if report.failures:
        listing = "; ".join(f"{f.id or f'item {f.line}'}: {f.reason}" for f in report.failures[:10])
        more = f" (and {len(report.failures) - 10} more)" if len(report.failures) > 10 else ""
        where = f"; all are in {report.failures_file}" if report.failures_file else ""
        raise InputError(
            f"{what}: {len(report.failures)} of {total} documents did not land (the others did): {listing}{more}{where}"
        )
