"""Adaptive fusion against a cluster: calibrate it (query texts only) and learn it (judgments).

- :func:`measure_queries`: each query's legs (one ``_msearch``) and its BM25 match quality.
- :func:`calibration_of`: the corpus prior from measured queries (never their judgments).
- :func:`learn_policy`: the policy's parameters fitted on a train split, offline, with the
  server's fusion formula (:func:`adapter.fusion.fuse`); the result is a versioned asset
  (:meth:`AdaptivePolicy.dumps`) the searcher loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from adapter.evaluation.metrics import Dataset, per_query
from adapter.fusion import LEGS, Normalization, ScoreNormalization, fuse
from adapter.fusion.choice.policy import (
    AdaptivePolicy,
    Calibration,
    Example,
    Learned,
    QuerySignals,
    calibrate,
    weight_grid,
)
from adapter.fusion.choice.policy import learn_policy as fit
from adapter.search import Searcher

CALIBRATION_FULL_MATCH = 0.8  # a BM25 match at least this good is "full" for the dense-agreement diagnostic


@dataclass(frozen=True)
class QueryRecord:
    """One query as the adaptive policy sees it, with both legs (for offline fusion)."""

    text: str
    signals: QuerySignals
    legs: tuple[tuple[tuple[str, float], ...], ...]  # per leg: (id, raw score), best first
    coverage: float | None = None  # the query's term coverage (adapter.fusion.choice.signals.term_coverage)


def measure_queries(
    searcher: Searcher,
    queries: Mapping[str, str],
    *,
    vectors: Mapping[str, np.ndarray] | None = None,
    depth: int = 100,
    legs: bool = True,
    progress: bool = False,
) -> dict[str, QueryRecord]:
    """Signals (and, with ``legs``, both legs to ``depth``) of every query."""
    from tqdm.auto import tqdm

    out = {}
    for qid, text in tqdm(queries.items(), desc="adaptive signals", unit="q", disable=not progress, leave=False):
        quality, coverage, _ = searcher.query_evidence(text)
        runs: tuple[tuple[tuple[str, float], ...], ...] = ()
        if legs:
            runs = tuple(
                tuple(run)
                for run in searcher.legs(text, depth=depth, query_vector=vectors.get(qid) if vectors else None)
            )
        out[qid] = QueryRecord(text, QuerySignals.of(text, quality), runs, coverage)
    return out


def calibration_of(records: Mapping[str, QueryRecord], *, source: str = "") -> Calibration:
    """The corpus prior from measured queries: median BM25 match quality, and (when the legs were
    fetched) how often the dense top 10 holds BM25's best hit when that hit is a full match."""
    agree = []
    for r in records.values():
        q = r.signals.match_quality
        if r.legs and q is not None and q >= CALIBRATION_FULL_MATCH and r.legs[0]:
            agree.append(r.legs[0][0][0] in {d for d, _ in r.legs[1][:10]})
    return calibrate(
        [r.signals.match_quality for r in records.values()],
        coverages=[r.coverage for r in records.values()],
        dense_hits=agree,
        source=source,
    )


def examples(
    records: Mapping[str, QueryRecord],
    qrels: Mapping[str, Mapping[str, int]],
    grid: Sequence[float],
    *,
    normalization: Normalization = Normalization.MIN_MAX,
) -> list[Example]:
    """Per judged query, the nDCG@10 of its fused list (``normalization`` + arithmetic mean) at every
    BM25 weight of ``grid``."""
    qids = [q for q in records if q in qrels]
    gains: dict[str, list[float]] = {q: [] for q in qids}
    for w in grid:
        fusion = ScoreNormalization(normalization, weights=(w, round(1 - w, 6)))
        ranked = {q: [f.id for f in fuse(records[q].legs, fusion, leg_names=LEGS)[:10]] for q in qids}
        for q, value in per_query({q: qrels[q] for q in qids}, ranked).items():
            gains[q].append(value)
    return [Example(records[q].signals, tuple(gains[q])) for q in qids]


def learn_policy(
    searcher: Searcher, train: Dataset, *, base: AdaptivePolicy, depth: int = 100, progress: bool = False
) -> tuple[Learned, Calibration]:
    """A policy learned on ``train`` (its judgments; see :func:`adapter.fusion.choice.policy.learn_policy`), and
    the calibration of its queries it was learned with."""
    vectors = {q: searcher.embedder.embed_query(t) for q, t in train.queries.items()}
    records = measure_queries(searcher, train.queries, vectors=vectors, depth=depth, progress=progress)
    calibration = calibration_of(records, source=f"{train.name} {train.split} queries")
    grid = weight_grid(base.step)
    trained_on = {"dataset": train.name, "split": train.split, "queries": len(train.queries), "metric": "ndcg@10"}
    found = examples(records, train.qrels, grid, normalization=base.base(searcher.caps.z_score))
    return fit(base, found, calibration, grid=grid, trained_on=trained_on), calibration
