"""Simulated traffic on a real node: the rankings users are shown, the sessions logged, and the ``hybrid traffic``
commands that read them back. Shared by the integration tests of learning from traffic (test_traffic.py,
test_traffic_calibrate.py, test_serve_traffic.py) and the scripts that measure their claims (simulate_traffic.py,
traffic_calibration_power.py)."""

from __future__ import annotations

import uuid

from adapter.cli import main
from adapter.fusion import RRF, Combination, Normalization, ScoreNormalization, fuse
from adapter.fusion.choice.policy import DEFAULT_POLICY, AdaptivePolicy
from adapter.traffic.logger import UbiLogger
from adapter.traffic.simulate import session_records

# The fusions simulated users compare (test_traffic.py; the spread over seeds: scripts/simulate_traffic.py).
FUSIONS = {
    "rrf": RRF(),
    "rrf-5": RRF(rank_constant=5),
    "mm-0.5": ScoreNormalization(weights=(0.5, 0.5)),
    "mm-0.2": ScoreNormalization(weights=(0.2, 0.8)),
    "mm-0.8": ScoreNormalization(weights=(0.8, 0.2)),
    "mm-0.05": ScoreNormalization(weights=(0.05, 0.95)),
    "mm-0.95": ScoreNormalization(weights=(0.95, 0.05)),
    "l2-harmonic": ScoreNormalization(Normalization.L2, Combination.HARMONIC_MEAN),
}
# What an index runs before learning from traffic: BM25 at 0.9 for every query (departure off), a clearly worse
# fusion on soporte-es (test_traffic_calibrate.py; scripts/traffic_calibration_power.py).
BM25_HEAVY = AdaptivePolicy(bias=3.0, coverage_start=0.0, coverage_full=0.0, name="bm25-heavy")
VALIDATED = 50  # records checked against the UBI schemas as they are logged (every one would be slow)


def log_sessions(logger: UbiLogger, sessions, texts, index, *, experiment=None) -> None:
    """Each simulated session as the service logs it (adapter.traffic.simulate.session_records: its page, naming
    ``index`` and the ``experiment``'s teams, and its clicks), then flushed and refreshed: searchable on return."""
    prefix = f"s-{uuid.uuid4().hex[:8]}"  # ids of their own, so a second batch into the store adds to the first
    for n, (query, clicks) in enumerate(session_records(sessions, texts, index, experiment=experiment, prefix=prefix)):
        logger.log_query(query, validate=n < VALIDATED)
        for click in clicks:
            logger.log_event(click, validate=n < VALIDATED)
    assert logger.flush(120) and logger.stats.dropped == logger.stats.failed == 0, logger.stats
    logger.store.refresh()


def weight_pages(searcher, queries, weights=(0.9, 0.1), k=10):
    """Each query's top ``k`` at each BM25 weight ``w`` in ``weights`` (dense ``1 - w``, the default policy's
    normalisation on this node), fused from the node's two legs: BM25-heavy and dense-heavy pages to interleave."""
    base = DEFAULT_POLICY.base(searcher.caps.z_score)
    legs = {q: searcher.legs(text, depth=100) for q, text in queries.items()}

    def top(q, w):
        return [d.id for d in fuse(legs[q], ScoreNormalization(base, weights=(w, round(1 - w, 6))))][:k]

    return {w: {q: top(q, w) for q in queries} for w in weights}


def traffic_command(command: str, url: str, indices, *extra: str) -> int:
    """``hybrid traffic <command>`` on the UBI ``indices`` (a store, or settings naming queries_index and
    events_index): its exit code."""
    return main(
        [
            "traffic",
            command,
            "--url",
            url,
            "--queries-index",
            indices.queries_index,
            "--events-index",
            indices.events_index,
            *extra,
        ]
    )
