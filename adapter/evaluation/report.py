"""Evaluation results as typed records, their JSON schema (docs/EVALUATION.md), table and chart."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter.evaluation.metrics import MEASURES
from adapter.evaluation.noise import Gap, gaps_to_best
from adapter.evaluation.perquery import QueryRun
from adapter.evaluation.regret import DefaultRegret, default_regret, leg_loss
from adapter.fusion import Fusion
from adapter.fusion.choice.learned import LearnedFusion
from adapter.fusion.choice.policy import AdaptivePolicy
from adapter.index.contracts import EVAL_SCHEMA_VERSION
from adapter.search.page import MMRPlace
from adapter.search.results import Technique

SCHEMA_VERSION = EVAL_SCHEMA_VERSION  # adapter/schemas/eval.schema.json; additions bump it (adapter.index.contracts)
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
    fusion: Fusion | AdaptivePolicy | LearnedFusion | None = None  # a policy chooses the weights per query
    rerank: bool = False
    mmr: float | None = None
    mmr_candidates: int = 30  # MMR picks the final MMR_TOP from this many first-stage hits
    tuned: bool = False  # the fusion was learned on another split
    mmr_place: MMRPlace = MMRPlace.CLIENT  # SERVER: the k-NN plugin's ext.mmr (dense only)
    collapse: bool = False  # one hit per document (its best chunk), by the server or the client

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
    # Each query's run (adapter.evaluation.perquery): for run files and the HTML report, not in the JSON.
    per_query: Mapping[str, QueryRun] = field(default_factory=dict, repr=False, compare=False)
    # nDCG@10 of each judged query, in the dataset's query order (the standard errors: adapter.evaluation.noise).
    ndcg_by_query: tuple[float, ...] = field(default=(), repr=False, compare=False)
    standard_error: float | None = None  # of the mean nDCG@10 (None: not measured per query)

    def as_json(self) -> dict[str, Any]:
        out = {
            **self.metrics,
            "latency_ms_p50": self.latency_ms_p50,
            "latency_ms_p95": self.latency_ms_p95,
            "server_ms_p50": self.server_ms_p50,
            "server_ms_p95": self.server_ms_p95,
            "queries": self.queries,
            "notices": list(self.notices),
            "by_class": self.by_class,
        }
        if self.spec is not None:
            out.update(family=self.spec.family.value, post_processed=self.spec.post_processed)
        if self.standard_error is not None:
            out["standard_error"] = {"ndcg@10": round(self.standard_error, 4)}
        return out


@dataclass(frozen=True)
class Trial:
    """One fusion scored offline during tuning."""

    fusion: Fusion
    metrics: dict[str, float]

    def as_json(self) -> dict[str, Any]:
        return {
            "fusion": self.fusion.name,
            "weights": list(self.fusion.weights) if self.fusion.weights else None,
            "rank_constant": getattr(self.fusion, "rank_constant", None),
            **self.metrics,
        }  # RRF's parameter


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
        return {
            "split": self.split,
            "queries": self.queries,
            "chosen": chosen,
            "pipeline": self.pipeline,
            "top_trials": [t.as_json() for t in best],
        }


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
    model: LearnedFusion | None = None  # the learned fusion model trained on the tuning split (client-learned)

    def as_json(self) -> dict[str, Any]:
        """The eval contract (adapter/schemas/eval.schema.json, `hybrid schema eval`)."""
        gaps = self.gaps
        return {
            "schema_version": SCHEMA_VERSION,
            "dataset": self.dataset,
            "split": self.split,
            "embedder": self.embedder,
            "index": self.index,
            "settings": self.settings,
            "results": {
                name: {**r.as_json(), **({"versus_best": gaps[name].as_json()} if name in gaps else {})}
                for name, r in self.results.items()
            },
            "tuning": self.tuning.as_json() if self.tuning else None,
            "learned": self.learned,
            "learned_fusion": self.model.to_json() if self.model else None,
            "default_regret": regret.as_json() if (regret := self.default_regret) else None,
        }

    @property
    def default_regret(self) -> DefaultRegret | None:
        """The product's default row against the best fixed fusion and the better leg of this run."""
        first = self._first_stage()
        return default_regret(
            first, self.settings.get("default_technique"), self._per_query(list(first)), f"{self.dataset} {self.split}"
        )

    @property
    def leg_loss(self) -> str | None:
        """With no fixed fusion in the run (no :attr:`default_regret`): the default's loss to the better leg, if any."""
        first = self._first_stage()
        return leg_loss(
            first, self.settings.get("default_technique"), self._per_query(list(first)), f"{self.dataset} {self.split}"
        )

    def _first_stage(self) -> dict[str, float]:
        """Each first-stage row's nDCG@10 (not reranked, diversified or tuned on this data)."""
        return {
            n: r.metrics["ndcg@10"]
            for n, r in self.results.items()
            if not (r.spec and (r.spec.post_processed or r.spec.tuned))
        }

    def _per_query(self, rows: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The rows' nDCG@10 per query where every one of ``rows`` has it (else none: no standard errors)."""
        per = {n: self.results[n].ndcg_by_query for n in rows}
        return per if per and all(per.values()) and len({len(v) for v in per.values()}) == 1 else {}

    @property
    def gaps(self) -> dict[str, Gap]:
        """Each first-stage row against the best first-stage row of the run, with the paired standard
        error of the difference (adapter.evaluation.noise); empty without per-query values."""
        first = [n for n, r in self.results.items() if not (r.spec and r.spec.post_processed)]
        per = self._per_query(first)
        return gaps_to_best(f"{self.dataset} {self.split}", per, first) if per else {}

    def best(self, metric: str = "ndcg@10", among: Callable[[TechniqueResult], bool] = lambda r: True) -> str:
        names = [n for n, r in self.results.items() if among(r)]
        return max(names, key=lambda n: self.results[n].metrics[metric])


def write_json(report: EvalReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.as_json(), indent=2) + "\n")


def format_table(report: EvalReport) -> str:
    """Quality and latency per technique; ``*`` marks the best value of each column. With per-query
    values, each row's nDCG@10 standard error and its gap to the best row, ``~`` where that gap is
    within one paired standard error (noise: another draw of such queries could reverse it)."""
    cols = [*MEASURES, "latency_ms_p50", "latency_ms_p95", "server_ms_p50"]
    rows = {name: r.as_json() for name, r in report.results.items()}
    best = {}
    for col in cols:
        values = [row[col] for row in rows.values()]
        best[col] = min(values) if col.endswith(("p50", "p95")) else max(values)
    gaps = report.gaps
    width = max(len(n) for n in rows) + 2
    queries = next(iter(report.results.values())).queries if report.results else 0
    noise_head = f"{'se':>8}{'vs best':>12}" if gaps else ""
    lines = [
        f"{report.dataset} ({report.split}, {queries} queries), embedder {report.embedder}",
        f"{'technique':<{width}}{cols[0]:>16}{noise_head}" + "".join(f"{c:>16}" for c in cols[1:]),
    ]
    for name, row in rows.items():
        cells = []
        for col in cols:
            mark = "*" if row[col] == best[col] else " "
            fmt = f"{row[col]:.4f}" if col in MEASURES else f"{row[col]:.1f}"
            cells.append(f"{fmt + mark:>16}")
        noise = ""
        if gaps:
            se = report.results[name].standard_error
            g = gaps.get(name)
            versus = (
                "" if g is None else ("best" if g.row == g.to else f"{g.delta:+.4f}{'~' if g.within_noise else ' '}")
            )
            noise = f"{'' if se is None else f'{se:.4f}':>8}{versus:>12}"
        lines.append(f"{name:<{width}}{cells[0]}{noise}" + "".join(cells[1:]))
    lines.append("* the best of its column: the highest metric, the lowest latency (ms: client p50/p95, server p50)")
    if gaps:
        lines.append(
            "se: the standard error of the row's nDCG@10 (bootstrap over the queries); "
            "vs best: its nDCG@10 minus the best row's, "
            "~ where that gap is within one paired standard error (noise, not a difference)"
        )
    return "\n".join(lines)


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names of the points no other point beats: ``(latency, quality)``, lower latency and higher
    quality are better; ordered by latency. A point equal to another on both is kept."""
    front = [
        n
        for n, (lat, q) in points.items()
        if not any((l2 <= lat and q2 >= q) and (l2 < lat or q2 > q) for m, (l2, q2) in points.items() if m != n)
    ]
    return sorted(front, key=lambda n: points[n])


def _rows(report: EvalReport | dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    data = report.as_json() if isinstance(report, EvalReport) else report
    return data, data["results"]


def _family(name: str, row: Mapping[str, Any]) -> str:
    return row.get("family") or (
        "bm25" if name.startswith("bm25") else "dense" if name.startswith("dense") else "hybrid"
    )


def _post(name: str, row: Mapping[str, Any]) -> bool:
    return bool(row.get("post_processed", "+" in name))


COLORS = {"bm25": "tab:blue", "dense": "tab:orange", "hybrid": "tab:green"}


@dataclass(frozen=True)
class Chart:
    """What the chart shows, worked out before anything is drawn: every row, the first-stage rows'
    ``(server ms, metric)`` points, their Pareto front, and the two rows it names."""

    data: Mapping[str, Any]
    rows: Mapping[str, Mapping[str, Any]]
    metric: str
    points: Mapping[str, tuple[float, float]]
    front: tuple[str, ...]
    labels: Mapping[str, str | None]  # row -> its note ("product default", "best single leg") or None (on the front)

    @classmethod
    def of(cls, report: EvalReport | dict[str, Any], metric: str) -> Chart:
        from adapter.fusion import DEFAULT_FUSION

        data, rows = _rows(report)
        first = {n: r for n, r in rows.items() if not _post(n, r)}
        points = {n: (float(r["server_ms_p50"]), float(r[metric])) for n, r in first.items()}
        front = pareto_front(points)
        # The product's default as the run recorded it (settings.default_technique, measured), else the fixed one.
        default = (data.get("settings") or {}).get("default_technique") or f"hybrid-{DEFAULT_FUSION.name}"
        legs = [n for n, r in first.items() if _family(n, r) in ("bm25", "dense")]
        best_leg = max(legs, key=lambda n: points[n][1]) if legs else None
        labels: dict[str, str | None] = dict.fromkeys(front)
        for marked, note in ((default, "product default"), (best_leg, "best single leg")):
            if marked is not None and marked in points:
                labels[marked] = note
        return cls(data, rows, metric, points, tuple(front), labels)


def plot(report: EvalReport | dict[str, Any], path: str | Path, *, metric: str = "ndcg@10") -> None:
    """PNG, the decision first: quality against server latency per first-stage technique, the Pareto
    front drawn, the product's default and the best single leg labelled, axes zoomed to the data
    (post-processed rows, MMR or rerank, in grey). Below: each metric per technique, zoomed too.
    ``report`` is an :class:`EvalReport` or its JSON (``hybrid eval --json``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chart = Chart.of(report, metric)
    fig, (ax, bars) = plt.subplots(2, 1, figsize=(11, 11), gridspec_kw={"height_ratios": [3, 2]})
    _draw_points(ax, chart)
    _draw_labels(ax, chart)
    _frame_points(ax, chart)
    _draw_bars(bars, chart.rows)
    fig.suptitle(f"embedder: {chart.data['embedder']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_points(ax: Any, chart: Chart) -> None:
    """Every row at (server ms, metric): first-stage rows coloured by family, the front ringed and
    joined; post-processed rows hollow and grey."""
    for name, row in chart.rows.items():
        x, y = float(row["server_ms_p50"]), float(row[chart.metric])
        if _post(name, row):
            ax.scatter(x, y, s=25, facecolors="none", edgecolors="0.6", zorder=2)
        else:
            ax.scatter(
                x,
                y,
                s=60,
                color=COLORS[_family(name, row)],
                edgecolors="black" if name in chart.front else "none",
                zorder=3,
            )
    if chart.front:
        ax.plot(
            *zip(*[chart.points[n] for n in chart.front]),
            "--",
            color="0.3",
            lw=1,
            zorder=1,
            label="Pareto front (no technique is faster and better)",
        )


def _draw_labels(ax: Any, chart: Chart) -> None:
    """A label per row on the front and per named row, the named ones in bold."""
    xs = [p[0] for p in chart.points.values()]
    ys = [p[1] for p in chart.points.values()]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 0.01
    placed: list[tuple[float, float]] = []
    for name, label in sorted(chart.labels.items(), key=lambda item: -chart.points[item[0]][1]):
        x, y = chart.points[name]
        text = f"{name}\n{y:.3f}, {x:.0f} ms" + (f"  ({label})" if label else "")
        # Points close to one already labelled get their label stacked further down, so none overlap.
        near = sum(1 for px, py in placed if abs(px - x) < 0.25 * span_x and abs(py - y) < 0.25 * span_y)
        placed.append((x, y))
        ax.annotate(
            text,
            (x, y),
            xytext=(8, 6 - 28 * near),
            textcoords="offset points",
            fontsize=8,
            fontweight="bold" if label else "normal",
            arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5),
        )


def _frame_points(ax: Any, chart: Chart) -> None:
    """Axes zoomed to the data (room on the right and top for the labels), the legend and titles."""
    xs = [float(r["server_ms_p50"]) for r in chart.rows.values()]
    ys = [float(r[chart.metric]) for r in chart.rows.values()]
    pad_x, pad_y = (max(xs) - min(xs)) * 0.1 or 1.0, (max(ys) - min(ys)) * 0.1 or 0.01
    ax.set_xlim(max(0.0, min(xs) - pad_x), max(xs) + 4 * pad_x)
    ax.set_ylim(min(ys) - pad_y, max(ys) + 2 * pad_y)
    for family, color in COLORS.items():
        ax.scatter([], [], color=color, label=family)
    ax.scatter([], [], facecolors="none", edgecolors="0.6", label="+ MMR / rerank (fewer hits fetched)")
    ax.set_xlabel("server latency per query, p50 (ms, the server's took)")
    ax.set_ylabel(f"{chart.metric} (axis zoomed to the data)")
    ax.set_title(
        f"Which technique: {chart.metric} against latency, {chart.data['dataset']} {chart.data['split']}", fontsize=11
    )
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)


def _draw_bars(bars: Any, rows: Mapping[str, Mapping[str, Any]]) -> None:
    """Each metric per technique, side by side, the axis zoomed to the values."""
    names = list(rows)
    measures = [m for m in MEASURES if all(m in r for r in rows.values())]
    slots = np.arange(len(names))
    width = 0.8 / max(1, len(measures))
    low = min(float(rows[n][m]) for n in names for m in measures)
    high = max(float(rows[n][m]) for n in names for m in measures)
    for i, m in enumerate(measures):
        bars.bar(slots + (i - (len(measures) - 1) / 2) * width, [float(rows[n][m]) for n in names], width, label=m)
    bars.set_ylim(max(0.0, low - 0.05), high + 0.08)  # room for the legend above the bars
    bars.set_ylabel(f"score (axis starts at {max(0.0, low - 0.05):.2f})")
    bars.set_xticks(slots)
    bars.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    bars.legend(fontsize=8, ncol=len(measures), loc="upper left")
    bars.grid(axis="y", alpha=0.3)
    bars.set_title("Every metric per technique", fontsize=10)
