"""Search pages: options, where each part runs, the clauses sent and the client's side of each part."""

from __future__ import annotations

import math

import pytest

from adapter.errors import InputError
from adapter.search.page import (
    Collapse,
    MMRPlace,
    SearchOptions,
    SortKey,
    client_steps,
    collapse_hits,
    facet_aggs,
    facets_body,
    page_clauses,
    plan_page,
    sort_hits,
)
from adapter.engines.opensearch.capabilities import opensearch_capabilities

CAPS_2 = opensearch_capabilities("2.19.1")
CAPS_31 = opensearch_capabilities("3.1.0")
CAPS_3 = opensearch_capabilities("3.6.0")
EVERYTHING = SearchOptions(highlight=True, facets=("category",), collapse=Collapse(inner_hits=2), min_score=0.5)


def test_options_are_validated_where_they_are_made():
    assert SortKey.parse("year") == SortKey("metadata.year", "desc")
    assert SortKey.parse("chunk_index:asc") == SortKey("chunk_index", "asc")
    assert Collapse().field == "parent_id" and Collapse("author").field == "metadata.author"
    with pytest.raises(InputError, match="asc or desc"):
        SortKey.parse("year:up")
    with pytest.raises(InputError, match="inner_hits"):
        Collapse(inner_hits=-1)
    with pytest.raises(InputError, match="finite"):
        SearchOptions(min_score=math.inf)
    with pytest.raises(InputError, match="field sort"):
        SearchOptions(min_score=0.2, sort=(SortKey("year"),))
    with pytest.raises(InputError, match="at most 20 facets"):
        SearchOptions(facets=tuple(f"f{i}" for i in range(21)))
    with pytest.raises(InputError, match="facet_size"):
        SearchOptions(facets=("a",), facet_size=0)
    with pytest.raises(InputError, match="MMR place"):
        SearchOptions(mmr="gpu")
    assert SearchOptions(facets=("a", "a")).facets == ("a",) and SearchOptions(mmr="server").mmr is MMRPlace.SERVER
    assert SearchOptions().plain and SearchOptions(mmr="client").plain and not SearchOptions(highlight=True).plain


def test_a_sort_cannot_follow_rerank_or_mmr():
    with pytest.raises(InputError, match="rerank or MMR"):
        plan_page(SearchOptions(sort=(SortKey("year"),)), CAPS_3, "hybrid", post=True)


def test_hybrid_on_3_6_runs_every_part_on_the_server():
    plan = plan_page(EVERYTHING, CAPS_3, "hybrid")
    assert plan.collapse_on_server and plan.inner_hits_on_server and plan.min_score_on_server and plan.facets_in_query
    assert not (plan.collapse_by_client or plan.min_score_by_client or plan.needs_whole_list) and plan.notices == ()


def test_hybrid_on_2_19_collapses_and_filters_by_score_in_the_client_and_says_so():
    plan = plan_page(EVERYTHING, CAPS_2, "hybrid")
    assert plan.collapse_by_client and plan.min_score_by_client and plan.facets_in_query and plan.highlight
    assert not (plan.collapse_on_server or plan.min_score_on_server)
    assert plan.needs_whole_list and plan.field_values == ("parent_id",)
    assert len(plan.notices) == 2
    assert "3.1+" in plan.notices[0] and "would ignore it" in plan.notices[0]
    assert "3.5" in plan.notices[1] and "raw score" in plan.notices[1]
    body = page_clauses(plan, text_fields=("title", "text"), text_query={"match": {"text": "x"}})
    assert "collapse" not in body and "min_score" not in body  # 2.19 ignores the one and misreads the other
    assert body["docvalue_fields"] == ["parent_id"]


def test_inner_hits_need_3_2_where_collapse_runs_on_the_server():
    plan = plan_page(EVERYTHING, CAPS_31, "hybrid")
    assert plan.collapse_on_server and not plan.inner_hits_on_server and "3.2+" in plan.notices[0]
    assert "inner_hits" not in page_clauses(plan, text_fields=("text",), text_query={})["collapse"]


def test_old_clusters_sort_and_aggregate_apart():
    plan = plan_page(
        SearchOptions(sort=(SortKey("year"),), facets=("lang",)), opensearch_capabilities("2.12.0"), "hybrid"
    )
    assert plan.sort_by_client and plan.facets_apart and not plan.facets_in_query and len(plan.notices) == 2


def test_single_legs_run_everything_on_the_server_and_client_rrf_in_the_client():
    for technique in ("bm25", "dense"):
        plan = plan_page(EVERYTHING, CAPS_2, technique)
        assert plan.collapse_on_server and plan.inner_hits_on_server and plan.min_score_on_server and not plan.notices
    plan = plan_page(EVERYTHING, CAPS_3, "client-rrf")
    assert (
        plan.collapse_by_client
        and plan.min_score_by_client
        and plan.facets_apart
        and plan.highlight
        and not plan.notices
    )


def test_clauses_are_the_server_vocabulary():
    plan = plan_page(
        SearchOptions(
            highlight=True,
            fragments=2,
            facets=("category",),
            collapse=Collapse(inner_hits=2),
            sort=(SortKey("year", "asc"),),
        ),
        CAPS_3,
        "hybrid",
    )
    body = page_clauses(
        plan, text_fields=("title", "text"), text_query={"match": {"text": "pago"}}, exclude_source=("embedding",)
    )
    assert body == {
        "highlight": {
            "fields": {"title": {}, "text": {}},
            "highlight_query": {"match": {"text": "pago"}},
            "require_field_match": False,
            "fragment_size": 150,
            "number_of_fragments": 2,
        },
        "aggs": {
            "category": {
                "terms": {"field": "metadata.category", "size": 10},
                "aggs": {"documents": {"cardinality": {"field": "parent_id"}}},
            }
        },
        "collapse": {
            "field": "parent_id",
            "inner_hits": {"name": "chunks", "size": 3, "_source": {"excludes": ["embedding"]}},
        },
        "sort": [{"metadata.year": {"order": "asc"}}],
    }
    assert facet_aggs(SearchOptions(facets=("lang",))) == {"lang": {"terms": {"field": "metadata.lang", "size": 10}}}
    apart = facets_body(
        [{"match": {"text": "x"}}, {"knn": {"v": {"vector": [1.0], "k": 5}}}], SearchOptions(facets=("lang",))
    )
    assert (
        apart["size"] == 0
        and apart["query"]["bool"]["minimum_should_match"] == 1
        and len(apart["query"]["bool"]["should"]) == 2
    )


def test_client_collapse_keeps_each_groups_best_and_the_next_ones():
    hits = [("a#1", "a"), ("b#0", "b"), ("a#0", "a"), ("a#2", "a"), ("c#0", None), ("d#0", None)]
    groups = collapse_hits(hits, key=lambda h: h[1], inner_hits=1)
    assert [(best[0], [o[0] for o in others]) for best, others in groups] == [
        ("a#1", ["a#0"]),
        ("b#0", []),
        ("c#0", ["d#0"]),
    ]


def test_client_sort_is_stable_and_puts_missing_values_last():
    hits = [("x", {"y": [2000]}), ("y", {}), ("z", {"y": [2010]}), ("w", {"y": [2000]})]
    ordered = sort_hits(
        hits, [SortKey("metadata.y", "desc")], lambda h, f: (h[1].get(f.replace("metadata.", "")) or [None])[0]
    )
    assert [h[0] for h in ordered] == ["z", "x", "w", "y"]


def test_client_steps_run_in_the_servers_order():
    # floor on the fused score, then sort, then collapse (each group's best by that order)
    items = [("a#0", 0.9, "a", 1), ("a#1", 0.8, "a", 3), ("b#0", 0.7, "b", 2), ("c#0", 0.1, "c", 9)]
    plan = plan_page(SearchOptions(min_score=0.5, collapse=Collapse()), CAPS_2, "hybrid")
    got = client_steps(items, plan, score=lambda i: i[1], fields=lambda i: {"parent_id": [i[2]]})
    assert [(h[0], [o[0] for o in others]) for h, others in got] == [("a#0", []), ("b#0", [])]
    plan = plan_page(
        SearchOptions(sort=(SortKey("chunk_index", "desc"),), collapse=Collapse(inner_hits=1)), CAPS_2, "client-rrf"
    )
    got = client_steps(items, plan, score=lambda i: i[1], fields=lambda i: {"parent_id": [i[2]], "chunk_index": [i[3]]})
    assert [(h[0], [o[0] for o in others]) for h, others in got] == [("c#0", []), ("a#1", ["a#0"]), ("b#0", [])]


def test_eval_variants_follow_the_cluster():
    from adapter.evaluation.run import standard_techniques

    on = opensearch_capabilities("3.6.0", cluster_settings={"cluster.search.enabled_system_generated_factories": ["*"]})
    specs = {s.name: s for s in standard_techniques(on, mmr=0.5, collapse=True)}
    assert specs["dense+server-mmr"].mmr_place == "server" and specs["dense+mmr"].mmr_place == "client"
    assert specs["hybrid-rrf+collapse"].collapse and not specs["hybrid-rrf+collapse"].post_processed
    assert "dense+server-mmr" not in {s.name for s in standard_techniques(CAPS_3, mmr=0.5)}  # setting off
    assert "dense+server-mmr" not in {s.name for s in standard_techniques(CAPS_2, mmr=0.5)}


def test_eval_ranks_documents_at_their_best_chunk():
    from adapter.evaluation.run import documents
    from adapter.search.results import Hit

    hits = [
        Hit("d1#2", 0.9, {"parent_id": "d1"}),
        Hit("d2#0", 0.8, {"parent_id": "d2"}),
        Hit("d1#0", 0.7, {"parent_id": "d1"}),
        Hit("d3", 0.6, {}),
    ]
    assert documents(hits) == [("d1", 0.9), ("d2", 0.8), ("d3", 0.6)]


def test_the_table_shows_snippets_more_chunks_and_facets(capsys):
    from adapter.cli.printers import print_result
    from adapter.engines.responses import Bucket, Facet
    from adapter.fusion.base import FusedBy
    from adapter.search.results import Hit, SearchResult, Technique

    hits = (
        Hit(
            "a#1",
            0.9,
            {},
            1,
            title="Devoluciones",
            highlight={"text": ("las <em>devoluciones</em> se aceptan",)},
            chunks=(Hit("a#0", 0.8),),
        ),
        Hit("b#0", 0.5, {}, 2, title="Pagos"),
    )
    facets = {"category": Facet("category", (Bucket("devoluciones", 7, 2), Bucket("pagos", 3, 1)), other=4)}
    print_result(
        SearchResult(
            "q", Technique.HYBRID, hits, FusedBy.SERVER_PIPELINE, took_ms=3.0, total_ms=5.0, aggregations=facets
        ),
        explain=False,
    )
    out = capsys.readouterr().out
    assert "snippet" in out and "las devoluciones se aceptan" in out and "<em>" not in out and "a#0" in out
    assert "facet category: devoluciones 7 (2 docs), pagos 3 (1 docs), other 4" in out
