"""The parallel-legs fast path on a real node: the check runs both paths and finds the same pages,
a kept check makes a hybrid take it (and say so), ``--forget`` and ``--fast-path off`` undo it."""

import uuid
from dataclasses import replace

import pytest

from adapter.index.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.catalog import read_index_info
from adapter.cli import main
from adapter.engines import cluster_for
from adapter.search.fast_path import check_fast_path, keep_fast_path
from adapter.search.fast_path import FastPath, FastPathCheck
from adapter.fusion import same_ranking_up_to_ties
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import read_source
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.conftest import drop_hybrid_index

QUERIES = [f"{a} {b}" for a in ("error E-4012", "¿cómo devuelvo un pedido?", "envío del paquete", "factura", "reembolso",
                                 "cambiar la contraseña") for b in ("", "urgente", "por favor", "cliente")]


@pytest.fixture(scope="module")
def support(client, e5, support_docs_path):
    alias = f"t-fast-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish"))
    assert not Ingestor.open(client, alias, e5, progress=False).ingest(read_source(support_docs_path)).failures
    yield alias
    drop_hybrid_index(client, alias)


def test_the_check_runs_both_paths_and_finds_every_page_the_same(client, support, e5):
    searcher = Searcher.open(client, support, e5)
    check = check_fast_path(searcher, QUERIES, k=5)
    server = searcher.search(QUERIES[0], k=5, fast_path=FastPath.OFF)
    assert check.queries == len(QUERIES) == 24 and check.same_pages == 24 and check.congruent
    assert check.fusion == server.fusion.name and check.depth == 100 and check.version == searcher.caps.version
    assert check.hybrid_p50_ms > 0 and check.fast_p50_ms > 0


def test_a_kept_check_is_taken_by_a_hybrid_until_forgotten(client, support, e5, opensearch_url, capsys):
    measured = check_fast_path(Searcher.open(client, support, e5), QUERIES, k=5)
    # Which path is faster on 12 documents is the machine's noise: the check kept here is one that
    # earned it, to test what a search does with it (benchmarks/scale.py measures the speed).
    earned = replace(measured, fast_p50_ms=measured.hybrid_p50_ms / 2)
    assert earned.taken
    keep_fast_path(client, support, earned)
    info = read_index_info(cluster_for(client), support)
    assert FastPathCheck.from_meta(info.fast_path) == earned and info.fingerprint.model == e5.fingerprint.model  # the rest of _meta kept

    searcher = Searcher.open(client, support, e5)
    for query in QUERIES[::4]:
        fast = searcher.search(query, k=5)
        server = searcher.search(query, k=5, fast_path=FastPath.OFF)
        assert fast.technique is Technique.CLIENT and fast.fused_by is FusedBy.CLIENT and server.fused_by is FusedBy.SERVER_PIPELINE
        assert any(n.startswith("fast path: both legs in one _msearch") for n in fast.notices)
        assert same_ranking_up_to_ties([(h.id, h.score) for h in fast.hits], [(h.id, h.score) for h in server.hits])
        texts = {h.id: h.text for h in server.hits}  # the last group of tied scores may be cut at other ids
        assert all(h.text and h.text == texts.get(h.id, h.text) for h in fast.hits)
    assert searcher.search(QUERIES[0], k=5, depth=20).fused_by is FusedBy.SERVER_PIPELINE  # not the depth checked

    assert main(["search", "--index", support, "--url", opensearch_url, "factura", "-k", "3"]) == 0
    assert "fast path: both legs in one _msearch" in capsys.readouterr().out
    assert main(["search", "--index", support, "--url", opensearch_url, "--fast-path", "off", "factura", "-k", "3"]) == 0
    assert "fast path" not in capsys.readouterr().out
    assert main(["fast-path", "--index", support, "--url", opensearch_url, "--forget"]) == 0
    assert "no fast-path check kept" in capsys.readouterr().out
    assert read_index_info(cluster_for(client), support).fast_path is None
    assert Searcher.open(client, support, e5).search(QUERIES[0], k=5).fused_by is FusedBy.SERVER_PIPELINE


def test_the_command_prints_the_check_and_keeps_only_what_earned_it(client, support, opensearch_url, capsys, tmp_path):
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(QUERIES), encoding="utf-8")
    assert main(["fast-path", "--index", support, "--url", opensearch_url, "--queries", str(queries), "-k", "5", "--keep"]) == 0
    out = capsys.readouterr().out
    assert "same page          24/24 queries" in out and "server hybrid      client p50" in out
    kept = FastPathCheck.from_meta(read_index_info(cluster_for(client), support).fast_path)
    if "the fast path earns it" in out:
        assert kept is not None and kept.taken and f"kept with {support}" in out
    else:
        assert kept is None and "nothing kept" in out and "not faster" in out
