"""The shell's own logic without a cluster: request bodies in, recorded or scripted answers out.

What the server does with these requests is tested against the real node (tests/integration);
here: which requests the adapter sends, how it reads answers, and how it handles failures.
"""

from __future__ import annotations

import json
import re

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.catalog import IndexInfo
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import CapabilityError, ClusterUnavailableError, InputError, PipelineNotFoundError
from adapter.fusion import RRF, ScoreNormalization
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import SourceDoc
from tests.support.pages import page_answer
from adapter.testing import FakeClient, Reply, bulk_actions, bulk_answer
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from tests.support.embedders import FP, UnitEmbedder
from tests.support.existing_index import existing_index

INFO = IndexInfo("docs", "docs-v1", FP)
CAPS_2 = opensearch_capabilities("2.19.1")
CAPS_3 = opensearch_capabilities("3.6.0")
NAMES = IndexNames("docs")


def pipeline(fusion) -> dict:
    return {fusion_name(fusion): OPENSEARCH.render_pipeline(fusion, CAPS_2)}


def fusion_name(fusion) -> str:
    return f"docs-{fusion.name}"


def hits(*pairs, sources=None) -> dict:
    return {
        "took": 3,
        "hits": {"hits": [{"_id": d, "_score": s, "_source": (sources or {}).get(d, {})} for d, s in pairs]},
    }


def searcher(client, caps=CAPS_2, **options) -> Searcher:
    return Searcher(client, INFO, caps, UnitEmbedder(), **options)


def pipelines(*stored):
    """A perform_request handler that knows the given stored pipelines (others are absent)."""
    bodies = {}
    for fusion in stored:
        bodies.update(pipeline(fusion))

    def answer(call):
        method, url = call.method, call.path
        name = url.rsplit("/", 1)[-1]
        if method == "GET" and name in bodies:
            return {name: bodies[name]}
        return Reply(404, {"error": "not found", "status": 404})

    return answer


def hybrid_calls(client) -> list:
    """The hybrid requests a fake client got (not the empty shard's check, nor a search for excerpts)."""
    return [c for c in client.calls_to("POST */_search") if "hybrid" in (c.body or {}).get("query", {})]


# -- fusion resolution ---------------------------------------------------------------------------
def test_construction_does_no_requests():
    client = FakeClient()
    searcher(client)
    assert client.calls == []


def test_stored_pipeline_is_used_and_looked_up_once():
    client = FakeClient({"* /_search/pipeline/*": pipelines(ScoreNormalization()), "POST */_search": hits(("a", 0.9))})
    s = searcher(client)
    first = s.search("hola")
    s.search("hola otra vez")
    assert first.fused_by is FusedBy.SERVER_PIPELINE and first.pipeline == "docs-min_max-arithmetic_mean"
    assert len(client.calls_to("* /_search/pipeline/*")) == 1
    search = hybrid_calls(client)[0]
    assert search.params == {"search_pipeline": "docs-min_max-arithmetic_mean"}
    assert "search_pipeline" not in search.body
    assert search.body["query"]["hybrid"]["pagination_depth"] == 100


def test_weights_no_stored_pipeline_has_go_inline():
    client = FakeClient({"* /_search/pipeline/*": pipelines(ScoreNormalization()), "POST */_search": hits(("a", 0.9))})
    result = searcher(client).search("hola", fusion=ScoreNormalization(weights=(0.2, 0.8)))
    assert result.fused_by is FusedBy.SERVER_INLINE and result.pipeline is None
    body = hybrid_calls(client)[0].body
    assert body["search_pipeline"]["phase_results_processors"][0]["normalization-processor"]["combination"][
        "parameters"
    ]["weights"] == [0.2, 0.8]
    assert hybrid_calls(client)[0].params == {}


def test_unsupported_fusion_falls_back_with_a_notice_or_refuses():
    client = FakeClient(
        {
            "* /_search/pipeline/*": pipelines(),
            "POST */_msearch": {"took": 4, "responses": [hits(("a", 2.0)), hits(("a", 0.9))]},
            "POST */_search": page_answer({"a": {"text": "uno"}}),
        }
    )
    result = searcher(client).search("hola", fusion=ScoreNormalization("z_score"))
    # The requested fusion is kept, computed in the client (it was client RRF, another fusion, before).
    assert result.technique is Technique.CLIENT and result.fused_by is FusedBy.CLIENT
    assert result.fusion == ScoreNormalization("z_score") and result.fused_by_label == "client:z_score-arithmetic_mean"
    assert "z_score normalisation needs OpenSearch 3.0+" in result.notices[0]
    assert "fell back to client-side z_score-arithmetic_mean" in result.notices[0]
    assert result.hits[0].text == "uno"
    with pytest.raises(CapabilityError, match="fallback to client-side fusion is disabled"):
        searcher(FakeClient({"* /_search/pipeline/*": pipelines()}), allow_fallback=False).search(
            "hola", fusion=RRF(weights=(0.7, 0.3))
        )
    # The same weighted RRF runs on the server from 3.1.
    client = FakeClient({"* /_search/pipeline/*": pipelines(RRF()), "POST */_search": hits(("a", 0.03))})
    result = searcher(client, caps=CAPS_3).search("hola", fusion=RRF(weights=(0.7, 0.3)))
    assert result.fused_by is FusedBy.SERVER_INLINE


def test_missing_pipelines_are_named():
    client = FakeClient({"* /_search/pipeline/*": pipelines()})
    with pytest.raises(PipelineNotFoundError, match="docs-min_max-arithmetic_mean.*hybrid init --index docs"):
        searcher(client).search("hola")
    with pytest.raises(PipelineNotFoundError, match="'tuned' does not exist"):
        searcher(client).search("hola", pipeline="tuned")


def test_a_pipeline_deleted_behind_the_searchers_back_is_a_clear_error():
    error = Reply(
        400,
        {
            "error": {
                "root_cause": [{"type": "illegal_argument_exception", "reason": "Pipeline docs-rrf is not defined"}],
                "type": "illegal_argument_exception",
                "reason": "Pipeline docs-rrf is not defined",
            },
            "status": 400,
        },
    )
    client = FakeClient({"* /_search/pipeline/*": pipelines(RRF()), "POST */_search": error})
    with pytest.raises(PipelineNotFoundError, match="'docs-rrf' does not exist.*hybrid init"):
        searcher(client).search("hola", fusion=RRF())


# -- the leg requests ------------------------------------------------------------------------------
def test_client_rrf_sends_both_legs_in_one_msearch_then_fetches_the_page():
    client = FakeClient(
        {
            "POST */_msearch": {"took": 5, "responses": [hits(("a", 3.0), ("b", 2.0)), hits(("b", 0.9), ("c", 0.8))]},
            "POST */_search": page_answer({"b": {"title": "B", "text": "bee"}, "a": {"title": "A", "text": "ay"}}),
        }
    )
    result = searcher(client, depth=20).search("hola", technique="client-rrf", k=2, filters={"lang": "es"})
    header_1, text_leg, header_2, knn_leg = client.calls_to("POST */_msearch")[0].body
    assert header_1 == header_2 == {"index": "docs"}
    assert text_leg["size"] == knn_leg["size"] == 20 and text_leg["_source"] is False and knn_leg["_source"] is False
    assert text_leg["query"]["bool"]["filter"] == [{"term": {"metadata.lang": "es"}}]
    assert knn_leg["query"]["knn"]["embedding"]["k"] == 20
    assert knn_leg["query"]["knn"]["embedding"]["filter"] == {"bool": {"filter": [{"term": {"metadata.lang": "es"}}]}}
    assert result.ids == ["b", "a"] and result.took_ms == 5 and result.requests == 2
    assert [h.title for h in result.hits] == ["B", "A"]
    # The page's documents: their text fields as bounded excerpts (highlights of at most 10,000 characters), nothing
    # whole.
    page = client.calls_to("POST */_search")[0].body
    assert page["query"] == {"ids": {"values": ["b", "a"]}} and page["_source"] == {
        "excludes": ["embedding", "title", "text"]
    }
    assert (
        set(page["highlight"]["fields"]) == {"title", "text"}
        and page["highlight"]["fields"]["text"]["fragment_size"] == 10_001
    )


def test_an_errored_leg_is_a_backend_error_with_the_servers_reason():
    from adapter.errors import BackendError

    client = FakeClient(
        {
            "POST */_msearch": {
                "responses": [
                    hits(("a", 1.0)),
                    {
                        "status": 400,
                        "error": {
                            "root_cause": [
                                {
                                    "type": "query_shard_exception",
                                    "reason": "failed to create query: field [embedding] is not knn_vector",
                                }
                            ],
                            "type": "search_phase_execution_exception",
                            "reason": "all shards failed",
                        },
                    },
                ]
            }
        }
    )
    with pytest.raises(BackendError, match="answered 400: failed to create query") as info:
        searcher(client).search("hola", technique="client-rrf")
    assert info.value.status == 400


def test_bm25_and_dense_bodies():
    client = FakeClient({"POST */_search": hits(("a", 1.0), sources={"a": {"title": "T", "text": "x"}})})
    s = searcher(client)
    s.search("hola", technique="bm25", k=3, from_=3)
    s.search("hola", technique="dense", k=3)
    bm25, dense = (c.body for c in client.calls_to("POST */_search"))
    text_query = {
        "multi_match": {"query": "hola", "fields": ["title", "text"], "type": "most_fields", "operator": "or"}
    }
    # Each text's start, one character past the bound (issue 32: the client cuts it, with "…").
    excerpt = {
        "type": "unified",
        "fragment_size": 10_001,
        "number_of_fragments": 1,
        "no_match_size": 10_001,
        "pre_tags": [""],
        "post_tags": [""],
        "highlight_query": {"match_none": {}},
    }
    assert bm25 == {
        "size": 3,
        "from": 3,
        "query": text_query,
        "_source": {"excludes": ["embedding", "title", "text"]},
        "highlight": {"fields": {"title": excerpt, "text": excerpt}, "max_analyzer_offset": 100_000},
    }
    assert (
        dense["query"]["knn"]["embedding"]["vector"] == [1.0, 0.0, 0.0, 0.0]
        and dense["query"]["knn"]["embedding"]["k"] == 100
    )


def test_explanations_match_legs_by_raw_score_not_position():
    """A hit only the dense leg found has one explanation detail; it must land on the dense leg."""
    explanation = {
        "value": 0.45,
        "description": "arithmetic_mean combination of:",
        "details": [
            {
                "value": 0.9,
                "description": "min_max normalization of:",
                "details": [{"value": 0.81, "description": "within top 100"}],
            }
        ],
    }
    client = FakeClient(
        {
            "* /_search/pipeline/*": pipelines(ScoreNormalization()),
            "POST */_search": {
                "took": 2,
                "hits": {"hits": [{"_id": "c", "_score": 0.45, "_source": {}, "_explanation": explanation}]},
            },
            "POST */_msearch": {"took": 1, "responses": [hits(("a", 7.0)), hits(("c", 0.81))]},
        }
    )
    hit = searcher(client).search("hola", explain=True).hits[0]
    bm25, dense = hit.legs
    assert bm25.rank is None and bm25.normalized_score is None and bm25.contribution == 0.0
    assert dense.rank == 1 and dense.raw_score == 0.81 and dense.normalized_score == 0.9
    assert dense.contribution == pytest.approx(0.45)


def test_explain_computes_the_legs_here_when_they_reproduce_the_servers_scores():
    """The server's explain costs more than the search (docs/BENCHMARKS.md): the legs and the fusion
    mirror explain instead, when they give every returned hit the server's fused score."""
    client = FakeClient(
        {
            "* /_search/pipeline/*": pipelines(ScoreNormalization()),
            # min_max over a [4, 2] and c [0.9, 0.5]: a = 0.5 * 1 + 0.5 * 0 = 0.5, c = 0.5 * 1 = 0.5
            "POST */_search": hits(("a", 0.5), ("c", 0.5)),
            "POST */_msearch": {"took": 1, "responses": [hits(("a", 4.0), ("b", 2.0)), hits(("c", 0.9), ("b", 0.5))]},
        }
    )
    result = searcher(client).search("hola", explain=True)
    # the hybrid beside the empty shard with its excerpts (the shard taken as there: no check first), the legs
    assert [c.path.rsplit("/", 1)[-1] for c in client.calls if c.path.endswith(("/_search", "/_msearch"))] == [
        "_search",
        "_msearch",
    ]
    assert (
        "explain" not in hybrid_calls(client)[0].body
        and "highlight" in hybrid_calls(client)[0].body
        and result.requests == 2
    )
    bm25, dense = result.hits[0].legs
    assert (bm25.rank, bm25.raw_score, bm25.normalized_score, bm25.contribution) == (1, 4.0, 1.0, 0.5)
    assert dense.rank is None and dense.contribution == 0.0


def test_explain_asks_the_server_when_the_mirror_disagrees():
    """Several shards (each gives its own candidates) make the legs differ from the server's: the
    server's explanation is used then, never a computed one that does not add up to the score."""
    explanation = {
        "value": 0.4,
        "description": "arithmetic_mean combination of:",
        "details": [
            {
                "value": 0.8,
                "description": "min_max normalization of:",
                "details": [{"value": 4.0, "description": "weight(...)"}],
            }
        ],
    }
    searches = [
        hits(("a", 0.4)),  # the hybrid (with its page's excerpts)
        {"took": 9, "hits": {"hits": [{"_id": "a", "_score": 0.4, "_source": {}, "_explanation": explanation}]}},
    ]
    client = FakeClient(
        {
            "* /_search/pipeline/*": pipelines(ScoreNormalization()),
            "POST */_search": searches,
            "POST */_msearch": {"took": 1, "responses": [hits(("a", 4.0), ("b", 2.0)), hits(("c", 0.9))]},
        }
    )
    result = searcher(client).search("hola", explain=True)
    sent = hybrid_calls(client)
    assert len(sent) == 2 and "explain" not in sent[0].body and sent[1].body["explain"] is True
    assert result.requests == 3 and result.took_ms == 3 + 1 + 9  # each hybrid carries its page's excerpts
    bm25, _ = result.hits[0].legs
    assert bm25.normalized_score == 0.8 and bm25.contribution == pytest.approx(0.4)


# -- init ------------------------------------------------------------------------------------------
def _init_client(stored_weights, live_default="docs-min_max-arithmetic_mean"):
    spec = IndexSpec(FP, default_fusion="min_max-arithmetic_mean")  # an index of a fixed fusion
    names_stored = {}
    for fusion in CAPS_2.fusions(stored_weights):
        names_stored[f"docs-{fusion.name}"] = OPENSEARCH.render_pipeline(fusion, CAPS_2)
    live_mapping = OPENSEARCH.render_mapping(NAMES, spec)

    def perform(call):
        name = call.path.rsplit("/", 1)[-1]
        if call.method == "GET":
            return (
                {name: names_stored[name]} if name in names_stored else Reply(404, {"error": "missing", "status": 404})
            )
        return {"acknowledged": True}

    return FakeClient(
        {
            "GET /": {"cluster_uuid": "unit-init", "version": {"number": "2.19.1", "distribution": "opensearch"}},
            "GET /_nodes*": {
                "nodes": {
                    "n": {
                        "version": "2.19.1",
                        "plugins": [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}],
                    }
                }
            },
            **existing_index(spec, mapping=live_mapping, default_pipeline=live_default, pipelines=perform),
            "PUT */_settings": {"acknowledged": True},
        }
    )


def test_init_updates_only_changed_pipelines_with_a_diff():
    client = _init_client((0.5, 0.5))
    report = init_index(
        client, "docs", IndexSpec(FP, default_fusion="min_max-arithmetic_mean"), weights=(0.3, 0.7), engine=OPENSEARCH
    )
    updated = {c.name: c for c in report.changes if c.action == "updated"}
    assert set(updated) == {
        f"docs-{n}-{c}" for n in ("min_max", "l2") for c in ("arithmetic_mean", "geometric_mean", "harmonic_mean")
    }
    diff = updated["docs-l2-harmonic_mean"].diff
    assert re.search(r"^-\s+0\.5,?$", diff, re.M) and re.search(r"^\+\s+0\.3,$", diff, re.M)
    puts = [c for c in client.calls_to("* /_search/pipeline/*") if c.method == "PUT"]
    assert sorted(c.path.rsplit("/", 1)[-1] for c in puts) == sorted(updated)
    # no index created
    assert not client.calls_to("PUT /_component_template/*") and not [
        c for c in client.calls if c.method == "PUT" and c.path.count("/") == 1
    ]


def test_init_sets_the_index_default_pipeline_where_it_differs():
    client = _init_client((0.5, 0.5), live_default="docs-rrf")
    report = init_index(client, "docs", IndexSpec(FP, default_fusion="min_max-arithmetic_mean"), engine=OPENSEARCH)
    assert report.default_pipeline == "docs-min_max-arithmetic_mean"
    (change,) = [c for c in report.changes if c.action == "updated"]
    assert change.kind == "settings" and '"docs-rrf"' in change.diff
    (put,) = client.calls_to("PUT */_settings")
    assert put.body == {"index.search.default_pipeline": "docs-min_max-arithmetic_mean"}
    template = OPENSEARCH.render_index_template(NAMES, IndexSpec(FP, default_fusion="rrf"))
    assert template["template"]["settings"]["index.search.default_pipeline"] == "docs-rrf"


def test_init_dry_run_sends_nothing():
    client = _init_client((0.5, 0.5))
    report = init_index(
        client,
        "docs",
        IndexSpec(FP, default_fusion="min_max-arithmetic_mean"),
        weights=(0.3, 0.7),
        dry_run=True,
        engine=OPENSEARCH,
    )
    assert {c.action for c in report.changes} == {"unchanged", "would update"}
    assert not [c for c in client.calls_to("* /_search/pipeline/*") if c.method == "PUT"]


# -- ingest ----------------------------------------------------------------------------------------
def docs(n):
    return [SourceDoc(f"d{i}", f"texto {i}", f"T{i}", {"lang": "es"}) for i in range(n)]


def test_items_that_got_a_5xx_are_sent_once_more(monkeypatch):
    seen = []

    def bulk(call):
        ids = [a[next(iter(a))]["_id"] for a, _ in bulk_actions(call)]
        seen.append(ids)
        first = len(seen) == 1
        return bulk_answer(call, lambda op, doc_id: 503 if first and doc_id == "d1" else 201)

    client = FakeClient({"POST */_bulk": bulk, "POST */_refresh": {}})
    ingestor = Ingestor(client, INFO, UnitEmbedder(), progress=False)
    no_pause(monkeypatch)
    report = ingestor.ingest(docs(3))
    assert report.failures == () and report.documents == 3 and report.chunks == 3
    assert seen == [["d0", "d1", "d2"], ["d1"]]
    _, source = bulk_actions(client.calls_to("POST */_bulk")[0])[0]
    assert source == {
        "title": "T0",
        "text": "texto 0",
        "parent_id": "d0",
        "chunk_index": 0,
        "metadata": {"lang": "es"},
        "embedding": [1.0, 0.0, 0.0, 0.0],
    }


def no_pause(monkeypatch):
    """The retry's pause, skipped for this test only (a MonkeyPatch never undone left time.sleep a no-op for every
    later test: hybrid serve's timing tests failed after this one)."""
    import adapter.ingest.ingestor as ingest_module

    monkeypatch.setattr(ingest_module.time, "sleep", lambda s: None)


def test_a_lost_cluster_in_the_indexing_thread_is_a_clear_error(tmp_path):
    from opensearchpy.exceptions import ConnectionError as OSConnectionError

    # The bulk helper turns a request that got no answer into items with status "N/A".
    client = FakeClient(
        {"POST */_bulk": OSConnectionError("N/A", "connection refused", Exception("refused")), "POST */_refresh": {}}
    )
    failures = tmp_path / "f.jsonl"
    with pytest.raises(
        ClusterUnavailableError, match=r"lost the connection to http://fake-cluster:9200.*2 rows.*f\.jsonl.*again"
    ):
        Ingestor(client, INFO, UnitEmbedder(), progress=False, max_retries=0, failures_path=failures).ingest(docs(2))
    rows = [json.loads(line) for line in failures.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["d0", "d1"] and all(r["status"] is None for r in rows)


def test_custom_text_fields_are_written_by_the_document_contract():
    info = IndexInfo("docs", "docs-v1", FP, text_fields=("name", "summary", "body"), vector_field="vec")
    client = FakeClient({"POST */_bulk": lambda call: bulk_answer(call), "POST */_refresh": {}})
    rows = [SourceDoc("p1", "the body", "The name", {"summary": "short", "lang": "en"})]
    Ingestor(client, info, UnitEmbedder(), progress=False).ingest(rows)
    _, source = bulk_actions(client.calls_to("POST */_bulk")[0])[0]
    assert source == {
        "name": "The name",
        "summary": "short",
        "body": "the body",
        "parent_id": "p1",
        "chunk_index": 0,
        "metadata": {"lang": "en"},
        "vec": [1.0, 0.0, 0.0, 0.0],
    }


def test_stale_chunk_search_pages_past_one_page():
    from adapter.ingest.stale import STALE_PAGE
    from adapter.ingest.sources import Chunking

    stale = [f"a#{i}" for i in range(1, STALE_PAGE + 3)]

    def search(call):
        after = call.body.get("search_after")
        start = 0 if after is None else int(after[1])
        page = stale[start : start + STALE_PAGE]
        return {"hits": {"hits": [{"_id": d, "sort": ["a", start + j + 1]} for j, d in enumerate(page)]}}

    deleted = []

    def bulk(call):
        actions = bulk_actions(call)
        deleted.extend(a["delete"]["_id"] for a, _ in actions if "delete" in a)
        return bulk_answer(call, lambda op, doc_id: 404 if doc_id == "a#5" else 200 if op == "delete" else 201)

    client = FakeClient({"POST */_bulk": bulk, "POST */_refresh": {}, "POST */_search": search})
    # the 2.19.1 zip's modules
    no_reindex = opensearch_capabilities("2.19.1", modules=("analysis-common", "lang-painless"))
    report = Ingestor(client, INFO, UnitEmbedder(), progress=False, chunking=Chunking(10, 2), caps=no_reindex).ingest(
        [SourceDoc("a", "corto")]
    )
    assert len(client.calls_to("POST */_search")) == 2
    assert sorted(deleted) == sorted(stale)
    assert report.failures == ()  # a chunk already gone (404) is not a failure
    assert not client.calls_to("POST */_delete_by_query")


def test_stale_chunks_go_by_delete_by_query_where_the_reindex_module_is(tmp_path):
    from adapter.ingest.sources import Chunking

    answers = [
        {"deleted": 3, "failures": [], "version_conflicts": 0},
        {
            "deleted": 0,
            "version_conflicts": 2,
            "failures": [{"index": "docs-v1", "id": "b#4", "status": 500, "cause": {"type": "x", "reason": "disk"}}],
        },
    ]
    client = FakeClient(
        {"POST */_bulk": lambda call: bulk_answer(call), "POST */_refresh": {}, "POST */_delete_by_query": answers}
    )
    caps = opensearch_capabilities("3.6.0", modules=("reindex", "analysis-common"))
    docs = [SourceDoc(f"d{i}", "corto") for i in range(501)]
    report = Ingestor(
        client,
        INFO,
        UnitEmbedder(),
        progress=False,
        chunking=Chunking(10, 2),
        caps=caps,
        failures_path=tmp_path / "failures.jsonl",
    ).ingest(docs)
    calls = client.calls_to("POST */_delete_by_query")
    assert len(calls) == 2 and not client.calls_to("POST */_search")  # 500 documents per request
    should = calls[0].body["query"]["bool"]["should"]
    assert len(should) == 500 and should[0] == {
        "bool": {"filter": [{"term": {"parent_id": "d0"}}, {"range": {"chunk_index": {"gte": 1}}}]}
    }
    assert calls[0].params == {"conflicts": "proceed"}
    reasons = sorted(f.reason for f in report.failures)
    assert [f.source for f in report.failures] == ["delete-stale", "delete-stale"]
    assert reasons[0].startswith("2 stale chunks were written by someone else") and reasons[1] == "x: disk"


def test_refused_inputs_need_no_cluster():
    with pytest.raises(InputError, match="batch_size"):
        Ingestor(FakeClient(), INFO, UnitEmbedder(), batch_size=0)
    with pytest.raises(InputError, match="depth"):
        Searcher(FakeClient(), INFO, CAPS_2, UnitEmbedder(), depth=0)


def _partial(answer: dict) -> dict:
    """``answer`` as a 200 in which two of three shards failed (a node stopping mid-search)."""
    failure = {
        "shard": 0,
        "index": "docs-v1",
        "reason": {"type": "search_context_missing_exception", "reason": "No search context found"},
    }
    return {
        **answer,
        "_shards": {"total": 3, "successful": 1, "skipped": 0, "failed": 2, "failures": [failure, failure]},
    }


def test_a_partial_answer_is_asked_for_again(monkeypatch):
    """A shard that failed leaves a 200 with fewer hits: the searcher asks once more (the shards'
    other copies answer) and, still partial, says so instead of passing it off as the result."""
    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)
    full = hits(("a", 2.0), ("b", 1.0))
    client = FakeClient({"POST */_search": [_partial(hits(("b", 1.0))), full]})
    result = searcher(client).search("hola", technique="bm25", k=3)
    assert result.ids == ["a", "b"] and not result.notices and len(client.calls_to("POST */_search")) == 2
    assert len(result.sent) == 2  # both requests are listed: the first one was answered partially

    client = FakeClient({"POST */_search": _partial(hits(("b", 1.0)))})
    result = searcher(client).search("hola", technique="bm25", k=3)
    assert result.ids == ["b"] and len(client.calls_to("POST */_search")) == 2
    assert any(
        "partial result: 2 of 3 shards failed" in n and "search_context_missing_exception" in n for n in result.notices
    )


def test_a_partial_leg_of_client_rrf_is_asked_for_again(monkeypatch):
    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)
    legs = {"responses": [hits(("a", 2.0)), hits(("a", 0.9))]}
    broken = {"responses": [_partial(hits()), hits(("a", 0.9))]}
    client = FakeClient({"POST */_msearch": [broken, legs], "POST */_search": page_answer({"a": {"text": "uno"}})})
    result = searcher(client).search("hola", technique="client-rrf", k=3)
    assert result.ids == ["a"] and not result.notices and len(client.calls_to("POST */_msearch")) == 2


def _node_left() -> Reply:
    """What a coordinating node answers while another node is stopping: the request as a whole
    fails, 500, before the cluster state drops the node (tests/reliability/test_two_nodes.py met it)."""
    reason = "[node-2][127.0.0.1:49783] Node not connected"
    return Reply(500, {"error": {"type": "node_not_connected_exception", "reason": reason}, "status": 500})


def test_a_request_refused_because_a_node_left_is_asked_for_again(monkeypatch):
    """The page's documents and the legs: asked once more a moment later, when the other copies answer."""
    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)
    legs = {"responses": [hits(("a", 2.0)), hits(("a", 0.9))]}
    client = FakeClient(
        {"POST */_msearch": legs, "POST */_search": [_node_left(), page_answer({"a": {"text": "uno"}})]}
    )
    result = searcher(client).search("hola", technique="client-rrf", k=3)
    assert result.ids == ["a"] and result.hits[0].text == "uno" and not result.notices
    assert len(client.calls_to("POST */_search")) == 2

    client = FakeClient(
        {"POST */_msearch": [_node_left(), legs], "POST */_search": page_answer({"a": {"text": "uno"}})}
    )
    assert searcher(client).search("hola", technique="client-rrf", k=3).ids == ["a"]
    assert len(client.calls_to("POST */_msearch")) == 2


def test_a_node_that_stays_gone_is_an_error_after_one_more_try(monkeypatch):
    from adapter.errors import BackendError

    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)
    client = FakeClient({"POST */_search": _node_left()})
    with pytest.raises(BackendError, match="Node not connected"):
        searcher(client).search("hola", technique="bm25", k=3)
    assert len(client.calls_to("POST */_search")) == 2


def test_a_partial_answer_for_the_pages_documents_is_asked_for_again(monkeypatch):
    """Without it a hit of the page would come back with no text, and nothing said."""
    monkeypatch.setattr("adapter.search.recovery.PARTIAL_RETRY_PAUSE_S", 0.0)
    legs = {"responses": [hits(("a", 2.0), ("b", 1.0)), hits(("a", 0.9))]}
    full = page_answer({"a": {"text": "uno"}, "b": {"text": "dos"}})
    client = FakeClient(
        {"POST */_msearch": legs, "POST */_search": [_partial(page_answer({"a": {"text": "uno"}})), full]}
    )
    result = searcher(client).search("hola", technique="client-rrf", k=3)
    assert [h.text for h in result.hits] == ["uno", "dos"] and not result.notices
    # the attempt runs again
    assert len(client.calls_to("POST */_search")) == 2 and len(client.calls_to("POST */_msearch")) == 2


def _breaker() -> Reply:
    """A node whose heap is full for the moment refuses the request at its door (the parent circuit
    breaker, real memory: transient); tests/reliability/test_big_documents.py met 284 in 1,895 searches."""
    reason = (
        "[parent] Data too large, data for [<http_request>] would be [1031799928/984mb], which is larger than the "
        "limit of [1020054732/972.7mb], real usage: [1031798784/984mb], new bytes reserved: [1144/1.1kb]"
    )
    return Reply(
        429,
        {"error": {"type": "circuit_breaking_exception", "reason": reason, "durability": "TRANSIENT"}, "status": 429},
    )


def test_a_request_the_memory_breaker_refused_is_asked_again_after_a_pause(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr("adapter.aio.time.sleep", pauses.append)
    legs = {"responses": [hits(("a", 2.0)), hits(("a", 0.9))]}
    client = FakeClient(
        {
            "POST */_msearch": [_breaker(), _breaker(), legs],
            "POST */_search": [_breaker(), page_answer({"a": {"text": "uno"}})],
        }
    )
    result = searcher(client).search("hola", technique="client-rrf", k=3)
    assert result.ids == ["a"] and result.hits[0].text == "uno" and not result.notices
    assert len(pauses) == 3 and pauses[0] < pauses[1]  # backing off: the heap needs time to be collected


def test_a_breaker_that_keeps_refusing_is_an_error_after_bounded_tries(monkeypatch):
    from adapter.errors import BackendError
    from adapter.search.recovery import Overloaded

    pauses: list[float] = []
    monkeypatch.setattr("adapter.aio.time.sleep", pauses.append)
    client = FakeClient({"POST */_search": _breaker()})
    with pytest.raises(BackendError, match="429: \\[parent\\] Data too large"):
        searcher(client).search("hola", technique="bm25", k=3)
    assert len(client.calls_to("POST */_search")) == Overloaded.tries + 1 and len(pauses) == Overloaded.tries
    assert sum(pauses) < 8.0  # bounded (0.25 + 0.5 + 1 + 2 + 4 s): a search does not hang on a node that stays full
