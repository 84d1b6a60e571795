"""A third engine is one folder: tests/support/fake_engine implements the port in memory, and the
adapter's own init, ingest, search and plan/diff run on it unchanged (no server, no model)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.catalog import read_index_info
from adapter.engines import cluster_for, engine_for
from adapter.fusion import RRF, ScoreNormalization
from adapter.ingest.ingestor import Ingestor
from adapter.admin.planning import apply_plan, plan_spec
from adapter.search import Searcher
from adapter.ingest.sources import SourceDoc
from adapter.index.spec import Spec
from adapter.engines.capabilities import EngineName
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FAKE, FakeCluster

DOCS = [
    SourceDoc(
        "refund",
        "How to get a refund for a returned order, money back in five days",
        "Refunds",
        {"category": "billing"},
    ),
    SourceDoc("invoice", "Download an invoice for an order from the account page", "Invoices", {"category": "billing"}),
    SourceDoc(
        "tracking", "Track the parcel of an order with its tracking number", "Tracking", {"category": "shipping"}
    ),
    SourceDoc(
        "password", "Change the password of the account in the security settings", "Password", {"category": "account"}
    ),
    SourceDoc(
        "e-4012", "Error E-4012 means the card was declined by the bank", "Error E-4012", {"category": "billing"}
    ),
]


@pytest.fixture
def indexed():
    cluster, embedder = FakeCluster(), HashingEmbedder(16)
    report = init_index(cluster, "docs", IndexSpec(embedder.fingerprint))
    ingest = Ingestor.open(cluster, "docs", embedder, progress=False).ingest(DOCS)
    return cluster, embedder, report, ingest


def test_the_fake_is_a_port_of_its_own_engine():
    cluster = FakeCluster()
    assert cluster_for(cluster) is cluster and engine_for(cluster) is FAKE
    assert (
        cluster.name is EngineName("fake")
        and cluster.probe().engine == "fake"
        and str(cluster.probe().engine) == "fake"
    )


def test_the_fake_is_found_through_the_registry_and_implements_only_what_it_has():
    """It registered itself (tests/support/fake_engine/__init__.py): no edit in adapter/ names it. Its
    port has no search-pipelines facet and its placement is the in-request one; it registers no fusion
    renderer, so every fusion names other engines as its servers and is fused in the client here."""
    from adapter.engines import registry
    from adapter.engines.placement import IN_REQUEST
    from adapter.engines.port import Cluster, SearchPipelines
    from adapter.fusion import methods
    from adapter.engines.render import server_support, servers

    assert (
        "fake" in registry.names()
        and registry.engine_named("fake") is FAKE
        and registry.title("fake") == "the fake engine"
    )
    cluster = FakeCluster()
    assert cluster.pipelines is None and not isinstance(cluster, SearchPipelines) and FAKE.placement is IN_REQUEST
    assert not hasattr(FakeCluster, "put_search_pipeline") and not hasattr(FAKE, "render_pipeline")
    assert methods() and all("fake" not in servers(method) for method in methods())
    assert "not by the fake engine: it is fused in the client" in server_support(RRF(), cluster.probe())
    # the core has no pipeline method
    assert not set(SearchPipelines.__abstractmethods__) & set(Cluster.__abstractmethods__)


def test_init_creates_the_templates_and_the_index_behind_its_alias(indexed):
    cluster, embedder, report, ingest = indexed
    assert report.index == "docs-v1" and report.default_pipeline is None and report.default_fusion
    assert {(c.kind, c.action) for c in report.changes} >= {
        ("component_template", "created"),
        ("index_template", "created"),
        ("index", "created"),
    }
    assert cluster.aliased_indices("docs") == ["docs-v1"]
    info = read_index_info(cluster, "docs")
    assert info.fingerprint == embedder.fingerprint and info.vector_field == "embedding"
    assert ingest.documents == 5 and not ingest.failures and cluster.count("docs") == 5
    again = init_index(cluster, "docs", IndexSpec(embedder.fingerprint))
    assert {c.action for c in again.changes} == {"unchanged"}


@pytest.mark.parametrize("technique", list(Technique))
def test_every_technique_finds_what_its_words_say(indexed, technique):
    cluster, embedder, _, _ = indexed
    result = Searcher.open(cluster, "docs", embedder).search("refund for a returned order", technique=technique, k=3)
    assert result.ids[0] == "refund"
    assert result.sent, "the port records what it sent"
    if technique is Technique.HYBRID:  # no server fusion: both legs fetched, fused in the client, and said so
        assert result.fused_by is FusedBy.CLIENT and any("fused in the client" in n for n in result.notices)


def test_fusions_filters_and_explanations(indexed):
    cluster, embedder, _, _ = indexed
    searcher = Searcher.open(cluster, "docs", embedder)
    rrf = searcher.search("error E-4012 card", fusion=RRF(), explain=True, k=3)
    assert rrf.ids[0] == "e-4012" and rrf.hits[0].legs and rrf.hits[0].legs[0].rank == 1
    billing = searcher.search("order", technique="bm25", filters={"category": "billing"}, k=5)
    assert set(billing.ids) == {"refund", "invoice"}
    weighted = searcher.search("parcel tracking number", fusion=ScoreNormalization(weights=(0.9, 0.1)), k=2)
    assert weighted.ids[0] == "tracking"
    nothing = searcher.search("refund", technique="bm25", filters={"nosuchfield": "1"})
    assert not nothing.hits and any("nosuchfield" in n for n in nothing.notices)


def test_plan_and_diff_follow_the_live_state(indexed):
    cluster, embedder, _, _ = indexed
    spec = Spec(
        "docs",
        embedder.fingerprint.spec,
        fingerprint=embedder.fingerprint,
        default=read_index_info(cluster, "docs").default_fusion,
    )
    planned, live = plan_spec(cluster, spec, FAKE)
    assert planned.in_sync, [c for c in planned.drift]
    boosted, _ = plan_spec(cluster, replace(spec, title_boost=0.5), FAKE)
    assert [(c.kind, c.action) for c in boosted.drift] == [("index_template", "update"), ("mapping _meta", "update")]
    apply_plan(cluster, boosted)
    assert plan_spec(cluster, replace(spec, title_boost=0.5), FAKE)[0].in_sync
    assert read_index_info(cluster, "docs").query_fields == ("title^0.5", "text")
    resharded, _ = plan_spec(cluster, replace(spec, shards=2), FAKE)
    assert resharded.rebuild and "number_of_shards" in resharded.rebuild[0]


def test_a_document_the_mapping_refuses_is_a_failure_not_a_loss(indexed):
    cluster, _, _, _ = indexed
    wrong = HashingEmbedder(16, name="other")  # same dimension, another model: refused before anything is sent
    with pytest.raises(Exception, match="fingerprint|model"):
        Ingestor.open(cluster, "docs", wrong, progress=False)
    failed = list(
        cluster.bulk([{"_op_type": "index", "_index": "docs", "_id": "x", "_source": {"embedding": [0.0] * 3}}])
    )
    assert failed and failed[0]["index"]["status"] == 400 and cluster.count("docs") == 5


@pytest.mark.parametrize("chunk_words", [None, 50])
def test_a_title_only_document_is_indexed_and_found_by_its_title(chunk_words):
    from adapter.ingest.sources import Chunking

    cluster, embedder = FakeCluster(), HashingEmbedder(16)
    init_index(cluster, "docs", IndexSpec(embedder.fingerprint))
    chunking = Chunking(chunk_words, chunk_words // 5) if chunk_words else None
    docs = [*DOCS, SourceDoc("catalogues", "", "Online catalogues in university libraries")]
    report = Ingestor.open(cluster, "docs", embedder, progress=False, chunking=chunking).ingest(docs)
    assert not report.failures and cluster.count("docs") == len(docs)
    hits = Searcher.open(cluster, "docs", embedder).search("university catalogues", technique=Technique.BM25, k=3).hits
    assert hits[0].id.split("#")[0] == "catalogues"
