"""Each stage of a search on its own (adapter.search): request, plan, fuse, post-process, recovery, state.

The end-to-end searcher with scripted answers is tests/unit/search/test_shell.py and its neighbours; here
each unit gets typed inputs and is checked on its output alone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from adapter.fusion.choice.policy import AdaptivePolicy
from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.opensearch import OPENSEARCH
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.index.catalog import IndexInfo
from adapter.engines.port import record
from adapter.errors import (
    BackendError,
    CapabilityError,
    HybridError,
    IndexMismatchError,
    InputError,
    PipelineNotFoundError,
)
from adapter.fusion import RRF, ScoreNormalization, ScoreSum
from adapter.fusion.dbsf import DBSF
from adapter.search.page import SearchOptions
from adapter.engines.responses import RawHit
from adapter.search import fuse, post, recovery
from adapter.search.answers import Legs
from adapter.search.planning import FirstStage, Signals, mmr_place, plan_fusion, plan_search
from adapter.search.request import SearchRequest, Shape
from adapter.search.state import Given, IndexState
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.fusion.base import FusedBy
from adapter.search.results import Hit, Technique

pytestmark = pytest.mark.unit

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 2, True)
INFO = IndexInfo("docs", "docs-v1", FP, default_pipeline="docs-min_max-arithmetic_mean")
OS_3 = opensearch_capabilities("3.6.0")
OS_2 = opensearch_capabilities("2.19.1")
ES_BASIC = elasticsearch_capabilities("9.2.4", modules=())


class StoredPipelines:
    """Lookups with these stored pipelines (name -> fusion) and a fixed match quality."""

    def __init__(self, **stored):
        self.stored = dict(stored)
        self.asked: list[str] = []

    def stored_fusion(self, name):
        self.asked.append(name)
        return self.stored.get(name)

    def match_quality(self, query, filters):
        return 0.5, Signals(3.0, 2)


def state(caps=OS_3, info=INFO, **given):
    return IndexState.of(info, caps, Given(**given))


# -- request ------------------------------------------------------------------------------------------
def test_a_request_is_validated_and_sized():
    r = SearchRequest("  hola  ", "client", k=5, from_=10, rerank_top=20)
    assert r.query == "hola" and r.technique is Technique.CLIENT and r.wanted == 15 and r.post and r.first_stage == 20
    shape = Shape.of(r, default_depth=100, max_window=10_000, has_reranker=True)
    # reordered: the whole first stage, cut after
    assert (shape.depth, shape.page_from, shape.page_size) == (100, 0, 20)
    assert SearchRequest("x", mmr_lambda=0.5, k=4).first_stage == 12  # 3x the page by default
    with pytest.raises(InputError, match="unknown technique 'hybird'"):
        SearchRequest("x", "hybird")
    with pytest.raises(InputError, match="client-rrf fuses by RRF only.*technique client to fuse dbsf"):
        SearchRequest("x", "client-rrf", fusion=DBSF())
    with pytest.raises(InputError, match="client-rrf fuses by RRF only"):
        SearchRequest("x", "client-rrf", policy=AdaptivePolicy())
    with pytest.raises(InputError, match="must cover from \\+ k"):
        SearchRequest("x", k=10, rerank_top=5)
    with pytest.raises(InputError, match="no reranker"):
        Shape.of(SearchRequest("x", rerank_top=10), default_depth=100, max_window=10_000, has_reranker=False)
    with pytest.raises(InputError, match="exceeds the cluster's limit of 50"):
        Shape.of(SearchRequest("x", k=40, from_=20), default_depth=100, max_window=50, has_reranker=False)


# -- plan ---------------------------------------------------------------------------------------------
def test_the_plan_runs_a_stored_pipeline_else_inline_else_the_client():
    lookups = StoredPipelines(**{"docs-rrf": RRF()})
    stored = plan_fusion(state(), lookups, RRF())
    assert stored.fused_by is FusedBy.SERVER_PIPELINE and stored.pipeline == "docs-rrf"
    inline = plan_fusion(state(), lookups, RRF(40))
    assert inline.fused_by is FusedBy.SERVER_INLINE and inline.inline == OPENSEARCH.render_pipeline(RRF(40), OS_3)
    client = plan_fusion(state(OS_2), lookups, ScoreNormalization("z_score"))
    assert client.fused_by is FusedBy.CLIENT and client.fusion == ScoreNormalization("z_score")
    assert client.notice.startswith(
        "z_score normalisation needs OpenSearch 3.0+, the cluster runs 2.19.1: fell back to "
        "client-side z_score-arithmetic_mean"
    )
    with pytest.raises(CapabilityError, match="fallback to client-side fusion is disabled"):
        plan_fusion(state(OS_2), lookups, ScoreNormalization("z_score"), allow_fallback=False)
    with pytest.raises(PipelineNotFoundError):
        plan_fusion(state(), lookups)  # the index's default pipeline is not stored


def test_on_elasticsearch_the_request_fuses_or_the_client_does():
    es = state(ES_BASIC, replace(INFO, default_pipeline=None))
    assert plan_fusion(es, StoredPipelines(), ScoreSum()).fused_by is FusedBy.SERVER_SUM
    linear = plan_fusion(es, StoredPipelines(), ScoreNormalization(), refused="the cluster refused it (licence)")
    assert linear.fused_by is FusedBy.CLIENT and linear.notice.startswith("the cluster refused it (licence): fell back")
    with pytest.raises(CapabilityError, match="no search pipelines"):
        plan_fusion(es, StoredPipelines(), pipeline="docs-rrf")


def test_an_adaptive_plan_chooses_the_weights_and_counts_its_signals():
    policy = AdaptivePolicy(query=1.0)  # per-query signals: one BM25 request and term statistics
    request = SearchRequest("hola", policy=policy)
    shape = Shape.of(request, default_depth=20, max_window=10_000, has_reranker=False)
    plan = plan_search(request, shape, state(), StoredPipelines(), np.zeros(2, dtype=np.float32))
    assert plan.choice is not None and plan.signals == Signals(3.0, 2)
    # The policy's base: the form the measured selection chose, since this 3.x cluster runs z_score.
    assert plan.fusion.fusion == ScoreNormalization(policy.base(True), weights=plan.choice.weights)
    assert plan.stage.depth == 20 and plan.technique is Technique.HYBRID


def test_mmr_runs_on_the_server_only_where_it_can():
    enabled = replace(OS_3, server_mmr=True, server_mmr_enabled=True)
    server = SearchRequest("x", "dense", mmr_lambda=0.9)
    assert mmr_place(state(enabled), Technique.DENSE, server) == (True, None)
    # auto: measured worse
    assert mmr_place(state(enabled), Technique.DENSE, replace(server, mmr_lambda=0.5)) == (False, None)
    place, notice = mmr_place(
        state(OS_2), Technique.DENSE, SearchRequest("x", "dense", mmr_lambda=0.5, options=SearchOptions(mmr="server"))
    )
    assert not place and "needs the k-NN plugin 3.3+" in notice and notice.endswith("MMR ran in the client")


# -- fuse ---------------------------------------------------------------------------------------------
LEGS_ = Legs(((RawHit("a", 3.0), RawHit("b", 1.0)), (RawHit("b", 0.9), RawHit("c", 0.5))), 4.0)


def test_client_fusion_cuts_the_stage_page():
    stage = FirstStage("q", None, None, 10, 1, 2, with_vectors=False)
    groups = fuse.client_fused(LEGS_, RRF(), stage)
    # b: 1/(60+2) + 1/(60+1); a: 1/61 (bm25 rank 1); c: 1/62 (dense rank 2): the page from 1 is a, c.
    assert [(f.id, others) for f, others in groups] == [("a", []), ("c", [])]


def test_the_mirror_explains_only_what_it_reproduces():
    fused = {f.id: f.score for f in ScoreNormalization().fuse(LEGS_.pairs())}
    served = [RawHit(d, s) for d, s in fused.items()]
    explained = fuse.mirrored_legs(served, LEGS_, ScoreNormalization())
    assert explained is not None and [leg.rank for leg in explained["b"]] == [2, 1]
    # not the server's score
    assert fuse.mirrored_legs([RawHit("b", fused["b"] * 1.01)], LEGS_, ScoreNormalization()) is None


# -- post-process -------------------------------------------------------------------------------------
class Backwards:
    def score(self, query, texts):
        return [float(i) for i in range(len(texts))]  # the last one best


def test_post_processing_reorders_keeps_the_first_stage_score_and_strips_vectors():
    hits = [
        Hit(d, s, {"embedding": v}, rank=i + 1)
        for i, (d, s, v) in enumerate([("a", 0.9, [1, 0]), ("b", 0.8, [1, 0]), ("c", 0.1, [0, 1])])
    ]
    reranked = post.rerank(Backwards(), "q", hits)
    assert (
        [h.id for h in reranked] == ["c", "b", "a"]
        and reranked[0].first_stage_score == 0.1
        and reranked[0].rerank_score == 2.0
    )
    diverse = post.diversify(np.array([1.0, 0.0], dtype=np.float32), hits, field="embedding", k=2, lambda_=0.3)
    assert [h.id for h in diverse] == ["a", "c"]  # b repeats a's vector
    assert [h.rank for h in post.page(reranked, 1, 2)] == [2, 3]
    stripped = post.strip(hits, "embedding")
    assert (
        len(stripped) == len(hits)
        and all("embedding" not in h.source for h in stripped)
        and "embedding" in hits[0].source
    )
    with pytest.raises(IndexMismatchError, match="no stored vector"):
        post.diversify(np.zeros(2, dtype=np.float32), [Hit("x", 1.0)], field="embedding", k=1, lambda_=0.5)


# -- recovery and state -------------------------------------------------------------------------------
def test_each_recovery_plans_again_on_a_new_state_and_lists_what_the_result_came_from():
    first = state(elasticsearch_capabilities("9.2.4", modules=("rank-rrf",), license="trial"))
    seen = []

    def once(s, attempt):
        seen.append((s, attempt))
        record("POST", "/docs/_search", None, {"n": len(seen)})
        if len(seen) == 1:
            raise recovery.FusionRefused(RRF(), "unknown retriever [rrf]", REFUSED)
        if len(seen) == 2:
            raise recovery.PartialAnswer("1 of 2 shards failed")
        return "found"

    recovery_pause, recovery.PARTIAL_RETRY_PAUSE_S = recovery.PARTIAL_RETRY_PAUSE_S, 0.0
    try:
        outcome = recovery.run(once, first, follow=lambda s, moved: s)
    finally:
        recovery.PARTIAL_RETRY_PAUSE_S = recovery_pause
    # a new state; the old one is whole
    assert outcome.value == "found" and first.caps.rrf and not outcome.state.caps.rrf
    assert seen[1][1].refused == "unknown retriever [rrf]" and seen[2][1].accept_partial
    assert outcome.attempt.spent_requests == 1  # the refused request cost a round trip
    assert [r.body["n"] for r in outcome.sent] == [2, 3]  # the partial answer and the final one; not the refused one


REFUSED = BackendError(
    "searching docs: OpenSearch answered 400: pagination_depth is not allowed",
    status=400,
    reason="pagination_depth is not allowed",
)


@pytest.mark.parametrize(
    "signal",
    [
        lambda: recovery.PaginationDepthRejected(REFUSED),
        lambda: recovery.FusionRefused(RRF(), "unknown retriever [rrf]", REFUSED),
    ],
    ids=["pagination-depth", "fusion-refused"],
)
def test_a_recovery_met_too_often_raises_the_servers_error_never_the_signal(signal):
    """A control-flow signal never escapes: a kind met more often than it recovers raises the error it
    stands for, one of the adapter's (before: the bare signal, which no ``except HybridError`` caught)."""

    def once(s, attempt):
        raise signal()

    with pytest.raises(HybridError) as raised:
        recovery.run(once, state(), follow=lambda s, moved: s)
    assert raised.value is REFUSED and not isinstance(raised.value, recovery.Recover)


def test_control_flow_signals_are_not_public_errors():
    """``except IndexMismatchError`` / ``except BackendError`` in a caller must not catch a signal
    meant for the search's own recovery (AliasMoved was an IndexMismatchError, NodeLeft a BackendError)."""
    signals = [c for c in vars(recovery).values() if isinstance(c, type) and issubclass(c, recovery.Recover)]
    assert len(signals) >= 7
    assert [c.__name__ for c in signals if issubclass(c, HybridError)] == []


def test_a_moved_alias_makes_a_new_state_and_refuses_a_given_model_of_the_old_index():
    old = state()
    new_info = replace(INFO, index="docs-v2", fingerprint=replace(FP, weights_sha256="def"), query_fields=("text",))
    moved = old.moved_to(new_info)
    assert moved.info.index == "docs-v2" and moved.text_leg.fields == ("text",) and old.info.index == "docs-v1"
    with pytest.raises(IndexMismatchError, match="query vector given belongs to the old index"):
        old.moved_to(new_info, query_vector_given=True)


def test_the_state_follows_the_index_defaults():
    adaptive = state(info=replace(INFO, default_fusion="adaptive"))
    assert (
        isinstance(adaptive.adaptive, AdaptivePolicy)
        and adaptive.default is adaptive.adaptive
        and adaptive.pipeline is None
    )
    assert state().pipeline == "docs-min_max-arithmetic_mean" and state().fusion == ScoreNormalization()
    assert state(fusion=RRF()).pipeline is None  # a fusion given wins over the index's pipeline


# -- the bench-scale run: excerpts inside OpenSearch's hybrid request cost ~5x the page ------------------
def test_the_opensearch_hybrid_request_carries_its_excerpts_only_where_the_server_fetches_the_page_alone():
    """On one shard the hybrid query's fetch phase runs over every candidate of both legs before the
    pipeline trims to the page, so a highlight inside it excerpts up to 2 x depth documents (measured
    on 100k synthetic documents: took 29 -> 77 ms at depth 100); a search for the page's ids, 6 ms.
    Beside the empty shard (or on several shards) the server fuses first and fetches the page alone:
    the excerpts ride in the hybrid request itself, and the knn leg ignores the field the empty shard lacks."""
    from adapter.engines.opensearch import OPENSEARCH
    from adapter.search import bodies

    stage = FirstStage("refund", np.zeros(2, dtype=np.float32), None, 100, 0, 10, with_vectors=False)
    for caps in (OS_3, OS_2):
        s = state(caps)
        plan = plan_fusion(s, StoredPipelines(**{"docs-min_max-arithmetic_mean": ScoreNormalization()}))
        body = bodies.hybrid(OPENSEARCH, s, stage, plan, explain=False)
        assert "highlight" not in body and set(body["_source"]["excludes"]) >= {"title", "text"}
        excerpts = bodies.excerpts(s, stage, request_highlights=bodies.hybrid_highlights(s, plan, empty_shard=False))
        assert (excerpts.in_request, excerpts.after) == ((), ("title", "text"))
        beside = bodies.hybrid(OPENSEARCH, s, stage, plan, explain=False, empty_shard=True)
        assert set(beside["highlight"]["fields"]) == {"title", "text"} and set(beside["_source"]["excludes"]) >= {
            "title",
            "text",
        }
        assert beside["query"]["hybrid"]["queries"][1]["knn"]["embedding"]["ignore_unmapped"] is True
        assert "ignore_unmapped" not in body["query"]["hybrid"]["queries"][1]["knn"]["embedding"]
        sharded = replace(s, info=replace(s.info, shards=3))
        assert bodies.hybrid_highlights(sharded, plan, empty_shard=False)
    # A plain search (a single leg) fetches only its page: its excerpts stay in the request.
    one = bodies.single_leg(OPENSEARCH, state(), stage, {"match": {"text": "refund"}})
    assert set(one["highlight"]["fields"]) == {"title", "text"}
