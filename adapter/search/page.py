"""What a search page asks for besides the hits: snippets, facets, one hit per document, a field
sort, a score floor, and where MMR runs. Pure: options, the decision of where each part runs on a
given cluster, the request clauses, and the client-side versions of each part.

Where each part runs (:func:`plan_page`), by technique and :class:`~adapter.engines.capabilities.Capabilities`:

============  ===========================  =================================  ===============================
part          bm25 / dense                 hybrid                             client-rrf
============  ===========================  =================================  ===============================
highlight     the server                   the server                         the server (final page's fetch)
facets        the server (``aggs``)        the server (2.13+)                 a size-0 request in the _msearch
collapse      the server (``collapse``)    the server (3.1+; inner hits       the client, over the fused list
                                           3.2+), else the client over the
                                           fused list (2.19 ignores it)
sort          the server                   the server (2.16+)                 the client (legs return the values)
min_score     the server (raw score)       the server on the fused score      the client (RRF score)
                                           (3.5+), else the client on the
                                           fused scores of the hits
MMR           the server for dense where   the client                         the client
              ``ext.mmr`` is on, else the
              client
============  ===========================  =================================  ===============================

Highlights come from the text of the query (``highlight_query``), so a hit found only by the vector
leg still gets its snippets where it contains query words. Facet counts are hits (chunks); with
collapse each bucket also counts distinct documents (a ``cardinality`` of the collapse field).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from adapter._enums import parse_enum
from adapter.engines.dsl import filter_field
from adapter.engines.responses import RawHit
from adapter.errors import InputError
from adapter.index.documents import PARENT_FIELD
from adapter.search.excerpt import excerpt

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities

T = TypeVar("T")
MAX_FACETS = 20
MAX_INNER_HITS = 100
CHUNKS = "chunks"  # the name of the inner hits of a collapsed hit
DOCUMENTS = "documents"  # the sub-aggregation counting distinct documents in a facet bucket
SORT_ORDERS = ("asc", "desc")


# The server's MMR (k-NN ext.mmr) takes raw k-NN scores as relevance where the adapter rescales
# them, so one lambda means more diversity there. On SciFact test (300 queries, dense, 30
# candidates) the server's nDCG@10 equals the adapter's at lambda 0.9 (0.6514 vs 0.6516) and it is
# faster (p50 13.8 vs 23.2 ms); at 0.8 it is 0.014 lower, at 0.5 0.089 lower:
# docs/OPENSEARCH-FEATURES.md. ``auto`` uses it from this lambda up.
SERVER_MMR_MIN_LAMBDA = 0.9


class MMRPlace(str, enum.Enum):
    """Where MMR runs: ``auto`` picks the server where it runs it (dense, ``ext.mmr`` enabled) and
    it is measured as good (lambda >= :data:`SERVER_MMR_MIN_LAMBDA`), else the client."""

    AUTO = "auto"
    CLIENT = "client"
    SERVER = "server"

    @classmethod
    def parse(cls, value: str | MMRPlace) -> MMRPlace:
        return parse_enum(cls, value, "MMR place")


@dataclass(frozen=True)
class Collapse:
    """One hit per value of ``field`` (by default one per document: its best chunk), with up to
    ``inner_hits`` more hits of the same group (the document's next best chunks)."""

    field: str = PARENT_FIELD
    inner_hits: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.inner_hits, int) or not 0 <= self.inner_hits <= MAX_INNER_HITS:
            raise InputError(
                f"collapse inner_hits must be an integer in [0, {MAX_INNER_HITS}], got {self.inner_hits!r}"
            )
        object.__setattr__(self, "field", filter_field(self.field))


@dataclass(frozen=True)
class SortKey:
    """A field sort; ``field`` follows the filter rules (a bare name is ``metadata.<name>``)."""

    field: str
    order: str = "desc"

    def __post_init__(self) -> None:
        if self.order not in SORT_ORDERS:
            raise InputError(f"sort order must be asc or desc, got {self.order!r}")
        object.__setattr__(self, "field", filter_field(self.field))

    @classmethod
    def parse(cls, text: str) -> SortKey:
        """``year``, ``year:asc``, ``metadata.year:desc``."""
        name, _, order = str(text).partition(":")
        return cls(name.strip(), order.strip() or "desc")


# SearchOptions.text_matches: the facet of one bucket ("bm25", n) in SearchResult.aggregations, n > 0 when
# BM25 matched documents among those the query matched (a hybrid query: all of them; the client's leg: its
# candidates, a lower bound), 0 when it matched none. A leading underscore: no facet of a field is named so.
TEXT_MATCHES = "_text_matches"
# How many groups (values of the collapse field) the query matched, counted beside a collapsed hybrid page (a
# cardinality aggregation) to tell a page short of groups from a query that matched no more.
COLLAPSE_GROUPS = "_collapse_groups"


@dataclass(frozen=True)
class SearchOptions:
    """What a page asks for besides the hits (see the module docstring). Validated here."""

    highlight: bool = False
    highlight_fields: tuple[str, ...] = ()  # default: the index's text fields
    fragment_size: int = 150
    fragments: int = 3
    facets: tuple[str, ...] = ()  # fields to count values of (a bare name is metadata.<name>)
    facet_size: int = 10
    collapse: Collapse | None = None
    sort: tuple[SortKey, ...] = ()
    min_score: float | None = None
    mmr: MMRPlace = MMRPlace.AUTO
    full_text: bool = False  # the text fields whole; by default each comes back as an excerpt of at most max_text_chars
    max_text_chars: int = 10_000
    # Whether the text leg (BM25) matched anything, told in the result's aggregations under TEXT_MATCHES where
    # the search can say it without another request: a hybrid query's filter aggregation (2.13+), the client's
    # BM25 leg. What `hybrid search` needs for its notes on dense-only hits.
    text_matches: bool = False
    # A failed shard (even when asked again) or a collapsed page short of groups the query matched: by default the
    # result is used with a notice saying what it lacks; False makes it an error (adapter.errors.PartialResultError).
    # Elasticsearch's and OpenSearch's name for the same choice on one request: allow_partial_search_results.
    allow_partial_results: bool = True
    # The relevance from the legs on OpenSearch's server-fused page too (docs/INTEROP.md, Scores): the request
    # names its legs and asks each hit's raw score per leg, which cost 24-28 % of its time at the median on
    # SciFact (benchmarks/request_parts.py), so only a search that thresholds on the relevance asks for it
    # (LangChain's score_threshold does). Client-fused pages carry their legs anyway.
    leg_relevance: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "facets", tuple(dict.fromkeys(self.facets)))
        object.__setattr__(self, "sort", tuple(self.sort))
        object.__setattr__(self, "highlight_fields", tuple(self.highlight_fields))
        object.__setattr__(self, "mmr", MMRPlace.parse(self.mmr))
        for flag in ("allow_partial_results", "leg_relevance"):  # "false" would be taken for True
            if not isinstance(getattr(self, flag), bool):
                raise InputError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if len(self.facets) > MAX_FACETS:
            raise InputError(f"at most {MAX_FACETS} facets, got {len(self.facets)}")
        for name in self.facets:
            filter_field(name)
        for name, value, low in (
            ("facet_size", self.facet_size, 1),
            ("fragment_size", self.fragment_size, 18),
            ("fragments", self.fragments, 1),
            ("max_text_chars", self.max_text_chars, 100),
        ):
            if not isinstance(value, int) or value < low:
                raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.min_score is not None:
            if not isinstance(self.min_score, (int, float)) or not math.isfinite(self.min_score):
                raise InputError(f"min_score must be a finite number, got {self.min_score!r}")
            if self.sort:
                # Under a field sort hits carry no score to compare (the server refuses it from 3.5).
                raise InputError("min_score cannot be combined with a field sort: sorted hits have no score")

    @property
    def plain(self) -> bool:
        return self == SearchOptions(mmr=self.mmr, allow_partial_results=self.allow_partial_results)


@dataclass(frozen=True)
class PagePlan:
    """Where each part of :class:`SearchOptions` runs for one request (see :func:`plan_page`)."""

    options: SearchOptions
    highlight: bool = False
    facets_in_query: bool = False  # aggs in the search body itself
    facets_apart: bool = False  # a size-0 request over the union of the legs
    collapse_on_server: bool = False
    inner_hits_on_server: bool = False
    collapse_by_client: bool = False
    sort_on_server: bool = False
    sort_by_client: bool = False
    min_score_on_server: bool = False
    min_score_by_client: bool = False
    notices: tuple[str, ...] = ()

    @property
    def needs_whole_list(self) -> bool:
        """The client collapses or sorts: it needs the whole fused list, not one page of it."""
        return self.collapse_by_client or self.sort_by_client

    @property
    def field_values(self) -> tuple[str, ...]:
        """Fields whose values the client reads from each candidate (``docvalue_fields``)."""
        fields = [k.field for k in self.options.sort] if self.sort_by_client else []
        if self.collapse_by_client and self.options.collapse:
            fields.append(self.options.collapse.field)
        return tuple(dict.fromkeys(fields))


def plan_page(options: SearchOptions, caps: Capabilities, technique: str, *, post: bool = False) -> PagePlan:
    """Decide where each part runs on a cluster with ``caps`` for ``technique`` (``bm25``,
    ``dense``, ``hybrid``, ``client-rrf``, ``client``); ``post``: rerank or MMR reorders the first stage."""
    if options.sort and post:
        raise InputError("a field sort cannot be combined with rerank or MMR, which reorder the hits by relevance")
    o = options
    if technique in ("bm25", "dense"):
        return PagePlan(
            o,
            highlight=o.highlight,
            facets_in_query=bool(o.facets),
            collapse_on_server=o.collapse is not None,
            inner_hits_on_server=bool(o.collapse and o.collapse.inner_hits),
            sort_on_server=bool(o.sort),
            min_score_on_server=o.min_score is not None,
        )
    if technique in ("client-rrf", "client"):
        return PagePlan(
            o,
            highlight=o.highlight,
            facets_apart=bool(o.facets),
            collapse_by_client=o.collapse is not None,
            sort_by_client=bool(o.sort),
            min_score_by_client=o.min_score is not None,
        )
    return _hybrid_page(o, caps)


def _hybrid_page(o: SearchOptions, caps: Capabilities) -> PagePlan:
    """The page of a hybrid query fused on the server: each part there where ``caps`` allow, else by
    the client, with a notice for each part that moved (in the order facets, collapse, sort, min_score)."""
    notices: list[str] = []
    version = f"{caps.engine} {caps.version}"
    facets_in_query = _hybrid_facets(o, caps, version, notices)
    collapse_on_server, inner_on_server = _hybrid_collapse(o, caps, version, notices)
    sort_on_server = _hybrid_sort(o, caps, version, notices)
    min_on_server = _hybrid_min_score(o, caps, version, notices)
    return PagePlan(
        o,
        highlight=o.highlight and caps.hybrid_highlight,
        facets_in_query=facets_in_query,
        facets_apart=bool(o.facets) and not facets_in_query,
        collapse_on_server=collapse_on_server,
        inner_hits_on_server=inner_on_server,
        collapse_by_client=o.collapse is not None and not collapse_on_server,
        sort_on_server=sort_on_server,
        sort_by_client=bool(o.sort) and not sort_on_server,
        min_score_on_server=min_on_server,
        min_score_by_client=o.min_score is not None and not min_on_server,
        notices=tuple(notices),
    )


def _hybrid_facets(o: SearchOptions, caps: Capabilities, version: str, notices: list[str]) -> bool:
    """Whether the facets come with the hybrid query (else a notice, and a separate request)."""
    facets_in_query = bool(o.facets) and caps.hybrid_aggregations
    if o.facets and not facets_in_query:
        notices.append(
            f"aggregations with the hybrid query need OpenSearch 2.13+ ({version} has none): the facets come from "
            "a separate request over the documents either leg matches"
        )
    return facets_in_query


def _hybrid_collapse(o: SearchOptions, caps: Capabilities, version: str, notices: list[str]) -> tuple[bool, bool]:
    """Whether the server collapses the hybrid query, and whether it returns the inner hits (else a notice)."""
    collapse_on_server = o.collapse is not None and caps.hybrid_collapse
    inner_on_server = (
        collapse_on_server and o.collapse is not None and bool(o.collapse.inner_hits) and caps.collapse_inner_hits
    )
    if o.collapse is not None and not collapse_on_server:
        notices.append(
            f"collapse on a hybrid query needs OpenSearch 3.1+ ({version} would ignore it): one hit per "
            f"{o.collapse.field} was kept by the client from the fused list (each leg's top depth)"
        )
    elif o.collapse is not None and o.collapse.inner_hits and not inner_on_server:
        notices.append(
            f"inner hits in a hybrid collapse need OpenSearch 3.2+ ({version}): the collapsed hits come without "
            "their other chunks"
        )
    return collapse_on_server, inner_on_server


def _hybrid_sort(o: SearchOptions, caps: Capabilities, version: str, notices: list[str]) -> bool:
    """Whether the server sorts the hybrid query (else a notice: the client sorts the fused list)."""
    sort_on_server = bool(o.sort) and caps.hybrid_sort
    if o.sort and not sort_on_server:
        notices.append(f"sorting a hybrid query needs OpenSearch 2.16+ ({version}): the client sorted the fused list")
    return sort_on_server


def _hybrid_min_score(o: SearchOptions, caps: Capabilities, version: str, notices: list[str]) -> bool:
    """Whether the server applies min_score to the fused score (else a notice: the client drops the hits)."""
    min_on_server = o.min_score is not None and caps.fused_min_score
    if o.min_score is not None and not min_on_server:
        notices.append(
            f"min_score applies to the fused score from OpenSearch 3.5 ({version} would apply it to each leg's raw "
            "score): the client dropped the hits whose fused score is lower"
        )
    return min_on_server


# -- request clauses ---------------------------------------------------------------------------------


def highlight_clause(options: SearchOptions, fields: Sequence[str], text_query: Mapping[str, Any]) -> dict[str, Any]:
    """Snippets of ``fields`` around the words of ``text_query`` (the query's text leg, without
    filters: hits found by the vector leg alone are highlighted where they contain query words).
    ``require_field_match`` off: in the combined layout the leg queries ``all_text``, which is
    copied from, and analysed like, the fields shown; with it on they would get no snippet."""
    return {
        "fields": {f: {} for f in (options.highlight_fields or fields)},
        "highlight_query": dict(text_query),
        "require_field_match": False,
        "fragment_size": options.fragment_size,
        "number_of_fragments": options.fragments,
    }


# -- bounded text -------------------------------------------------------------------------------------
# A hit's text fields come back as an excerpt unless the page asks for the full text: one document of a
# million characters, matched by many searches at once, filled the node's heap with their answers
# (issue 20: 429 "[parent] Data too large" for 399 of 913 searches). The server sends each text's
# start: the unified highlighter with a query that matches nothing returns a text up to one
# character over the bound whole (but for spaces and line breaks at its ends) and a longer one up to
# the first word end past the bound; :func:`adapter.search.excerpt.excerpt` cuts what is over.
# (The plain highlighter's fragment ended at the fragment's last word: "OOMKilled (exit code 137",
# every text without its full stop; issue 32.)
EXCERPT_ANALYZED_FACTOR = 10
MAX_ANALYZED = 1_000_000  # the servers' index.highlight.max_analyzed_offset default: a request may not ask more


@dataclass(frozen=True)
class Excerpts:
    """Which text fields of a search come back bounded, and by which request (:func:`plan_excerpts`)."""

    bounded: tuple[str, ...] = ()  # kept out of every ``_source`` the search asks for
    in_request: tuple[str, ...] = ()  # excerpted by the highlight of the request that returns the hits
    after: tuple[str, ...] = ()  # excerpted by a search for the page's ids afterwards
    max_chars: int = 0

    def __bool__(self) -> bool:
        return bool(self.bounded)


def plan_excerpts(
    options: SearchOptions, text_fields: Sequence[str], *, highlighted: bool, request_highlights: bool
) -> Excerpts:
    """Every text field is bounded unless the page asks for the full text. The request that returns
    the hits excerpts them in its own ``highlight`` clause where it can carry one
    (``request_highlights``) and the field is not among the page's snippets (``highlighted``: a
    field is highlighted once per request); the others are excerpted by a search for the page's ids."""
    if options.full_text:
        return Excerpts()
    bounded = tuple(dict.fromkeys(text_fields))
    shown = set(options.highlight_fields or text_fields) if highlighted else set()
    in_request = tuple(f for f in bounded if request_highlights and f not in shown)
    return Excerpts(bounded, in_request, tuple(f for f in bounded if f not in in_request), options.max_text_chars)


def excerpt_highlight(fields: Sequence[str], options: SearchOptions, *, offset_option: str) -> dict[str, Any]:
    """The ``highlight`` clause that returns the start of each of ``fields``, at least one character
    past ``max_text_chars`` when it is longer (so a cut shows), untagged: a no-match excerpt (its own
    ``highlight_query`` matches nothing, whatever the page's snippets ask). ``offset_option``: the
    engine's name for the analysed-length cap."""
    n = options.max_text_chars + 1
    per_field = {
        "type": "unified",
        "fragment_size": n,
        "number_of_fragments": 1,
        "no_match_size": n,
        "pre_tags": [""],
        "post_tags": [""],
    }
    return {
        "fields": {f: {**per_field, "highlight_query": {"match_none": {}}} for f in fields},
        offset_option: min(EXCERPT_ANALYZED_FACTOR * options.max_text_chars, MAX_ANALYZED),
    }


def merge_highlight(clause: Mapping[str, Any] | None, excerpts: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One ``highlight`` clause with the page's snippets and the excerpts (their fields are disjoint)."""
    if not excerpts:
        return dict(clause) if clause else None
    if not clause:
        return dict(excerpts)
    return {**excerpts, **clause, "fields": {**clause["fields"], **excerpts["fields"]}}


def excerpts_of(raw: RawHit, fields: Sequence[str], max_chars: int) -> dict[str, str]:
    """The excerpts of ``fields`` in ``raw``'s highlights (:func:`excerpt_highlight`), cut to ``max_chars``."""
    return {f: excerpt(raw.highlight[f][0], max_chars) for f in fields if raw.highlight.get(f)}


def with_excerpts(raw: RawHit, fields: Sequence[str], max_chars: int) -> RawHit:
    """``raw`` with the excerpts of ``fields`` (from its highlights) as their values in its source,
    and no longer among its highlights; its inner hits the same."""
    if not fields:
        return raw
    source = {**raw.source, **excerpts_of(raw, fields, max_chars)}
    highlight = {k: v for k, v in raw.highlight.items() if k not in fields}
    inner = {name: tuple(with_excerpts(h, fields, max_chars) for h in hits) for name, hits in raw.inner_hits.items()}
    return replace(raw, source=source, highlight=highlight, inner_hits=inner)


def hit_ids(raws: Sequence[RawHit]) -> list[str]:
    """The ids of ``raws`` and of their inner hits, once each."""
    return list(dict.fromkeys(i for r in raws for i in (r.id, *(h.id for hits in r.inner_hits.values() for h in hits))))


def with_texts(raw: RawHit, texts: Mapping[str, Mapping[str, str]]) -> RawHit:
    """``raw`` (and its inner hits) with the excerpts fetched for its id (``texts``: id -> field -> excerpt)."""
    inner = {name: tuple(with_texts(h, texts) for h in hits) for name, hits in raw.inner_hits.items()}
    return replace(raw, source={**raw.source, **texts.get(raw.id, {})}, inner_hits=inner)


def facet_aggs(options: SearchOptions) -> dict[str, Any]:
    """A ``terms`` aggregation per facet, named after the facet as given; with collapse each
    bucket also counts distinct documents (values of the collapse field)."""
    out = {}
    for name in options.facets:
        agg: dict[str, Any] = {"terms": {"field": filter_field(name), "size": options.facet_size}}
        if options.collapse is not None:
            agg["aggs"] = {DOCUMENTS: {"cardinality": {"field": options.collapse.field}}}
        out[name] = agg
    return out


def collapse_clause(
    collapse: Collapse,
    *,
    inner_hits: bool,
    exclude_source: Sequence[str] = (),
    highlight: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    clause: dict[str, Any] = {"field": collapse.field}
    if inner_hits and collapse.inner_hits:
        # size + 1: the group's best hit is its first inner hit too; the hit carries the others.
        inner: dict[str, Any] = {"name": CHUNKS, "size": collapse.inner_hits + 1}
        if exclude_source:
            inner["_source"] = {"excludes": list(exclude_source)}
        if highlight:
            inner["highlight"] = dict(highlight)
        clause["inner_hits"] = inner
    return clause


def sort_clause(sort: Sequence[SortKey]) -> list[dict[str, Any]]:
    return [{key.field: {"order": key.order}} for key in sort]


def page_clauses(
    plan: PagePlan,
    *,
    text_fields: Sequence[str],
    text_query: Mapping[str, Any],
    exclude_source: Sequence[str] = (),
    excerpts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The parts of the search body that run on the server (merged into the body by the caller);
    ``exclude_source``: what inner hits leave out of their sources too; ``excerpts``: the
    :func:`excerpt_highlight` clause of the text fields this request excerpts (inner hits too)."""
    o = plan.options
    body: dict[str, Any] = {}
    highlight = merge_highlight(highlight_clause(o, text_fields, text_query) if plan.highlight else None, excerpts)
    if highlight:
        body["highlight"] = highlight
    if plan.facets_in_query:
        body["aggs"] = facet_aggs(o)
    if plan.collapse_on_server and o.collapse is not None:
        body["collapse"] = collapse_clause(
            o.collapse, inner_hits=plan.inner_hits_on_server, exclude_source=exclude_source, highlight=excerpts
        )
    if plan.sort_on_server:
        body["sort"] = sort_clause(o.sort)
    if plan.min_score_on_server and o.min_score is not None:
        body["min_score"] = float(o.min_score)
    if plan.field_values:
        body["docvalue_fields"] = list(plan.field_values)
    return body


def facets_body(queries: Sequence[Mapping[str, Any]], options: SearchOptions) -> dict[str, Any]:
    """A size-0 request whose aggregations count the documents any of ``queries`` matches (what
    the hybrid query aggregates over)."""
    return {
        "size": 0,
        "query": {"bool": {"should": [dict(q) for q in queries], "minimum_should_match": 1}},
        "aggs": facet_aggs(options),
    }


# -- the client's side -------------------------------------------------------------------------------


def collapse_hits(hits: Sequence[T], key: Callable[[T], Any], inner_hits: int = 0) -> list[tuple[T, list[T]]]:
    """One ``(best, others)`` per group, in the order of each group's first (best) hit; ``others``
    are the group's next ``inner_hits`` hits, in order. Hits without a value form one group, as
    on the server."""
    groups: dict[Any, tuple[T, list[T]]] = {}
    for hit in hits:
        value = key(hit)
        value = tuple(value) if isinstance(value, list) else value
        if value in groups:
            best, others = groups[value]
            if len(others) < inner_hits:
                others.append(hit)
        else:
            groups[value] = (hit, [])
    return list(groups.values())


def sort_hits(hits: Sequence[T], sort: Sequence[SortKey], value: Callable[[T, str], Any]) -> list[T]:
    """``hits`` ordered by ``sort`` (stable: ties keep the fused order); missing values last."""
    out = list(hits)
    for key in reversed(sort):
        present = [h for h in out if value(h, key.field) is not None]
        missing = [h for h in out if value(h, key.field) is None]
        present.sort(key=lambda h: value(h, key.field), reverse=key.order == "desc")
        out = present + missing
    return out


def field_value(fields: Mapping[str, Any], name: str) -> Any:
    """The first value of ``name`` in a hit's ``fields`` (docvalue_fields answer), or None."""
    values = fields.get(name)
    if isinstance(values, list):
        return values[0] if values else None
    return values


def client_steps(
    items: Sequence[T], plan: PagePlan, *, score: Callable[[T], float], fields: Callable[[T], Mapping[str, Any]]
) -> list[tuple[T, list[T]]]:
    """The parts the client runs, in the server's order: the score floor on the fused scores,
    then the sort, then collapse (so each group keeps its best hit by the sort, or by score).
    Returns one ``(hit, others of its group)`` per kept hit."""
    o = plan.options
    floor = o.min_score
    if plan.min_score_by_client and floor is not None:
        items = [i for i in items if score(i) >= floor]
    if plan.sort_by_client:
        items = sort_hits(items, o.sort, lambda i, name: field_value(fields(i), name))
    collapse = o.collapse
    if plan.collapse_by_client and collapse is not None:
        return collapse_hits(items, lambda i: field_value(fields(i), collapse.field), collapse.inner_hits)
    return [(i, []) for i in items]
