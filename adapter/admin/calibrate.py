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
    from adapter.models.embedders import Embedder
    from adapter.search import Searcher

MAX_CALIBRATION_QUERIES = 2_000  # enough for a stable median; the rest are not read
MAX_RELEVANCE_QUERIES = 300  # each costs one search per fusion; quantiles of a few thousand scores are stable
# The fusions `hybrid calibrate` fits relevance maps for (with the index's own default): the ones a user names.
RELEVANCE_FUSIONS = ("min_max-arithmetic_mean", "rrf", "z_score-arithmetic_mean", "l2-arithmetic_mean")


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
    relevance: tuple[RelevanceMap, ...] = ()  # the relevance maps fitted and stored with it (_meta.relevance)


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


def store_adaptive(
    cluster: Cluster,
    alias: str,
    *,
    calibration: Calibration | None = None,
    policy: AdaptivePolicy | None = None,
    evidence: Mapping[str, Any] | None = None,
) -> CalibrationReport:
    """Keep ``calibration`` and ``policy`` in the index's ``_meta.adaptive`` (merged with what is
    there) and bring the index's adaptive pipeline to the corpus weights. ``evidence``: other
    ``_meta`` keys written in the same request (``hybrid calibrate --from-traffic``'s
    ``traffic_calibration``: why this policy was shipped)."""
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    kept = meta.get("adaptive")
    # one edited out of shape is written anew
    adaptive: dict[str, Any] = dict(kept) if isinstance(kept, Mapping) else {}
    before = dict(adaptive)
    if calibration is not None:
        adaptive["calibration"] = calibration.to_meta()
    if policy is not None:
        adaptive["policy"] = policy.to_json()
    cluster.put_mapping(
        info.index,
        {"_meta": {**meta, **(evidence or {}), "adaptive": adaptive}},
        action=f"storing the adaptive calibration of {info.index}",
    )
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
    return CalibrationReport(
        alias,
        info.index,
        cal,
        stored,
        fusion.effective_weights,
        pipeline,
        z_score=caps.z_score,
        pipeline_changed=changed,
    )


def calibrate_index(
    client: ClusterLike,
    alias: str,
    queries: Iterable[str],
    *,
    policy: AdaptivePolicy | None = None,
    source: str = "",
    replace: bool = False,
    relevance: bool = True,
    embedder: Embedder | None = None,
) -> CalibrationReport:
    """Measure ``queries`` on index ``alias`` and store the calibration (and ``policy``) with it;
    with ``relevance``, fit each fusion's relevance map on the same queries (:func:`measure_relevance`,
    hybrid searches with the index's embedder, or ``embedder``) and store them too (``_meta.relevance``).

    A calibration on fewer queries than a confidence needs (the policy's ``min_queries``, 10) does
    not replace one made on more unless ``replace``: the one kept is said in the report's notes.
    Relevance maps that cannot be fitted (too few queries, no model) are said in the notes; the
    calibration is stored all the same."""
    from dataclasses import replace as replaced

    from adapter.search import Searcher

    searcher = Searcher.open(client, alias, embedder)
    if searcher.cluster.count(searcher.info.index, action=f"counting the documents of {alias}") == 0:
        raise InputError(
            f"index {alias!r} holds no documents: there is nothing for BM25 to match yet. Ingest first "
            f"(hybrid ingest FILE --index {alias}), then calibrate"
        )
    texts = list(queries)
    measured = measure_calibration(searcher, texts, source=source)
    maps, fit_notes = _fit_relevance(searcher, texts) if relevance else ((), ())
    report = _calibrated(searcher, alias, measured, policy, replace)
    return replaced(report, relevance=maps, notes=(*report.notes, *fit_notes))


def _calibrated(
    searcher: Searcher, alias: str, measured: Calibration, policy: AdaptivePolicy | None, replace: bool
) -> CalibrationReport:
    from dataclasses import replace as replaced

    from adapter.fusion.choice.policy import DEFAULT_POLICY

    minimum = (policy or DEFAULT_POLICY).min_queries
    stored = Calibration.from_meta(
        (index_meta(searcher.cluster, searcher.info.index).get("adaptive") or {}).get("calibration")
    )
    if measured.queries < minimum and stored is not None and stored.queries > measured.queries and not replace:
        report = store_adaptive(searcher.cluster, alias, policy=policy)
        return replaced(
            report,
            notes=(
                f"kept the calibration on {stored.queries} queries{_from(stored)}: these {measured.queries} "
                f"are fewer than the {minimum:g} a confidence needs (--replace stores them anyway)",
            ),
        )
    report = store_adaptive(searcher.cluster, alias, calibration=measured, policy=policy)
    if measured.queries < minimum:
        return replaced(
            report,
            notes=(
                f"{measured.queries} queries are fewer than the {minimum:g} a confidence needs: every query "
                f"gets the baseline weights until a calibration on at least {minimum:g}",
            ),
        )
    return report


def measure_relevance(
    searcher: Searcher,
    queries: Iterable[str],
    fusions: Iterable[Any] = RELEVANCE_FUSIONS,
    *,
    k: int = 10,
    reference: str = "consensus",
    legs: bool = True,
) -> list[RelevanceMap]:
    """Each fusion's relevance map (:mod:`adapter.fusion.relevance`), fitted on the fused scores of the
    hybrid hits of ``queries`` (at most :data:`MAX_RELEVANCE_QUERIES`): with ``reference="consensus"``
    the documents in the top ``k`` of every fusion given (:func:`adapter.fusion.relevance.consensus`:
    the same hits under each), with ``"top"`` each fusion's own top ``k``. ``fusions``: names or
    fusion objects (default :data:`RELEVANCE_FUSIONS`). With ``legs`` (and the consensus), each leg's map
    too, on its raw scores of the same hits (:class:`adapter.fusion.relevance.LegRelevance`: one more
    ``_msearch`` of the legs per query). Raises :class:`InputError` where the sample gives fewer reference
    scores than a map needs."""
    from adapter.fusion import LEGS, parse_fusion
    from adapter.fusion.relevance import consensus, consensus_ids, fit_legs, leg_scores

    if reference not in ("consensus", "top"):
        raise InputError(f"reference is 'consensus' or 'top', got {reference!r}")
    texts = [q for q in queries if q and q.strip()][:MAX_RELEVANCE_QUERIES]
    chosen = [parse_fusion(f) if isinstance(f, str) else f for f in fusions]
    ranked = {
        f.name: [[(h.id, h.score) for h in searcher.search(q, k=k, fusion=f).hits] for q in texts] for f in chosen
    }
    scores = (
        consensus(ranked)
        if reference == "consensus"
        else {n: [s for hits in runs for _, s in hits] for n, runs in ranked.items()}
    )
    maps = [fit_relevance(name, values, reference=reference) for name, values in scores.items()]
    if legs and reference == "consensus":
        maps += fit_legs(LEGS, leg_scores(consensus_ids(ranked), [searcher.legs(q) for q in texts]))
    return maps


def _fit_relevance(searcher: Searcher, queries: list[str]) -> tuple[tuple[RelevanceMap, ...], tuple[str, ...]]:
    """The relevance maps of the usual fusions and the index's own, fitted and stored; or why not."""
    from adapter.errors import HybridError

    fusions = list(dict.fromkeys([*RELEVANCE_FUSIONS, searcher.state.fusion.name]))
    notes: tuple[str, ...] = ()
    try:
        maps = measure_relevance(searcher, queries, fusions)
    except HybridError as legs_failed:  # the legs' maps need as many raw scores of each leg: try the fusions' alone
        try:
            maps = measure_relevance(searcher, queries, fusions, legs=False)
        except HybridError as exc:  # a calibration does not need the maps: keep it, say why they are missing
            return (), (f"relevance maps not fitted, so relevances stay each fusion's formula: {exc}",)
        notes = (f"the legs' relevance maps not fitted, so relevances come from each fusion's map: {legs_failed}",)
    store_relevance(searcher.cluster, searcher.alias, maps)
    return tuple(maps), notes


def store_relevance(cluster: Cluster, alias: str, maps: Iterable[RelevanceMap]) -> None:
    """Keep ``maps`` in the index's ``_meta.relevance`` (replacing a fusion's earlier map, keeping the others')."""
    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    try:
        kept = maps_from_json(meta.get("relevance"))
    except InputError:
        kept = {}  # one edited out of shape is written anew
    kept.update({m.fusion: m for m in maps})
    cluster.put_mapping(
        info.index,
        {"_meta": {**meta, "relevance": [m.as_json() for m in kept.values()]}},
        action=f"storing the relevance maps of {info.index}",
    )


def _from(calibration: Calibration) -> str:
    return f" ({calibration.source})" if calibration.source else ""
