"""The evaluation report: one static HTML page and its assets, readable offline from the file system.

    DIR/index.html              the summary table with significance, the charts, the per-query
                                table and the drill-down (rendered by Jinja2; the tables filled
                                and sorted by assets/report.js from assets/data.js)
    DIR/assets/                 report.js (with dom.js, labels.js), report.css, data.js and Chart.js (vendored, MIT)

:func:`report_data` is everything the page shows, computed here: per-query measures (ir-measures),
paired tests against the product's default and each leg (:mod:`.significance`), and per query the
top 10 of every technique with each listed document's rank and raw score in each leg and, for a
fused list, its normalised score by the fusion that query ran (the server's formulas,
:func:`adapter.fusion.fuse`, over the legs' top ``depth``).
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from adapter.evaluation.perquery import REPORTED, TOP, QueryRun, query_metrics
from adapter.evaluation.significance import ALPHA, CORRECTION, RESAMPLES, Comparison, compare
from adapter.evaluation.stored import StoredEval
from adapter.fusion import DEFAULT_FUSION, LEGS, Fusion
from adapter.fusion.choice.learned import LEARNED

ASSETS = ("dom.js", "labels.js", "report.js", "report.css")
VENDORED = ("vendor/chart.umd.min.js", "vendor/chart.js-LICENSE.md")
DIGITS = 5  # significant digits of the scores the page shows


def _num(value: float | None, digits: int = DIGITS) -> float | None:
    return None if value is None else float(f"{value:.{digits}g}")


def default_row(summary: Mapping[str, Any]) -> str | None:
    """The product's default row as the eval recorded it, else the fixed default fusion's row."""
    rows = summary.get("results") or {}
    for name in ((summary.get("settings") or {}).get("default_technique"), f"hybrid-{DEFAULT_FUSION.name}"):
        if name and name in rows:
            return str(name)
    return next((n for n in rows if n.startswith("hybrid-")), None)


def _default_note(summary: Mapping[str, Any], default: str | None) -> str | None:
    """Said on the page when the product's default is not a row of this eval (an engine that cannot run it)."""
    recorded = (summary.get("settings") or {}).get("default_technique")
    if recorded and recorded != default:
        return f"the product's default, {recorded}, was not run on this cluster; the comparisons use {default} instead"
    return None


def _technique_rows(summary: Mapping[str, Any], default: str | None) -> list[dict[str, Any]]:
    out = []
    for name, row in summary["results"].items():
        family = row.get("family") or (
            "bm25" if name.startswith("bm25") else "dense" if name.startswith("dense") else "hybrid"
        )
        out.append(
            {
                "name": name,
                "family": family,
                "post": bool(row.get("post_processed", "+" in name)),
                "default": name == default,
                **{m: row.get(m) for m in REPORTED},
                "client_p50": row.get("latency_ms_p50"),
                "client_p95": row.get("latency_ms_p95"),
                "server_p50": row.get("server_ms_p50"),
                "server_p95": row.get("server_ms_p95"),
                "notices": row.get("notices") or [],
            }
        )
    return out


def _normalised(
    fusion: Fusion, legs: list[list[tuple[str, float]]], cache: dict[Fusion, list[dict[str, float | None]]]
) -> list[dict[str, float | None]]:
    """Each leg's normalised score by document, as ``fusion`` normalises it (the server's formulas,
    :meth:`~adapter.fusion.base.Fusion.normalized`); once a query per method and parameters, since
    the weights (all that adaptive fusion changes) do not enter it."""
    key = fusion.with_weights(None)
    if key not in cache:
        cache[key] = [key.normalized(run) for run in legs]
    return cache[key]


def _drill(qid: str, runs: Mapping[str, Mapping[str, QueryRun]]) -> dict[str, Any]:
    """One query's drill-down: every technique's top 10, the legs' ranks and raw scores of the
    documents listed, and each fused list's normalised scores."""
    lists = {
        name: [[d, _num(s)] for d, s in by_query[qid].ranking[:TOP]]
        for name, by_query in runs.items()
        if qid in by_query
    }
    listed = {d for top in lists.values() for d, _ in top}
    legs = {}
    leg_runs: list[list[tuple[str, float]]] = []
    for leg in LEGS:
        run = runs.get(leg, {}).get(qid)
        ranking = list(run.ranking) if run else []
        leg_runs.append(ranking)
        legs[leg] = {d: [rank, _num(score)] for rank, (d, score) in enumerate(ranking, start=1) if d in listed}
    norm: dict[str, dict[str, list[float | None]]] = {}
    weights: dict[str, list[float | None]] = {}
    cache: dict[Fusion, list[dict[str, float | None]]] = {}
    if all(leg in runs for leg in LEGS):
        for name, by_query in runs.items():
            run = by_query.get(qid)
            # A learned model (client-learned) scores features, not normalised legs: its list, no per-leg view.
            if run is None or run.fusion is None or run.fusion.name == LEARNED:
                continue
            fusion = run.fusion.fusion()
            weights[name] = [_num(w, 4) for w in fusion.effective_weights]
            normalised = _normalised(fusion, leg_runs, cache)
            norm[name] = {d: [_num(by_doc.get(d)) for by_doc in normalised] for d, _ in run.ranking[:TOP]}
    return {"lists": lists, "legs": legs, "norm": norm, "weights": weights}


def _comparison_json(c: Comparison) -> dict[str, Any]:
    return {
        "technique": c.technique,
        "baseline": c.baseline,
        "measure": c.measure,
        "delta": _num(c.delta, 4),
        "p_rand": _num(c.p_randomization, 3),
        "p_t": _num(c.p_t, 3),
        "p_rand_adj": _num(c.p_randomization_adjusted, 3),
        "p_t_adj": _num(c.p_t_adjusted, 3),
        "significant": c.significant,
    }


def _judged(stored: StoredEval) -> list[str]:
    """The query ids that have judgements, in the queries' order."""
    return [q for q in stored.queries if q in stored.qrels]


def _scores(stored: StoredEval, qids: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    return query_metrics(
        {q: stored.qrels[q] for q in qids}, {n: {q: r[q] for q in qids if q in r} for n, r in stored.runs.items()}
    )


def _titles(stored: StoredEval) -> dict[str, str]:
    """The titles of every document in some technique's top ``TOP`` (160 characters at most)."""
    titles = {}
    for by_query in stored.runs.values():
        for run in by_query.values():
            for d, _ in run.ranking[:TOP]:
                if d in stored.titles:
                    titles[d] = stored.titles[d][:160]
    return titles


def _query_rows(stored: StoredEval, qids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": q,
            "text": stored.queries[q],
            "class": stored.classes.get(q, ""),
            "relevant": sum(1 for g in stored.qrels[q].values() if g > 0),
        }
        for q in qids
    ]


def _score_columns(scores: dict[str, dict[str, dict[str, float]]], qids: list[str]) -> dict[str, Any]:
    return {
        m: {n: [_num(by_query.get(q, 0.0), 4) for q in qids] for n, by_query in by_technique.items()}
        for m, by_technique in scores.items()
    }


def _latency_columns(stored: StoredEval, qids: list[str]) -> dict[str, Any]:
    return {
        n: {
            "client": [_num(r[q].client_ms, 3) if q in r else None for q in qids],
            "server": [_num(r[q].server_ms, 3) if q in r else None for q in qids],
        }
        for n, r in stored.runs.items()
    }


def report_data(stored: StoredEval, *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Everything the report shows, as JSON-ready data."""
    summary = stored.summary
    default = default_row(summary)
    qids = _judged(stored)
    scores = _scores(stored, qids)
    baselines = [b for b in (default, *LEGS) if b and b in stored.runs]
    comparisons = compare(scores, baselines, resamples=resamples)
    settings = summary.get("settings") or {}
    titles = _titles(stored)
    return {
        "dataset": summary.get("dataset"),
        "split": summary.get("split"),
        "embedder": summary.get("embedder"),
        "index": summary.get("index"),
        "engine": settings.get("engine", "opensearch"),
        "version": settings.get("version") or settings.get("opensearch"),
        "settings": settings,
        "default": default,
        "default_note": _default_note(summary, default),
        "legs": [leg for leg in LEGS if leg in stored.runs],
        "measures": list(REPORTED),
        "techniques": _technique_rows(summary, default),
        "tests": {
            "correction": CORRECTION,
            "alpha": ALPHA,
            "resamples": resamples,
            "baselines": baselines,
            "comparisons": [_comparison_json(c) for c in comparisons],
        },
        "queries": _query_rows(stored, qids),
        "scores": _score_columns(scores, qids),
        "latency": _latency_columns(stored, qids),
        "qrels": {q: stored.qrels[q] for q in qids},
        "titles": titles,
        "drill": {q: _drill(q, stored.runs) for q in qids},
    }


def environment() -> Any:
    """The pages' Jinja2 environment (templates in adapter/web/templates, autoescaped)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("adapter.web", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def copy_static(names: tuple[str, ...], dest: Path) -> None:
    static = resources.files("adapter.web") / "static"
    for name in names:
        target = dest / Path(name).name
        with resources.as_file(static / name) as source:
            shutil.copyfile(source, target)


def render(data: Mapping[str, Any], *, base: str = "assets/") -> str:
    """The page's HTML (its data and scripts are loaded from ``base``)."""
    by_key = {(c["technique"], c["baseline"], c["measure"]): c for c in data["tests"]["comparisons"]}
    best = {m: max((t[m] for t in data["techniques"] if t[m] is not None), default=None) for m in data["measures"]}
    fastest = {
        k: min((t[k] for t in data["techniques"] if t[k] is not None), default=None)
        for k in ("client_p50", "server_p50")
    }
    page: str = (
        environment()
        .get_template("report.html.j2")
        .render(data=data, tests=by_key, best=best, fastest=fastest, base=base)
    )
    return page


def write_report(stored: StoredEval, out: str | Path | None = None, *, resamples: int = RESAMPLES) -> Path:
    """``index.html`` and ``assets/`` in ``out`` (default: the stored eval's folder); returns the page's path."""
    out = Path(out) if out is not None else stored.root
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    data = report_data(stored, resamples=resamples)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    (assets / "data.js").write_text(f"window.REPORT_DATA = {payload};\n", encoding="utf-8")
    copy_static(ASSETS + VENDORED, assets)
    page = out / "index.html"
    page.write_text(render(data), encoding="utf-8")
    return page
