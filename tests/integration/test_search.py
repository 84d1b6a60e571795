"""Searching the seed's Spanish support documents with a real multilingual embedder.

Tests marked for both engines hold on Elasticsearch too, where hybrid is fused in the request (on the
integ-test node: query + knn summed; tests/integration/test_elastic_adapter.py has its own paths)."""

import uuid

import numpy as np
import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.engines import connect_cluster
from adapter.fusion import same_ranking_up_to_ties
from adapter.errors import (
    CapabilityError,
    ClusterUnavailableError,
    IndexMismatchError,
    InputError,
    PipelineNotFoundError,
)
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import FieldMap, read_source
from adapter.fusion import RRF, ScoreNormalization
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.conftest import drop_hybrid_index

BOTH = pytest.mark.engine("opensearch", "elasticsearch")
RETURNS = {"reembolso", "devoluciones", "devoluciones-copia", "etiqueta-devolucion"}


@pytest.fixture(scope="module")
def support(client, e5, support_docs_path):
    alias = f"t-search-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish"))
    report = Ingestor.open(client, alias, e5, progress=False).ingest(
        read_source(support_docs_path, FieldMap(metadata=("category", "lang")))
    )
    assert report.documents == 12 and not report.failures
    yield alias
    drop_hybrid_index(client, alias)


@pytest.fixture(scope="module")
def searcher(client, support, e5):
    return Searcher.open(client, support, e5)


@BOTH
@pytest.mark.parametrize("technique", ["bm25", "dense", "hybrid", "client-rrf"])
def test_every_technique_returns_results(searcher, technique, target):
    result = searcher.search("devoluciones y reembolsos", technique=technique, k=5)
    # The integ-test Elasticsearch node has no retrievers: its hybrid (min_max) is fused in the client.
    client_side = technique == "client-rrf" or (technique == "hybrid" and target.engine != "opensearch")
    assert result.technique is (
        Technique.CLIENT if technique == "hybrid" and client_side else Technique.parse(technique)
    )
    assert 1 <= len(result.hits) <= 5
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    assert result.hits[0].score >= result.hits[-1].score
    assert "embedding" not in result.hits[0].source
    single = FusedBy.NONE if technique in ("bm25", "dense") else FusedBy.SERVER_PIPELINE
    assert result.fused_by is (FusedBy.CLIENT if client_side else single)


@BOTH
@pytest.mark.parametrize("technique", ["bm25", "hybrid"])
def test_error_code_puts_its_document_first(searcher, technique):
    assert searcher.search("error E-4012", technique=technique, k=3).hits[0].id == "e-4012"


@BOTH
@pytest.mark.parametrize("technique", ["dense", "hybrid"])
def test_paraphrase_finds_the_returns_documents(searcher, technique):
    hits = searcher.search("¿cómo devuelvo un pedido?", technique=technique, k=3).hits
    assert len({h.id for h in hits} & RETURNS) >= 2
    if technique == "dense":
        assert hits[0].id in RETURNS


@pytest.mark.parametrize("fusion", [RRF(), RRF(5)])
def test_client_rrf_and_server_rrf_rank_identically(searcher, fusion):
    # RRF(5) goes inline: its rank constant must reach the server wherever its version reads it.
    for query in ("error E-4012", "¿cómo devuelvo un pedido?", "envío del paquete"):
        server = searcher.search(query, technique="hybrid", fusion=fusion, k=12, depth=12)
        client = searcher.search(query, technique="client-rrf", fusion=fusion, k=12, depth=12)
        assert server.fused_by is (FusedBy.SERVER_PIPELINE if fusion == RRF() else FusedBy.SERVER_INLINE)
        assert client.fused_by_label == f"client:{fusion.name}"
        # Same scores, same order; documents with exactly equal scores may come in any order.
        assert [h.score for h in server.hits] == pytest.approx([h.score for h in client.hits], rel=1e-6)
        assert same_ranking_up_to_ties(
            [(h.id, h.score) for h in server.hits], [(h.id, h.score) for h in client.hits]
        ), query


@pytest.mark.max_version("2")
def test_unsupported_fusion_falls_back_and_says_so(searcher, client, support, e5):
    result = searcher.search("error E-4012", technique="hybrid", fusion=ScoreNormalization("z_score"), k=3)
    # The fusion asked for is kept, computed in the client with the server's formula.
    assert (
        result.technique is Technique.CLIENT
        and result.fused_by is FusedBy.CLIENT
        and result.fusion == ScoreNormalization("z_score")
    )
    assert any(
        "z_score" in n and "3.0" in n and "fell back to client-side z_score-arithmetic_mean" in n
        for n in result.notices
    )
    assert result.hits[0].id == "e-4012"
    weighted = searcher.search("error E-4012", technique="hybrid", fusion=RRF(weights=(0.7, 0.3)), k=3)
    assert weighted.technique is Technique.CLIENT and weighted.fusion == RRF(weights=(0.7, 0.3))
    assert any("3.1" in n for n in weighted.notices)
    strict = Searcher.open(client, support, e5, allow_fallback=False)
    with pytest.raises(CapabilityError, match="fallback to client-side fusion is disabled"):
        strict.search("error E-4012", fusion=ScoreNormalization("z_score"))


@pytest.mark.min_version("3.1")
def test_z_score_and_weighted_rrf_fuse_on_the_server_from_3_1(searcher, support):
    result = searcher.search("error E-4012", technique="hybrid", fusion=ScoreNormalization("z_score"), k=3)
    assert (
        result.technique is Technique.HYBRID
        and result.fused_by is FusedBy.SERVER_PIPELINE
        and "z_score" in result.pipeline
    )
    assert not result.notices and result.hits[0].id == "e-4012"
    weighted = searcher.search("error E-4012", technique="hybrid", fusion=RRF(weights=(0.7, 0.3)), k=3)
    assert (
        weighted.technique is Technique.HYBRID and weighted.fused_by is FusedBy.SERVER_INLINE and not weighted.notices
    )
    # The weights reached the server: its scores are the weighted RRF the client computes.
    client_side = searcher.search("error E-4012", technique="client-rrf", fusion=RRF(weights=(0.7, 0.3)), k=3)
    assert [h.score for h in weighted.hits] == pytest.approx([h.score for h in client_side.hits], rel=1e-6)


@BOTH
def test_filters_pre_filter_the_knn_leg(searcher):
    unfiltered = searcher.search("error en el pago con tarjeta", technique="dense", k=4)
    # a post-filter would lose these
    assert any(h.source["metadata"]["category"] != "devoluciones" for h in unfiltered.hits)
    for technique in ("dense", "hybrid", "client-rrf", "bm25"):
        hits = searcher.search(
            "error en el pago con tarjeta devolución", technique=technique, k=4, filters={"category": "devoluciones"}
        ).hits
        assert hits and all(h.source["metadata"]["category"] == "devoluciones" for h in hits), technique
        if technique == "dense":
            assert len(hits) == 4  # k filtered hits, not fewer


@BOTH
def test_pages_do_not_overlap(searcher):
    for technique in ("hybrid", "client-rrf", "bm25", "dense"):
        first = searcher.search("pedido envío devolución cuenta", technique=technique, k=4, from_=0, depth=12)
        second = searcher.search("pedido envío devolución cuenta", technique=technique, k=4, from_=4, depth=12)
        both = searcher.search("pedido envío devolución cuenta", technique=technique, k=8, depth=12)
        assert not set(first.ids) & set(second.ids), technique
        assert first.ids + second.ids == both.ids, technique
        assert [h.rank for h in second.hits] == [5, 6, 7, 8][: len(second.hits)]


@BOTH
def test_mmr_lambda_zero_removes_the_near_duplicate(searcher):
    query = "política de devoluciones de 30 días"
    relevant = searcher.search(query, technique="hybrid", k=2, mmr_lambda=1.0)
    assert set(relevant.ids) == {"devoluciones", "devoluciones-copia"}
    diverse = searcher.search(query, technique="hybrid", k=2, mmr_lambda=0.0)
    assert diverse.ids[0] == relevant.ids[0]
    assert len({"devoluciones", "devoluciones-copia"} & set(diverse.ids)) == 1
    assert diverse.hits and all(h.mmr_score is not None and h.first_stage_score is not None for h in diverse.hits)
    assert "embedding" not in diverse.hits[0].source


@pytest.mark.parametrize(
    "fusion", [ScoreNormalization(weights=(0.3, 0.7)), ScoreNormalization("l2", "harmonic_mean", (0.5, 0.5)), RRF()]
)
def test_server_explanations_add_up_to_the_fused_score(searcher, fusion, target):
    result = searcher.search("¿cómo devuelvo un pedido?", technique="hybrid", fusion=fusion, k=6, explain=True)
    # the hybrid (its page's excerpts in it, beside the empty shard), both legs (the explanation)
    assert result.requests == (2 if target.engine == "opensearch" else 3)
    for hit in result.hits:
        bm25, dense = hit.legs
        assert (bm25.leg, dense.leg) == ("bm25", "dense")
        # With explain=true the server's _score drifts from its own normalised details by ~1e-4
        # (neural-search computes them on separate paths); the details are what we report.
        assert sum(leg.contribution for leg in hit.legs) == pytest.approx(hit.score, rel=1e-3, abs=1e-6)
        for leg in hit.legs:
            if leg.rank is not None:
                assert leg.raw_score is not None and leg.normalized_score is not None
        if fusion.kind == "rrf":
            for leg in hit.legs:
                if leg.rank is not None:
                    assert leg.normalized_score == pytest.approx(1 / (60 + leg.rank), rel=1e-6)


@BOTH
def test_client_rrf_explanations_add_up(searcher):
    for hit in searcher.search("error E-4012", technique="client-rrf", k=5).hits:
        assert sum(leg.contribution for leg in hit.legs) == pytest.approx(hit.score, rel=1e-6)


@BOTH
def test_bad_input_gets_clear_errors(searcher, target):
    with pytest.raises(InputError, match="empty"):
        searcher.search("   ")
    with pytest.raises(InputError, match="positive"):
        searcher.search("x", k=0)
    with pytest.raises(InputError, match="exceeds the cluster's limit of 10000"):
        searcher.search("x", k=10_001)
    with pytest.raises(InputError, match="unknown technique 'semantic'"):
        searcher.search("x", technique="semantic")
    with pytest.raises(
        CapabilityError,
        match=r"'nope' does not exist.*hybrid init" if target.engine == "opensearch" else "no search pipelines",
    ):
        searcher.search("x", pipeline="nope")
    with pytest.raises(IndexMismatchError, match="expects"):
        searcher.search("x", technique="dense", query_vector=np.ones(16))


@BOTH
def test_query_embedder_must_match_the_index(client, support):
    from adapter.models.embedders import load_embedder

    with pytest.raises(IndexMismatchError, match="never mix embedding models"):
        Searcher.open(client, support, load_embedder("minilm"))


def test_index_without_vector_field_and_missing_pipelines(client, index_name, e5):
    client.indices.create(
        index=f"{index_name}-v1",
        body={
            "aliases": {index_name: {}},
            "mappings": {
                "_meta": {"embedding": e5.fingerprint.to_meta(), "vector_field": "embedding"},
                "properties": {"text": {"type": "text"}},
            },
        },
    )
    with pytest.raises(IndexMismatchError, match="no vector field 'embedding'"):
        Searcher.open(client, index_name, e5)
    other = f"{index_name}-x"
    try:
        # an index of a fixed fusion
        init_index(client, other, IndexSpec(e5.fingerprint, default_fusion="min_max-arithmetic_mean"))
        client.transport.perform_request("DELETE", f"/_search/pipeline/{other}-min_max-arithmetic_mean")
        with pytest.raises(
            PipelineNotFoundError, match=f"{other}-min_max-arithmetic_mean.*hybrid init --index {other}"
        ):
            Searcher.open(client, other, e5).search("hola")
    finally:
        drop_hybrid_index(client, other)  # its templates too: the session check named them (issue 20 item 16)


@BOTH
def test_cluster_down_is_a_clear_error(e5, target):
    with pytest.raises(ClusterUnavailableError, match="is it running"):
        Searcher.open(connect_cluster("http://127.0.0.1:9", engine=target.engine), "support", e5)


# -- one request per hybrid search (issue 30 item 1) ---------------------------------------------------
def _without_empty_shard(name):
    from adapter.engines.opensearch import OpenSearchEngine

    class Engine(OpenSearchEngine):
        empty_shard_index = name

    return Engine()


@pytest.mark.engine("opensearch")
@pytest.mark.parametrize("fusion", [None, RRF(), ScoreNormalization("l2", "harmonic_mean", (0.3, 0.7))])
def test_a_hybrid_search_is_one_request_with_the_same_page_as_two(client, support, e5, fusion):
    """Beside the empty shard `hybrid init` creates, the server fuses before it fetches: the page and
    its excerpts come in the hybrid request itself. Hits, scores and excerpts equal those of the
    two-request path (an index searched without it: none configured, or one that is not there, as on
    a cluster initialised before it existed: taken as there, its 404 costs the first search one refused
    request, and none after). Highlights asked for besides the excerpts still take a search for the page
    (the same field cannot be highlighted two ways in one request)."""
    from adapter.search.page import SearchOptions

    one = Searcher.open(client, support, e5)
    two = Searcher.open(client, support, e5, engine=_without_empty_shard(None))
    absent = Searcher.open(client, support, e5, engine=_without_empty_shard(f"t-absent-{uuid.uuid4().hex[:6]}"))
    for query, kwargs, requests in (
        ("¿cómo devuelvo un pedido?", {}, (1, 2, 3)),
        ("error E-4012 tarjeta", {"from_": 2, "options": SearchOptions(max_text_chars=100)}, (1, 2, 2)),
        ("devoluciones", {"filters": {"category": "devoluciones"}}, (1, 2, 2)),
        ("reembolso", {"options": SearchOptions(highlight=True)}, (2, 2, 2)),
    ):
        a, b, c = (s.search(query, technique="hybrid", fusion=fusion, k=3, **kwargs) for s in (one, two, absent))
        assert (a.requests, b.requests, c.requests) == requests, query
        assert a.sent[0].path.endswith(",hybrid-empty-shard/_search")
        assert a.ids == b.ids == c.ids and a.ids, query
        assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], rel=1e-6)
        assert [(h.title, h.text, dict(h.source), dict(h.highlight)) for h in a.hits] == [
            (h.title, h.text, dict(h.source), dict(h.highlight)) for h in b.hits
        ], query
