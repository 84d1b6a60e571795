"""The one place the server's JSON is read: hits, errors, bulk items, explanations. Pure.

OpenSearch and Elasticsearch share these shapes (``hits.hits[]``, ``error.root_cause[]``, bulk
items keyed by their operation); engine-specific readings (the hybrid score explanation) are
named as such.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from adapter.errors import BackendError
from adapter.fusion.choice.policy import FieldTerms


@dataclass(frozen=True)
class Bucket:
    """One value of a facet and how many hits have it."""

    key: Any
    count: int  # hits (chunks) with this value among those the query matched
    documents: int | None = None  # distinct documents (collapse groups) with it, when the page is collapsed


@dataclass(frozen=True)
class Facet:
    """The most frequent values of one field among the hits a query matched."""

    field: str
    buckets: tuple[Bucket, ...]
    other: int = 0  # hits with a value not in the buckets


@dataclass(frozen=True)
class RawHit:
    """A hit as the server returned it, before the searcher ranks and explains it."""

    id: str
    score: float
    source: Mapping[str, Any] = field(default_factory=dict)
    explanation: Mapping[str, Any] | None = None
    matched_queries: tuple[str, ...] = ()  # the ``_name`` of every (sub-)query that matched the hit
    highlight: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)  # docvalue_fields and the collapse value: name -> [values]
    inner_hits: Mapping[str, tuple[RawHit, ...]] = field(default_factory=dict)
    sort: tuple[Any, ...] = ()  # the hit's sort values, under a field sort
    # with include_named_queries_score: each matched named (sub-)query's own score (a hybrid leg's raw score)
    named_scores: Mapping[str, float] = field(default_factory=dict)


def _raw_hit(h: Mapping[str, Any]) -> RawHit:
    score = h.get("_score")
    matched = h.get("matched_queries") or ()
    named: dict[str, float] = {}
    if isinstance(matched, Mapping):  # with include_named_queries_score the server answers name -> score
        named = {str(name): float(value) for name, value in matched.items() if isinstance(value, (int, float))}
        matched = tuple(matched)
    inner = {
        name: tuple(_raw_hit(i) for i in (group.get("hits") or {}).get("hits", []))
        for name, group in (h.get("inner_hits") or {}).items()
        if isinstance(group, Mapping)
    }
    return RawHit(
        str(h["_id"]),
        float(score) if score is not None else 0.0,
        h.get("_source") or {},
        h.get("_explanation"),
        tuple(matched),
        {f: tuple(s) for f, s in (h.get("highlight") or {}).items()},
        dict(h.get("fields") or {}),
        inner,
        tuple(h.get("sort") or ()),
        named,
    )


def hits(resp: Mapping[str, Any]) -> list[RawHit]:
    """The hits of a search answer, in order. A hit sorted by a field has no score (null): 0.0."""
    return [_raw_hit(h) for h in (resp.get("hits") or {}).get("hits", [])]


def facets(resp: Mapping[str, Any], names: Sequence[str], *, documents: str = "documents") -> dict[str, Facet]:
    """The ``terms`` aggregations ``names`` of a search answer as :class:`~adapter.engines.responses.Facet`s;
    a bucket's ``documents`` is its ``documents`` cardinality sub-aggregation, when asked for."""
    out = {}
    aggs = resp.get("aggregations") or {}
    for name in names:
        agg = aggs.get(name)
        if not isinstance(agg, Mapping):
            continue
        buckets = tuple(
            Bucket(
                b.get("key_as_string", b.get("key")),
                int(b.get("doc_count", 0)),
                int(b[documents]["value"]) if isinstance(b.get(documents), Mapping) else None,
            )
            for b in agg.get("buckets", [])
        )
        out[name] = Facet(name, buckets, int(agg.get("sum_other_doc_count") or 0))
    return out


def took(resp: Mapping[str, Any]) -> float:
    return float(resp.get("took") or 0.0)


def shard_failures(resp: Mapping[str, Any]) -> tuple[int, int, tuple[str, ...]]:
    """(failed shards, total shards, their distinct reasons) of a search answer: a 200 in which some
    shard failed holds only the other shards' hits."""
    shards = resp.get("_shards") or {}
    failed = int(shards.get("failed") or 0)
    reasons = []
    for failure in shards.get("failures") or ():
        reason = failure.get("reason") if isinstance(failure, Mapping) else None
        text = f"{reason.get('type')}: {reason.get('reason')}" if isinstance(reason, Mapping) else str(reason)
        if text not in reasons:
            reasons.append(text)
    return failed, int(shards.get("total") or 0), tuple(reasons)


def error_reason(error: Any) -> str:
    """The most specific reason in an error body (``root_cause[0].reason``, else ``reason``)."""
    if isinstance(error, Mapping):
        inner = error.get("error", error)
        if isinstance(inner, Mapping):
            causes = inner.get("root_cause") or []
            root = causes[0] if causes and isinstance(causes[0], Mapping) else {}
            reason = root.get("reason") or inner.get("reason")
            caused = inner.get("caused_by")
            # A generic top-level reason ("all shards failed") hides the useful one below it.
            if isinstance(caused, Mapping) and caused.get("reason") and (not reason or reason == inner.get("reason")):
                deeper = error_reason(caused)
                if deeper and deeper != reason:
                    reason = f"{reason}: {deeper}" if reason else deeper
            return str(reason or inner)
        if inner:
            return str(inner)
    return str(error)


def msearch_responses(resp: Mapping[str, Any], action: str) -> list[Mapping[str, Any]]:
    """The per-body responses of ``_msearch``; the first errored one raises :class:`BackendError`."""
    out = []
    for r in resp.get("responses", []):
        if "error" in r:
            reason = error_reason(r)
            raise BackendError(
                f"{action}: the server answered {r.get('status')}: {reason}", status=r.get("status"), reason=reason
            )
        out.append(r)
    return out


def bulk_status(item: Mapping[str, Any]) -> int | None:
    """A bulk item's HTTP status. The client reports ``"N/A"`` when the request never got an answer."""
    op: Any = next(iter(item.values()), {}) if item else {}
    status = op.get("status") if isinstance(op, Mapping) else None
    return status if isinstance(status, int) else None


def bulk_unanswered(item: Mapping[str, Any]) -> bool:
    """Whether a failed bulk item's request never got an answer (the client's ``"N/A"`` status)."""
    op: Any = next(iter(item.values()), {}) if item else {}
    return isinstance(op, Mapping) and op.get("status") == "N/A"


def bulk_request_refused(item: Mapping[str, Any]) -> bool:
    """Whether a failed item failed because its whole request was refused with a 4xx (not 429).

    The bulk helpers mark every item of such a request with the request's exception; one bad row
    (an id over the length limit) takes the whole request down that way.
    """
    op: Any = next(iter(item.values()), {}) if item else {}
    status = bulk_status(item)
    return (
        isinstance(op, Mapping) and "exception" in op and status is not None and 400 <= status < 500 and status != 429
    )


def bulk_disk_block(item: Mapping[str, Any]) -> str | None:
    """The reason, when a bulk item was refused by the index's ``read_only_allow_delete`` block: a
    ``cluster_block_exception`` with 429, which the server sets when disk usage passes the
    flood-stage watermark. Retrying it only waits (the bulk helpers take it for a full write queue)."""
    op: Any = next(iter(item.values()), {}) if item else {}
    error = op.get("error") if isinstance(op, Mapping) else None
    if bulk_status(item) == 429 and isinstance(error, Mapping) and error.get("type") == "cluster_block_exception":
        return str(error.get("reason") or "cluster_block_exception")
    return None


def _info(exc: Any) -> Any:
    """opensearch-py's ``TransportError.info`` (the server's answer); it raises when the error was made without one."""
    try:
        return getattr(exc, "info", None)
    except IndexError:
        return None


def bulk_item(item: Mapping[str, Any]) -> tuple[str | None, int | None, str]:
    """``(id, status, reason)`` of one failed bulk item."""
    op: Any = next(iter(item.values()), {}) if item else {}
    error = op.get("error")
    # The server's answer to a request refused as a whole (the port keeps it beside the exception it translated).
    refused = op.get("refused") or _info(op.get("exception"))
    if bulk_status(item) == 413:  # the request's body was over the cluster's limit; the server says nothing more
        data = op.get("data")
        size = f"; this row alone is {len(json.dumps(data)) / 2**20:.1f} MB of JSON" if data is not None else ""
        reason = (
            "the cluster refused the request as too large (413: over its http.max_content_length, 100mb by default)"
            f"{size}. Split the document (--chunk-size), or raise http.max_content_length on the cluster"
        )
    elif isinstance(refused, Mapping):
        reason = f"the bulk request was refused: {error_reason(refused)}"
    elif isinstance(error, Mapping):
        reason = f"{error.get('type')}: {error.get('reason')}"
        cause = error.get("caused_by")
        if isinstance(cause, Mapping) and cause.get("reason"):
            reason += f" (caused by {cause.get('type')}: {cause['reason']})"
    else:
        reason = str(error or op.get("exception") or op)
    return op.get("_id"), bulk_status(item), reason


def hybrid_leg_scores(
    explanation: Mapping[str, Any] | None,
    legs: Sequence[str],
    *,
    matched: Sequence[str] = (),
    raw_scores: Sequence[float | None] = (),
) -> list[float | None]:
    """Per-leg normalised scores from OpenSearch's ``hybrid_score_explanation``, in leg order.

    The processor lists one detail per leg *that matched the hit*, in sub-query order, with no leg
    index (a leg that missed it leaves no detail). The searcher names each sub-query after its leg
    (``_name``), so ``matched_queries`` says which legs those details belong to. Without names
    (an older answer), a detail is matched to the leg whose raw score it wraps.
    """
    out: list[float | None] = [None] * len(legs)
    details = list((explanation or {}).get("details") or [])
    present = [i for i, leg in enumerate(legs) if leg in set(matched)]
    if matched and len(present) == len(details):
        for i, detail in zip(present, details):
            out[i] = float(detail.get("value", 0.0))
        return out
    return _by_raw_score(out, details, raw_scores)


def _by_raw_score(
    out: list[float | None], details: Sequence[Mapping[str, Any]], raw_scores: Sequence[float | None]
) -> list[float | None]:
    """``out`` with each detail's normalised score put at the leg whose raw score it wraps (else the first
    leg not yet taken that has a raw score: the detail's own position when that is one of them)."""
    taken: set[int] = set()
    for position, detail in enumerate(details):
        inner = (detail.get("details") or [{}])[0]
        candidates = _raw_score_legs(inner.get("value"), raw_scores, taken)
        if not candidates:
            continue
        leg = position if position in candidates else candidates[0]
        taken.add(leg)
        out[leg] = float(detail.get("value", 0.0))
    return out


def _raw_score_legs(raw: Any, raw_scores: Sequence[float | None], taken: set[int]) -> list[int]:
    """The legs not yet taken whose raw score is ``raw`` (rel_tol 1e-4, abs_tol 1e-6), else all not taken
    that have a raw score."""
    candidates = [
        i
        for i, score in enumerate(raw_scores)
        if i not in taken
        and score is not None
        and raw is not None
        and math.isclose(float(raw), score, rel_tol=1e-4, abs_tol=1e-6)
    ]
    if not candidates:
        candidates = [i for i, score in enumerate(raw_scores) if i not in taken and score is not None]
    return candidates


# Elasticsearch's explanations of fused hits (rank-rrf's RRFRankDoc / LinearRankDoc, and the knn
# part of a query + knn request), in the words of its source.
_ES_RRF_LEG = re.compile(r"rrf score: \[([^\]]+)\], for rank \[\d+\] in query at index \[(\d+)\]")
_ES_LINEAR_LEG = re.compile(
    r"weighted score: \[[^\]]+\] in query at index \[(\d+)\].*?computed as \[[^ \]]+ \* ([^\]]+)\]"
)
_ES_KNN = "within top k documents"


def _explanation_nodes(explanation: Mapping[str, Any] | None) -> Iterator[Mapping[str, Any]]:
    if not isinstance(explanation, Mapping):
        return
    yield explanation
    for detail in explanation.get("details") or []:
        yield from _explanation_nodes(detail)


def elasticsearch_leg_scores(
    explanation: Mapping[str, Any] | None,
    legs: Sequence[str],
    *,
    score: float,
    weights: Sequence[float],
    matched: Sequence[str] = (),
) -> list[float | None]:
    """Per-leg scores of an Elasticsearch hybrid hit, in leg order (None: the leg missed it), read
    from its ``_explanation``:

    - the ``rrf`` retriever: each leg's ``1 / (rank_constant + rank)`` (``rrf score: [x], for rank
      [r] in query at index [i]``; ``result not found in query at index [i]`` for a miss);
    - the ``linear`` retriever: each leg's normalised score (``computed as [w * s]``);
    - ``query`` + ``knn`` (the sum of boosted scores): the knn leg's boosted score is the node
      ``within top k documents``, the text leg's the rest of the hit's ``score``; each divided by
      its weight gives the leg's raw score.
    """
    out: list[float | None] = [None] * len(legs)
    nodes = list(_explanation_nodes(explanation))
    for node in nodes:
        description = str(node.get("description", ""))
        for pattern in (_ES_RRF_LEG, _ES_LINEAR_LEG):
            found = pattern.search(description)
            if found:
                value, index = (
                    (found.group(1), found.group(2)) if pattern is _ES_RRF_LEG else (found.group(2), found.group(1))
                )
                if int(index) < len(out):
                    out[int(index)] = float(value)
    if any(v is not None for v in out) or any(
        "result not found in query" in str(n.get("description", "")) for n in nodes
    ):
        return out
    knn = next((float(n.get("value", 0.0)) for n in nodes if str(n.get("description", "")).startswith(_ES_KNN)), None)
    text = score - (knn or 0.0) if (legs[0] in matched or (not matched and knn is None)) else None
    for i, boosted in enumerate((text, knn)):
        if boosted is not None and i < len(out):
            out[i] = boosted / weights[i] if weights[i] else 0.0
    return out


def mapped_fields(mapping: Mapping[str, Any]) -> set[str]:
    """Dotted paths of every field in a ``GET <index>/_mapping`` answer (all its indices)."""
    out: set[str] = set()

    def walk(prefix: str, properties: Mapping[str, Any]) -> None:
        for name, body in properties.items():
            path = f"{prefix}{name}"
            out.add(path)
            if isinstance(body, Mapping):
                walk(f"{path}.", body.get("properties") or {})
                walk(f"{path}.", body.get("fields") or {})

    for body in mapping.values():
        if isinstance(body, Mapping):
            walk("", (body.get("mappings") or {}).get("properties") or {})
    return out


def cluster_setting(settings: Mapping[str, Any], name: str) -> Any:
    """A setting from ``GET _cluster/settings?include_defaults``: transient, then persistent, then the default."""
    for scope in ("transient", "persistent", "defaults"):
        node: Any = settings.get(scope) or {}
        if name in node:  # flat_settings
            return node[name]
        for part in name.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            return node
    return None


def term_statistics(resp: Mapping[str, Any], fields: Sequence[tuple[str, float]]) -> list[FieldTerms]:
    """``_termvectors`` of an artificial document (the query) -> the query's terms per field.

    ``fields``: ``(name, boost)`` of the query fields. A term the index does not hold comes back
    without ``doc_freq``: its document frequency is 0.
    """
    vectors = resp.get("term_vectors") or {}
    out = []
    for name, boost in fields:
        tv = vectors.get(name) or {}
        count = int((tv.get("field_statistics") or {}).get("doc_count") or 0)
        terms = [
            (str(t), int(v.get("term_freq") or 1), int(v.get("doc_freq") or 0))
            for t, v in (tv.get("terms") or {}).items()
        ]
        out.append(FieldTerms(name, float(boost), count, tuple(terms)))
    return out
