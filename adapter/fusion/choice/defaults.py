"""The product's default hybrid fusion, chosen by measurement. Pure (reads a packaged file).

``adapter/data/measured-defaults.json`` holds, per labelled set, the nDCG@10 of every row of a
``hybrid eval`` run that could be a default (fusions that need no judgments, and the legs), each
on a split nothing was tuned on (written by ``scripts/select_default.py`` from the eval JSONs in
docs/). The default is chosen from those numbers by :mod:`adapter.fusion.choice.selection` (the smallest
worst-case regret against each set's best fixed fusion, then the best mean), per kind of cluster:
z_score only where the cluster runs it. Which kind a cluster is, its engine's placement says
(:meth:`adapter.engines.placement.FusionPlacement.kind`). ``hybrid init`` and the eval report use it. Learned or
tuned rows are not candidates: they need the user's judgments.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

from adapter.errors import AssetError
from adapter.fusion import Normalization
from adapter.fusion.choice.selection import ClusterKind, SetRun, candidates_for, choose, default_rows, fixed_rows, leave_one_out, scores
from adapter.fusion.choice.values import ADAPTIVE

# Rows of `hybrid eval` that can be a default (fusions that need no judgments), in order of
# preference on ties: fixed fusions before adaptive ones, the simpler first.
CANDIDATES = (
    "hybrid-z_score-arithmetic_mean", "hybrid-min_max-arithmetic_mean", "hybrid-l2-arithmetic_mean", "hybrid-rrf",
    "hybrid-min_max-geometric_mean", "hybrid-min_max-harmonic_mean", "hybrid-l2-geometric_mean", "hybrid-l2-harmonic_mean",
    "hybrid-sum", "client-rrf", "hybrid-adaptive", "hybrid-adaptive-min_max",
)
MEASURED_FILE = "measured-defaults.json"
SCHEMA = 2


def set_runs(sets: Mapping[str, Mapping[str, float]]) -> list[SetRun]:
    return [SetRun(name, rows) for name, rows in sets.items()]


def choose_default(sets: Mapping[str, Mapping[str, float]], kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """The candidate row with the smallest worst-case regret over ``sets`` (set -> row -> nDCG@10)
    on a cluster of ``kind``, then the smallest mean regret; only candidates measured on every set
    count; ties go to the earlier candidate (the simpler fusion)."""
    if not sets:
        raise AssetError("no measurements to choose the default fusion from")
    chosen = default_rows(set_runs(sets), CANDIDATES)
    if kind.value not in chosen:
        raise AssetError(f"no default candidate ({', '.join(candidates_for(kind, CANDIDATES))}) was measured on every set "
                         f"with a fixed fusion to compare against, for {kind.value}")
    return chosen[kind.value]


def selection_table(sets: Mapping[str, Mapping[str, float]], kind: ClusterKind) -> dict[str, Any]:
    """Per candidate: its regret on each set, worst and mean; and the leave-one-set-out check."""
    from adapter.fusion.choice.selection import as_run_on

    runs = [as_run_on(s, kind) for s in set_runs(sets)]
    mine = candidates_for(kind, CANDIDATES)
    measured = scores(runs, mine)
    return {
        "best_fixed": {r.name: list(r.best_fixed) for r in runs},
        "best_leg": {r.name: list(r.best_leg) for r in runs},
        "candidates": {s.row: {"worst": round(s.worst, 4), "mean": round(s.mean, 4),
                               "regret": {k: round(v, 4) for k, v in s.regrets.items()}} for s in measured},
        "chosen": choose(runs, mine).row,
        "leave_one_out": [{"held_out": h.held_out, "chosen": h.chosen, "regret": round(h.regret, 4)} for h in leave_one_out(runs, mine)],
    }


def summarize(eval_reports: Mapping[str, Mapping[str, Any]], layout_reports: Mapping[str, Mapping[str, Any]] | None = None
              ) -> dict[str, Any]:
    """The measured-defaults document from ``hybrid eval`` JSONs (label -> report), and the text
    layout from the train-split comparisons of ``layout_reports`` (``--compare-layouts`` runs)."""
    sets = {}
    for label, report in eval_reports.items():
        rows = report.get("results") or {}
        keep = [r for r in rows if r in ("bm25", "dense") or r in CANDIDATES]
        sets[label] = {r: round(float(rows[r]["ndcg@10"]), 4) for r in keep}
        if not fixed_rows(sets[label]):
            raise AssetError(f"{label}: the report has no fixed untuned fusion row to measure regret against")
    kinds = {kind.value: selection_table(sets, kind) for kind in ClusterKind
             if kind.value in default_rows(set_runs(sets), CANDIDATES)}
    trials = layout_trials(layout_reports or {})
    return {"schema": SCHEMA, "metric": "ndcg@10", "rule": "smallest worst-case regret against each set's best untuned "
            "alternative (a fixed fusion or a leg alone), then the smallest mean regret", "sets": sets,
            "defaults": {k: v["chosen"] for k, v in kinds.items()}, "selection": kinds,
            "text_layout": {"chosen": choose_layout(trials), "train": trials} if trials else None}


LAYOUTS = ("fields", "combined")  # in order of preference on ties: fields is what indexes made before have
LAYOUT_ROW = "hybrid-min_max-arithmetic_mean"  # what `hybrid eval --compare-layouts` scores each layout by


def choose_layout(trials: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """The text layout with the smallest worst-case loss over train-split comparisons (set -> layout
    -> row -> nDCG@10, ``settings.layouts`` of ``hybrid eval --compare-layouts``), then the best mean."""
    if not trials:
        raise AssetError("no train-split layout comparison to choose the text layout from")

    def loss(layout: str, by_layout: Mapping[str, Mapping[str, float]]) -> float:
        return max(r[LAYOUT_ROW] for r in by_layout.values()) - by_layout[layout][LAYOUT_ROW]

    def key(layout: str) -> tuple[float, float, int]:
        losses = [loss(layout, by) for by in trials.values()]
        return (round(max(losses), 4), round(sum(losses) / len(losses), 4), LAYOUTS.index(layout))

    return min(LAYOUTS, key=key)


def layout_trials(eval_reports: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """The train-split layout comparisons of reports made with ``--compare-layouts``."""
    out = {}
    for label, report in eval_reports.items():
        layouts = (report.get("settings") or {}).get("layouts")
        if layouts:
            out[f"{report['dataset']} {layouts['split']}"] = layouts["ndcg@10"]
    return out


def default_layout() -> str:
    """The text layout ``hybrid init`` gives a new index, computed from the packaged comparisons."""
    return choose_layout(measured()["text_layout"]["train"])


@lru_cache(maxsize=1)
def measured() -> dict[str, Any]:
    text = (resources.files("adapter") / "data" / MEASURED_FILE).read_text(encoding="utf-8")
    try:
        data: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssetError(f"adapter/data/{MEASURED_FILE} is not valid JSON: {exc}") from exc
    return data


@lru_cache(maxsize=None)
def default_technique(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """The eval row the product defaults to on a cluster of ``kind``, computed from the measurements
    (once per process: the adaptive policy asks for its base on every search, and the selection
    reads every set's rows, ~30 ms)."""
    return choose_default(measured()["sets"], kind)


def fusion_name(row: str) -> str:
    """What ``hybrid init --default-fusion`` takes for an eval row: ``adaptive`` or a fusion name."""
    if row in (f"hybrid-{ADAPTIVE}", f"hybrid-{ADAPTIVE}-min_max"):
        return ADAPTIVE
    if row == "client-rrf":
        return "rrf"  # where the server has no RRF, the searcher runs it in the client
    return row[len("hybrid-"):]


def default_fusion_name(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """What ``hybrid init --default-fusion`` defaults to on a cluster of ``kind``."""
    try:
        return fusion_name(default_technique(kind))
    except AssetError:
        if kind is ClusterKind.OPENSEARCH_3:
            raise
        return fusion_name(default_technique(ClusterKind.OPENSEARCH_3))  # nothing measured for this kind: the 3.x default


def measured_adaptive_base() -> Normalization:
    """The base of the default adaptive policy on a cluster with z_score: min_max when the selection
    chose the policy's min_max form there (``hybrid-adaptive-min_max``), else z_score."""
    try:
        row = default_technique(ClusterKind.OPENSEARCH_3)
    except AssetError:
        row = None
    return Normalization.MIN_MAX if row == f"hybrid-{ADAPTIVE}-min_max" else Normalization.Z_SCORE


def why(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """One line for people: which default this kind of cluster gets and on what evidence."""
    doc = measured()
    table = (doc.get("selection") or {}).get(kind.value)
    row = default_technique(kind) if table else None
    if not table or row is None:
        return (f"default fusion {default_fusion_name(kind)}: nothing measured on {kind.value} clusters; "
                "the OpenSearch 3.x default (docs/EVALUATION.md)")
    cand = table["candidates"][row]
    return (f"default fusion {fusion_name(row)} ({row}): the smallest worst-case loss against the best fixed fusion over "
            f"{len(doc['sets'])} labelled sets on {kind.value} clusters (worst {cand['worst']:+.4f}, mean {cand['mean']:+.4f} nDCG@10; "
            "docs/EVALUATION.md)")
