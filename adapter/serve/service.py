"""What ``hybrid serve`` does for a request, apart from HTTP: one warm searcher, read-only.

The searcher (and so its embedder, loaded once) is opened at start and kept; every request is a
search through it (``search``, ``msearch``, ``mget``: nothing is written to the cluster, and a
fusion no stored pipeline runs travels inside the request). A compare embeds its query once and
runs every column with that vector. Results are the search contract's JSON
(:func:`adapter.search.result_json.search_result_json`, what ``hybrid search --json`` prints).

Nothing here holds a lock across a search: the searcher is safe across threads (each search reads
its state once), the embedder is called by one thread (:mod:`adapter.serve.vectors`), and only the
reranker, whose tokenizer refuses concurrent calls, takes one request at a time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter.engines.capabilities import Capabilities
from adapter.engines.dsl import clean_query
from adapter.engines.registry import engine_named
from adapter.engines.render import client_only, servers
from adapter.errors import HybridError, InputError
from adapter.fusion import DEFAULT_RANK_CONSTANT, DEFAULT_WEIGHTS, Fusion, methods, parse_fusion
from adapter.search.result_json import search_result_json
from adapter.models.embedders import Embedder
from adapter.search import Searcher
from adapter.search.page import SearchOptions
from adapter.search.rerank import Reranker
from adapter.search.results import SearchResult, Technique
from adapter.serve.params import ADAPTIVE, Config, Limits


def engine_notes(caps: Capabilities) -> list[str]:
    """What differs on this cluster, for the page: where fusion runs (the engine's placement says) and
    what is fused in the client everywhere."""
    notes = engine_named(caps.engine).placement.notes(caps)
    client_only = [f.name for f in _client_only()]
    if client_only:
        notes.append(f"Fused in the client on every engine: {', '.join(client_only)}.")
    return notes


def offered_fusions(caps: Capabilities) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every fusion a column may ask for, those of them fused in the client here): adaptive, what this
    cluster's server runs, then every other variant of a method this engine runs or no engine runs
    (the searcher fuses those in the client and its notices say so; a method of another engine only,
    such as Elasticsearch's sum on OpenSearch, is not offered)."""
    server = [f.name for f in caps.fusions(DEFAULT_WEIGHTS)]
    every = [
        f.name
        for method in methods()
        if caps.engine in servers(method) or not servers(method)
        for f in method.variants(DEFAULT_WEIGHTS, (DEFAULT_RANK_CONSTANT,))
    ]
    client = tuple(dict.fromkeys(name for name in every if name not in server))
    return tuple(dict.fromkeys([ADAPTIVE, *server, *every])), client


def _client_only() -> list[Fusion]:
    return client_only()


@dataclass(frozen=True)
class ServerInfo:
    cluster: str  # its address, without credentials
    index: str
    engine: str
    version: str
    embedder: str
    fusions: tuple[str, ...]
    client_fusions: tuple[str, ...]  # of those, the ones this cluster's server cannot run
    default_fusion: str
    reranker: str | None
    notes: tuple[str, ...]
    limits: Limits

    def as_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "index": self.index,
            "engine": self.engine,
            "version": self.version,
            "embedder": self.embedder,
            "fusions": list(self.fusions),
            "client_fusions": list(self.client_fusions),
            "default_fusion": self.default_fusion,
            "reranker": self.reranker,
            "notes": list(self.notes),
            "limits": self.limits.as_json(),
            "read_only": True,
            "techniques": [t.value for t in Technique],
        }


class _OneAtATime:
    """A reranker called by one thread at a time (a Hugging Face tokenizer refuses concurrent calls)."""

    def __init__(self, reranker: Reranker) -> None:
        self._reranker = reranker
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._reranker.score(query, texts)


class SearchService:
    """One index behind a warm searcher. Thread-safe without a shared lock: concurrent searches and
    compares run side by side (``reranker`` names the searcher's cross-encoder, for the page)."""

    def __init__(
        self, searcher: Searcher, *, cluster: str, limits: Limits = Limits(), reranker: str | None = None
    ) -> None:
        self.searcher = searcher
        self.limits = limits
        self.reranker = reranker
        if searcher.reranker is not None and not isinstance(searcher.reranker, _OneAtATime):
            searcher.reranker = _OneAtATime(searcher.reranker)
        caps = searcher.caps
        default = searcher.info.default_fusion or (searcher.pipeline or searcher.fusion.name)
        fusions, client_fusions = offered_fusions(caps)
        self.info = ServerInfo(
            cluster=cluster,
            index=searcher.alias,
            engine=caps.engine,
            version=caps.version,
            embedder=searcher.info.fingerprint.model,
            fusions=fusions,
            client_fusions=client_fusions,
            default_fusion=str(default),
            reranker=reranker,
            notes=tuple(engine_notes(caps)),
            limits=limits,
        )

    @property
    def embedder(self) -> Embedder:
        return self.searcher.embedder

    def warm(self) -> float:
        """Load the model now (its first encode); seconds spent."""
        started = time.perf_counter()
        self.searcher.query_vector("warm up")
        return time.perf_counter() - started

    def ready(self) -> dict[str, Any]:
        """One cheap request (a count of the index) that needs the cluster and the index: raises what it met."""
        return {"documents": self.searcher.cluster.count(self.searcher.alias, action="checking readiness")}

    def _fusion(self, config: Config) -> Any:
        if config.fusion == ADAPTIVE:
            if config.weights or config.rank_constant:
                raise InputError("adaptive fusion chooses the weights itself; drop weights / rank_constant")
            return self.searcher.policy
        return parse_fusion(config.fusion, weights=config.weights, rank_constant=config.rank_constant)

    def result(self, query: str, config: Config, vector: np.ndarray | None) -> SearchResult:
        """One search with ``config``; ``vector``: the query's (None: embedded here when needed)."""
        fusion = self._fusion(config)
        return self.searcher.search(
            query,
            technique=config.technique,
            k=config.k,
            from_=config.from_,
            depth=config.depth,
            fusion=fusion,
            rerank_top=config.rerank,
            mmr_lambda=config.mmr,
            explain=config.explain
            and config.technique is not Technique.BM25
            and config.technique is not Technique.DENSE,
            query_vector=vector,
            filters=dict(config.filters) or None,
            options=SearchOptions(highlight=config.highlight, full_text=config.full_text),
        )

    def needs_vector(self, configs: Sequence[Config]) -> bool:
        return not all(c.technique is Technique.BM25 and c.mmr is None for c in configs)

    def embedding_text(self, query: str) -> str:
        """What is embedded for ``query`` (and so the query-vector cache's key)."""
        return clean_query(query)

    def _vector(self, query: str, configs: Sequence[Config]) -> np.ndarray | None:
        return self.searcher.query_vector(self.embedding_text(query)) if self.needs_vector(configs) else None

    def search(self, query: str, config: Config, vector: np.ndarray | None = None) -> dict[str, Any]:
        """One search, as ``hybrid search --json`` answers it."""
        if vector is None:
            vector = self._vector(query, [config])
        return search_result_json(self.result(query, config, vector))

    def compare(
        self,
        query: str,
        configs: Sequence[Config],
        vector: np.ndarray | None = None,
        each: Callable[[Config, SearchResult | None, float], None] = lambda config, result, seconds: None,
    ) -> list[Mapping[str, Any]]:
        """Every column's result (or its error) for one query, embedded once; ``each(config, result or
        None, seconds)`` hears of every column."""
        if vector is None:
            vector = self._vector(query, configs)
        out: list[Mapping[str, Any]] = []
        for config in configs:
            started = time.perf_counter()
            try:
                result = self.result(query, config, vector)
            except HybridError as exc:  # one column's bad configuration does not sink the others
                each(config, None, time.perf_counter() - started)
                out.append({"label": config.label, "error": str(exc)})
                continue
            each(config, result, time.perf_counter() - started)
            out.append({"label": config.label, "result": search_result_json(result)})
        return out
