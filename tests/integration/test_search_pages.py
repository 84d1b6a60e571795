"""Search pages through the adapter on each target: highlights, facets, one hit per document,
sorts, score floors and server MMR, by the server where the version can and by the client where it
cannot (with a notice), giving the same page either way; stale chunks; Polish text."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.errors import ConfigurationError
from adapter.fusion import same_ranking_up_to_ties
from adapter.ingest.ingestor import Ingestor
from adapter.search.page import Collapse, MMRPlace, SearchOptions, SortKey
from adapter.search import Searcher
from adapter.ingest.sources import Chunking, FieldMap, SourceDoc, read_source
from adapter.testing import RecordingClient
from tests.conftest import HashingEmbedder, delete_pipelines

# The Polish seed article (shared/seeds/003_d3d4bbeefdf9ed91.txt), kept in the repo: CI's clone need not have shared/
# beside it.
SEED_PL = Path(__file__).resolve().parents[1] / "data" / "seed-pl.txt"
TECHNIQUES = ("bm25", "dense", "hybrid", "client-rrf")
QUERY = "devoluciones del pedido"


def drop(client, alias):
    client.indices.delete(index=f"{alias}*", ignore=[404], expand_wildcards="all")
    client.indices.delete_index_template(name=alias, ignore=[404])
    for part in ("text", "vector", "metadata"):
        client.cluster.delete_component_template(name=f"{alias}-{part}", ignore=[404])
    delete_pipelines(client, f"{alias}-")


@pytest.fixture(scope="module")
def chunked(client, e5, support_docs_path):
    """The seed's support documents in chunks of 6 words (38 chunks of 12 documents)."""
    alias = f"t-pages-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(e5.fingerprint, analyzer="spanish"))
    report = Ingestor.open(client, alias, e5, progress=False, chunking=Chunking(6, 2)).ingest(
        read_source(support_docs_path, FieldMap(metadata=("category", "lang")))
    )
    assert report.documents == 12 and report.chunks == 38 and not report.failures
    yield alias
    drop(client, alias)


@pytest.fixture(scope="module")
def searcher(client, chunked, e5):
    return Searcher.open(client, chunked, e5)


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_every_technique_gives_one_hit_per_document_with_its_next_chunks(searcher, technique):
    result = searcher.search(QUERY, technique=technique, k=5, options=SearchOptions(collapse=Collapse(inner_hits=2)))
    parents = [h.source["parent_id"] for h in result.hits]
    assert len(parents) == 5 and len(set(parents)) == 5
    for hit in result.hits:
        assert all(c.source["parent_id"] == hit.source["parent_id"] and c.id != hit.id for c in hit.chunks)
        assert len(hit.chunks) <= 2 and "embedding" not in hit.source
    assert any(hit.chunks for hit in result.hits)  # the loop above checked some chunks
    plain = searcher.search(QUERY, technique=technique, k=30)
    best = {}
    for h in plain.hits:
        best.setdefault(h.source["parent_id"], h.id)
    assert [h.id for h in result.hits] == list(best.values())[:5]  # each document at its best chunk, in order
    client_side = technique == "client-rrf" or (technique == "hybrid" and not searcher.caps.hybrid_collapse)
    assert any("collapse" in n for n in result.notices) == (technique == "hybrid" and not searcher.caps.hybrid_collapse)
    assert ("collapse" in result.request_body) == (not client_side)


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_highlights_and_facets(searcher, technique):
    result = searcher.search(
        QUERY, technique=technique, k=5, options=SearchOptions(highlight=True, facets=("category",))
    )
    marked = [h for h in result.hits if h.highlight]
    assert marked and all("<em>" in s for h in marked for snippets in h.highlight.values() for s in snippets)
    words = {w.lower() for h in marked for s in h.highlight.get("text", ()) for w in s.split("<em>")[1:]}
    assert any(w.startswith(("devoluc", "pedido")) for w in words)
    facet = result.aggregations["category"]
    assert facet.buckets and facet.buckets[0].key == "devoluciones" and all(b.documents is None for b in facet.buckets)
    assert sum(b.count for b in facet.buckets) + facet.other >= len(result.hits)


def test_client_collapse_gives_the_servers_page_and_facets_count_documents(searcher):
    """Where the server collapses (3.1+), the client's collapse over the same fused list gives the same page."""
    options = SearchOptions(collapse=Collapse(inner_hits=1), facets=("category",))
    here = searcher.search(QUERY, k=4, from_=1, depth=40, options=options)
    client_side = Searcher(
        searcher.cluster,
        searcher.info,
        replace(searcher.caps, hybrid_collapse=False, collapse_inner_hits=False),
        searcher.embedder,
    )
    there = client_side.search(QUERY, k=4, from_=1, depth=40, options=options)
    # The same documents with the same scores, up to the order of equal scores (and which of a
    # document's equally scored chunks stands for it: the server and the client may pick another).
    assert [h.rank for h in here.hits] == [h.rank for h in there.hits] == [2, 3, 4, 5]
    # Scores to 1e-5: the server's float32 sums differ in their last bits between the two requests at times
    # (0.8596932 against 0.8596915 in one CI run of ~10; the same order).
    assert same_ranking_up_to_ties(
        [(h.source["parent_id"], h.score) for h in here.hits],
        [(h.source["parent_id"], h.score) for h in there.hits],
        rel_tol=1e-5,
    )
    assert [h.score for h in here.hits] == pytest.approx([h.score for h in there.hits], rel=1e-5)
    assert [len(h.chunks) for h in here.hits] == [len(h.chunks) for h in there.hits]
    buckets = {b.key: (b.count, b.documents) for b in here.aggregations["category"].buckets}
    assert buckets["devoluciones"][1] == 4 and buckets["devoluciones"][0] > 4  # chunks and documents


def test_min_score_keeps_the_fused_scores_above_it_on_every_version(searcher):
    everything = searcher.search(QUERY, k=30)
    floor = everything.hits[4].score
    result = searcher.search(QUERY, k=30, options=SearchOptions(min_score=floor))
    assert [h.id for h in result.hits] == [h.id for h in everything.hits if h.score >= floor]
    assert ("min_score" in result.request_body) == searcher.caps.fused_min_score
    assert any("min_score" in n for n in result.notices) == (not searcher.caps.fused_min_score)


def test_hybrid_filter_gives_what_filters_in_each_leg_give(searcher):
    filters = {"category": "pagos"}
    pushed = searcher.search(QUERY, k=10, filters=filters)
    per_leg = Searcher(
        searcher.cluster, searcher.info, replace(searcher.caps, hybrid_filter=False), searcher.embedder
    ).search(QUERY, k=10, filters=filters)
    assert ("filter" in pushed.request_body["query"]["hybrid"]) == searcher.caps.hybrid_filter
    assert pushed.ids == per_leg.ids and [h.score for h in pushed.hits] == pytest.approx(
        [h.score for h in per_leg.hits]
    )
    assert {h.source["metadata"]["category"] for h in pushed.hits} == {"pagos"}


@pytest.mark.parametrize("technique", TECHNIQUES)
def test_field_sort(searcher, technique):
    result = searcher.search(
        QUERY, technique=technique, k=8, options=SearchOptions(sort=(SortKey("chunk_index", "desc"),))
    )
    values = [h.source["chunk_index"] for h in result.hits]
    assert values == sorted(values, reverse=True) and values[0] >= 3


def test_server_mmr_where_the_cluster_runs_it(client, searcher):
    """Dense + MMR: on 3.3+ with the factories on, the server's ext.mmr (its formula: knn_mmr); the
    client's MMR elsewhere. Both diversify: fewer chunks of one document in the top 5."""
    from adapter.engines.opensearch import OpenSearchEngine
    from adapter.engines.opensearch.capabilities import MMR_FACTORIES
    from tests.support.mmr import mmr_factories

    plain = searcher.search(QUERY, technique="dense", k=5)
    if not searcher.caps.server_mmr:
        result = searcher.search(
            QUERY, technique="dense", k=5, mmr_lambda=0.3, options=SearchOptions(mmr=MMRPlace.SERVER)
        )
        assert "ext" not in result.request_body and "3.3+" in result.notices[0]
        return
    with mmr_factories(client, list(MMR_FACTORIES)):
        on = Searcher(client, searcher.info, OpenSearchEngine().probe(client, refresh=True), searcher.embedder)
        server = on.search(
            QUERY, technique="dense", k=5, mmr_lambda=0.3, mmr_candidates=20, options=SearchOptions(mmr=MMRPlace.SERVER)
        )
        local = on.search(
            QUERY, technique="dense", k=5, mmr_lambda=0.3, mmr_candidates=20, options=SearchOptions(mmr=MMRPlace.CLIENT)
        )
        assert server.request_body["ext"]["mmr"]["diversity"] == pytest.approx(0.7) and not server.notices
        assert "ext" not in local.request_body and len(server.hits) == len(local.hits) == 5
        for result in (server, local):
            assert result.ids != plain.ids
            assert len({h.source["parent_id"] for h in result.hits}) >= len({h.source["parent_id"] for h in plain.hits})


def test_stale_chunks_go_by_the_clusters_means(client, index_name):
    """A document re-ingested shorter loses its extra chunks: by _delete_by_query where the
    reindex module is (3.6), by search_after + bulk deletes elsewhere (2.19's zip)."""
    embedder = HashingEmbedder(8)
    init_index(client, index_name, IndexSpec(embedder.fingerprint))
    long = " ".join(f"w{i}" for i in range(40))
    Ingestor.open(client, index_name, embedder, progress=False, chunking=Chunking(10, 2)).ingest(
        [SourceDoc("d", long), SourceDoc("e", long)]
    )
    assert client.count(index=index_name)["count"] == 10
    recording = RecordingClient(client)
    ingestor = Ingestor.open(recording, index_name, embedder, progress=False, chunking=Chunking(10, 2))
    report = ingestor.ingest([SourceDoc("d", "one two three")])
    assert not report.failures and client.count(index=index_name)["count"] == 6
    hits = client.search(index=index_name, body={"query": {"term": {"parent_id": "d"}}})["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["d#0"]
    endpoints = {e["path"].rsplit("/", 1)[-1] for e in recording.exchanges}  # "/docs-v1/_search" -> "_search"
    assert ("_delete_by_query" in endpoints) == ingestor.caps.delete_by_query
    assert ("_search" in endpoints) == (not ingestor.caps.delete_by_query)


def polish_docs() -> list[SourceDoc]:
    lines = [line.strip() for line in SEED_PL.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [SourceDoc(f"l{n}", line) for n, line in enumerate(lines, 1)]


@pytest.mark.parametrize("analyzer", ["polish", "folding"])
def test_polish_inflections_and_diacritics(client, index_name, analyzer):
    """The Polish seed article, one document per line. ``wektorach`` (locative) appears nowhere in
    it: the Polish analyzer finds the lines with ``wektory``/``wektorów``/``wektorami``; typed
    without diacritics, ``roznorodnosc`` finds line 73, which has only ``różnorodności``."""
    embedder = HashingEmbedder(8)
    if analyzer == "polish":
        from adapter.engines.opensearch import OpenSearchEngine

        caps = OpenSearchEngine().probe(client)
        if not (caps.stempel or "pl_PL" in caps.hunspell):
            with pytest.raises(ConfigurationError, match="analysis-stempel.*pl_PL"):
                init_index(client, index_name, IndexSpec(embedder.fingerprint, analyzer="polish"))
            return
    init_index(client, index_name, IndexSpec(embedder.fingerprint, analyzer=analyzer))
    docs = polish_docs()
    assert not Ingestor.open(client, index_name, embedder, progress=False).ingest(docs).failures
    searcher = Searcher.open(client, index_name, embedder)
    vectors = {d.id for d in docs if "wektor" in d.text.lower()}
    inflected = set(searcher.search("wektorach", technique="bm25", k=20).ids)
    folded = set(searcher.search("roznorodnosc", technique="bm25", k=20).ids)
    assert "wektorach" not in SEED_PL.read_text(encoding="utf-8")
    if analyzer == "polish":
        assert {"l8", "l9", "l30"} <= inflected <= vectors  # wektorami, wektory, wektorów
        assert {"l73", "l78"} <= folded  # różnorodności (stem, then folded) and różnorodność
    else:  # folding alone: no stems, so neither the inflection nor the other case form matches
        assert not inflected and folded == {"l78"}


def test_init_switches_server_mmr_on_where_the_cluster_has_it(client, index_name):
    from adapter.engines.opensearch import OpenSearchEngine
    from tests.support.mmr import mmr_factories

    engine = OpenSearchEngine()
    spec = IndexSpec(HashingEmbedder(8).fingerprint)
    if not engine.probe(client).server_mmr:
        with pytest.raises(ConfigurationError, match="3.3"):
            init_index(client, index_name, spec, server_mmr=True, engine=engine)
        return
    with mmr_factories(client, None):
        assert not engine.probe(client, refresh=True).server_mmr_enabled
        report = init_index(client, index_name, spec, server_mmr=True, engine=engine)
        change = next(c for c in report.changes if c.kind == "cluster_setting")
        assert change.action == "updated" and "mmr_rerank_factory" in change.diff
        assert engine.probe(client).server_mmr_enabled  # the probe was refreshed
        again = init_index(client, index_name, spec, server_mmr=True, engine=engine)
        assert next(c for c in again.changes if c.kind == "cluster_setting").action == "unchanged"
