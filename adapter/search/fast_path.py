"""The parallel-legs fast path of a hybrid search, and the check that earns it. Pure.

A server hybrid on OpenSearch runs both legs, then reads the source of every candidate of both in
its fetch phase, then fuses in its pipeline. The fast path sends the two legs in one ``_msearch``
(ids and scores only), fuses them here with the server's own formula (:mod:`adapter.fusion`), and
fetches the page's documents: the same page, in fewer bytes where the candidates outnumber the
page. Whether it is faster depends on the index and the node (measured: 0.72x the server hybrid's
client p50 at 1M documents, 0.98x at 100k, slower under load at 100k; docs/BENCHMARKS.md), so
it is never assumed: ``hybrid fast-path`` runs both on a sample of the index's queries, and only a
check that found every page identical and the fast path faster is kept with the index
(``_meta.fast_path``). A search takes it only where the check applies: the same fusion family, the
same candidate depth, the same cluster version and shard count, no explanation asked; the result says so.

:func:`check_fast_path` is ``hybrid fast-path``: each query is embedded once (both paths get the
same vector: the embedder's time is not what is compared), both paths run a few queries to warm
up, then each query runs once per path in a random order, so the machine's noise falls on both
alike. The timed pages are compared score by score (:func:`~adapter.fusion.same_ranking_up_to_ties`),
and each query's whole fused list to the depth, id by id (:func:`same_order`): a search takes the
fast path at any offset within the depth, where two paths that order tied scores differently give
different pages (a reader paging through would see a document twice, or never). One query whose
page or list differs and the check does not earn the fast path. :func:`keep_fast_path` keeps it with
the index. The rest of the module is pure.
"""

from __future__ import annotations

import enum
import math
import random
import statistics
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from adapter.engines import ClusterLike, cluster_for
from adapter.errors import InputError
from adapter.fusion import same_ranking_up_to_ties
from adapter.index.catalog import index_meta, read_index_info

if TYPE_CHECKING:
    from adapter.search import Searcher

# The fast path is kept only when its client p50 is at most this share of the server hybrid's: a
# margin over the noise of one run on a shared machine (a tie is not "measured faster").
FASTER_THAN = 0.9
MIN_QUERIES = 20  # fewer queries do not show that every page agrees


class FastPath(str, enum.Enum):
    """Whether a hybrid search may take the fast path."""

    AUTO = "auto"  # where the index's kept check applies (the default)
    ON = "on"  # always, for a server-fused hybrid (what the check itself measures)
    OFF = "off"  # never: the server fuses


@dataclass(frozen=True)
class FastPathCheck:
    """One run of both paths on a sample of queries, as kept in the index's ``_meta.fast_path``."""

    fusion: str  # the fusion family both ran (Fusion.name: weights may differ per query)
    depth: int  # candidates per leg
    k: int
    queries: int
    same_pages: int  # queries whose pages ranked identically (up to ties)
    hybrid_p50_ms: float  # client time of the server hybrid
    fast_p50_ms: float  # client time of the fast path
    version: str  # the cluster's version when checked
    checked: str  # when (ISO 8601, UTC)
    same_lists: (
        int  # queries whose whole fused lists to the depth came in the same order: every page at every offset the same
    )
    shards: int  # the index's primary shards (each shard fuses its own candidates on the server)

    @property
    def ratio(self) -> float:
        return self.fast_p50_ms / self.hybrid_p50_ms if self.hybrid_p50_ms > 0 else float("inf")

    @property
    def congruent(self) -> bool:
        return self.queries >= MIN_QUERIES and self.same_pages == self.queries and self.same_lists == self.queries

    @property
    def faster(self) -> bool:
        return self.ratio <= FASTER_THAN

    @property
    def taken(self) -> bool:
        """Whether searches may take the fast path on this evidence."""
        return self.congruent and self.faster

    def why_not(self) -> str | None:
        """Why the check does not earn the fast path (None: it does)."""
        if self.queries < MIN_QUERIES:
            return f"{self.queries} queries checked, {MIN_QUERIES} needed"
        if self.same_pages != self.queries:
            return f"the pages differed for {self.queries - self.same_pages} of {self.queries} queries"
        if self.same_lists != self.queries:
            return (
                f"the fused lists to depth {self.depth} came in another order for {self.queries - self.same_lists} of "
                f"{self.queries} queries (tied scores ordered differently): pages after the first would differ"
            )
        if not self.faster:
            return (
                f"not faster: {self.fast_p50_ms:.1f} against {self.hybrid_p50_ms:.1f} ms p50 "
                f"({self.ratio:.2f}x, {FASTER_THAN}x needed)"
            )
        return None

    def applies(self, fusion: str, depth: int, version: str, shards: int) -> bool:
        """Whether a search of ``fusion`` (its name) at ``depth`` on a cluster of ``version``, over an index of
        ``shards`` primary shards, is what was checked (any page within the depth: the whole lists were compared)."""
        return (
            self.taken
            and fusion == self.fusion
            and depth == self.depth
            and version == self.version
            and shards == self.shards
        )

    def notice(self) -> str:
        return (
            f"fast path: both legs in one _msearch, fused here by {self.fusion} with the server's formula "
            f"(`hybrid fast-path` on {self.checked[:10]}: the same pages at every offset for "
            f"{self.same_lists}/{self.queries} queries, client p50 {self.fast_p50_ms:.1f} against "
            f"{self.hybrid_p50_ms:.1f} ms for the server hybrid)"
        )

    def to_meta(self) -> dict[str, Any]:
        return {
            "fusion": self.fusion,
            "depth": self.depth,
            "k": self.k,
            "queries": self.queries,
            "same_pages": self.same_pages,
            "hybrid_p50_ms": self.hybrid_p50_ms,
            "fast_p50_ms": self.fast_p50_ms,
            "version": self.version,
            "checked": self.checked,
            "same_lists": self.same_lists,
            "shards": self.shards,
        }

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> FastPathCheck | None:
        """The kept check (None: none, or one this version cannot read, which is not taken: a check kept before
        ``same_lists`` and ``shards`` compared only the first page)."""
        if not meta:
            return None
        try:
            return cls(
                str(meta["fusion"]),
                int(meta["depth"]),
                int(meta["k"]),
                int(meta["queries"]),
                int(meta["same_pages"]),
                float(meta["hybrid_p50_ms"]),
                float(meta["fast_p50_ms"]),
                str(meta["version"]),
                str(meta["checked"]),
                int(meta["same_lists"]),
                int(meta["shards"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


# -- the check (I/O: runs searches, keeps the result in the index's _meta) ------------------------
MAX_QUERIES = 200
WARMUP = 5


def same_order(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]], *, rel_tol: float = 1e-6) -> bool:
    """Whether two fused lists hold the same ids in the same order, with the same scores: then every
    page at every offset within them is the same (:func:`~adapter.fusion.same_ranking_up_to_ties`
    lets tied scores come in any order, which is enough for one page, not for paging)."""
    return len(a) == len(b) and all(
        x == y and math.isclose(s, t, rel_tol=rel_tol, abs_tol=1e-12) for (x, s), (y, t) in zip(a, b)
    )


def check_fast_path(
    searcher: Searcher,
    queries: Iterable[str],
    *,
    k: int = 10,
    depth: int | None = None,
    max_queries: int = MAX_QUERIES,
    seed: int = 7,
) -> FastPathCheck:
    """Both paths on up to ``max_queries`` of ``queries``: k hits timed, and the whole fused list to
    ``depth`` (candidates per leg) compared, untimed."""
    if depth is not None and depth < 1:
        raise InputError(f"depth must be at least 1, got {depth}")
    if max_queries < 1:
        raise InputError(f"max_queries must be at least 1, got {max_queries}")
    texts = [q for q in queries if q and q.strip()][:max_queries]
    if not texts:
        raise InputError("no queries to check with; give a file with one query per line (or BEIR queries.jsonl)")
    run = _Runs(searcher, texts, depth or searcher.depth)
    for i in range(min(WARMUP, len(texts))):
        for path in PATHS:
            run(path, i, k)
    same, lists, rng = 0, 0, random.Random(seed)
    for i in range(len(texts)):
        pages = {path: run(path, i, k, timed=True) for path in rng.sample(PATHS, len(PATHS))}
        same += same_ranking_up_to_ties(pages[FastPath.OFF], pages[FastPath.ON])
        whole = {path: run(path, i, run.depth) for path in PATHS}
        lists += same_order(whole[FastPath.OFF], whole[FastPath.ON])
    return FastPathCheck(
        run.fusion(),
        run.depth,
        k,
        len(texts),
        same,
        run.p50(FastPath.OFF),
        run.p50(FastPath.ON),
        searcher.caps.version,
        datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        lists,
        searcher.info.shards,
    )


PATHS = (FastPath.OFF, FastPath.ON)


class _Runs:
    """One query of the check on one path: its hits, timed or not; the fusion families the server ran."""

    def __init__(self, searcher: Searcher, texts: list[str], depth: int) -> None:
        self.searcher, self.texts, self.depth = searcher, texts, depth
        embedder = searcher.embedder  # each query embedded once: both paths get the same vector
        self.vectors = [embedder.embed_query(q) for q in texts]
        self.times: dict[FastPath, list[float]] = {path: [] for path in PATHS}
        self.fusions: set[str] = set()

    def __call__(self, path: FastPath, i: int, k: int, *, timed: bool = False) -> list[tuple[str, float]]:
        r = self.searcher.search(
            self.texts[i], technique="hybrid", k=k, depth=self.depth, query_vector=self.vectors[i], fast_path=path
        )
        if path is FastPath.OFF:
            if r.fusion is None or not r.fused_by.server:
                raise InputError(
                    f"the server does not fuse this index's hybrid ({r.fused_by.value}): there is no "
                    "server hybrid to check the fast path against"
                )
            self.fusions.add(r.fusion.name)
        if timed:
            self.times[path].append(r.total_ms or 0.0)  # a Searcher always sets it
        return [(h.id, h.score) for h in r.hits]

    def p50(self, path: FastPath) -> float:
        return round(statistics.median(self.times[path]), 3)

    def fusion(self) -> str:
        if len(self.fusions) != 1:
            raise InputError(
                f"the server hybrid fused by {len(self.fusions)} fusion families ({', '.join(sorted(self.fusions))}) "
                "across these queries: one check covers one"
            )
        return next(iter(self.fusions))


def keep_fast_path(client: ClusterLike, alias: str, check: FastPathCheck | None) -> str:
    """Keep ``check`` in the index's ``_meta.fast_path`` (None: forget the one kept); returns the index."""
    cluster = cluster_for(client)
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    meta.pop("fast_path", None)
    if check is not None:
        meta["fast_path"] = check.to_meta()
    cluster.put_mapping(info.index, {"_meta": meta}, action=f"keeping the fast-path check of {info.index}")
    return info.index
