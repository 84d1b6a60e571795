"""``hybrid search``: one query by bm25, dense, hybrid, client-rrf or client (+ rerank, MMR)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from adapter.cli.common import Subparsers, allowed, connect, embedder_for, with_allow_model, with_url
from adapter.cli.printers import print_result
from adapter.errors import InputError
from adapter.search.fast_path import FastPath

if TYPE_CHECKING:
    import numpy as np

    from adapter.fusion import Fusion
    from adapter.fusion.choice.learned import LearnedFusion
    from adapter.fusion.choice.policy import AdaptivePolicy
    from adapter.fusion.choice.values import FusionMode
    from adapter.search import Searcher
    from adapter.search.page import SearchOptions
    from adapter.search.request import VectorLike
    from adapter.search.results import SearchResult
    from adapter.search.state import HybridFusion


def add_parsers(sub: Subparsers) -> None:
    search = with_url(
        sub.add_parser("search", help="search with bm25, dense, hybrid, client-rrf or client (+ rerank, MMR)")
    )
    _query_arguments(search)
    _fusion_arguments(search)
    _rerank_arguments(search)
    _page_arguments(search)
    _vector_arguments(search)
    _run_and_output_arguments(search)
    search.set_defaults(func=run)


def _query_arguments(search: argparse.ArgumentParser) -> None:
    """What to search: the query, the index, the technique, the page's place and the filters."""
    search.add_argument("query")
    search.add_argument("--index", required=True)
    search.add_argument(
        "-t",
        "--technique",
        default="hybrid",
        help="bm25, dense, hybrid, client-rrf, or client (both legs fused here by --fusion) (default %(default)s)",
    )
    search.add_argument("-k", type=int, default=10, help="hits to return (default %(default)s)")
    search.add_argument("--from", dest="from_", type=int, default=0, help="offset for pagination")
    search.add_argument(
        "--filter", action="append", help="field=value (value1|value2 for any of); applied to both legs"
    )


def _fusion_arguments(search: argparse.ArgumentParser) -> None:
    """How the legs are fused: the fusion and its model, policy, weights or pipeline, and each leg's depth."""
    search.add_argument(
        "--fusion",
        help="hybrid fusion: adaptive (the index's calibrated weights), min_max-arithmetic_mean, "
        "l2-harmonic_mean, ..., rrf or rrf-<rank constant>, sum, dbsf (client-side only), or learned "
        "(--model; fused in the client) (default: the index's)",
    )
    search.add_argument(
        "--model", help="learned fusion: a model file written by `hybrid eval --tune` (--fusion learned)"
    )
    search.add_argument("--policy", help="adaptive fusion: a policy file (e.g. learned by `hybrid eval --tune`)")
    search.add_argument("--weights", help="per-leg weights bm25,dense")
    search.add_argument("--rank-constant", type=int, help="RRF rank constant (default 60)")
    search.add_argument("--pipeline", help="a named search pipeline to fuse with")
    search.add_argument("--depth", type=int, default=100, help="candidates per leg (default %(default)s)")


def _rerank_arguments(search: argparse.ArgumentParser) -> None:
    """What reorders the fused hits: the cross-encoder and MMR, with where MMR runs."""
    search.add_argument(
        "--rerank",
        type=int,
        nargs="?",
        const=50,
        metavar="N",
        help="rerank the top N (default 50) with a cross-encoder",
    )
    search.add_argument("--reranker", default="cross-encoder/ms-marco-MiniLM-L-6-v2", help="cross-encoder name or path")
    search.add_argument(
        "--mmr",
        type=float,
        nargs="?",
        const=0.5,
        metavar="LAMBDA",
        help="diversify with MMR (default lambda 0.5; 1 = relevance only, 0 = diversity only)",
    )
    mmr_place = search.add_mutually_exclusive_group()
    mmr_place.add_argument(
        "--server-mmr",
        dest="mmr_place",
        action="store_const",
        const="server",
        help="run MMR on the server (k-NN ext.mmr: dense only, OpenSearch 3.3+ with its cluster setting on; "
        "its diversity is 1 - lambda). Default: the server for dense from --mmr 0.9 up, where it "
        "was measured as good as the client's and faster, else the client",
    )
    mmr_place.add_argument(
        "--client-mmr", dest="mmr_place", action="store_const", const="client", help="run MMR in the client"
    )


def _page_arguments(search: argparse.ArgumentParser) -> None:
    """The page group: highlights, texts, facets, collapse, sort and a minimum score."""
    page = search.add_argument_group(
        "page", "what the page shows besides the hits (where the cluster cannot, the client does it, and says so)"
    )
    page.add_argument("--highlight", action="store_true", help="snippets of the text fields around the query's words")
    page.add_argument(
        "--full-text",
        action="store_true",
        help="the hits' whole texts (default: each text field as an excerpt of at most --max-text-chars around "
        "the query's words)",
    )
    page.add_argument(
        "--max-text-chars",
        type=int,
        default=10_000,
        metavar="N",
        help="the longest excerpt of a text field a hit carries (default %(default)s)",
    )
    page.add_argument(
        "--facet",
        action="append",
        default=[],
        metavar="FIELD",
        help="count the values of FIELD among the matched documents (repeatable; a bare name is metadata.FIELD)",
    )
    page.add_argument("--facet-size", type=int, default=10, help="values per facet (default %(default)s)")
    page.add_argument(
        "--collapse",
        nargs="?",
        const="parent_id",
        metavar="FIELD",
        help="one hit per document (its best chunk); FIELD: another keyword field to collapse by",
    )
    page.add_argument(
        "--inner-hits",
        type=int,
        default=0,
        metavar="N",
        help="with --collapse: also the next N chunks of each document",
    )
    page.add_argument(
        "--sort", action="append", default=[], metavar="FIELD[:asc|desc]", help="sort by a field instead of the score"
    )
    page.add_argument("--min-score", type=float, help="drop hits scoring lower (the fused score for hybrid)")
    page.add_argument(
        "--min-relevance",
        type=float,
        metavar="R",
        help="drop hits whose relevance (0-1, one meaning under every fusion on a calibrated index) is lower, as the "
        "frameworks' thresholds do; on OpenSearch it asks the legs' scores (docs/INTEROP.md, Scores)",
    )


def _vector_arguments(search: argparse.ArgumentParser) -> None:
    """Where the query's vector comes from: the embedder, or a vector embedded elsewhere."""
    search.add_argument("--embedder", help="default: the embedder recorded in the index")
    search.add_argument(
        "--query-vector",
        metavar="FILE|-",
        help="the query's vector, embedded elsewhere: a JSON array of numbers (or numbers separated by spaces, "
        "commas or lines) in FILE, or on standard input with -; no model is loaded",
    )
    with_allow_model(search)


def _run_and_output_arguments(search: argparse.ArgumentParser) -> None:
    """How the search runs (fast path, fallback, partial results) and what it prints (explain, requests, JSON)."""
    search.add_argument(
        "--explain", action="store_true", help="per-leg rank, raw score, normalised score, weight, contribution"
    )
    search.add_argument(
        "--fast-path",
        choices=("auto", "on", "off"),
        default="auto",
        help="hybrid: the parallel-legs fast path where `hybrid fast-path --keep` earned it (auto), always, or never",
    )
    search.add_argument(
        "--no-fallback",
        action="store_true",
        help="fail instead of fusing in the client a fusion the cluster cannot run",
    )
    search.add_argument(
        "--no-partial-results",
        dest="allow_partial_results",
        action="store_false",
        help="fail (exit 2) instead of printing a partial result with a note: a shard that failed even when "
        "asked again, or a collapsed page with fewer hits than -k while the query matched more documents "
        "(the servers' allow_partial_search_results=false)",
    )
    search.add_argument(
        "--show-query",
        action="store_true",
        help="print every request sent (method, path, search_pipeline, exact body) to reproduce it with any client",
    )
    search.add_argument(
        "--json",
        action="store_true",
        help="the result as JSON (schema: `hybrid schema search`), with the requests sent under 'sent'; "
        "indented on a terminal, one line when piped",
    )
    search.add_argument(
        "--with-vector",
        action="store_true",
        help="--json: keep the query vector in the requests under 'sent' (left out by default: ~8 KB per copy)",
    )


def parse_filters(items: Sequence[str] | None) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"filters look like field=value, got {item!r}")
        key, value = item.split("=", 1)
        filters[key.strip()] = value.split("|") if "|" in value else value
    return filters


def search_options(args: argparse.Namespace) -> SearchOptions:
    from adapter.search.page import Collapse, MMRPlace, SearchOptions, SortKey

    if args.inner_hits and not args.collapse:
        raise InputError("--inner-hits needs --collapse")
    if args.min_relevance is not None and not 0 <= args.min_relevance <= 1:
        raise InputError(f"--min-relevance is a relevance in [0, 1], got {args.min_relevance}")
    return SearchOptions(
        highlight=args.highlight,
        full_text=args.full_text,
        max_text_chars=args.max_text_chars,
        facets=tuple(args.facet),
        facet_size=args.facet_size,
        collapse=Collapse(args.collapse, args.inner_hits) if args.collapse else None,
        sort=tuple(SortKey.parse(s) for s in args.sort),
        min_score=args.min_score,
        mmr=MMRPlace.parse(args.mmr_place or MMRPlace.AUTO),
        allow_partial_results=args.allow_partial_results,
        leg_relevance=args.min_relevance is not None,  # what a framework's threshold asks: one meaning per fusion
    )


def load_model(path: str) -> LearnedFusion:
    from pathlib import Path

    from adapter.fusion.choice.learned import LearnedFusion

    try:
        return LearnedFusion.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read model file {path}: {exc}") from exc


def _fusion(args: argparse.Namespace, policy: AdaptivePolicy | None) -> HybridFusion | FusionMode | None:
    """The fusion ``--fusion``, ``--model``, ``--policy``, ``--weights`` and ``--rank-constant`` ask for
    (``ADAPTIVE``: the index's own policy, resolved once the searcher is open); flags that do not go
    together are refused."""
    from adapter.fusion import parse_fusion, parse_weights
    from adapter.fusion.choice.learned import LEARNED
    from adapter.fusion.choice.values import ADAPTIVE

    if policy is not None and args.fusion not in (None, ADAPTIVE):
        raise InputError(f"--policy is for --fusion {ADAPTIVE}, not {args.fusion}")
    if (args.fusion == LEARNED) != bool(args.model):
        raise InputError(
            f"learned fusion needs its model: give --fusion {LEARNED} --model FILE (from `hybrid eval --tune`)"
        )
    if args.fusion == LEARNED:
        if args.weights or args.rank_constant:
            raise InputError("learned fusion weighs the legs by its model; drop --weights / --rank-constant")
        return load_model(args.model)
    if args.fusion == ADAPTIVE or policy is not None:
        if args.weights or args.rank_constant:
            raise InputError("adaptive fusion chooses the weights itself; drop --weights / --rank-constant")
        return policy or ADAPTIVE  # resolved in run: the index's own policy unless a file was given
    fusion: Fusion | None = parse_fusion(
        args.fusion, weights=parse_weights(args.weights), rank_constant=args.rank_constant
    )
    return fusion


def _query_vector(
    searcher: Searcher, args: argparse.Namespace, vector: VectorLike | None
) -> tuple[VectorLike | None, QueryTiming]:
    """The query's vector (``--query-vector``'s, or embedded when the search needs one) and what it cost."""
    from adapter.search.results import Technique

    timing = QueryTiming()
    if vector is None and (Technique.parse(args.technique) is not Technique.BM25 or args.mmr is not None):
        vector, timing = embed_timed(searcher, args.query)
    elif vector is not None:
        timing = QueryTiming(source=args.query_vector)
    return vector, timing


def _print(args: argparse.Namespace, result: SearchResult, timing: QueryTiming) -> None:
    from adapter.search.result_json import search_result_json

    if args.json:
        # Indented for a person at a terminal; one line for a program (a 10-hit answer: ~7 KB, not ~11).
        indent = 2 if sys.stdout.isatty() else None
        print(
            json.dumps(
                search_result_json(result, with_vector=args.with_vector), indent=indent, ensure_ascii=False, default=str
            )
        )
    else:
        print_result(result, explain=args.explain, show_query=args.show_query, timing=timing)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from adapter.engines.dsl import clean_query
    from adapter.engines.port import counting
    from adapter.search.relevance import at_least

    clean_query(args.query)  # before connecting: an empty query needs no cluster to be refused
    from adapter.cli.adaptive import load_policy
    from adapter.fusion.choice.learned import LEARNED
    from adapter.fusion.choice.values import ADAPTIVE

    fusion = _fusion(args, load_policy(args.policy))
    options = replace(search_options(args), text_matches=True)  # the notes below, without a request of their own
    vector = read_query_vector(args.query_vector) if args.query_vector else None
    with counting() as counted:  # every HTTP request of the command: what the result's `requests` says
        searcher = open_searcher(
            args, args.reranker if args.rerank else None, depth=args.depth, allow_fallback=not args.no_fallback
        )
        if fusion == ADAPTIVE:
            fusion = searcher.policy
        vector, timing = _query_vector(searcher, args, vector)
        technique = args.technique
        if args.fusion == LEARNED and technique == "hybrid":
            technique = "client"  # no server runs a learned fusion: both legs are fused here by the model
        result = searcher.search(
            args.query,
            technique=technique,
            k=args.k,
            from_=args.from_,
            filters=parse_filters(args.filter),
            fusion=fusion,
            pipeline=args.pipeline,
            rerank_top=args.rerank,
            mmr_lambda=args.mmr,
            explain=args.explain,
            options=options,
            query_vector=vector,
            fast_path=FastPath(args.fast_path),
        )
        result = with_match_notes(searcher, args.query, result, page_from=args.from_)
    if args.min_relevance is not None:
        result = at_least(result, args.min_relevance, said=f"--min-relevance {args.min_relevance:g}")
    result = replace(result, requests=counted[0])
    _print(args, result, timing)
    return 0


_TEXT_LEGS = ("bm25", "hybrid", "client", "client-rrf")


def with_match_notes(searcher: Searcher, query: str, result: SearchResult, *, page_from: int = 0) -> SearchResult:
    """``result`` with notes where BM25 could not match (an empty index; a query of stopwords only, or of
    words the index does not hold), which a page of dense hits alone, or none, would not say. The
    search itself told whether BM25 matched (``SearchOptions.text_matches``, taken out of the
    aggregations here): where it did and the page has hits there is nothing to say and nothing is
    asked. Else a count when the page is empty, and the query's term statistics (one ``_termvectors``)
    when a leg is BM25."""
    from dataclasses import replace

    from adapter.search.page import TEXT_MATCHES

    told = result.aggregations.get(TEXT_MATCHES)
    if told is not None:
        result = replace(result, aggregations={k: v for k, v in result.aggregations.items() if k != TEXT_MATCHES})
    technique = result.technique.value
    matched = (technique == "bm25" and bool(result.hits)) or (told is not None and told.buckets[0].count > 0)
    documents = None
    if not result.hits:
        documents = searcher.cluster.count(searcher.info.index, action=f"counting the documents of {searcher.alias}")
    coverage: float | None = -1.0  # not asked
    if technique in _TEXT_LEGS and documents != 0 and not (matched and result.hits):
        coverage = term_coverage(searcher, query)
    notes = match_notes(
        searcher.alias,
        documents=documents,
        coverage=coverage,
        technique=technique,
        hits=len(result.hits),
        page_from=page_from,
        said=result.notices,
    )
    return replace(result, notices=(*result.notices, *notes)) if notes else result


def term_coverage(searcher: Searcher, query: str) -> float | None:
    """The query's term coverage of the index (:func:`adapter.fusion.choice.signals.term_coverage`): None where
    the analyzer keeps no word of it, 0 where the index holds none of them. One ``_termvectors``."""
    from adapter.engines.dsl import clean_query
    from adapter.search.recovery import Attempt
    from adapter.search.retrieve import Retriever

    retriever = Retriever(searcher.cluster, searcher.engine, searcher.state, Attempt(accept_partial=True))
    return retriever.coverage(clean_query(query))[0]


def match_notes(
    index: str,
    *,
    documents: int | None,
    coverage: float | None,
    technique: str,
    hits: int,
    page_from: int = 0,
    said: tuple[str, ...] = (),
) -> list[str]:
    """The notes of :func:`with_match_notes` (pure). ``documents``: the index's count (None: not
    asked); ``coverage``: the query's term coverage (None: no analysed term; below 0: not asked);
    ``page_from``: the page's offset; ``said``: the search's own notices."""
    if documents == 0:
        return [f"index {index!r} holds no documents: nothing can match yet (hybrid ingest FILE --index {index})"]
    if coverage is not None and coverage != 0:  # terms the index holds, or not asked
        if hits:
            return []
        if page_from > 0:  # an empty page past the last match is not "nothing matched"
            past = any("past the end" in notice for notice in said)  # the fused search said why already
            return (
                []
                if past
                else [f"no hits from offset {page_from}: fewer matches than that (--from 0 shows the first page)"]
            )
        return ["no document matched the query (and its filters, if any)"]
    why = (
        "the query has no word the index's analyzer keeps (stopwords only)"
        if coverage is None
        else "none of the query's words is in the index"
    )
    if technique == "bm25" or not hits:
        return [f"{why}: BM25 matched nothing" + ("; -t dense searches by meaning" if technique == "bm25" else "")]
    return [f"{why}: BM25 matched nothing, so these hits are the dense leg's alone"]


@dataclass(frozen=True)
class QueryTiming:
    """Where a terminal search spent its time besides the search itself."""

    load_s: float | None = None  # loading the model (and its first, cold encode)
    embed_ms: float | None = None  # embedding the query with the model warm
    source: str | None = None  # the vector came from this file (- for standard input): no model

    def line(self, search_ms: float) -> str:
        """``took`` stays the server's; this says what the client spent, model load apart."""
        if self.source is not None:
            return (
                f"{search_ms:.0f} ms (search; query vector from "
                f"{'standard input' if self.source == '-' else self.source})"
            )
        if self.embed_ms is None:
            return f"{search_ms:.0f} ms (search)"
        return (
            f"{search_ms + self.embed_ms:.0f} ms (query: {self.embed_ms:.0f} ms embedding + {search_ms:.0f} ms "
            f"search); model loaded in {self.load_s:.1f} s, once per process (hybrid serve keeps it loaded)"
        )


def embed_timed(searcher: Searcher, query: str) -> tuple[np.ndarray, QueryTiming]:
    """The query's vector, timing the model's load (its first encode) apart from a warm encode."""
    import time

    from adapter.engines.dsl import clean_query

    text = clean_query(query)
    started = time.perf_counter()
    searcher.query_vector(text)  # loads the model: the first encode pays for it
    loaded = time.perf_counter()
    vector = searcher.query_vector(text)
    return vector, QueryTiming(load_s=loaded - started, embed_ms=(time.perf_counter() - loaded) * 1000)


def read_query_vector(source: str) -> VectorLike:
    """``--query-vector FILE|-``: a JSON array of numbers, or numbers separated by whitespace or commas."""
    import math
    import re
    import sys
    from pathlib import Path

    where = "standard input" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the query vector from {where}: {exc.strerror or exc}") from exc
    text = text.strip()
    try:
        values = json.loads(text) if text.startswith("[") else [float(t) for t in re.split(r"[\s,]+", text) if t]
    except ValueError as exc:
        raise InputError(
            f"the query vector in {where} is neither a JSON array of numbers nor numbers separated by spaces or "
            f"commas ({exc})"
        ) from exc
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    ):
        raise InputError(f"the query vector in {where} must be a non-empty list of numbers")
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise InputError(
            f"the query vector in {where} has {len(bad)} values that are not finite numbers (first at position "
            f"{bad[0]})"
        )
    return [float(v) for v in values]


def quiet_models() -> None:
    """No model-loading progress bars on a terminal search (huggingface_hub and transformers draw
    them on stderr while weights load); set before either is imported, where the user did not."""
    import os
    import sys

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "transformers" in sys.modules:  # imported already (a library caller): its switch is read once at import
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def open_searcher(
    args: argparse.Namespace, reranker: str | None, *, client_options: Mapping[str, Any] | None = None, **options: Any
) -> Searcher:
    """``args.index`` on ``args``' cluster with the embedder ``--embedder`` names (default: the index's)
    and the cross-encoder ``reranker`` (None: none); ``client_options`` go to the client (``timeout``,
    ``pool_maxsize``), ``options`` to :meth:`Searcher.open`. ``hybrid search`` and ``hybrid serve``
    open theirs alike."""
    from adapter.search import Searcher

    quiet_models()  # before a model loads
    cluster = connect(args, **(client_options or {}))
    cross_encoder = None
    if reranker:
        from adapter.search.rerank import CrossEncoderReranker

        cross_encoder = CrossEncoderReranker(reranker)
    embedder = embedder_for(args, cluster) if args.embedder else None
    return Searcher.open(cluster, args.index, embedder, reranker=cross_encoder, allowed_models=allowed(args), **options)
