"""Learning from live traffic against a real node: UBI records written and read back through the
cluster, interleaving that finds the better of two fusions, COEC judgments that rank fusions as the
labels do (simulated users clicking soporte-es by its judgments)."""

import itertools
import json
import uuid

import pytest

from adapter.evaluation.metrics import evaluate, load_beir
from adapter.fusion import RRF, ScoreNormalization, fuse
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.search import Searcher
from adapter.traffic import report, ubi
from adapter.traffic.experiment import Interleaver
from adapter.traffic.logger import UbiLogger, fusion_label
from adapter.traffic.simulate import NAVIGATIONAL, interleaved_sessions
from adapter.traffic.store import UbiStore
from tests.conftest import ROOT, drop_hybrid_index
from tests.support.traffic import FUSIONS, log_sessions, traffic_command

# Every engine: Elasticsearch keeps UBI records in indices the adapter creates with the plugin's mapping
# (adapter.traffic.store).
pytestmark = pytest.mark.engine("opensearch", "elasticsearch")

# The sessions the claims are made within (docs/EVALUATION.md has the spread over seeds).
INTERLEAVING_SESSIONS = 4000
JUDGMENT_SESSIONS = 4000


@pytest.fixture(scope="module")
def soporte(client, e5):
    """soporte-es indexed once; each fusion's top 10 for every test query, from the node's two legs."""
    alias = f"t-traffic-{uuid.uuid4().hex[:6]}"
    dataset = load_beir(ROOT / "benchmarks" / "data" / "soporte-es", "test")
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, alias, e5, progress=False).ingest(read_source(dataset.corpus))
    searcher = Searcher.open(client, alias, e5)
    legs = {q: searcher.legs(text, depth=100) for q, text in dataset.queries.items()}
    rankings = {
        name: {q: [d.id for d in fuse(legs[q], f)][:10] for q in dataset.queries} for name, f in FUSIONS.items()
    }
    ndcg = {name: evaluate(dataset.qrels, r)["ndcg@10"] for name, r in rankings.items()}
    yield searcher, dataset, rankings, ndcg
    drop_hybrid_index(client, alias)


@pytest.fixture
def store(client, index_name):
    """UBI indices of this test's own (named after index_name, so its clean-up removes them)."""
    return UbiStore(client, queries_index=f"{index_name}-ubi-queries", events_index=f"{index_name}-ubi-events")


def test_interleaving_finds_the_better_of_two_fusions_within_the_stated_sessions(soporte, store, target):
    from adapter.traffic.simulate import running

    _, dataset, rankings, ndcg = soporte
    better, worse = "mm-0.2", "rrf"
    assert ndcg[better] - ndcg[worse] >= 0.02, f"the pair no longer differs by 0.02 nDCG@10 offline: {ndcg}"
    sessions = interleaved_sessions(
        rankings[worse], rankings[better], dataset.qrels, INTERLEAVING_SESSIONS, user=NAVIGATIONAL, seed=0
    )
    logger = UbiLogger(store, queue_size=len(sessions) * 4)
    log_sessions(logger, sessions, dataset.queries, "soporte", experiment=(worse, better))
    logger.close()
    queries = {q.query_id: q for q in store.queries()}
    assert len(queries) == INTERLEAVING_SESSIONS
    (experiment,) = report.experiments(queries, report.join(queries, store.events()))
    assert (experiment.baseline, experiment.candidate) == (worse, better)
    assert experiment.tally == running(sessions)  # every page, team and click came back from the node as it was logged
    if target.engine != "opensearch":
        # The claim is OpenSearch's legs' (spanish analyzer). Elasticsearch's test node rebuilds spanish from
        # Hunspell: there the pair differs by 0.031 and 4,000 sessions find it in 7 seeds of 20 (docs/EVALUATION.md),
        # no claim to test.
        return
    assert experiment.tally.searches == INTERLEAVING_SESSIONS and experiment.tally.verdict == "candidate"
    assert experiment.tally.p_value < 0.05 and experiment.tally.delta > 0
    # the same sessions with the roles swapped: the better one is found as the baseline
    swapped = interleaved_sessions(
        rankings[better], rankings[worse], dataset.qrels, INTERLEAVING_SESSIONS, user=NAVIGATIONAL, seed=0
    )
    assert running(swapped).verdict == "baseline"


def test_coec_judgments_rank_the_fusions_as_the_labels_do(soporte, store, tmp_path, opensearch_url, target):
    from scipy.stats import kendalltau

    from adapter.traffic import clicks
    from adapter.traffic.simulate import logged

    _, dataset, rankings, ndcg = soporte
    pairs = list(itertools.combinations(sorted(FUSIONS), 2))
    logger = UbiLogger(store, queue_size=JUDGMENT_SESSIONS * 4)
    everything = []
    for i, (a, b) in enumerate(pairs):  # the logs of one interleaving experiment per pair of fusions
        sessions = interleaved_sessions(
            rankings[a], rankings[b], dataset.qrels, JUDGMENT_SESSIONS // len(pairs), user=NAVIGATIONAL, seed=i
        )
        log_sessions(logger, sessions, dataset.queries, "soporte", experiment=(a, b))
        everything += sessions
    logger.close()
    # hybrid traffic judgments reads them back from the node and writes what hybrid eval reads
    out = tmp_path / "judged"
    assert traffic_command("judgments", opensearch_url, store, "--out", str(out)) == 0
    judged = load_beir_like(out)
    est = {name: evaluate(judged, r_by_text(rankings[name], dataset.queries))["ndcg@10"] for name in FUSIONS}
    # the same judgments as the sessions give without the node: nothing lost or changed on the way
    records, events = logged(everything, dataset.queries, "soporte")
    by_id = {q.query_id: q for q in records}
    memory = clicks.as_qrels(clicks.coec_judgments(*report.impressions_and_clicks(by_id, report.join(by_id, events))))
    assert est == pytest.approx(
        {name: evaluate(memory, r_by_text(rankings[name], dataset.queries))["ndcg@10"] for name in FUSIONS}
    )
    srw = json.loads((out / "judgments.json").read_text())
    assert srw["type"] == "IMPORT_JUDGMENT" and srw["judgmentRatings"]
    if target.engine != "opensearch":
        # The claim is OpenSearch's legs' (spanish analyzer); on Elasticsearch's test node (spanish rebuilt
        # from Hunspell) the same run gives tau 0.50 (docs/EVALUATION.md): no claim to test there.
        return
    names = sorted(FUSIONS)
    tau = kendalltau([ndcg[n] for n in names], [est[n] for n in names]).statistic
    assert tau >= 0.6, f"Kendall tau {tau:.3f}: true {ndcg}, from clicks {est}"


def load_beir_like(root):
    from adapter.evaluation.metrics import load_qrels

    texts = {
        json.loads(line)["_id"]: json.loads(line)["text"] for line in (root / "queries.jsonl").read_text().splitlines()
    }
    return {texts[q]: docs for q, docs in load_qrels(root / "qrels" / "test.tsv").items()}


def r_by_text(ranking, queries):
    return {ubi.normalized_query(queries[q]): docs for q, docs in ranking.items()}


def test_searches_are_logged_interleaved_and_forgotten(soporte, store, opensearch_url, capsys):
    searcher, dataset, _, _ = soporte
    logger = UbiLogger(store, store_query_text=False)
    logged = logger.wrap(searcher).search("error E-4012", client_id="browser-1", k=5)
    assert logged.result.hits and len(logged.query_id) == 36
    interleaver = Interleaver(searcher, ScoreNormalization(weights=(0.2, 0.8)), baseline=RRF(), logger=logger)
    page = interleaver.search("¿cómo devuelvo un pedido?", k=6, client_id="browser-2")
    assert [h.rank for h in page.hits] == list(range(1, len(page.hits) + 1)) and set(page.ids) <= set(
        page.baseline.ids
    ) | set(page.candidate.ids)
    again = interleaver.search("¿cómo devuelvo un pedido?", k=6, client_id="browser-2", query_id=page.query_id)
    assert again.page == page.page  # the coins follow the query id
    assert logger.log_event(
        {
            "action_name": "click",
            "timestamp": "2026-01-02T03:04:05Z",
            "query_id": page.query_id,
            "client_id": "browser-2",
            "event_attributes": {"object": {"object_id": page.ids[0]}, "position": {"ordinal": {"index": 0}}},
        }
    )
    assert logger.flush(30)
    store.refresh()
    raw = store.cluster.search(store.queries_index, {"size": 10, "query": {"match_all": {}}})["hits"]["hits"]
    for hit in raw:
        ubi.validate("query", hit["_source"])
        text = json.dumps(hit["_source"], ensure_ascii=False).lower()
        assert hit["_source"]["user_query"] == "" and "error e-4012" not in text and "devuelvo" not in text
    records = {q.query_id: q for q in store.queries()}
    assert records[page.query_id].interleaving[:2] == ("rrf", fusion_label(ScoreNormalization(weights=(0.2, 0.8))))
    (event,) = list(store.events())
    assert (event.object_id, event.position) == (page.ids[0], 0)
    (stored_event,) = store.cluster.search(store.events_index, {"size": 10, "query": {"match_all": {}}})["hits"]["hits"]
    ubi.validate("event", stored_event["_source"])  # as the node holds it, the ordinal written as the integer
    assert stored_event["_source"]["event_attributes"]["position"]["ordinal"] == 0
    assert traffic_command("report", opensearch_url, store, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["searches"] == 2 and shown["experiments"][0]["wins"] + shown["experiments"][0]["losses"] == 1
    assert traffic_command("forget", opensearch_url, store, "--client-id", "browser-2") == 0
    assert "deleted 1 query records and 1 events" in capsys.readouterr().out
    store.refresh()
    assert [q.client_id for q in store.queries()] == ["browser-1"] and list(store.events()) == []
    logger.close()
