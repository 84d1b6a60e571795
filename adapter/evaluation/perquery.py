"""Per-query records of an evaluation: what each technique returned for each query, how long it
took, and the fusion it ran (adaptive fusion chooses its weights per query). Pure.

The means of :class:`~adapter.evaluation.report.TechniqueResult` are computed from these; the run
files, the significance tests and the HTML report read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from adapter._optional import require
from adapter.errors import InputError
from adapter.evaluation.metrics import MEASURES, Qrels, run_from_rankings
from adapter.fusion import Fusion, parse_fusion

TOP = 10  # documents per query whose titles are kept (the report shows each list's top 10)
REPORTED = ("ndcg@10", "recall@100", "mrr@10")  # the report's measures, each tested for significance

Ranking = tuple[tuple[str, float], ...]  # (document id, the technique's final score), best first


@dataclass(frozen=True)
class FusionUsed:
    """The fusion one query ran with: its name (``rrf-40``, ``min_max-arithmetic_mean``, ``sum``)
    and the weights it was given (None: the fusion's default weights)."""

    name: str
    weights: tuple[float, ...] | None = None

    @classmethod
    def of(cls, fusion: Fusion) -> FusionUsed:
        return cls(fusion.name, tuple(fusion.weights) if fusion.weights is not None else None)

    def fusion(self) -> Fusion:
        parsed = parse_fusion(self.name, weights=self.weights)
        if parsed is None:  # unreachable: a name parses to a fusion or raises InputError
            raise InputError(f"no fusion named {self.name!r}")
        return parsed

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "weights": list(self.weights) if self.weights is not None else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> FusionUsed | None:
        if not data:
            return None
        weights = data.get("weights")
        return cls(str(data["name"]), tuple(float(w) for w in weights) if weights is not None else None)


@dataclass(frozen=True)
class QueryRun:
    """One technique's answer to one query."""

    ranking: Ranking
    client_ms: float  # the whole call as the client saw it
    server_ms: float  # the server's took (summed over requests)
    fusion: FusionUsed | None = None  # None: nothing fused (a single leg)
    titles: tuple[str, ...] = ()  # of the first TOP documents of the ranking

    @property
    def ids(self) -> list[str]:
        return [d for d, _ in self.ranking]


Runs = Mapping[str, Mapping[str, QueryRun]]  # technique -> query id -> its run


def query_metrics(
    qrels: Qrels, runs: Runs, measures: Sequence[str] = REPORTED
) -> dict[str, dict[str, dict[str, float]]]:
    """``measure -> technique -> query id -> value`` for every judged query (0 where nothing was
    returned), by ir-measures as the means are (:func:`adapter.evaluation.metrics.evaluate`), every measure of
    a technique in one pass."""
    unknown = [m for m in measures if m not in MEASURES]
    if unknown:
        raise ValueError(f"unknown measures {unknown}; expected some of {list(MEASURES)}")
    ir_measures = require("ir_measures", "scoring retrieval metrics")
    parsed = {ir_measures.parse_measure(MEASURES[m]): m for m in measures}
    qrels_dict = {q: {d: int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    out: dict[str, dict[str, dict[str, float]]] = {m: {} for m in measures}
    for name, by_query in runs.items():
        run = {
            q: docs
            for q, docs in run_from_rankings({q: r.ids for q, r in by_query.items()}).items()
            if q in qrels and docs
        }
        for m in measures:
            out[m][name] = {q: 0.0 for q in qrels}
        for metric in ir_measures.iter_calc(list(parsed), qrels_dict, run):
            out[parsed[metric.measure]][name][metric.query_id] = float(metric.value)
    return out


def titles(runs: Runs) -> dict[str, str]:
    """Every title the runs kept, by document id."""
    out: dict[str, str] = {}
    for by_query in runs.values():
        for run in by_query.values():
            for (doc, _), title in zip(run.ranking, run.titles):
                if title:
                    out.setdefault(doc, title)
    return out
