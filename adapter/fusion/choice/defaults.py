"""The product's default hybrid fusion, chosen by measurement. Pure (reads a packaged file).

``adapter/data/measured-defaults.json`` holds, per labelled set, the nDCG@10 of every row that could
be a default (fusions that need no judgments, and the legs), each on a split nothing was tuned on,
with its value per query (written by ``scripts/measured_defaults.py`` from the reports in
docs/evals/). The default is chosen from those numbers by :mod:`adapter.fusion.choice.selection`
(the smallest worst-case regret against each set's best untuned alternative, candidates within one
paired standard error of it tied, then the best mean), per kind of cluster: z_score only where the
cluster runs it. Which kind a cluster is, its engine declares
(:func:`adapter.engines.engine.measured_kind`; an engine that declares none gets the kind measured for fusion in the
client). The file keeps the choice per kind
(``defaults``), which ``hybrid init``, the searcher and the eval report read; the bootstrap behind it runs where the
file is written and in
the unit test that recomputes it (tests/unit/fusion/choice/test_defaults_layout.py), not in a search. Learned or
tuned rows are not candidates: they need the user's judgments.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

from adapter.errors import AssetError
from adapter.fusion import Normalization
from adapter.fusion.choice.selection import ClusterKind, SetRun, candidates_for, default_rows, fixed_rows, leave_one_out
from adapter.fusion.choice.values import ADAPTIVE

# Rows of `hybrid eval` that can be a default (fusions that need no judgments), in order of
# preference on ties: fixed fusions before adaptive ones, the simpler first.
CANDIDATES = (
    "hybrid-z_score-arithmetic_mean",
    "hybrid-min_max-arithmetic_mean",
    "hybrid-l2-arithmetic_mean",
    "hybrid-rrf",
    "hybrid-min_max-geometric_mean",
    "hybrid-min_max-harmonic_mean",
    "hybrid-l2-geometric_mean",
    "hybrid-l2-harmonic_mean",
    "hybrid-sum",
    "client-rrf",
    "client-dbsf",
    "hybrid-adaptive",
    "hybrid-adaptive-min_max",
    # The policy of issue 18 (no better-leg guard), measured offline beside the shipped one (docs/EVALUATION.md).
    "hybrid-adaptive-issue18",
    "hybrid-adaptive-issue18-min_max",
    # The policy with the better-leg guard, its parameters fitted leave one set out (scripts/study_default_rule.py fit).
    "hybrid-adaptive-guard",
    "hybrid-adaptive-guard-min_max",
)
# The selection's rows of the guarded policy are what `hybrid eval` runs as its adaptive rows: the guard
# is the shipped policy (adapter.fusion.choice.policy.DEFAULT_POLICY, its parameters the rule's pick on
# every set); their per-set values in the selection were fitted without the set (docs/EVALUATION.md, rule 8).
SHIPPED_AS = {"hybrid-adaptive-guard": "hybrid-adaptive", "hybrid-adaptive-guard-min_max": "hybrid-adaptive-min_max"}
MEASURED_FILE = "measured-defaults.json"
SCHEMA = 3
RULE = (
    "the smallest worst-case regret against each set's best untuned alternative (a fixed fusion or a leg alone); "
    "candidates within one paired bootstrap standard error of it are tied, and the smallest mean regret decides among "
    "them"
)

Sets = Mapping[str, Mapping[str, float]]  # set -> row -> mean nDCG@10
PerQuery = Mapping[str, Mapping[str, Sequence[float]]]  # set -> row -> nDCG@10 per query


def set_runs(sets: Sets, per_query: PerQuery | None = None) -> list[SetRun]:
    return [SetRun(name, rows, (per_query or {}).get(name, {})) for name, rows in sets.items()]


def choose_default(sets: Sets, kind: ClusterKind = ClusterKind.OPENSEARCH_3, per_query: PerQuery | None = None) -> str:
    """The chosen row over ``sets`` on a cluster of ``kind`` (:func:`adapter.fusion.choice.selection.choose`;
    with ``per_query``, the standard errors and ties); only candidates measured on every set count."""
    if not sets:
        raise AssetError("no measurements to choose the default from")
    chosen = default_rows(set_runs(sets, per_query), CANDIDATES)
    if kind.value not in chosen:
        raise AssetError(
            f"no default candidate ({', '.join(candidates_for(kind, CANDIDATES))}) was measured on every set "
            f"with a fixed fusion to compare against, for {kind.value}"
        )
    return chosen[kind.value]


def selection_table(sets: Sets, kind: ClusterKind, per_query: PerQuery | None = None) -> dict[str, Any]:
    """Per candidate: its regret on each set with its standard error, worst and mean, the paired
    standard error against the best worst case and whether it is tied with it; the chosen row; and
    the leave-one-set-out check."""
    from adapter.fusion.choice.selection import as_run_on, ranked

    runs = [as_run_on(s, kind) for s in set_runs(sets, per_query)]
    mine = candidates_for(kind, CANDIDATES)
    order = ranked(runs, mine)
    return {
        "best_fixed": {r.name: list(r.best_fixed) for r in runs},
        "best_leg": {r.name: list(r.best_leg) for r in runs},
        "reference": {r.name: [r.reference_row, r.reference] for r in runs},
        "candidates": {
            s.row: {
                "worst": round(s.worst, 4),
                "mean": round(s.mean, 4),
                "regret": {k: round(v, 4) for k, v in s.regrets.items()},
                "standard_error": {k: round(v, 4) for k, v in s.errors.items()},
                "tie_error": None if s.tie_error is None else round(s.tie_error, 4),
                "tied": s.tied,
            }
            for s in order
        },
        "chosen": order[0].row,
        "leave_one_out": [
            {
                "held_out": h.held_out,
                "chosen": h.chosen,
                "regret": round(h.regret, 4),
                "standard_error": round(h.error, 4),
            }
            for h in leave_one_out(runs, mine)
        ],
    }


def report_rows(report: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """A report's candidate rows and legs: mean nDCG@10, and per query where the report has it.

    Two kinds of report: ``hybrid eval --json`` (the eval contract: ``results``, means only), and the
    offline rows of ``scripts/study_default_rule.py`` (``ndcg@10`` and ``per_query_ndcg@10``)."""
    if "results" in report:
        rows = report.get("results") or {}
        keep = [r for r in rows if r in ("bm25", "dense") or r in CANDIDATES]
        return {r: round(float(rows[r]["ndcg@10"]), 4) for r in keep}, {}
    means, per = report["ndcg@10"], report.get("per_query_ndcg@10") or {}
    keep = [r for r in means if r in ("bm25", "dense") or r in CANDIDATES]
    return {r: round(float(means[r]), 4) for r in keep}, {r: [float(x) for x in per[r]] for r in keep if r in per}


def summarize(
    eval_reports: Mapping[str, Mapping[str, Any]], layout_reports: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The measured-defaults document from reports (label -> report, :func:`report_rows`), and the
    text layout from the train-split comparisons of ``layout_reports`` (``--compare-layouts`` runs)."""
    sets, per_query = {}, {}
    for label, report in eval_reports.items():
        sets[label], per = report_rows(report)
        if per:
            per_query[label] = per
        if not fixed_rows(sets[label]):
            raise AssetError(f"{label}: the report has no fixed untuned fusion row to measure regret against")
    kinds = {
        kind.value: selection_table(sets, kind, per_query)
        for kind in ClusterKind
        if kind.value in default_rows(set_runs(sets, per_query), CANDIDATES)
    }
    trials = layout_trials(layout_reports or {})
    return {
        "schema": SCHEMA,
        "metric": "ndcg@10",
        "rule": RULE,
        "sets": sets,
        "queries": {k: len(next(iter(v.values()))) for k, v in per_query.items()},
        "defaults": {k: v["chosen"] for k, v in kinds.items()},
        "selection": kinds,
        "text_layout": {"chosen": choose_layout(trials), "train": trials} if trials else None,
    }


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


def selected_row(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """The selection's row for a cluster of ``kind``, as the packaged file keeps it (recomputed from its
    measurements by the unit tests)."""
    chosen = measured().get("defaults") or {}
    if kind.value not in chosen:
        raise AssetError(f"no default measured for {kind.value} clusters (adapter/data/{MEASURED_FILE})")
    return str(chosen[kind.value])


@lru_cache(maxsize=None)
def default_technique(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """The ``hybrid eval`` row the product defaults to on a cluster of ``kind``: the selection's row, or
    the eval row that runs it (:data:`SHIPPED_AS`). Cached: the adaptive policy asks for its base on
    every search."""
    row = selected_row(kind)
    return SHIPPED_AS.get(row, row)


def fusion_name(row: str) -> str:
    """What ``hybrid init --default-fusion`` takes for an eval row: ``adaptive`` or a fusion name."""
    if row.startswith(f"hybrid-{ADAPTIVE}"):
        return ADAPTIVE
    if row == "client-rrf":
        return "rrf"  # where the server has no RRF, the searcher runs it in the client
    return row[len("hybrid-") :]


def default_fusion_name(kind: ClusterKind = ClusterKind.OPENSEARCH_3) -> str:
    """What ``hybrid init --default-fusion`` defaults to on a cluster of ``kind``."""
    try:
        return fusion_name(default_technique(kind))
    except AssetError:
        if kind is ClusterKind.OPENSEARCH_3:
            raise
        # nothing measured for this kind: the 3.x default
        return fusion_name(default_technique(ClusterKind.OPENSEARCH_3))


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
    where = "clusters that fuse in the client" if kind is ClusterKind.CLIENT else f"{kind.value} clusters"
    table = (doc.get("selection") or {}).get(kind.value)
    row = selected_row(kind) if table and kind.value in (doc.get("defaults") or {}) else None
    if not table or row is None:
        return (
            f"default fusion {default_fusion_name(kind)}: nothing measured on {where}; "
            "the OpenSearch 3.x default (docs/EVALUATION.md)"
        )
    cand = table["candidates"][row]
    tied = [r for r, c in table["candidates"].items() if c.get("tied")]
    how = (
        f"the best mean of the {len(tied)} candidates within one paired standard error of the smallest worst-case loss"
        if len(tied) > 1
        else "the smallest worst-case loss"
    )
    return (
        f"default fusion {fusion_name(row)} ({row}): {how} against the best untuned alternative over "
        f"{len(doc['sets'])} labelled sets on {where} (worst {cand['worst']:+.4f}, mean "
        f"{cand['mean']:+.4f} nDCG@10; docs/EVALUATION.md)"
    )
