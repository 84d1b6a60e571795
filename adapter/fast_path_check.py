"""``hybrid fast-path``: the server hybrid and the parallel-legs fast path on a sample of an
index's queries, side by side, and the check kept with the index (:mod:`adapter.fastpath`).

Each query is embedded once (both paths get the same vector: the embedder's time is not what is
compared), both paths run a few queries to warm up, then each query runs once per path in a
random order, so the machine's noise falls on both alike. The pages are compared score by score
(:func:`~adapter.fusion.same_ranking_up_to_ties`): one query whose page differs and the check
does not earn the fast path.
"""

from __future__ import annotations

import random
import statistics
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

from .catalog import index_meta, read_index_info
from .engines import cluster_for
from .errors import InputError
from .fastpath import FastPath, FastPathCheck
from .fusion import same_ranking_up_to_ties

if TYPE_CHECKING:
    from .search import Searcher

MAX_QUERIES = 200
WARMUP = 5


def check_fast_path(searcher: Searcher, queries: Iterable[str], *, k: int = 10, depth: int | None = None,
                    max_queries: int = MAX_QUERIES, seed: int = 7) -> FastPathCheck:
    """Both paths on up to ``max_queries`` of ``queries`` (k hits, ``depth`` candidates per leg)."""
    if depth is not None and depth < 1:
        raise InputError(f"depth must be at least 1, got {depth}")
    if max_queries < 1:
        raise InputError(f"max_queries must be at least 1, got {max_queries}")
    texts = [q for q in queries if q and q.strip()][:max_queries]
    if not texts:
        raise InputError("no queries to check with; give a file with one query per line (or BEIR queries.jsonl)")
    depth = depth or searcher.depth
    embedder = searcher.embedder
    vectors = [embedder.embed_query(q) for q in texts]
    paths: dict[FastPath, list[float]] = {FastPath.OFF: [], FastPath.ON: []}
    fusions: set[str] = set()

    def run(path: FastPath, i: int) -> tuple[list[tuple[str, float]], float]:
        r = searcher.search(texts[i], technique="hybrid", k=k, depth=depth, query_vector=vectors[i], fast_path=path)
        if path is FastPath.OFF:
            if r.fusion is None or not r.fused_by.server:
                raise InputError(f"the server does not fuse this index's hybrid ({r.fused_by.value}): there is no "
                                 "server hybrid to check the fast path against")
            fusions.add(r.fusion.name)
        return [(h.id, h.score) for h in r.hits], r.total_ms or 0.0  # a Searcher always sets it

    for i in range(min(WARMUP, len(texts))):
        for path in paths:
            run(path, i)
    same, rng = 0, random.Random(seed)
    for i in range(len(texts)):
        order = list(paths)
        rng.shuffle(order)
        pages = {}
        for path in order:
            pages[path], ms = run(path, i)
            paths[path].append(ms)
        same += same_ranking_up_to_ties(pages[FastPath.OFF], pages[FastPath.ON])
    if len(fusions) != 1:
        raise InputError(f"the server hybrid fused by {len(fusions)} fusion families ({', '.join(sorted(fusions))}) "
                         "across these queries: one check covers one")
    return FastPathCheck(fusions.pop(), depth, k, len(texts), same, round(statistics.median(paths[FastPath.OFF]), 3),
                         round(statistics.median(paths[FastPath.ON]), 3), searcher.caps.version,
                         datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


def keep_fast_path(client: Any, alias: str, check: FastPathCheck | None) -> str:
    """Keep ``check`` in the index's ``_meta.fast_path`` (None: forget the one kept); returns the index."""
    cluster = cluster_for(client)
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    meta.pop("fast_path", None)
    if check is not None:
        meta["fast_path"] = check.to_meta()
    cluster.put_mapping(info.index, {"_meta": meta}, action=f"keeping the fast-path check of {info.index}")
    return info.index
