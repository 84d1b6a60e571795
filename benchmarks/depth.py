"""Server hybrid vs its own legs at equal depth, explain cost, and profiles, on several clusters
side by side (issue 9). Every request of every cluster is interleaved in random order per query,
so the clusters share the machine's noise; ratios are read within one cluster.

Requests are built as the searcher builds them (same text leg, knn clause, hybrid body and
pipeline), with ``_source: false`` so the query phases are compared, not the fetching of sources.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter.engines import responses
from adapter.engines import HybridRequest
from adapter.fusion import LEGS
from adapter.engines.dsl import msearch_lines, search_body, text_query
from adapter.engines.responses import RawHit
from adapter.search import Searcher
from adapter.search.answers import Legs
from adapter.search.bodies import leg_bodies
from adapter.search.fuse import server_legs


def pct(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass(frozen=True)
class Request:
    """One request: a ``_search`` body (with the pipeline it names) or ``_msearch`` lines."""

    body: Any
    params: Mapping[str, Any] | None = None
    msearch: bool = False


@dataclass
class Target:
    """One index on one cluster: ``name`` labels its column (the cluster's version)."""

    name: str
    searcher: Searcher
    took: dict[str, list[float]] = field(default_factory=dict)
    wall: dict[str, list[float]] = field(default_factory=dict)

    @property
    def client(self):
        return self.searcher.cluster.client  # the raw client under the port (these requests bypass it on purpose)

    def send(self, label: str, request: Request | Callable[[], Any]) -> Mapping[str, Any]:
        t0 = time.perf_counter()
        if callable(request):  # an adapter call: its SearchResult
            result = request()
            took, answer = result.took_ms, result
        elif request.msearch:
            answer = self.client.msearch(body=request.body)
            took = answer["took"]
        else:
            answer = self.client.search(index=self.searcher.alias, body=request.body, params=request.params)
            took = answer["took"]
        self.wall.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
        self.took.setdefault(label, []).append(float(took))
        return answer


def _no_source(body: dict) -> dict:
    return {**body, "_source": False}


def leg_requests(searcher: Searcher, query: str, vector, size: int, *, explain: bool = False) -> dict[str, Request]:
    """The two single legs as the searcher sends them, each to ``size`` (knn ``k`` = size)."""
    text = text_query(query, searcher.text_leg)
    knn = searcher.engine.knn_query(vector, field=searcher.info.vector_field, k=size)
    return {
        "bm25": Request(_no_source(search_body(text, size=size, explain=explain))),
        "dense": Request(_no_source(search_body(knn, size=size, explain=explain))),
    }


def hybrid_request(
    searcher: Searcher, query: str, vector, depth: int, *, size: int = 10, explain: bool = False
) -> Request:
    """The searcher's hybrid request (named legs, pagination_depth, knn k = depth) through its pipeline."""
    plan = searcher.plan_fusion()
    text = text_query(query, searcher.text_leg)
    knn = searcher.engine.knn_query(vector, field=searcher.info.vector_field, k=depth)
    body = searcher.engine.hybrid_body(
        HybridRequest(
            text, knn, caps=searcher.caps, depth=depth, size=size, explain=explain, inline_pipeline=plan.inline
        )
    )
    return Request(_no_source(body), {"search_pipeline": plan.pipeline} if plan.pipeline else None)


def legs_msearch(searcher: Searcher, query: str, vector, depth: int) -> Request:
    """Both legs to ``depth`` in one ``_msearch``: what client-rrf and explanations send."""
    return Request(
        msearch_lines(searcher.alias, leg_bodies(searcher.engine, searcher.state, query, vector, depth, None)),
        msearch=True,
    )


def interleaved(
    targets: Sequence[Target],
    queries: Sequence[tuple[str, Any]],
    requests: Callable[[Target, str, Any], Mapping[str, Request | Callable]],
    *,
    warm: int = 10,
    seed: int = 7,
) -> None:
    """Send every request of every target per query, in a random order per query; warm up first."""
    rng = random.Random(seed)
    for query, vector in queries[:warm]:
        for t in targets:
            for request in requests(t, query, vector).values():
                t.send("warm-up", request)
    for t in targets:
        t.took.pop("warm-up", None)
        t.wall.pop("warm-up", None)
    for query, vector in queries:
        jobs = [(t, label, request) for t in targets for label, request in requests(t, query, vector).items()]
        rng.shuffle(jobs)
        for t, label, request in jobs:
            t.send(label, request)


def ratio(t: Target, num: str, dens: Sequence[str]) -> float:
    """p50 of ``num`` over the p50 of the per-query max of ``dens`` (the slower leg, query by query)."""
    slower = [max(vals) for vals in zip(*(t.took[d] for d in dens))]
    return pct(t.took[num], 50) / pct(slower, 50)


def table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(f"{c:.2f}" if isinstance(c, float) else str(c) for c in row) + " |")
    return out


# -- equal depth -----------------------------------------------------------------------------------
def equal_depth(targets: Sequence[Target], queries: Sequence[tuple[str, Any]], depths: Sequence[int]) -> list[str]:
    def requests(t: Target, query: str, vector) -> dict[str, Request | Callable]:
        out: dict[str, Request | Callable] = {}
        for d in depths:
            for leg, request in leg_requests(t.searcher, query, vector, d).items():
                out[f"{leg} size {d}"] = request
            out[f"hybrid depth {d}"] = hybrid_request(t.searcher, query, vector, d)
            out[f"legs _msearch depth {d}"] = legs_msearch(t.searcher, query, vector, d)
        return out

    interleaved(targets, queries, requests)
    labels = list(targets[0].took)
    names = [t.name for t in targets]
    rows = [
        [label, *[f"{pct(t.took[label], 50):.0f} / {pct(t.took[label], 95):.0f}" for t in targets]] for label in labels
    ]
    lines = table(["request (`_source: false`, hybrid size 10)", *[f"{n} took p50 / p95 ms" for n in names]], rows)
    ratios = []
    for d in depths:
        ratios.append(
            [
                f"**hybrid depth {d} / slower leg at size {d}**",
                *[ratio(t, f"hybrid depth {d}", [f"bm25 size {d}", f"dense size {d}"]) for t in targets],
            ]
        )
    low, high = min(depths), max(depths)
    if low != high:
        ratios.append(
            [
                f"hybrid depth {high} / slower leg at size {low} (the old comparison)",
                *[ratio(t, f"hybrid depth {high}", [f"bm25 size {low}", f"dense size {low}"]) for t in targets],
            ]
        )
    for d in depths:
        ratios.append(
            [
                f"legs in one _msearch, depth {d} / hybrid depth {d}",
                *[pct(t.took[f"legs _msearch depth {d}"], 50) / pct(t.took[f"hybrid depth {d}"], 50) for t in targets],
            ]
        )
    lines += ["", *table(["ratio of server took (p50)", *names], ratios)]
    return lines


# -- profile ----------------------------------------------------------------------------------------
def _ms(nanos: float) -> float:
    return nanos / 1e6


def profile_rows(target: Target, queries: Sequence[tuple[str, Any]], depth: int) -> tuple[list[str], list[list]] | str:
    """Mean profile components (ms) of the hybrid request and its legs at ``depth``; or the server's refusal."""
    parts: dict[str, dict[str, list[float]]] = {}
    for query, vector in queries:
        requests = {
            f"hybrid depth {depth}": hybrid_request(target.searcher, query, vector, depth),
            **{f"{leg} size {depth}": r for leg, r in leg_requests(target.searcher, query, vector, depth).items()},
        }
        for label, request in requests.items():
            body = {**request.body, "profile": True}
            try:
                resp = target.client.search(index=target.searcher.alias, body=body, params=request.params)
            except Exception as exc:  # 2.19 answers 400 for a profiled hybrid query
                return responses.error_reason(getattr(exc, "info", None) or str(exc))
            for name, value in _profile_parts(resp).items():
                parts.setdefault(label, {}).setdefault(name, []).append(value)
    columns = list(parts)
    names = list(dict.fromkeys(n for c in columns for n in parts[c]))
    rows = [[n, *[f"{np.mean(parts[c][n]):.2f}" if n in parts[c] else "-" for c in columns]] for n in names]
    return columns, rows


def _profile_parts(resp: Mapping[str, Any]) -> dict[str, float]:
    """One profiled answer in components (ms): the query tree (the hybrid's sub-queries apart), the
    queries run again for ``matched_queries``, rewrite, collector, fetch; and ``took``."""
    shard = resp["profile"]["shards"][0]
    search = shard["searches"][0]
    out: dict[str, float] = {"took (profiled)": float(resp["took"])}
    first, *others = search["query"]
    out["query phase: main query"] = _ms(first["time_in_nanos"])
    if first["type"] == "HybridQuery":
        for leg, child in zip(LEGS, first.get("children", [])):
            out[f"  of which {leg} sub-query"] = _ms(child["time_in_nanos"])
    if others:  # named sub-queries evaluated again to fill matched_queries
        out["named sub-queries run again (matched_queries)"] = sum(_ms(q["time_in_nanos"]) for q in others)
    out["rewrite (knn search happens here or in create_weight)"] = _ms(search["rewrite_time"])
    out["collector"] = sum(_ms(c["time_in_nanos"]) for c in search["collector"])
    fetch = shard.get("fetch") or []
    if fetch:
        out["fetch phase"] = sum(_ms(f["time_in_nanos"]) for f in fetch)
    return out


def profiles(targets: Sequence[Target], queries: Sequence[tuple[str, Any]], depth: int) -> list[str]:
    lines: list[str] = []
    for t in targets:
        result = profile_rows(t, queries, depth)
        if isinstance(result, str):
            lines += [f"- **{t.name}**: `profile: true` on a hybrid query is refused: {result}", ""]
            continue
        columns, rows = result
        lines += [
            f"**{t.name}** (mean over {len(queries)} queries, ms; profiling slows each part):",
            "",
            *table(["component", *columns], rows),
            "",
        ]
    return lines


# -- explain ----------------------------------------------------------------------------------------
def explain_cost(targets: Sequence[Target], queries: Sequence[tuple[str, Any]], depth: int, k: int = 10) -> list[str]:
    def requests(t: Target, query: str, vector) -> dict[str, Request | Callable]:
        out: dict[str, Request | Callable] = {
            "hybrid": hybrid_request(t.searcher, query, vector, depth, size=k),
            "hybrid + server explain": hybrid_request(t.searcher, query, vector, depth, size=k, explain=True),
            "legs _msearch": legs_msearch(t.searcher, query, vector, depth),
        }
        for leg, request in leg_requests(t.searcher, query, vector, k).items():
            out[f"{leg} size {k}"] = request
        for leg, request in leg_requests(t.searcher, query, vector, k, explain=True).items():
            out[f"{leg} size {k} + explain"] = request
        out["adapter: search(explain=True)"] = lambda: t.searcher.search(
            query, k=k, depth=depth, query_vector=vector, explain=True
        )
        out["adapter: search()"] = lambda: t.searcher.search(query, k=k, depth=depth, query_vector=vector)
        return out

    interleaved(targets, queries, requests)
    names = [t.name for t in targets]
    labels = list(targets[0].took)
    rows = [[label, *[f"{pct(t.took[label], 50):.0f}" for t in targets]] for label in labels]
    rows.append(
        [
            "adapter: search(explain=True), client total ms",
            *[f"{pct(t.wall['adapter: search(explain=True)'], 50):.0f}" for t in targets],
        ]
    )
    rows.append(
        ["adapter: search(), client total ms", *[f"{pct(t.wall['adapter: search()'], 50):.0f}" for t in targets]]
    )
    lines = table([f"request (k {k}, depth {depth})", *[f"{n} took p50 ms" for n in names]], rows)

    def r(t, a, b):
        return pct(t.took[a], 50) / pct(t.took[b], 50)

    ratios = [
        [
            "**adapter explain took / plain hybrid took** (target <= 3 on 3.6)",
            *[r(t, "adapter: search(explain=True)", "hybrid") for t in targets],
        ],
        [
            "before: (hybrid + server explain + legs) / plain hybrid",
            *[
                pct([a + b for a, b in zip(t.took["hybrid + server explain"], t.took["legs _msearch"])], 50)
                / pct(t.took["hybrid"], 50)
                for t in targets
            ],
        ],
        ["hybrid + server explain / hybrid", *[r(t, "hybrid + server explain", "hybrid") for t in targets]],
        [
            f"bm25 size {k} + explain / bm25 size {k}",
            *[r(t, f"bm25 size {k} + explain", f"bm25 size {k}") for t in targets],
        ],
        [
            f"dense size {k} + explain / dense size {k}",
            *[r(t, f"dense size {k} + explain", f"dense size {k}") for t in targets],
        ],
    ]
    lines += ["", *table(["ratio of server took (p50)", *names], ratios)]
    lines += ["", *client_explain_work(targets[0], queries[:50], depth, k)]
    return lines


def client_explain_work(target: Target, queries: Sequence[tuple[str, Any]], depth: int, k: int) -> list[str]:
    """The adapter's own explain work, answers in hand: the fusion mirror over both legs vs reading
    the server's explanations of the page."""
    searcher = target.searcher
    mirror, parse = [], []
    for query, vector in queries:
        legs = Legs(
            tuple(
                tuple((RawHit(d, s) for d, s in run)) for run in searcher.legs(query, depth=depth, query_vector=vector)
            ),
            0.0,
        )
        request = hybrid_request(searcher, query, vector, depth, size=k, explain=True)
        raw = responses.hits(target.client.search(index=searcher.alias, body=request.body, params=request.params))
        plan = searcher.plan_fusion()
        t0 = time.perf_counter()
        plan.fusion.fuse(legs.pairs(), leg_names=LEGS)
        mirror.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        server_legs(raw, legs, plan.fusion, searcher.engine)
        parse.append((time.perf_counter() - t0) * 1000)
    return [
        f"Client work per query ({target.name}, {len(queries)} queries, p50): fusion mirror over both legs "
        f"{pct(mirror, 50):.2f} ms; reading the server's explanations of the page {pct(parse, 50):.2f} ms."
    ]


def dump(path, targets: Sequence[Target]) -> None:
    """Raw took lists per target and request, for a second look."""
    path.write_text(json.dumps({t.name: t.took for t in targets}) + "\n")


# -- shards ------------------------------------------------------------------------------------------
def shard_quality(name: str, one, three, dataset, specs, *, k: int = 100, depth: int = 100) -> list[str]:
    """Quality of each technique on a 1-shard and a 3-shard copy of the same corpus, and how often
    the top 10 is the same; server RRF against client-rrf on 3 shards."""
    from adapter.evaluation.run import evaluate_techniques, rrf_parity

    results, runs = {}, {}
    for label, searcher in (("1", one), ("3", three)):
        results[label], runs[label] = evaluate_techniques(searcher, dataset, specs, k=k, depth=depth, progress=False)
    rows = []
    for spec in specs:
        a, b = results["1"][spec.name].metrics, results["3"][spec.name].metrics
        same = sum(
            1
            for q in runs["1"][spec.name]
            if [d for d, _ in runs["1"][spec.name][q][:10]] == [d for d, _ in runs["3"][spec.name].get(q, [])[:10]]
        )
        rows.append(
            [
                spec.name,
                f"{a['ndcg@10']:.4f}",
                f"{b['ndcg@10']:.4f}",
                f"{b['ndcg@10'] - a['ndcg@10']:+.4f}",
                f"{a['recall@100']:.4f}",
                f"{b['recall@100']:.4f}",
                f"{same}/{len(runs['1'][spec.name])}",
            ]
        )
    lines = [
        f"**{name}** ({len(dataset.queries)} SciFact test queries, k {k}, depth {depth} per leg):",
        "",
        *table(
            [
                "technique",
                "nDCG@10, 1 shard",
                "nDCG@10, 3 shards",
                "difference",
                "R@100, 1 shard",
                "R@100, 3 shards",
                "same top 10 (queries)",
            ],
            rows,
        ),
    ]
    if {"hybrid-rrf", "client-rrf"} <= {s.name for s in specs}:
        for label in ("1", "3"):
            parity = rrf_parity(runs[label]["hybrid-rrf"], runs[label]["client-rrf"])
            lines.append(
                f"- {label} shard{'s' if label != '1' else ''}: server RRF and client-rrf rank "
                f"{parity['identical_up_to_ties']}/{parity['queries']} queries identically up to ties."
            )
        lines.append(
            f"- On 3 shards the server fuses every shard's top {depth} of each leg (up to {3 * depth} candidates a "
            f"leg), client-rrf each leg's top {depth} of the whole index: the {k}-hit lists can differ below their top."
        )
    return lines
