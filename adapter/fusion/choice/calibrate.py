"""``hybrid calibrate``: measure how BM25 matches an index's queries and keep it with the index.

The calibration (:class:`adapter.fusion.choice.policy.Calibration`) comes from query texts only: for each
query, the BM25 leg's best score and the query's term statistics (two small requests; no
embedding, no judgments). It is stored in the index's ``_meta.adaptive`` with the policy to use
(a learned one, or none for the default), so every searcher that opens the index gets both; and,
when the index's default fusion is adaptive, its ``<alias>-adaptive`` pipeline is set to the
corpus weights, which is what a bare hybrid query from any other client gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from adapter.engines import Engine, cluster_for
from adapter.errors import InputError
from adapter.fusion.choice.policy import AdaptivePolicy, Calibration, calibrate, corpus_fusion
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.catalog import index_meta, read_index_info

if TYPE_CHECKING:
    from adapter.search import Searcher

MAX_CALIBRATION_QUERIES = 2_000  # enough for a stable median; the rest are not read


@dataclass(frozen=True)
class CalibrationReport:
    alias: str
    index: str
    calibration: Calibration
    policy: AdaptivePolicy | None  # the policy stored with it (None: the default policy)
    weights: tuple[float, ...]  # what a query without per-query signals now gets
    pipeline: str | None  # the stored adaptive pipeline updated to those weights, if the index has one


def measure_calibration(searcher: Searcher, queries: Iterable[str], *, source: str = "") -> Calibration:
    """The calibration of ``queries`` against the searcher's index (BM25 requests only)."""
    qualities, coverages = [], []
    for n, query in enumerate(q for q in queries if q and q.strip()):
        if n >= MAX_CALIBRATION_QUERIES:
            break
        quality, coverage, _ = searcher.query_evidence(query)
        qualities.append(quality)
        coverages.append(coverage)
    if not qualities:
        raise InputError("no queries to calibrate with; give a file with one query per line (or BEIR queries.jsonl)")
    return calibrate(qualities, coverages=coverages, source=source)


def store_adaptive(client: Any, alias: str, *, calibration: Calibration | None = None, policy: AdaptivePolicy | None = None,
                   engine: Engine | None = None) -> CalibrationReport:
    """Keep ``calibration`` and ``policy`` in the index's ``_meta.adaptive`` (merged with what is
    there) and bring the index's adaptive pipeline to the corpus weights."""
    cluster = cluster_for(client, engine)
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    adaptive: dict[str, Any] = dict(meta.get("adaptive") or {})
    if calibration is not None:
        adaptive["calibration"] = calibration.to_meta()
    if policy is not None:
        adaptive["policy"] = policy.to_json()
    cluster.put_mapping(info.index, {"_meta": {**meta, "adaptive": adaptive}}, action=f"storing the adaptive calibration of {info.index}")
    caps = cluster.probe()
    fusion = corpus_fusion(adaptive, z_score=caps.z_score)
    pipeline = None
    if info.default_fusion == ADAPTIVE:  # where a default pipeline carries the corpus weights, the engine updates it
        pipeline = cluster.engine.placement.update_default(cluster, info.default_pipeline, fusion, caps)
    stored = AdaptivePolicy.from_json(adaptive["policy"]) if adaptive.get("policy") else None
    cal = Calibration.from_meta(adaptive.get("calibration"))
    if cal is None:
        raise InputError(f"index {alias!r} has no calibration yet; give queries to calibrate with")
    return CalibrationReport(alias, info.index, cal, stored, fusion.effective_weights, pipeline)


def calibrate_index(client: Any, alias: str, queries: Iterable[str], *, policy: AdaptivePolicy | None = None,
                    source: str = "") -> CalibrationReport:
    """Measure ``queries`` on index ``alias`` and store the calibration (and ``policy``) with it."""
    from adapter.search import Searcher

    searcher = Searcher.open(client, alias)
    return store_adaptive(client, alias, calibration=measure_calibration(searcher, queries, source=source), policy=policy,
                          engine=searcher.engine)
