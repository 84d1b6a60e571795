"""What ``hybrid serve`` does for a request, apart from HTTP: one warm searcher, read-only.

The searcher (and so its embedder, loaded once) is opened at start and kept; every request is a
search through it (``search``, ``msearch``, ``mget``: nothing is written to the cluster, and a
fusion no stored pipeline runs travels inside the request). A compare embeds its query once and
runs every column with that vector. Results are the search contract's JSON
(:func:`adapter.index.contracts.search_result_json`, what ``hybrid search --json`` prints).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from adapter.engines.capabilities import Capabilities
from adapter.engines.dsl import clean_query
from adapter.engines.registry import engine_named
from adapter.errors import HybridError, InputError
from adapter.fusion import DEFAULT_RANK_CONSTANT, DEFAULT_WEIGHTS, Fusion, methods, parse_fusion
from adapter.fusion.render import servers
from adapter.index.contracts import search_result_json
from adapter.search import Searcher
from adapter.search.page import SearchOptions
from adapter.search.results import Technique
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
    every = [f.name for method in methods() if caps.engine in servers(method) or not servers(method)
             for f in method.variants(DEFAULT_WEIGHTS, (DEFAULT_RANK_CONSTANT,))]
    client = tuple(dict.fromkeys(name for name in every if name not in server))
    return tuple(dict.fromkeys([ADAPTIVE, *server, *every])), client


def _client_only() -> list[Fusion]:
    from adapter.fusion import client_only

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
        return {"cluster": self.cluster, "index": self.index, "engine": self.engine, "version": self.version, "embedder": self.embedder,
                "fusions": list(self.fusions), "client_fusions": list(self.client_fusions), "default_fusion": self.default_fusion,
                "reranker": self.reranker, "notes": list(self.notes), "limits": self.limits.as_json(), "read_only": True,
                "techniques": [t.value for t in Technique]}


class SearchService:
    """One index behind a warm searcher. Thread-safe: searches run one at a time (the searcher and
    its model are shared; a compare's columns are one request)."""

    def __init__(self, searcher: Searcher, *, cluster: str, limits: Limits = Limits(), reranker: str | None = None) -> None:
        self.searcher = searcher
        self.limits = limits
        self.reranker = reranker
        self._lock = threading.Lock()
        caps = searcher.caps
        default = searcher.info.default_fusion or (searcher.pipeline or searcher.fusion.name)
        fusions, client_fusions = offered_fusions(caps)
        self.info = ServerInfo(cluster=cluster, index=searcher.alias, engine=caps.engine, version=caps.version,
                               embedder=searcher.info.fingerprint.model, fusions=fusions, client_fusions=client_fusions,
                               default_fusion=str(default), reranker=reranker, notes=tuple(engine_notes(caps)), limits=limits)

    def warm(self) -> float:
        """Load the model now (its first encode); seconds spent."""
        started = time.perf_counter()
        self.searcher.query_vector("warm up")
        return time.perf_counter() - started

    def _fusion(self, config: Config) -> Any:
        if config.fusion == ADAPTIVE:
            if config.weights or config.rank_constant:
                raise InputError("adaptive fusion chooses the weights itself; drop weights / rank_constant")
            return self.searcher.policy
        return parse_fusion(config.fusion, weights=config.weights, rank_constant=config.rank_constant)

    def _run(self, query: str, config: Config, vector: np.ndarray | None) -> dict[str, Any]:
        fusion = self._fusion(config)
        result = self.searcher.search(
            query, technique=config.technique, k=config.k, from_=config.from_, depth=config.depth, fusion=fusion,
            rerank_top=config.rerank, mmr_lambda=config.mmr, explain=config.explain and config.technique is not Technique.BM25
            and config.technique is not Technique.DENSE, query_vector=vector, filters=dict(config.filters) or None,
            options=SearchOptions(highlight=config.highlight, full_text=config.full_text),
        )
        return search_result_json(result)

    def _vector(self, query: str, configs: Sequence[Config]) -> np.ndarray | None:
        if all(c.technique is Technique.BM25 and c.mmr is None for c in configs):
            return None
        return self.searcher.query_vector(clean_query(query))

    def search(self, query: str, config: Config) -> dict[str, Any]:
        """One search, as ``hybrid search --json`` answers it."""
        with self._lock:
            return self._run(query, config, self._vector(query, [config]))

    def compare(self, query: str, configs: Sequence[Config]) -> list[Mapping[str, Any]]:
        """Every column's result (or its error) for one query, embedded once."""
        with self._lock:
            vector = self._vector(query, configs)
            out: list[Mapping[str, Any]] = []
            for config in configs:
                try:
                    out.append({"label": config.label, "result": self._run(query, config, vector)})
                except HybridError as exc:  # one column's bad configuration does not sink the others
                    out.append({"label": config.label, "error": str(exc)})
            return out
