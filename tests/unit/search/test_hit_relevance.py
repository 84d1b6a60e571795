"""Each hit's relevance beside its score (adapter.search.relevance): the index's map for the fusion
that ran where it keeps one, else the score's formula, and the result says which. On the port-level
fake: the subject is how the searcher reads ``_meta.relevance`` and what calibrate stores, not the server."""

from __future__ import annotations

import pytest

from adapter.fusion import RRF, ScoreNormalization
from adapter.admin.calibrate import calibrate_index, measure_relevance, store_relevance
from adapter.fusion.relevance import LEG_PREFIX, RelevanceMap, fit
from adapter.index.assets import IndexSpec
from adapter.index.catalog import index_meta
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.fusion.base import LegScore
from adapter.search.relevance import FORMULA, LEGS_MAP, MAP, hit_relevance, with_relevance
from adapter.search.results import Hit, Technique
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster
from tests.unit.engines.test_fake_engine import DOCS

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(16)
QUERIES = [
    "refund order",
    "invoice account",
    "track parcel",
    "change password",
    "card declined",
    "order money back",
    "download invoice",
    "tracking number",
    "security settings",
    "error bank",
]
RRF_MAP = RelevanceMap("rrf", (0.0, 0.02, 0.04))


def indexed() -> FakeCluster:
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    Ingestor.open(cluster, "docs", EMBEDDER, progress=False).ingest(DOCS)
    return cluster


def test_the_map_of_the_fusion_that_ran_else_its_formula_and_the_result_says_which():
    hits = (Hit("a", 0.03, rank=1), Hit("b", 0.01, rank=2))
    mapped, by = with_relevance(hits, Technique.HYBRID, RRF(), {"rrf": RRF_MAP})
    assert by == MAP and [h.relevance for h in mapped] == [pytest.approx(0.75), pytest.approx(0.25)]
    assert [h.score for h in mapped] == [0.03, 0.01]  # the fused score stays beside it
    other, by = with_relevance(hits, Technique.HYBRID, ScoreNormalization(), {"rrf": RRF_MAP})  # no map for min_max
    assert by == FORMULA and [h.relevance for h in other] == [0.03, 0.01]
    single, by = with_relevance((Hit("a", 4.0),), Technique.BM25, None, {"rrf": RRF_MAP})
    assert by == FORMULA and single[0].relevance == pytest.approx(4 / 5)


def test_a_reranked_page_is_the_rerankers_and_chunks_get_theirs_too():
    reranked, by = with_relevance(
        (Hit("a", 0.0, rerank_score=0.0, first_stage_score=0.03),), Technique.HYBRID, RRF(), {"rrf": RRF_MAP}
    )
    assert by == FORMULA and reranked[0].relevance == pytest.approx(0.5)  # the logistic of the reranker's logit
    grouped, _ = with_relevance(
        (Hit("a", 0.03, chunks=(Hit("a#1", 0.02),)),), Technique.HYBRID, RRF(), {"rrf": RRF_MAP}
    )
    assert grouped[0].chunks[0].relevance == pytest.approx(0.5)
    assert hit_relevance(
        Hit("a", 0.2, first_stage_score=0.03, mmr_score=0.2), Technique.HYBRID, RRF(), RRF_MAP
    ) == pytest.approx(0.75)


def test_the_relevance_never_reorders_a_fusions_hits():
    hits = tuple(Hit(str(i), 1 / (60 + i) + 1 / (60 + 2 * i), rank=i) for i in range(1, 30))
    fitted = fit("rrf", [h.score for h in hits[5:]])
    mapped, _ = with_relevance(hits, Technique.HYBRID, RRF(), {"rrf": fitted})
    values = [h.relevance for h in mapped]
    assert values == sorted(values, reverse=True) and all(0.0 <= v <= 1.0 for v in values)


def test_a_search_reads_the_indexs_maps_and_a_searcher_opened_before_them_does_not():
    cluster = indexed()
    before = Searcher.open(cluster, "docs", EMBEDDER)
    plain = before.search("refund order", fusion="rrf")
    assert plain.relevance_by == FORMULA and [h.relevance for h in plain.hits] == [
        RRF().relevance(h.score) for h in plain.hits
    ]
    store_relevance(cluster, "docs", [RRF_MAP])
    after = Searcher.open(cluster, "docs", EMBEDDER).search("refund order", fusion="rrf")
    assert after.relevance_by == MAP and [h.relevance for h in after.hits] == [
        RRF_MAP.relevance(h.score) for h in after.hits
    ]
    assert after.ids == plain.ids and [h.score for h in after.hits] == [h.score for h in plain.hits]


def test_unreadable_maps_are_said_on_every_search_and_relevances_come_from_the_formula():
    cluster = indexed()
    meta = index_meta(cluster, "docs-v1")
    cluster.put_mapping("docs-v1", {"_meta": {**meta, "relevance": {"rrf": [0.1, 0.2]}}})
    result = Searcher.open(cluster, "docs", EMBEDDER).search("refund order", fusion="rrf")
    assert result.relevance_by == FORMULA and result.hits
    assert any("_meta.relevance" in n and "hybrid calibrate" in n for n in result.notices)


def test_calibrate_fits_and_stores_the_maps_on_the_hits_every_fusion_agrees_on():
    cluster = indexed()
    report = calibrate_index(cluster, "docs", QUERIES, embedder=EMBEDDER)
    assert {m.fusion for m in report.relevance} >= {
        "rrf",
        "min_max-arithmetic_mean",
        "z_score-arithmetic_mean",
        "l2-arithmetic_mean",
    }
    assert all(m.reference == "consensus" and m.sample >= 20 for m in report.relevance)
    # ten queries give BM25 15 raw scores of those hits: too few for its leg's map, and the report says so
    assert not any(m.fusion.startswith(LEG_PREFIX) for m in report.relevance)
    assert any("legs' relevance maps not fitted" in n and "'leg:bm25'" in n for n in report.notes), report.notes
    searcher = Searcher.open(cluster, "docs", EMBEDDER)
    assert set(searcher.state.relevance) == {m.fusion for m in report.relevance}
    for fusion in ("rrf", "z_score-arithmetic_mean"):
        result = searcher.search("refund order", fusion=fusion)
        assert result.relevance_by == MAP and all(0.0 <= h.relevance <= 1.0 for h in result.hits)
    # each fusion's map is fitted on the same hits: as many scores under each
    fitted = measure_relevance(searcher, QUERIES, ["rrf", "min_max-arithmetic_mean"], legs=False)
    assert len({m.sample for m in fitted}) == 1


def test_with_enough_queries_calibrate_fits_the_legs_maps_and_a_hit_with_its_legs_takes_them():
    cluster = indexed()
    report = calibrate_index(cluster, "docs", QUERIES * 2, embedder=EMBEDDER)
    legs = {m.fusion: m for m in report.relevance if m.fusion.startswith(LEG_PREFIX)}
    assert set(legs) == {"leg:bm25", "leg:dense"} and not report.notes, report.notes
    assert all(m.reference == "consensus" and m.sample >= 20 for m in legs.values())
    searcher = Searcher.open(cluster, "docs", EMBEDDER)
    explained = {
        fusion: searcher.search("refund order", fusion=fusion, explain=True)
        for fusion in ("rrf", "min_max-arithmetic_mean")
    }
    for result in explained.values():  # an explained hit carries its legs' raw scores
        assert result.relevance_by == LEGS_MAP, result.relevance_by
        values = [h.relevance for h in result.hits]
        assert values == sorted(values, reverse=True) and all(0.0 <= v <= 1.0 for v in values)
    # the same document's base under both fusions: the first hit of each is raised to the page's largest base
    first = {name: r.hits[0] for name, r in explained.items()}
    assert first["rrf"].relevance == first["min_max-arithmetic_mean"].relevance


def test_from_the_legs_the_same_raw_scores_give_the_same_relevance_under_every_fusion():
    maps = {"leg:bm25": RelevanceMap("leg:bm25", (0.0, 10.0)), "leg:dense": RelevanceMap("leg:dense", (0.5, 1.0))}

    def hit(doc: str, score: float, bm25: float | None, dense: float | None) -> Hit:
        legs = (LegScore("bm25", None, bm25, None, 0.5, 0.0), LegScore("dense", None, dense, None, 0.5, 0.0))
        return Hit(doc, score, legs=legs)

    rrf = (hit("a", 0.033, 8.0, 0.9), hit("b", 0.032, None, 0.95), hit("c", 0.03, 6.0, 0.6))
    mm = (hit("b", 1.0, None, 0.95), hit("a", 0.9, 8.0, 0.9), hit("c", 0.5, 6.0, 0.6))
    by_rrf, by = with_relevance(rrf, Technique.HYBRID, RRF(), {**maps, "rrf": RRF_MAP})
    assert by == LEGS_MAP
    # a: (0.8 + 0.8) / 2; b: (0 + 0.9) / 2, BM25 did not return it; c: (0.6 + 0.2) / 2
    assert [h.relevance for h in by_rrf] == [pytest.approx(0.8), pytest.approx(0.45), pytest.approx(0.4)]
    by_mm, _ = with_relevance(mm, Technique.HYBRID, ScoreNormalization(), maps)
    # under min_max b comes first: raised to a's 0.8 below it, a and c as under RRF
    assert [h.relevance for h in by_mm] == [pytest.approx(0.8), pytest.approx(0.8), pytest.approx(0.4)]
    # a hit without its legs (a server-fused page, no explanation) keeps the fusion's map
    plain, by = with_relevance((Hit("a", 0.03),), Technique.HYBRID, RRF(), {**maps, "rrf": RRF_MAP})
    assert by == MAP and plain[0].relevance == pytest.approx(0.75)


def test_calibrate_says_why_the_maps_are_missing_and_keeps_the_calibration():
    cluster = indexed()
    report = calibrate_index(cluster, "docs", QUERIES[:1], embedder=EMBEDDER)  # one query: too few hits for a map
    assert report.relevance == () and report.calibration.queries == 1
    assert any("relevance maps not fitted" in n and "give at least" in n for n in report.notes)
    assert calibrate_index(cluster, "docs", QUERIES, embedder=EMBEDDER, relevance=False).relevance == ()


def test_the_legs_only_where_every_fusions_pages_carry_them_alike():
    from types import SimpleNamespace

    from adapter.engines.placement import FusionPlan
    from adapter.fusion import parse_fusion
    from adapter.fusion.base import FusedBy
    from adapter.search.searcher import _legs_alike
    from adapter.search.state import Memo

    def state(server: set[str]) -> SimpleNamespace:  # what _legs_alike reads of an IndexState
        maps = {"rrf": RRF_MAP, "z_score-arithmetic_mean": RRF_MAP, "leg:bm25": RRF_MAP, "leg:dense": RRF_MAP}
        return SimpleNamespace(
            facts=Memo(), relevance=maps, caps=SimpleNamespace(supports=lambda f: (f.name in server, "why"))
        )

    z_score = parse_fusion("z_score-arithmetic_mean")
    fell_back = FusionPlan(z_score, FusedBy.CLIENT, notice="z_score normalisation needs OpenSearch 3.0+")
    # OpenSearch 2.19: RRF fused by the server (no legs on its page), z_score fell back: both keep their maps
    assert not _legs_alike(fell_back, state({"rrf"}))
    assert not _legs_alike(FusionPlan(RRF(), FusedBy.SERVER_PIPELINE, pipeline="p"), state({"rrf"}))
    # a cluster that fuses none of them (Elasticsearch without its retrievers): every page carries its legs
    assert _legs_alike(fell_back, state(set()))
    # the client fusing by choice (technique="client", the fast path)
    assert _legs_alike(FusionPlan(z_score, FusedBy.CLIENT), state({"rrf"}))
    assert not _legs_alike(None, state(set()))
    # OpenSearch's server-fused pages asked for their named legs' scores: every page carries its legs, the
    # server's and the one that fell back alike
    server = FusionPlan(RRF(), FusedBy.SERVER_PIPELINE, pipeline="p")
    assert _legs_alike(server, state({"rrf"}), named=True) and _legs_alike(fell_back, state({"rrf"}), named=True)
