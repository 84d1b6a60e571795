"""Every capability the probe claims, checked against the real server (3.6.0 and 2.19.1 targets).

A feature claimed present must work; a feature claimed absent must be refused or ignored by the
server the way docs/OPENSEARCH-FEATURES.md says. These send the server's own request bodies (not
the adapter's), on a six-document index whose scores can be worked out by hand. With
``HYBRID_CLAIMS_OUT=<folder>`` the observations (scores, counts, took) are written to
``<folder>/claims-<target>.json`` for the features document.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path

import pytest
from opensearchpy.exceptions import RequestError, TransportError

from adapter.engines.opensearch.capabilities import MMR_FACTORIES, MMR_SETTING
from adapter.engines.opensearch import OpenSearchEngine
from adapter.search.mmr import knn_mmr
from tests.support.mmr import mmr_factories

DOCS = [  # id, parent, chunk, text, category, vector (unit length, 2-d)
    ("a#0", "a", 0, "red apple pie", "x", (1.0, 0.0)),
    ("a#1", "a", 1, "red apple tart", "x", (0.9, 0.1)),
    ("b#0", "b", 0, "green apple", "y", (0.8, 0.6)),
    ("c#0", "c", 0, "blue berry", "y", (0.0, 1.0)),
    ("c#1", "c", 1, "blue berry apple", "y", (0.6, 0.8)),
    ("d#0", "d", 0, "yellow banana", "z", (0.7, 0.7)),
]
NORM = {
    "phase_results_processors": [
        {
            "normalization-processor": {
                "normalization": {"technique": "min_max"},
                "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.5, 0.5]}},
            }
        }
    ]
}
OBSERVED: dict[str, dict] = {}


@pytest.fixture(scope="module")
def caps(client):
    return OpenSearchEngine().probe(client, refresh=True)


@pytest.fixture(scope="module")
def idx(client, target):
    name = f"t-claims-{uuid.uuid4().hex[:6]}"
    client.indices.create(
        index=name,
        body={
            "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {
                "properties": {
                    "text": {"type": "text"},
                    "parent_id": {"type": "keyword"},
                    "chunk_index": {"type": "integer"},
                    "metadata": {"properties": {"cat": {"type": "keyword"}}},
                    "vec": {
                        "type": "knn_vector",
                        "dimension": 2,
                        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
                    },
                }
            },
        },
    )
    for doc_id, parent, chunk, text, cat, vec in DOCS:
        n = math.hypot(*vec)
        client.index(
            index=name,
            id=doc_id,
            body={
                "text": text,
                "parent_id": parent,
                "chunk_index": chunk,
                "metadata": {"cat": cat},
                "vec": [x / n for x in vec],
            },
        )
    client.indices.refresh(index=name)
    yield name
    client.indices.delete(index=name)
    out = os.environ.get("HYBRID_CLAIMS_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"claims-{target.name}.json").write_text(json.dumps(OBSERVED, indent=2, sort_keys=True) + "\n")


def hybrid(extra=None, hybrid_extra=None, pipeline=NORM, size=10):
    body = {
        "size": size,
        "query": {
            "hybrid": {
                "queries": [
                    {"match": {"text": {"query": "apple", "_name": "bm25"}}},
                    {"knn": {"vec": {"vector": [1.0, 0.0], "k": 6, "_name": "dense"}}},
                ],
                **(hybrid_extra or {}),
            }
        },
    }
    if pipeline is not None:
        body["search_pipeline"] = pipeline
    return {**body, **(extra or {})}


def search(client, idx, body, **params):
    return client.search(index=idx, body=body, params=params)


def ids(resp):
    return [h["_id"] for h in resp["hits"]["hits"]]


def scores(resp):
    return [h["_score"] for h in resp["hits"]["hits"]]


def refused(client, idx, body, **params) -> str:
    with pytest.raises(TransportError) as info:
        search(client, idx, body, **params)
    assert info.value.status_code == 400
    return json.dumps(info.value.info)


def observe(claim, caps, **numbers):
    OBSERVED[claim] = {"claimed": getattr(caps, claim), **numbers}


def test_hybrid_and_normalization(client, idx, caps):
    assert caps.hybrid and caps.normalization
    resp = search(client, idx, hybrid())
    top = scores(resp)
    assert ids(resp)[0] == "b#0" and all(0 <= s <= 1 for s in top)  # min_max + arithmetic_mean: in [0, 1]
    raw = search(client, idx, hybrid(pipeline=None), search_pipeline="_none")
    assert min(scores(raw)) < -1e9  # without a pipeline: the unfused lists with their marker scores
    observe("hybrid", caps, top_ids=ids(resp)[:3], top_scores=top[:3], took_ms=resp["took"])
    observe("normalization", caps, min_score=min(top), max_score=max(top))


def test_rrf_and_its_weights(client, idx, caps):
    assert caps.rrf
    rank_constant = {"parameters": {"rank_constant": 10}} if not caps.rrf_weights else {"rank_constant": 10}
    rrf = {
        "phase_results_processors": [{"score-ranker-processor": {"combination": {"technique": "rrf", **rank_constant}}}]
    }
    resp = search(client, idx, hybrid(pipeline=rrf))
    # a#0: 2nd by bm25, 1st by knn; b#0: 1st by bm25 (the shortest field), 3rd by knn
    assert ids(resp)[:2] == ["a#0", "b#0"] and scores(resp)[:2] == pytest.approx(
        [1 / 12 + 1 / 11, 1 / 11 + 1 / 13], abs=1e-6
    )
    observe("rrf", caps, top_ids=ids(resp)[:2], top_scores=scores(resp)[:2])
    weighted = {
        "phase_results_processors": [
            {
                "score-ranker-processor": {
                    "combination": {"technique": "rrf", "rank_constant": 10, "parameters": {"weights": [0.2, 0.8]}}
                }
            }
        ]
    }
    if caps.rrf_weights:
        resp = search(client, idx, hybrid(pipeline=weighted))
        assert ids(resp)[0] == "a#0"  # knn's first dominates with weight 0.8
        # a#0: 2nd by bm25, 1st by knn
        assert scores(resp)[0] == pytest.approx(0.2 / (10 + 2) + 0.8 / (10 + 1), abs=1e-6)
        observe("rrf_weights", caps, top_id="a#0", top_score=scores(resp)[0])
    else:
        reason = refused(client, idx, hybrid(pipeline=weighted))
        assert "supported parameters are [rank_constant]" in reason
        observe("rrf_weights", caps, refused="400: supported parameters are [rank_constant]")


def test_z_score(client, idx, caps):
    z = {
        "phase_results_processors": [
            {
                "normalization-processor": {
                    "normalization": {"technique": "z_score"},
                    "combination": {"technique": "arithmetic_mean"},
                }
            }
        ]
    }
    if caps.z_score:
        resp = search(client, idx, hybrid(pipeline=z))
        assert len(ids(resp)) == 6
        observe("z_score", caps, top_ids=ids(resp)[:3], top_scores=scores(resp)[:3])
    else:
        assert "provided normalization technique is not supported" in refused(client, idx, hybrid(pipeline=z))
        observe("z_score", caps, refused="400: provided normalization technique is not supported")


def test_explanation(client, idx, caps):
    assert caps.explanation
    pipeline = {**NORM, "response_processors": [{"hybrid_score_explanation": {}}]}
    resp = search(client, idx, hybrid({"explain": True}, pipeline=pipeline))
    top = resp["hits"]["hits"][0]
    assert "combination of" in top["_explanation"]["description"] and set(top["matched_queries"]) == {"bm25", "dense"}
    observe(
        "explanation",
        caps,
        description=top["_explanation"]["description"],
        matched_queries=sorted(top["matched_queries"]),
    )


def test_pagination_depth(client, idx, caps):
    assert caps.pagination_depth
    page = search(client, idx, hybrid({"from": 2, "size": 2}, {"pagination_depth": 5}))
    assert len(ids(page)) == 2
    assert "pagination_depth param is missing" in refused(client, idx, hybrid({"from": 2, "size": 2}))
    assert "increase pagination_depth" in refused(client, idx, hybrid({"from": 20, "size": 2}, {"pagination_depth": 2}))
    observe(
        "pagination_depth",
        caps,
        page_2_ids=ids(page),
        without_depth="400: pagination_depth param is missing",
        past_the_end="400: Reached end of search result, increase pagination_depth",
    )


def test_native_engines_claim_matches_the_node(client, caps, target):
    attrs = [n.get("attributes", {}).get("knn_native") for n in client.nodes.info(metric="plugins")["nodes"].values()]
    assert caps.native_engines == ("false" not in attrs)
    observe("native_engines", caps, knn_native_attribute=attrs)


def test_hybrid_filter(client, idx, caps):
    f = {"term": {"metadata.cat": "y"}}
    if caps.hybrid_filter:
        pushed = search(client, idx, hybrid(hybrid_extra={"filter": f}))
        per_leg = search(
            client,
            idx,
            {
                **hybrid(),
                "query": {
                    "hybrid": {
                        "queries": [
                            {
                                "bool": {
                                    "must": [{"match": {"text": {"query": "apple", "_name": "bm25"}}}],
                                    "filter": [f],
                                }
                            },
                            {"knn": {"vec": {"vector": [1.0, 0.0], "k": 6, "filter": f, "_name": "dense"}}},
                        ]
                    }
                },
            },
        )
        assert ids(pushed) == ids(per_leg) == ["b#0", "c#1", "c#0"] and scores(pushed) == pytest.approx(scores(per_leg))
        observe("hybrid_filter", caps, ids=ids(pushed), scores=scores(pushed), same_as_filter_in_each_leg=True)
    else:
        assert "Field is not supported by [hybrid] query" in refused(client, idx, hybrid(hybrid_extra={"filter": f}))
        observe("hybrid_filter", caps, refused="400: Field is not supported by [hybrid] query")


def test_collapse_and_inner_hits(client, idx, caps):
    resp = search(client, idx, hybrid({"collapse": {"field": "parent_id"}}))
    parents = [h["_id"].split("#")[0] for h in resp["hits"]["hits"]]
    if caps.hybrid_collapse:
        assert parents == ["b", "a", "d", "c"] and ids(resp)[3] == "c#1"  # each parent once, at its best chunk
    else:
        assert len(parents) == 6 and len(set(parents)) == 4  # silently ignored: why the adapter never sends it there
    observe("hybrid_collapse", caps, hits=len(parents), distinct_parents=len(set(parents)), ids=ids(resp))
    body = hybrid({"collapse": {"field": "parent_id", "inner_hits": {"name": "chunks", "size": 2}}})
    if caps.collapse_inner_hits:
        resp = search(client, idx, body)
        inner = {h["_id"]: [i["_id"] for i in h["inner_hits"]["chunks"]["hits"]["hits"]] for h in resp["hits"]["hits"]}
        assert inner["a#0"] == ["a#0", "a#1"] and inner["b#0"] == ["b#0"]
        observe("collapse_inner_hits", caps, inner_hits=inner)
    else:
        reason = refused(client, idx, body)
        observe("collapse_inner_hits", caps, refused=f"400: {json.loads(reason).get('error', {}).get('type')}")


def test_min_score(client, idx, caps):
    fused = dict(zip(ids(search(client, idx, hybrid())), scores(search(client, idx, hybrid()))))
    resp = search(client, idx, hybrid({"min_score": 0.6}))
    if caps.fused_min_score:
        assert ids(resp) == [d for d, s in fused.items() if s >= 0.6] == ["b#0"]
    else:
        # Applied to each leg's raw score before fusion: fused scores far below 0.6 come back.
        assert min(scores(resp)) < 0.6 and len(ids(resp)) > 1
    observe("fused_min_score", caps, min_score=0.6, returned=ids(resp), lowest_returned=min(scores(resp)))


def test_sort_aggregations_highlight(client, idx, caps):
    assert caps.hybrid_sort and caps.hybrid_aggregations and caps.hybrid_highlight
    resp = search(client, idx, hybrid({"sort": [{"chunk_index": "desc"}, {"parent_id": "asc"}]}))
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[1, "a"], [1, "c"], [0, "a"], [0, "b"], [0, "c"], [0, "d"]]
    observe("hybrid_sort", caps, sort_values=[h["sort"] for h in resp["hits"]["hits"]], scores=scores(resp))
    resp = search(client, idx, hybrid({"aggs": {"cat": {"terms": {"field": "metadata.cat"}}}}))
    buckets = {b["key"]: b["doc_count"] for b in resp["aggregations"]["cat"]["buckets"]}
    assert buckets == {"x": 2, "y": 3, "z": 1}  # over the union of both legs' matches (knn k=6: all)
    observe("hybrid_aggregations", caps, buckets=buckets)
    resp = search(client, idx, hybrid({"highlight": {"fields": {"text": {}}}}))
    marked = {h["_id"]: h.get("highlight", {}).get("text") for h in resp["hits"]["hits"]}
    assert marked["b#0"] == ["green <em>apple</em>"] and marked["d#0"] is None  # knn-only hits have no highlight
    observe("hybrid_highlight", caps, highlighted=sum(1 for v in marked.values() if v), of=len(marked))


@pytest.fixture
def mmr_on(client, caps):
    """The MMR factories switched on for the test, the setting put back after."""
    with mmr_factories(client, list(MMR_FACTORIES)):
        yield OpenSearchEngine().probe(client, refresh=True)


def test_server_mmr(client, idx, caps):
    body = {
        "size": 3,
        "query": {"knn": {"vec": {"vector": [1.0, 0.0], "k": 6}}},
        "ext": {"mmr": {"diversity": 0.5, "candidates": 6, "vector_field_path": "vec"}},
    }
    if not caps.server_mmr:
        assert "unknown field [mmr]" in refused(client, idx, body)
        observe("server_mmr", caps, refused="400: unknown field [mmr]")
        return
    if caps.server_mmr_enabled:  # someone switched the factories on (the default is off)
        assert len(ids(search(client, idx, body))) == 3
        return
    assert "We need to enable [mmr_over_sample_factory, mmr_rerank_factory]" in refused(client, idx, body)
    observe(
        "server_mmr_enabled",
        caps,
        refused_while_off="400: We need to enable [mmr_over_sample_factory, mmr_rerank_factory]",
    )


def test_server_mmr_when_switched_on(client, idx, caps, request):
    if not caps.server_mmr:
        with pytest.raises(RequestError):
            client.cluster.put_settings(body={"persistent": {MMR_SETTING: list(MMR_FACTORIES)}})
        observe("server_mmr_enabled", caps, setting="unknown on this version (400)")
        return
    on = request.getfixturevalue("mmr_on")
    assert on.server_mmr_enabled
    query = [0.96, 0.28]  # between a's chunks and b#0: the plain top 3 holds both of a's chunks
    plain = search(client, idx, {"size": 6, "query": {"knn": {"vec": {"vector": query, "k": 6}}}})
    body = {
        "size": 3,
        "query": {"knn": {"vec": {"vector": query, "k": 3}}},
        "ext": {"mmr": {"diversity": 0.7, "candidates": 6, "vector_field_path": "vec"}},
    }
    resp = search(client, idx, body)
    # The server's list is its formula (adapter.search.mmr.knn_mmr) over the same candidates and scores.
    vectors = [h["_source"]["vec"] for h in plain["hits"]["hits"]]
    expected = [ids(plain)[i] for i, _ in knn_mmr(scores(plain), vectors, k=3, diversity=0.7)]
    assert ids(resp) == expected and ids(resp) != ids(plain)[:3]
    assert "vec" in resp["hits"]["hits"][0]["_source"]  # as asked: the whole source
    hybrid_mmr = hybrid({"ext": body["ext"]})
    assert "doesn't support the query type [hybrid]" in refused(client, idx, hybrid_mmr)
    observe(
        "server_mmr",
        caps,
        plain_top3=ids(plain)[:3],
        mmr_top3=ids(resp),
        equals_knn_mmr=True,
        hybrid="400: doesn't support the query type [hybrid]",
        took_ms=resp["took"],
    )


def test_delete_by_query(client, idx, caps):
    body = {"query": {"term": {"parent_id": "nothing-has-this"}}}
    if caps.delete_by_query:
        resp = client.delete_by_query(index=idx, body=body)
        assert resp["deleted"] == 0 and resp["total"] == 0
        observe("delete_by_query", caps, deleted=0, took_ms=resp["took"])
    else:
        with pytest.raises(TransportError) as info:
            client.delete_by_query(index=idx, body=body)
        assert "no handler found for uri" in str(info.value)
        observe("delete_by_query", caps, refused="400: no handler found for uri [/<index>/_delete_by_query]")


def test_in_query_fusion(client, idx, caps):
    body = hybrid(
        hybrid_extra={
            "fusion": {"normalization": {"technique": "min_max"}, "combination": {"technique": "arithmetic_mean"}}
        },
        pipeline=None,
    )
    if caps.in_query_fusion:
        assert len(ids(search(client, idx, body))) == 6
        observe("in_query_fusion", caps, works=True)
    else:
        reason = refused(client, idx, body)
        observe("in_query_fusion", caps, refused=f"400: {json.loads(reason)['error']['root_cause'][0]['reason']}")


def test_analysis_plugins_and_hunspell(client, caps):
    name = f"t-claims-analysis-{uuid.uuid4().hex[:6]}"
    try:
        if caps.stempel:
            client.indices.create(
                index=name, body={"mappings": {"properties": {"t": {"type": "text", "analyzer": "polish"}}}}
            )
        else:
            with pytest.raises(RequestError, match="polish"):
                client.indices.create(
                    index=name, body={"mappings": {"properties": {"t": {"type": "text", "analyzer": "polish"}}}}
                )
        icu = {"settings": {"analysis": {"analyzer": {"f": {"tokenizer": "standard", "filter": ["icu_folding"]}}}}}
        if caps.icu:
            client.indices.create(index=f"{name}-icu", body=icu)
        else:
            with pytest.raises(RequestError) as info:
                client.indices.create(index=f"{name}-icu", body=icu)
            # 3.6: under "suppressed"
            assert "failed to find filter under name [icu_folding]" in json.dumps(info.value.info)
        tokens = {}
        for locale, word in (("pl_PL", "książkami"), ("es_ES", "contraseñas")):
            analyzer = {
                "tokenizer": "standard",
                "filter": ["lowercase", {"type": "hunspell", "locale": locale, "dedup": True}],
            }
            if locale in caps.hunspell:
                tokens[locale] = [t["token"] for t in client.indices.analyze(body={**analyzer, "text": word})["tokens"]]
            else:
                with pytest.raises(TransportError):
                    client.indices.analyze(body={**analyzer, "text": word})
        assert tokens.get("pl_PL", ["książka"]) == ["książka"] and "contraseña" in tokens.get("es_ES", ["contraseña"])
        OBSERVED["analysis"] = {
            "stempel": caps.stempel,
            "icu": caps.icu,
            "hunspell": list(caps.hunspell),
            "stems": tokens,
        }
    finally:
        client.indices.delete(index=f"{name}*", ignore=[404])
