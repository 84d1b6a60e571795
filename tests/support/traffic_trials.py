"""``hybrid calibrate --from-traffic``'s decision over simulated traffic, scored against the labels.

Both legs of every labelled query are measured once on a node (:func:`adapter.evaluation.adaptive.measure_queries`);
after that a trial makes no request: simulated users click the pages a policy serves
(:mod:`adapter.traffic.simulate`), the clicks become the records a store would hold
(:func:`~adapter.traffic.simulate.logged`), and :func:`adapter.traffic.calibrate.assess` fits and decides on them as
``calibrate_from_traffic`` does. Each trial then says whether the candidate it shipped (or kept) is better than the
running policy by the labels: nDCG@10 over every labelled query, each policy with its own calibration. Used by
tests/integration/test_traffic_calibrate.py and scripts/traffic_calibration_power.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from adapter.errors import InputError
from adapter.evaluation.adaptive import QueryRecord, examples
from adapter.fusion import LEGS, ScoreNormalization, fuse
from adapter.fusion.choice.policy import AdaptivePolicy, Calibration, Example, score_policy, weight_grid
from adapter.traffic import ubi
from adapter.traffic.calibrate import assess, traffic_of
from adapter.traffic.simulate import ClickUser, interleaved_sessions, logged

INDEX = "simulated"


@dataclass(frozen=True)
class Trial:
    shipped: bool
    candidate: float  # the candidate's nDCG@10 on the labels
    running: float  # the running policy's
    reason: str

    @property
    def better(self) -> bool:
        """Whether the candidate is better by the labels (equal is not: shipping it changes nothing users gain)."""
        return self.candidate > self.running + 1e-9

    @property
    def false_positive(self) -> bool:
        return self.shipped and not self.better


@dataclass(frozen=True)
class Labelled:
    """A labelled set's measured queries (query id -> record with both legs), texts and judgments."""

    records: Mapping[str, QueryRecord]
    texts: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    z_score: bool  # whether the node runs it (the policies' base normalisation)
    _examples: dict[str, list[Example]] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def by_key(self) -> dict[str, QueryRecord]:
        """The records keyed as the traffic's judgments are: by normalised query text."""
        return {ubi.normalized_query(self.texts[q]): r for q, r in self.records.items()}

    def truth(self, policy: AdaptivePolicy, calibration: Calibration | None) -> float:
        """``policy``'s mean nDCG@10 over every labelled query, by the labels."""
        base = policy.base(self.z_score)
        grid = weight_grid(policy.step)
        if base.value not in self._examples:
            self._examples[base.value] = examples(self.records, self.qrels, grid, normalization=base)
        return score_policy(policy, self._examples[base.value], calibration, grid)

    def pages(self, policy: AdaptivePolicy, calibration: Calibration | None, k: int = 10) -> dict[str, list[str]]:
        """Each query's top ``k`` as ``policy`` ranks it (the pages an index running it serves)."""
        out = {}
        for q, record in self.records.items():
            w = policy.weight(record.signals, calibration)[0]
            fusion = ScoreNormalization(policy.base(self.z_score), weights=(w, round(1 - w, 6)))
            out[q] = [d.id for d in fuse(record.legs, fusion, leg_names=LEGS)][:k]
        return out


def trial(
    data: Labelled,
    running: tuple[AdaptivePolicy, Calibration | None],
    shown: tuple[Mapping[str, Sequence[str]], ...],
    sessions: int,
    *,
    user: ClickUser,
    seed: int,
    candidate: AdaptivePolicy | None = None,
) -> Trial:
    """One decision: ``sessions`` searches whose pages interleave the rankings in ``shown`` (one ranking: its own
    pages), clicked by ``user``, decided on as ``calibrate_from_traffic`` decides (a dry run, no interleaving run of
    the candidate), with the index running ``running``."""
    a, b = shown if len(shown) == 2 else (shown[0], shown[0])  # a team draft of one ranking with itself is that ranking
    queries, events = logged(interleaved_sessions(a, b, data.qrels, sessions, user=user, seed=seed), data.texts, INDEX)
    traffic = traffic_of(queries, events, (INDEX,))
    policy, stored = running
    try:
        found = assess(data.by_key, traffic, policy, stored, z_score=data.z_score, candidate=candidate)
    except InputError as exc:  # too few judged queries to fit on: nothing shipped
        return Trial(False, data.truth(policy, stored), data.truth(policy, stored), str(exc))
    return Trial(
        found.decision.ship,
        data.truth(found.candidate, found.calibration),
        data.truth(policy, stored),
        found.decision.reason,
    )
