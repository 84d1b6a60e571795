"""How often ``hybrid calibrate --from-traffic`` ships a clearly better policy on the held-out split alone
(docs/EVALUATION.md, "Shipping a policy fitted from clicks"): soporte-es (train and test queries, 124)
indexed on a running node, a BM25-heavy policy running (weight 0.9 for every query), simulated users
clicking pages that interleave its ranking with BM25 weight 0.1's; for each user and session count, ten
seeds of traffic, each decided as a dry run (no interleaving run of the candidate: the held-out split
decides). The records stay in memory (the decision reads them as it reads the UBI indices).

    OPENSEARCH_URL=http://localhost:9200 python scripts/traffic_calibration_power.py
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from adapter.engines import connect
from adapter.evaluation.metrics import load_beir
from adapter.fusion import ScoreNormalization, fuse
from adapter.admin.calibrate import calibrate_index
from adapter.fusion.choice.policy import DEFAULT_POLICY, AdaptivePolicy
from adapter.index.assets import IndexSpec
from adapter.index.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.models.embedders import E5Embedder
from adapter.search import Searcher
from adapter.traffic import ubi
from adapter.traffic.calibrate import calibrate_from_traffic
from adapter.traffic.simulate import INFORMATIONAL, NAVIGATIONAL, Session, interleaved_sessions

BM25_HEAVY = AdaptivePolicy(bias=3.0, coverage_start=0.0, coverage_full=0.0, name="bm25-heavy")
SEEDS, SESSIONS = 10, (1000, 3000, 6000)


class Memory:
    """The two reads the decision makes of a UbiStore, over simulated sessions."""

    def __init__(self, sessions: Sequence[Session], texts: dict[str, str], alias: str) -> None:
        self.records, self.clicks = [], []
        for n, s in enumerate(sessions):
            qid = f"s{n}"
            self.records.append(ubi.parse_query(ubi.query_record(query_id=qid, client_id="u", user_query=texts[s.query], hit_ids=s.page,
                                                                 timestamp="2026-01-02T03:04:05.000Z", hybrid={"index": alias})))
            for doc, position in s.clicks:
                event = ubi.click_event(query_id=qid, client_id="u", object_id=doc, position=position, timestamp="2026-01-02T03:04:06.000Z")
                self.clicks.append(ubi.parse_event(ubi.stored_event(event)))

    def queries(self, **_: object) -> Iterator[ubi.QueryRecord]:
        return iter(self.records)

    def events(self, **_: object) -> Iterator[ubi.Event]:
        return iter(self.clicks)


def main() -> None:
    client, e5 = connect(os.environ.get("OPENSEARCH_URL")), E5Embedder()
    alias = f"power-{uuid.uuid4().hex[:6]}"
    root = "benchmarks/data/soporte-es"
    test, train = load_beir(root, "test"), load_beir(root, "train")
    queries, qrels = {**test.queries, **train.queries}, {**test.qrels, **train.qrels}
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="adaptive"))
    try:
        Ingestor.open(client, alias, e5, progress=False).ingest(read_source(test.corpus))
        searcher = Searcher.open(client, alias, e5)
        base = DEFAULT_POLICY.base(searcher.caps.z_score)
        legs = {q: searcher.legs(t, depth=100) for q, t in queries.items()}
        ranked = {w: {q: [d.id for d in fuse(legs[q], ScoreNormalization(base, weights=(w, round(1 - w, 6))))][:10] for q in queries}
                  for w in (0.9, 0.1)}
        calibrate_index(client, alias, list(queries.values()), policy=BM25_HEAVY)
        for name, user in (("navigational", NAVIGATIONAL), ("informational", INFORMATIONAL)):
            for n in SESSIONS:
                decided = [calibrate_from_traffic(client, alias, store=Memory(interleaved_sessions(  # type: ignore[arg-type]
                    ranked[0.9], ranked[0.1], qrels, n, user=user, seed=100 + seed), queries, alias), embedder=e5, dry_run=True)
                    for seed in range(SEEDS)]
                held = [d.held_out for d in decided if d.held_out]
                print(f"{name} {n} sessions: shipped {sum(d.decision.ship for d in decided)}/{SEEDS}; held-out queries "
                      f"{held[0].queries if held else '-'}; p {[round(h.p_value, 3) for h in held]}", flush=True)
    finally:
        drop(client, alias)


def drop(client: Any, alias: str) -> None:
    """What ``hybrid init`` made for ``alias``: its indices, templates and search pipelines."""
    client.indices.delete(index=f"{alias}*", ignore=404)
    client.indices.delete_index_template(name=alias, ignore=404)
    for part in ("text", "vector", "metadata"):
        client.cluster.delete_component_template(name=f"{alias}-{part}", ignore=404)
    for pipeline in client.transport.perform_request("GET", "/_search/pipeline", params={"ignore": 404}) or {}:
        if pipeline.startswith(f"{alias}-"):
            client.transport.perform_request("DELETE", f"/_search/pipeline/{pipeline}")


if __name__ == "__main__":
    main()
