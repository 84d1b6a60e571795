"""``hybrid calibrate --from-traffic``: fit an index's adaptive policy from its click judgments and ship
it only where the evidence says it is better (the rule: :mod:`adapter.traffic.evidence`).

1. The index's UBI searches and clicks (:class:`~adapter.traffic.store.UbiStore`: the records whose
   ``query_attributes.hybrid.index`` names the alias or its index) become COEC judgments per query text
   (:mod:`adapter.traffic.clicks`, as ``hybrid traffic judgments`` writes them).
2. The judged queries are split by a hash of their text (:func:`adapter.traffic.evidence.split`); both legs
   of each are fetched once (:func:`adapter.evaluation.adaptive.measure_queries`), and the policy is fitted
   on the fit side by the fitter ``hybrid eval --tune`` uses (:func:`adapter.fusion.choice.policy.learn_policy`,
   from the default policy), with the calibration measured from these queries' texts (what ``hybrid
   calibrate --queries`` would measure from them).
3. The running policy (with its stored calibration) and the candidate are scored on the held-out side, and
   an interleaving run of the candidate against the index's fusion is looked for among the records: the
   candidate is named by a digest of its parameters (``traffic-1a2b3c4d``), so a ``dry_run``'s candidate
   that a service interleaves (:class:`~adapter.traffic.experiment.Interleaver`) is found by a later run
   given that candidate (``candidate=``, ``--policy FILE``: decided on, not fitted again).
4. Shipped: written as ``hybrid calibrate --policy`` writes a policy (:func:`store_adaptive`). Either way
   the evidence is kept in the index's ``_meta.traffic_calibration`` (unless ``dry_run``).

Needs the ``eval`` extra (nDCG@10 through ir-measures) and the index's embedder (each judged query is
embedded once).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from adapter.errors import InputError
from adapter.traffic import clicks, evidence, report
from adapter.traffic.clicks import DEFAULT_MIN_IMPRESSIONS, DEFAULT_THRESHOLDS
from adapter.traffic.evidence import MIN_HELD_OUT, MIN_TRAIN, Decision, HeldOut, Interleaved
from adapter.traffic.logger import fusion_label, now
from adapter.traffic.store import UbiStore
from adapter.traffic.ubi import Event, QueryRecord

if TYPE_CHECKING:
    from adapter.engines import ClusterLike
    from adapter.evaluation.adaptive import QueryRecord as Measured
    from adapter.admin.calibrate import CalibrationReport
    from adapter.fusion.choice.policy import AdaptivePolicy, Calibration
    from adapter.models.embedders import Embedder
    from adapter.search import Searcher

META_KEY = "traffic_calibration"  # the index's _meta key of the last decision's evidence
HELD_OUT_SHARE = 0.3
DEPTH = 100  # each leg's depth, as hybrid eval fetches it
INDEX_DEFAULT = "index-default"  # an Interleaver's label for the index's own fusion (adapter.traffic.experiment)


@dataclass(frozen=True)
class Traffic:
    """What the index's logged traffic says, ready to fit on: query key -> text, and the judgments."""

    searches: int  # the index's search records read
    clicks: int  # clicks matched to them
    judged_pairs: int  # (query, document) pairs with a COEC grade
    queries: Mapping[str, str]  # judged queries with a relevant document: key -> the text searched
    qrels: Mapping[str, Mapping[str, int]]  # key -> document -> grade
    without_text: int  # judged queries logged without their text (they cannot be searched again)
    other_indices: int  # search records of other indices, left out
    records: Mapping[str, QueryRecord]  # query_id -> record, this index's
    joined: report.Joined  # their clicks


@dataclass(frozen=True)
class TrafficCalibration:
    """The decision and its evidence (``evidence`` is what ``_meta.traffic_calibration`` holds)."""

    alias: str
    decision: Decision
    candidate: AdaptivePolicy
    calibration: Calibration  # the candidate's, from the judged queries' texts
    running: AdaptivePolicy
    held_out: HeldOut | None
    interleaved: Interleaved | None
    traffic: Traffic
    fit_queries: int
    family: (
        str  # the policy family the fit chose (adapter.fusion.choice.policy.FAMILIES); "given": a candidate passed in
    )
    evidence: Mapping[str, Any]
    report: CalibrationReport | None  # the store's answer when it shipped (None: kept, or a dry run)
    written: bool  # whether the evidence (and a shipped policy) went to the index


def read_traffic(
    store: UbiStore,
    names: Sequence[str],
    *,
    since: str | None = None,
    until: str | None = None,
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> Traffic:
    """The searches of the index ``names`` (its alias, its concrete index) and their clicks, as judgments."""
    return traffic_of(
        store.queries(since=since, until=until),
        store.events(since=since, until=until),
        names,
        min_impressions=min_impressions,
        thresholds=thresholds,
    )


def traffic_of(
    queries: Iterable[QueryRecord],
    events: Iterable[Event],
    names: Sequence[str],
    *,
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
) -> Traffic:
    """:func:`read_traffic` over records already read (or simulated: :func:`adapter.traffic.simulate.logged`)."""
    everything = list(queries)
    records = {q.query_id: q for q in everything if q.hybrid.get("index") in names}
    joined = report.join(records, events)
    shown, clicked = report.impressions_and_clicks(records, joined)
    judged = clicks.coec_judgments(shown, clicked, min_impressions=min_impressions, thresholds=thresholds)
    qrels = clicks.as_qrels(judged)
    texts: dict[str, str] = {}
    for record in records.values():  # the text as a user typed it (the key is its normalised form)
        if record.user_query.strip():
            texts.setdefault(record.key, record.user_query)
    useful = {key: docs for key, docs in qrels.items() if key in texts and any(g > 0 for g in docs.values())}
    return Traffic(
        len(records),
        len(clicked),
        len(judged),
        {key: texts[key] for key in useful},
        useful,
        sum(1 for key in qrels if key not in texts),
        len(everything) - len(records),
        records,
        joined,
    )


def calibrate_from_traffic(
    client: ClusterLike,
    alias: str,
    *,
    store: UbiStore | None = None,
    embedder: Embedder | None = None,
    since: str | None = None,
    until: str | None = None,
    held_out_share: float = HELD_OUT_SHARE,
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    candidate: AdaptivePolicy | None = None,
    dry_run: bool = False,
) -> TrafficCalibration:
    """Fit index ``alias``'s adaptive policy from its UBI clicks and ship it only if the evidence says it is
    better (module docstring). ``store``: the UBI indices (default ``ubi_queries`` / ``ubi_events`` on the
    same cluster); ``candidate``: decide on this policy instead of fitting one (a dry run's, interleaved
    since: its interleaving run is found by its name); ``dry_run``: decide, write nothing. Raises
    :class:`InputError` when the index does not run the adaptive fusion or the traffic judges too few
    queries to fit on."""
    evidence.check_share(held_out_share)
    searcher = _adaptive_searcher(client, alias, embedder)
    store = store or UbiStore(searcher.cluster)
    traffic = read_traffic(
        store,
        (alias, searcher.info.index),
        since=since,
        until=until,
        min_impressions=min_impressions,
        thresholds=thresholds,
    )
    running = searcher.policy
    found = _assess_traffic(searcher, alias, traffic, running, held_out_share, candidate, (since, until))
    held, interleaved, decision = found.held_out, found.interleaved, found.decision
    meta = _meta(found, running, traffic, held_out_share, (since, until))
    shipped = None
    if not dry_run:
        shipped = _write(searcher, alias, decision, found.candidate, found.calibration, meta)
    return TrafficCalibration(
        alias,
        decision,
        found.candidate,
        found.calibration,
        running,
        held,
        interleaved,
        traffic,
        found.fit_queries,
        found.family,
        meta,
        shipped,
        not dry_run,
    )


def _adaptive_searcher(client: ClusterLike, alias: str, embedder: Embedder | None) -> Searcher:
    """A searcher of ``alias``, refused (InputError) when the index does not run the adaptive fusion by default."""
    from adapter.fusion.choice.values import ADAPTIVE
    from adapter.search import Searcher

    searcher = Searcher.open(client, alias, embedder)
    if searcher.info.default_fusion != ADAPTIVE:
        raise InputError(
            f"index {alias!r} runs {searcher.info.default_fusion or 'its default pipeline'} by default, "
            "not the adaptive fusion: --from-traffic fits the adaptive policy, which that index would not use. "
            "Make adaptive its default "
            "(hybrid init / plan with --default-fusion adaptive), or compare fusions with an Interleaver"
        )
    return searcher


def _assess_traffic(
    searcher: Searcher,
    alias: str,
    traffic: Traffic,
    running: AdaptivePolicy,
    held_out_share: float,
    candidate: AdaptivePolicy | None,
    window: tuple[str | None, str | None],
) -> Assessment:
    """Steps 2-3 on the live index: the judged queries searched again (refused when too few to fit on), then
    :func:`assess`, with what the candidate was trained on."""
    from adapter.evaluation.adaptive import measure_queries

    fit_keys, _ = evidence.split(sorted(traffic.queries), held_out_share)
    if not traffic.queries or (candidate is None and len(fit_keys) < MIN_TRAIN):  # a candidate given needs no fit
        raise InputError(_too_few(alias, traffic, len(fit_keys), held_out_share))
    records = measure_queries(searcher, traffic.queries, depth=DEPTH)
    since, until = window
    about = {
        "source": "traffic",
        "index": alias,
        "searches": traffic.searches,
        "judged_pairs": traffic.judged_pairs,
        "queries": len(fit_keys),
        "metric": "ndcg@10",
        **({"since": since} if since else {}),
        **({"until": until} if until else {}),
    }
    return assess(
        records,
        traffic,
        running,
        searcher.calibration,
        z_score=searcher.caps.z_score,
        held_out_share=held_out_share,
        candidate=candidate,
        trained_on=about,
    )


def _meta(
    found: Assessment,
    running: AdaptivePolicy,
    traffic: Traffic,
    held_out_share: float,
    window: tuple[str | None, str | None],
) -> dict[str, Any]:
    """The evidence as the index's _meta keeps it: the decision, both policies, the traffic's counts and the window."""
    since, until = window
    return {
        "at": now(),
        "shipped": found.decision.ship,
        "reason": found.decision.reason,
        "candidate": found.candidate.to_json(),
        "running": running.name,
        "searches": traffic.searches,
        "clicks": traffic.clicks,
        "judged_pairs": traffic.judged_pairs,
        "judged_queries": len(traffic.queries),
        "fit_queries": found.fit_queries,
        "family": found.family,
        "held_out_share": held_out_share,
        "held_out": evidence.held_out_meta(found.held_out),
        "interleaving": evidence.interleaving_meta(found.interleaved),
        "window": {"since": since, "until": until},
    }


@dataclass(frozen=True)
class Assessment:
    """A candidate and what the evidence says of it, before anything is written."""

    candidate: AdaptivePolicy
    calibration: Calibration  # the candidate's, from the judged queries' texts
    family: str  # as TrafficCalibration.family
    fit_queries: int
    held_out: HeldOut | None
    interleaved: Interleaved | None
    decision: Decision


def assess(
    records: Mapping[str, Measured],
    traffic: Traffic,
    running: AdaptivePolicy,
    stored: Calibration | None,
    *,
    z_score: bool,
    held_out_share: float = HELD_OUT_SHARE,
    candidate: AdaptivePolicy | None = None,
    trained_on: Mapping[str, Any] | None = None,
) -> Assessment:
    """Steps 2-3 of the module docstring without a request: fit a candidate on the fit side of ``traffic``'s judged
    queries (unless ``candidate`` is given), score it and the ``running`` policy (with its ``stored`` calibration) on
    the held-out side, and decide. ``records``: each judged query's signals and legs, keyed as ``traffic.queries``
    (:func:`adapter.evaluation.adaptive.measure_queries`); ``z_score``: whether the cluster runs it (the policies'
    base normalisation). Raises :class:`InputError` when a fit is asked for with fewer than ``MIN_TRAIN`` queries."""
    from adapter.evaluation.adaptive import calibration_of
    from adapter.fusion.choice.policy import DEFAULT_POLICY, learn_policy, weight_grid

    evidence.check_share(held_out_share)
    fit_keys, held_keys = evidence.split(sorted(traffic.queries), held_out_share)
    chosen = {key: records[key] for key in traffic.queries}
    calibration = calibration_of(chosen, source=f"traffic: {len(chosen)} judged queries")
    base = DEFAULT_POLICY
    grid = weight_grid(base.step)
    family = "given"
    if candidate is None:
        if len(fit_keys) < MIN_TRAIN:
            raise InputError(f"{len(fit_keys)} judged queries to fit on; the fit needs {MIN_TRAIN}")
        train = _examples(chosen, traffic.qrels, fit_keys, grid, base, z_score)
        fitted = learn_policy(base, train, calibration, grid=grid, trained_on=trained_on)
        candidate, family = replace(fitted.policy, name=policy_name(fitted.policy)), fitted.family
    held = None
    if len(held_keys) >= MIN_HELD_OUT:
        held = _held_out(chosen, traffic.qrels, held_keys, grid, (running, stored), (candidate, calibration), z_score)
    interleaved = _interleaving(traffic, candidate, running)
    same = _parameters(candidate) == _parameters(running) and (held is None or held.gain == 0)
    decision = evidence.decide(held, interleaved, same=same)
    return Assessment(candidate, calibration, family, len(fit_keys), held, interleaved, decision)


def policy_name(policy: AdaptivePolicy) -> str:
    """``traffic-`` and 8 hex digits of the policy's parameters: the same fit, the same name (an interleaving
    run's records name the candidate so)."""
    digest = hashlib.sha256(json.dumps(_parameters(policy), sort_keys=True).encode()).hexdigest()[:8]
    return f"traffic-{digest}"


def _parameters(policy: AdaptivePolicy) -> dict[str, Any]:
    data = policy.to_json()
    return {"parameters": data["parameters"], "normalization": data["normalization"]}


def _too_few(alias: str, traffic: Traffic, fit: int, share: float) -> str:
    why = (
        f"{traffic.searches} searches of index {alias!r} were read ({traffic.clicks} clicks); "
        f"{len(traffic.queries)} queries have a "
        f"document judged relevant, {fit} of them outside the held-out {share:.0%}: the fit needs {MIN_TRAIN}"
    )
    if traffic.without_text:
        why += f" ({traffic.without_text} judged queries were logged without their text and cannot be searched again)"
    if traffic.other_indices and not traffic.searches:
        why += (
            f"; {traffic.other_indices} searches of other indices were left out "
            "(a record names its index in query_attributes.hybrid.index)"
        )
    return why + ". Nothing was changed: log more traffic, or judge with fewer impressions (--min-impressions)"


def _examples(
    records: Mapping[str, Any],
    qrels: Mapping[str, Mapping[str, int]],
    keys: Sequence[str],
    grid: Sequence[float],
    policy: AdaptivePolicy,
    z_score: bool,
) -> list[Any]:
    from adapter.evaluation.adaptive import examples

    chosen = {k: records[k] for k in keys}
    return examples(chosen, {k: qrels[k] for k in keys}, grid, normalization=policy.base(z_score))


def _held_out(
    records: Mapping[str, Any],
    qrels: Mapping[str, Mapping[str, int]],
    keys: Sequence[str],
    grid: Sequence[float],
    old: tuple[AdaptivePolicy, Calibration | None],
    new: tuple[AdaptivePolicy, Calibration],
    z_score: bool,
) -> HeldOut:
    """Both policies on the held-out queries (each over its own base normalisation), with the paired test."""
    import numpy as np

    from adapter.evaluation.significance import randomization_pvalues
    from adapter.fusion.choice.policy import example_scores

    scores = [
        np.asarray(example_scores(policy, _examples(records, qrels, keys, grid, policy, z_score), calibration, grid))
        for policy, calibration in (old, new)
    ]
    diff = scores[1] - scores[0]
    p = 1.0 if not np.any(np.abs(diff) > 1e-12) else float(randomization_pvalues(diff)[0])
    return HeldOut(len(keys), float(scores[0].mean()), float(scores[1].mean()), p)


def _interleaving(traffic: Traffic, candidate: AdaptivePolicy, running: AdaptivePolicy) -> Interleaved | None:
    """The interleaving run of ``candidate`` against the index's fusion, if the records hold one."""
    found = report.experiments(traffic.records, traffic.joined)
    baselines = {INDEX_DEFAULT, fusion_label(running)}
    for e in found:
        if e.candidate == candidate.name and e.baseline in baselines and e.tally.searches:
            return e
    return None


def _write(
    searcher: Searcher,
    alias: str,
    decision: Decision,
    candidate: AdaptivePolicy,
    calibration: Calibration,
    meta: Mapping[str, Any],
) -> CalibrationReport | None:
    from adapter.admin.calibrate import store_adaptive
    from adapter.index.catalog import index_meta

    if decision.ship:
        return store_adaptive(
            searcher.cluster, alias, calibration=calibration, policy=candidate, evidence={META_KEY: dict(meta)}
        )
    index = searcher.info.index
    kept = index_meta(searcher.cluster, index)  # every other key as it is: a put_mapping replaces _meta whole
    searcher.cluster.put_mapping(
        index, {"_meta": {**kept, META_KEY: dict(meta)}}, action=f"keeping the traffic evidence of {index}"
    )
    return None
