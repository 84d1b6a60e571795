"""The parallel-legs fast path on a real node: the check runs both paths and finds the same pages,
a kept check makes a hybrid take it (and say so), ``--forget`` and ``--fast-path off`` undo it."""

import uuid
from dataclasses import replace

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.catalog import read_index_info
from adapter.cli import main
from adapter.engines import cluster_for
from adapter.search.fast_path import check_fast_path, keep_fast_path
from adapter.search.fast_path import MIN_QUERIES, FastPath, FastPathCheck
from adapter.fusion import RRF, same_ranking_up_to_ties
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import SourceDoc, read_source
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.conftest import HashingEmbedder, drop_hybrid_index

QUERIES = [
    f"{a} {b}"
    for a in (
        "error E-4012",
        "¿cómo devuelvo un pedido?",
        "envío del paquete",
        "factura",
        "reembolso",
        "cambiar la contraseña",
    )
    for b in ("", "urgente", "por favor", "cliente")
]


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
    assert check.queries == len(QUERIES) == 24 and check.same_pages == 24 and check.shards == 1
    if check.fusion.startswith("z_score"):
        # z_score floors every score below its leg's mean to the same value: the tails tie, and the server
        # orders its ties by Lucene doc id, the client by rank and id, so later pages would differ.
        assert check.same_lists < 24 and not check.congruent and "another order" in (check.why_not() or "")
    else:
        # min_max (2.19's default: no z_score there) leaves no floor of ties on 12 documents: every list agrees
        assert check.same_lists == 24 and check.congruent
    assert check.fusion == server.fusion.name and check.depth == 100 and check.version == searcher.caps.version
    assert check.hybrid_p50_ms > 0 and check.fast_p50_ms > 0


def test_a_kept_check_is_taken_by_a_hybrid_until_forgotten(client, support, e5, opensearch_url, capsys):
    measured = check_fast_path(Searcher.open(client, support, e5), QUERIES, k=5)
    # Which path is faster on 12 documents is the machine's noise, and the tied tails of z_score come
    # in another order (above): the check kept here is one that earned it, to test what a search does
    # with it (benchmarks/scale.py measures the speed).
    earned = replace(measured, fast_p50_ms=measured.hybrid_p50_ms / 2, same_lists=measured.queries)
    assert earned.taken
    keep_fast_path(client, support, earned)
    info = read_index_info(cluster_for(client), support)
    # the rest of _meta kept
    assert FastPathCheck.from_meta(info.fast_path) == earned and info.fingerprint.model == e5.fingerprint.model

    searcher = Searcher.open(client, support, e5)
    for query in QUERIES[::4]:
        fast = searcher.search(query, k=5)
        server = searcher.search(query, k=5, fast_path=FastPath.OFF)
        assert (
            fast.technique is Technique.CLIENT
            and fast.fused_by is FusedBy.CLIENT
            and server.fused_by is FusedBy.SERVER_PIPELINE
        )
        assert any(n.startswith("fast path: both legs in one _msearch") for n in fast.notices)
        assert same_ranking_up_to_ties([(h.id, h.score) for h in fast.hits], [(h.id, h.score) for h in server.hits])
        texts = {h.id: h.text for h in server.hits}  # the last group of tied scores may be cut at other ids
        assert fast.hits and all(h.text and h.text == texts.get(h.id, h.text) for h in fast.hits)
    assert searcher.search(QUERIES[0], k=5, depth=20).fused_by is FusedBy.SERVER_PIPELINE  # not the depth checked

    assert main(["search", "--index", support, "--url", opensearch_url, "factura", "-k", "3"]) == 0
    assert "fast path: both legs in one _msearch" in capsys.readouterr().out
    assert (
        main(["search", "--index", support, "--url", opensearch_url, "--fast-path", "off", "factura", "-k", "3"]) == 0
    )
    assert "fast path" not in capsys.readouterr().out
    assert main(["fast-path", "--index", support, "--url", opensearch_url, "--forget"]) == 0
    assert "no fast-path check kept" in capsys.readouterr().out
    assert read_index_info(cluster_for(client), support).fast_path is None
    assert Searcher.open(client, support, e5).search(QUERIES[0], k=5).fused_by is FusedBy.SERVER_PIPELINE


def test_the_command_prints_the_check_and_keeps_only_what_earned_it(client, support, opensearch_url, capsys, tmp_path):
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(QUERIES), encoding="utf-8")
    assert (
        main(["fast-path", "--index", support, "--url", opensearch_url, "--queries", str(queries), "-k", "5", "--keep"])
        == 0
    )
    out = capsys.readouterr().out
    assert "same page          24/24 queries" in out and "server hybrid      client p50" in out
    kept = FastPathCheck.from_meta(read_index_info(cluster_for(client), support).fast_path)
    if "the fast path earns it" in out:
        assert kept is not None and kept.taken and f"kept with {support}" in out
    else:
        assert kept is None and "nothing kept" in out and "does not earn it" in out


class _CrossedLegs(HashingEmbedder):
    """A query's vector is that of its words with "alpha" read as "beta": the BM25 leg finds the
    alpha documents, the vector leg the beta ones, so RRF ties rank r of one leg with rank r of the
    other (real vectors, no meaning: what the test needs is ties at known places)."""

    def __init__(self) -> None:
        super().__init__(256, "crossed-legs")

    def embed_query(self, text: str):
        return self._one(text.replace("alpha", "beta"))


def _tied_rows() -> list[SourceDoc]:
    """C ("alpha beta") first in both legs, then A_i (alpha, BM25 rank i+1) tied with B_i (beta,
    vector rank i+1) under RRF: the pairs sit at fused positions (1, 2), (3, 4), ... so every page
    boundary at an even offset cuts one. B is ingested first: the server orders its ties by Lucene doc
    id, the client by id."""
    words = lambda tag, i: " ".join(f"{tag}{i}w{j}" for j in range(i + 2))  # noqa: E731
    rows = [SourceDoc(f"b-{i:03d}", f"beta {words('b', i)}") for i in range(110)]
    rows += [SourceDoc(f"a-{i:03d}", f"alpha {words('a', i)}") for i in range(110)]
    return [*rows, SourceDoc("c", "alpha beta")]


@pytest.fixture(scope="module")
def ties(client):
    embedder = _CrossedLegs()
    alias = f"t-fast-ties-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(embedder.fingerprint))
    assert not Ingestor.open(client, alias, embedder, progress=False).ingest(_tied_rows()).failures
    yield alias, embedder
    drop_hybrid_index(client, alias)


def test_a_kept_check_holds_at_every_offset_it_is_taken_for(client, ties):
    """Issue 33 item 9: a check that compared only the first page (up to ties) was taken at every
    offset, where the pages of the two paths differ at the tied pairs that the page boundaries cut."""
    alias, embedder = ties
    queries = [f"alpha {w}".strip() for w in ("", *(f"zz{i}" for i in range(MIN_QUERIES - 1)))]
    searcher = Searcher.open(client, alias, embedder, fusion=RRF())
    measured = check_fast_path(searcher, queries, k=10)
    assert measured.same_pages == measured.queries and measured.shards == 1  # the first pages agree up to ties ...
    # ... the lists do not, so the check is not taken. Not "for every query": once, on 2.19.1 in a loaded CI run, one
    # of the 20 (alike by construction) came back from the server in the client's tie order (not reproduced in 4
    # reruns); what this test is about is that one list in another order is enough to refuse the check.
    assert measured.same_lists < measured.queries and "another order" in (measured.why_not() or "")
    keep_fast_path(client, alias, replace(measured, fast_p50_ms=measured.hybrid_p50_ms / 2))  # as if measured faster
    searcher = Searcher.open(client, alias, embedder, fusion=RRF())
    for from_ in range(0, 100, 10):
        auto = searcher.search(queries[0], k=10, from_=from_)
        server = searcher.search(queries[0], k=10, from_=from_, fast_path=FastPath.OFF)
        assert auto.ids == server.ids, (
            f"from={from_}: {auto.fused_by.value} {auto.ids} against the server's {server.ids}"
        )
