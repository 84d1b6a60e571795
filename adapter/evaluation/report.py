"""Evaluation results as typed records, their JSON schema (docs/EVALUATION.md), table and chart."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..adaptive import AdaptivePolicy
from ..fusions import RRF, Fusion
from ..metrics import MEASURES
from ..types import Technique

SCHEMA_VERSION = 1
MMR_TOP = 10


class Family(str, enum.Enum):
    """What a technique retrieves with, whatever fuses or post-processes it."""

    BM25 = "bm25"
    DENSE = "dense"
    HYBRID = "hybrid"  # both legs, fused by the server or the client


@dataclass(frozen=True)
class TechniqueSpec:
    """One row of an evaluation: a first stage, optionally reranked or diversified."""

    name: str
    technique: Technique
    fusion: Fusion | AdaptivePolicy | None = None  # a policy chooses the weights per query
    rerank: bool = False
    mmr: float | None = None
    mmr_candidates: int = 30  # MMR picks the final MMR_TOP from this many first-stage hits
    tuned: bool = False  # the fusion was learned on another split

    @property
    def family(self) -> Family:
        if self.technique is Technique.BM25:
            return Family.BM25
        if self.technique is Technique.DENSE:
            return Family.DENSE
        return Family.HYBRID

    @property
    def post_processed(self) -> bool:
        return self.rerank or self.mmr is not None


@dataclass(frozen=True)
class TechniqueResult:
    metrics: dict[str, float]
    latency_ms_p50: float
    latency_ms_p95: float
    server_ms_p50: float
    server_ms_p95: float
    queries: int
    notices: tuple[str, ...] = ()
    spec: TechniqueSpec | None = None
    by_class: dict[str, dict[str, float]] = field(default_factory=dict)  # "exact" / "natural" -> metrics + queries

    def as_json(self) -> dict[str, Any]:
        out = {**self.metrics, "latency_ms_p50": self.latency_ms_p50, "latency_ms_p95": self.latency_ms_p95,
               "server_ms_p50": self.server_ms_p50, "server_ms_p95": self.server_ms_p95, "queries": self.queries,
               "notices": list(self.notices), "by_class": self.by_class}
        if self.spec is not None:
            out.update(family=self.spec.family.value, post_processed=self.spec.post_processed)
        return out


@dataclass(frozen=True)
class Trial:
    """One fusion scored offline during tuning."""

    fusion: Fusion
    metrics: dict[str, float]

    def as_json(self) -> dict[str, Any]:
        return {"fusion": self.fusion.name, "weights": list(self.fusion.weights) if self.fusion.weights else None,
                "rank_constant": self.fusion.rank_constant if isinstance(self.fusion, RRF) else None, **self.metrics}


@dataclass(frozen=True)
class Tuning:
    split: str
    queries: int
    chosen: Fusion
    pipeline: dict[str, Any]  # the search pipeline asset that runs the chosen fusion
    trials: tuple[Trial, ...]

    def as_json(self, top: int = 10) -> dict[str, Any]:
        best = sorted(self.trials, key=lambda t: -t.metrics["ndcg@10"])[:top]
        chosen = Trial(self.chosen, {}).as_json()
        return {"split": self.split, "queries": self.queries, "chosen": chosen, "pipeline": self.pipeline,
                "top_trials": [t.as_json() for t in best]}


@dataclass(frozen=True)
class EvalReport:
    dataset: str
    split: str
    embedder: str
    index: str
    results: dict[str, TechniqueResult]
    settings: dict[str, Any] = field(default_factory=dict)
    tuning: Tuning | None = None
    learned: dict[str, Any] | None = None  # the learned adaptive policy: asset, family, cross-validation

    def as_json(self) -> dict[str, Any]:
        """The documented schema (docs/EVALUATION.md)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "dataset": self.dataset,
            "split": self.split,
            "embedder": self.embedder,
            "index": self.index,
            "settings": self.settings,
            "results": {name: r.as_json() for name, r in self.results.items()},
            "tuning": self.tuning.as_json() if self.tuning else None,
            "learned": self.learned,
        }

    def best(self, metric: str = "ndcg@10", among: Callable[[TechniqueResult], bool] = lambda r: True) -> str:
        names = [n for n, r in self.results.items() if among(r)]
        return max(names, key=lambda n: self.results[n].metrics[metric])


def write_json(report: EvalReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.as_json(), indent=2) + "\n")


def format_table(report: EvalReport) -> str:
    """Quality and latency per technique; ``*`` marks the best value of each column."""
    cols = [*MEASURES, "latency_ms_p50", "latency_ms_p95", "server_ms_p50"]
    rows = {name: r.as_json() for name, r in report.results.items()}
    best = {}
    for col in cols:
        values = [row[col] for row in rows.values()]
        best[col] = min(values) if col.endswith(("p50", "p95")) else max(values)
    width = max(len(n) for n in rows) + 2
    queries = next(iter(report.results.values())).queries if report.results else 0
    lines = [f"{report.dataset} ({report.split}, {queries} queries), embedder {report.embedder}",
             f"{'technique':<{width}}" + "".join(f"{c:>16}" for c in cols)]
    for name, row in rows.items():
        cells = []
        for col in cols:
            mark = "*" if row[col] == best[col] else " "
            fmt = f"{row[col]:.4f}" if col in MEASURES else f"{row[col]:.1f}"
            cells.append(f"{fmt + mark:>16}")
        lines.append(f"{name:<{width}}" + "".join(cells))
    return "\n".join(lines)


def plot(report: EvalReport, path: str | Path) -> None:
    """PNG: nDCG@10 and Recall@100 per technique, and client latency p50/p95."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report.results)
    rows = [report.results[n] for n in names]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(10, 0.6 * len(names) + 3), 9), sharex=True)
    x = np.arange(len(names))
    ndcg = [r.metrics["ndcg@10"] for r in rows]
    ax1.bar(x - 0.2, ndcg, 0.4, label="nDCG@10")
    ax1.bar(x + 0.2, [r.metrics["recall@100"] for r in rows], 0.4, label="Recall@100")
    for xi, value in zip(x, ndcg):
        ax1.text(xi - 0.2, value + 0.01, f"{value:.3f}", ha="center", va="bottom", fontsize=7, rotation=90)
    ax1.set_ylim(0, 1.1)
    ax1.set_title(f"Quality: {report.dataset} {report.split}")
    ax2.bar(x - 0.2, [r.latency_ms_p50 for r in rows], 0.4, label="client p50")
    ax2.bar(x + 0.2, [r.latency_ms_p95 for r in rows], 0.4, label="client p95")
    ax2.plot(x, [r.server_ms_p50 for r in rows], "k.", label="server took p50")
    ax2.set_title("Latency per query (ms)")
    ax2.set_xticks(x)
    ax2.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"embedder: {report.embedder}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
