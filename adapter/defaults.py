"""The product's default hybrid fusion, chosen by measurement. Pure (reads a packaged file).

``adapter/data/measured-defaults.json`` holds, per labelled set, the nDCG@10 of every fusion the
product could default to without judgments, each on a split it was not tuned on (written by
``scripts/measured_defaults.py`` from the ``hybrid eval`` JSONs in docs/). :func:`choose_default`
picks the candidate with the best mean over the sets; ``hybrid init`` and the eval report use it.
Learned or tuned rows are not candidates: they need the user's judgments.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

from .adaptive import ADAPTIVE
from .errors import AssetError

# Rows of `hybrid eval` that can be a default (fusions that need no judgments), in order of preference on ties.
CANDIDATES = ("hybrid-min_max-arithmetic_mean", "hybrid-adaptive", "hybrid-rrf", "hybrid-l2-arithmetic_mean")
MEASURED_FILE = "measured-defaults.json"


def choose_default(sets: Mapping[str, Mapping[str, float]]) -> str:
    """The candidate row with the best mean nDCG@10 over ``sets`` (set -> row -> nDCG@10); only
    candidates measured on every set count; ties go to the earlier candidate (the simpler fusion)."""
    if not sets:
        raise AssetError("no measurements to choose the default fusion from")
    common = [c for c in CANDIDATES if all(c in rows for rows in sets.values())]
    if not common:
        raise AssetError(f"no default candidate ({', '.join(CANDIDATES)}) was measured on every set")
    return max(common, key=lambda c: (round(sum(rows[c] for rows in sets.values()) / len(sets), 6), -CANDIDATES.index(c)))


def summarize(eval_reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The measured-defaults document from ``hybrid eval`` JSONs (label -> report)."""
    sets = {}
    for label, report in eval_reports.items():
        rows = report.get("results") or {}
        sets[label] = {c: round(float(rows[c]["ndcg@10"]), 4) for c in CANDIDATES if c in rows}
    return {"schema": 1, "metric": "ndcg@10", "sets": sets, "default": choose_default(sets)}


@lru_cache(maxsize=1)
def measured() -> dict[str, Any]:
    text = (resources.files("adapter") / "data" / MEASURED_FILE).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssetError(f"adapter/data/{MEASURED_FILE} is not valid JSON: {exc}") from exc


def default_technique() -> str:
    """The eval row the product defaults to, computed from the measurements (e.g. ``hybrid-adaptive``)."""
    return choose_default(measured()["sets"])


def default_fusion_name() -> str:
    """What ``hybrid init --default-fusion`` defaults to: ``adaptive`` or a fusion name."""
    row = default_technique()
    return ADAPTIVE if row == f"hybrid-{ADAPTIVE}" else row[len("hybrid-"):]
