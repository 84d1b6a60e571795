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
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from adapter.engines import Cluster, ClusterLike
from adapter.errors import InputError
from adapter.fusion.choice.policy import AdaptivePolicy, Calibration, calibrate, corpus_fusion
from adapter.fusion.choice.values import ADAPTIVE
from adapter.fusion.relevance import RelevanceMap, maps_from_json
from adapter.fusion.relevance import fit as fit_relevance
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
    notes: tuple[str, ...] = ()  # what the caller must know: a calibration kept, too few queries to depart
    z_score: bool = False  # whether the cluster runs z_score (the policy's base there)
    pipeline_changed: bool = True  # whether the adaptive pipeline's fusion differs from the one it held before


def measure_calibration(searcher: Searcher, queries: Iterable[str], *, source: str = "") -> Calibration:
    """The calibration of ``queries`` against the searcher's index (BM25 requests only)."""
    qualities, coverages, texts = [], [], []
    for n, query in enumerate(q for q in queries if q and q.strip()):
        if n >= MAX_CALIBRATION_QUERIES:
            break
        quality, coverage, _ = searcher.query_evidence(query)
        qualities.append(quality)
        coverages.append(coverage)
        texts.append(query)
    if not qualities:
        raise InputError("no queries to calibrate with; give a file with one query per line (or BEIR queries.jsonl)")
    return calibrate(qualities, coverages=coverages, source=source, texts=texts)


def store_adaptive(cluster: Cluster, alias: str, *, calibration: Calibration | None = None,
                   policy: AdaptivePolicy | None = None, evidence: Mapping[str, Any] | None = None) -> CalibrationReport:
    """Keep ``calibration`` and ``policy`` in the index's ``_meta.adaptive`` (merged with what is
    there) and bring the index's adaptive pipeline to the corpus weights. ``evidence``: other
    ``_meta`` keys written in the same request (``hybrid calibrate --from-traffic``'s
    ``traffic_calibration``: why this policy was shipped)."""
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    kept = meta.get("adaptive")
    adaptive: dict[str, Any] = dict(kept) if isinstance(kept, Mapping) else {}  # one edited out of shape is written anew
    before = dict(adaptive)
    if calibration is not None:
        adaptive["calibration"] = calibration.to_meta()
    if policy is not None:
        adaptive["policy"] = policy.to_json()
    cluster.put_mapping(info.index, {"_meta": {**meta, **(evidence or {}), "adaptive": adaptive}},
                        action=f"storing the adaptive calibration of {info.index}")
    caps = cluster.probe()
    fusion = corpus_fusion(adaptive, z_score=caps.z_score)
    pipeline = None
    if info.default_fusion == ADAPTIVE:  # where a default pipeline carries the corpus weights, the engine updates it
        pipeline = cluster.engine.placement.update_default(cluster, info.default_pipeline, fusion, caps)
    stored = AdaptivePolicy.from_json(adaptive["policy"]) if adaptive.get("policy") else None
    cal = Calibration.from_meta(adaptive.get("calibration"))
    if cal is None:
        raise InputError(f"index {alias!r} has no calibration yet; give queries to calibrate with")
    changed = corpus_fusion(before, z_score=caps.z_score) != fusion
    return CalibrationReport(alias, info.index, cal, stored, fusion.effective_weights, pipeline, z_score=caps.z_score,
                             pipeline_changed=changed)


def calibrate_index(client: ClusterLike, alias: str, queries: Iterable[str], *, policy: AdaptivePolicy | None = None,
                    source: str = "", replace: bool = False) -> CalibrationReport:
    """Measure ``queries`` on index ``alias`` and store the calibration (and ``policy``) with it.

    A calibration on fewer queries than a confidence needs (the policy's ``min_queries``, 10) does
    not replace one made on more unless ``replace``: the one kept is said in the report's notes."""
    from dataclasses import replace as replaced

    from adapter.fusion.choice.policy import DEFAULT_POLICY
    from adapter.search import Searcher

    searcher = Searcher.open(client, alias)
    if searcher.cluster.count(searcher.info.index, action=f"counting the documents of {alias}") == 0:
        raise InputError(f"index {alias!r} holds no documents: there is nothing for BM25 to match yet. Ingest first "
                         f"(hybrid ingest FILE --index {alias}), then calibrate")
    measured = measure_calibration(searcher, queries, source=source)
    minimum = (policy or DEFAULT_POLICY).min_queries
    stored = Calibration.from_meta((index_meta(searcher.cluster, searcher.info.index).get("adaptive") or {}).get("calibration"))
    if measured.queries < minimum and stored is not None and stored.queries > measured.queries and not replace:
        report = store_adaptive(searcher.cluster, alias, policy=policy)
        return replaced(report, notes=(f"kept the calibration on {stored.queries} queries{_from(stored)}: these {measured.queries} "
                                       f"are fewer than the {minimum:g} a confidence needs (--replace stores them anyway)",))
    report = store_adaptive(searcher.cluster, alias, calibration=measured, policy=policy)
    if measured.queries < minimum:
        return replaced(report, notes=(f"{measured.queries} queries are fewer than the {minimum:g} a confidence needs: every query "
                                       f"gets the baseline weights until a calibration on at least {minimum:g}",))
    return report


def measure_relevance(searcher: Searcher, queries: Iterable[str], fusions: Iterable[Any], *, k: int = 5) -> list[RelevanceMap]:
    """Each fusion's relevance map (:mod:`adapter.fusion.relevance`): the fused scores of the best ``k``
    hybrid hits of each of ``queries`` under it, fitted (``k`` = 5 kept the shares of relevant hits closest
    across fusions on soporte-es: docs/INTEROP.md, Scores). ``fusions``: names or fusion objects."""
    from adapter.fusion import parse_fusion

    texts = [q for q in queries if q and q.strip()][:MAX_CALIBRATION_QUERIES]
    maps = []
    for fusion in fusions:
        chosen = parse_fusion(fusion) if isinstance(fusion, str) else fusion
        scores = [h.score for q in texts for h in searcher.search(q, k=k, fusion=chosen).hits]
        maps.append(fit_relevance(chosen.name, scores))
    return maps


def store_relevance(cluster: Cluster, alias: str, maps: Iterable[RelevanceMap]) -> None:
    """Keep ``maps`` in the index's ``_meta.relevance`` (replacing a fusion's earlier map, keeping the others')."""
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    try:
        kept = maps_from_json(meta.get("relevance"))
    except InputError:
        kept = {}  # one edited out of shape is written anew
    kept.update({m.fusion: m for m in maps})
    cluster.put_mapping(info.index, {"_meta": {**meta, "relevance": [m.as_json() for m in kept.values()]}},
                        action=f"storing the relevance maps of {info.index}")


def _from(calibration: Calibration) -> str:
    return f" ({calibration.source})" if calibration.source else ""
