"""How often ``hybrid calibrate --from-traffic`` ships a clearly better policy on the held-out split alone, and how
often it ships one that is not better (docs/EVALUATION.md, "Shipping a policy fitted from clicks"): soporte-es
(train and test queries, 124) indexed on a running node.

``power`` (the default): a BM25-heavy policy running (weight 0.9 for every query), simulated users clicking pages
that interleave its ranking with BM25 weight 0.1's; for each user and session count, ten seeds of traffic, each
decided as a dry run (no interleaving run of the candidate: the held-out split decides). The records stay in memory
(the decision reads them as it reads the UBI indices).

``false-positives``: the default policy running; see :func:`false_positives`. The legs are measured once, then
every decision is made without a request (tests/support/traffic_trials.py).

    OPENSEARCH_URL=http://localhost:9200 python scripts/traffic_calibration_power.py [power|false-positives]
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapter.engines import connect_cluster  # noqa: E402
from adapter.evaluation.metrics import load_beir  # noqa: E402
from adapter.admin.calibrate import calibrate_index  # noqa: E402
from adapter.fusion.choice.policy import DEFAULT_POLICY  # noqa: E402
from adapter.index.assets import IndexSpec  # noqa: E402
from adapter.admin.init import init_index  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.ingest.sources import read_source  # noqa: E402
from adapter.models.embedders import E5Embedder  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.traffic import ubi  # noqa: E402
from adapter.traffic.calibrate import calibrate_from_traffic  # noqa: E402
from adapter.traffic.simulate import INFORMATIONAL, NAVIGATIONAL, Session, interleaved_sessions, logged  # noqa: E402
from tests.conftest import drop_hybrid_index  # noqa: E402
from tests.support.traffic import BM25_HEAVY, weight_pages  # noqa: E402

SEEDS, SESSIONS = 10, (1000, 3000, 6000)
FP_SEEDS, FP_SESSIONS = 20, (1000, 3000)


class Memory:
    """The two reads the decision makes of a UbiStore, over simulated sessions."""

    def __init__(self, sessions: Sequence[Session], texts: dict[str, str], alias: str) -> None:
        self.records, self.clicks = logged(sessions, texts, alias)

    def queries(self, **_: object) -> Iterator[ubi.QueryRecord]:
        return iter(self.records)

    def events(self, **_: object) -> Iterator[ubi.Event]:
        return iter(self.clicks)


def main(argv: Sequence[str]) -> None:
    mode = argv[0] if argv else "power"
    if mode not in ("power", "false-positives"):
        raise SystemExit(f"usage: traffic_calibration_power.py [power|false-positives], got {mode!r}")
    client, e5 = connect_cluster(os.environ.get("OPENSEARCH_URL")), E5Embedder()
    alias = f"power-{uuid.uuid4().hex[:6]}"
    root = "benchmarks/data/soporte-es"
    test, train = load_beir(root, "test"), load_beir(root, "train")
    queries, qrels = {**test.queries, **train.queries}, {**test.qrels, **train.qrels}
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="adaptive"))
    try:
        Ingestor.open(client, alias, e5, progress=False).ingest(read_source(test.corpus))
        searcher = Searcher.open(client, alias, e5)
        if mode == "false-positives":
            false_positives(searcher, queries, qrels, argv[1:])
            return
        ranked = weight_pages(searcher, queries, (0.9, 0.1))
        calibrate_index(client, alias, list(queries.values()), policy=BM25_HEAVY)
        for name, user in (("navigational", NAVIGATIONAL), ("informational", INFORMATIONAL)):
            for n in SESSIONS:
                decided = [
                    calibrate_from_traffic(
                        client,
                        alias,
                        store=Memory(
                            interleaved_sessions(  # type: ignore[arg-type]
                                ranked[0.9], ranked[0.1], qrels, n, user=user, seed=100 + seed
                            ),
                            queries,
                            alias,
                        ),
                        embedder=e5,
                        dry_run=True,
                    )
                    for seed in range(SEEDS)
                ]
                held = [d.held_out for d in decided if d.held_out]
                print(
                    f"{name} {n} sessions: shipped {sum(d.decision.ship for d in decided)}/{SEEDS}; held-out queries "
                    f"{held[0].queries if held else '-'}; p {[round(h.p_value, 3) for h in held]}",
                    flush=True,
                )
    finally:
        drop_hybrid_index(client, alias)


def false_positives(
    searcher: Searcher, queries: dict[str, str], qrels: dict[str, dict[str, int]], only: Sequence[str] = ()
) -> None:
    """How often a candidate that is not better by the labels ships (the rule's false positives). The index runs the
    default policy calibrated on the 124 query texts (about the best on this corpus). Three cases per user and session
    count, FP_SEEDS seeds each: ``fitted``, its own pages clicked and the fit proposing a candidate; ``bm25-heavy
    given``, pages interleaving BM25-heavy's (worse by the labels) and that policy decided on as the candidate;
    ``default-bias+0.5 given``, the same with the default policy leaning 0.5 (logit) further to BM25. ``only``: these
    cases alone."""
    from adapter.evaluation.adaptive import calibration_of, measure_queries
    from tests.support.traffic_trials import Labelled, trial

    data = Labelled(measure_queries(searcher, queries, depth=100), queries, qrels, searcher.caps.z_score)
    running = (DEFAULT_POLICY, calibration_of(data.records))
    own, heavy = data.pages(*running), data.pages(BM25_HEAVY, None)
    print(
        f"running default: nDCG@10 {data.truth(*running):.4f} on the labels; "
        f"bm25-heavy {data.truth(BM25_HEAVY, None):.4f}",
        flush=True,
    )
    near = replace(
        DEFAULT_POLICY, bias=DEFAULT_POLICY.bias + 0.5, name="default-bias+0.5"
    )  # a little more BM25 for every query
    print(f"default-bias+0.5: nDCG@10 {data.truth(near, running[1]):.4f}", flush=True)
    cases = {
        "fitted": ((own,), None),
        "bm25-heavy given": ((own, heavy), BM25_HEAVY),
        "default-bias+0.5 given": ((own, data.pages(near, running[1])), near),
    }
    cases = {name: case for name, case in cases.items() if not only or name in only}
    for name, user in (("navigational", NAVIGATIONAL), ("informational", INFORMATIONAL)):
        for n in FP_SESSIONS:
            for case, (shown, candidate) in cases.items():
                trials = [
                    trial(data, running, shown, n, user=user, seed=200 + seed, candidate=candidate)
                    for seed in range(FP_SEEDS)
                ]
                not_better = [t for t in trials if not t.better]
                gains = sorted(round(t.candidate - t.running, 4) for t in trials)
                print(
                    f"{name} {n} sessions, {case}: {len(not_better)}/{FP_SEEDS} candidates not better by the labels, "
                    f"{sum(t.false_positive for t in trials)} of them shipped; better ones shipped "
                    f"{sum(t.shipped and t.better for t in trials)}/{FP_SEEDS - len(not_better)}; true gains {gains}",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
