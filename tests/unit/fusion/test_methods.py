"""What every fusion method promises (adapter.fusion), checked for each registered method: a new
method is covered by adding its module, with no edit here."""

from __future__ import annotations

import pytest

from adapter.index.catalog import IndexInfo
from adapter.engines.elasticsearch.fusion import RENDERERS as ELASTICSEARCH_RENDERERS
from adapter.engines.opensearch.fusion import RENDERERS as OPENSEARCH_RENDERERS
from adapter.evaluation.run import standard_techniques
from adapter.fusion import DEFAULT_WEIGHTS, LEGS, methods, parse_fusion
from adapter.fusion import RRF, ScoreSum
from adapter.engines.render import renderer, servers
from adapter.search import Searcher
from tests.support.pages import page_answer
from adapter.testing import FakeClient
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.opensearch.capabilities import opensearch_capabilities

pytestmark = pytest.mark.unit

RUNS = [[("a", 12.0), ("b", 7.5), ("c", 3.0)], [("b", 0.91), ("d", 0.83), ("a", 0.80)]]
EVERY = [fusion for method in methods() for fusion in method.variants(None, (60, 20))]


def test_every_method_is_registered_and_named_back():
    kinds = {method.kind for method in methods()}
    assert {"rrf", "normalization", "sum", "dbsf"} <= kinds
    for fusion in EVERY:
        assert parse_fusion(fusion.name) == fusion, fusion.name


def test_a_shared_base_that_leaves_fuse_open_is_not_a_method():
    # BoostWeighted (the weights-only parameters of DBSF and ScoreSum) is not itself a fusion to parse or vary.
    from adapter.fusion.base import BoostWeighted

    assert BoostWeighted not in methods()
    assert {"sum", "dbsf"} <= {method.kind for method in methods() if issubclass(method, BoostWeighted)}


@pytest.mark.parametrize("fusion", EVERY, ids=lambda f: f.name)
def test_fuse_returns_every_document_once_best_first_without_touching_its_input(fusion):
    runs = [list(run) for run in RUNS]
    fused = fusion.fuse(runs, leg_names=LEGS)
    assert runs == RUNS
    assert sorted(f.id for f in fused) == ["a", "b", "c", "d"]
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    for doc in fused:
        assert [leg.leg for leg in doc.legs] == list(LEGS)
        assert sum(leg.contribution for leg in doc.legs) == pytest.approx(doc.score, rel=1e-5)
        scores = [leg.normalized_score for leg in doc.legs]
        assert fusion.contributions(scores, doc.score) == pytest.approx(
            [leg.contribution for leg in doc.legs], rel=1e-5
        )


@pytest.mark.parametrize(
    "engine, renderers", [("opensearch", OPENSEARCH_RENDERERS), ("elasticsearch", ELASTICSEARCH_RENDERERS)]
)
def test_the_engines_that_run_a_method_are_those_that_registered_a_renderer_for_it(engine, renderers):
    assert renderers.methods == {method for method in methods() if engine in servers(method)}
    for fusion in EVERY:
        assert (renderer(engine, fusion) is not None) == (engine in servers(type(fusion)))
    assert servers(RRF) == ("opensearch", "elasticsearch") and servers(ScoreSum) == ("elasticsearch",)


def test_hybrid_eval_scores_each_client_only_method_in_the_client():
    for caps in (opensearch_capabilities("3.6.0"), elasticsearch_capabilities("9.2.4", modules=())):
        specs = {spec.name: spec for spec in standard_techniques(caps, weights=DEFAULT_WEIGHTS)}
        for method in methods():
            if not servers(method):
                spec = specs[f"client-{method.kind}"]
                assert spec.technique is Technique.CLIENT and type(spec.fusion) is method


@pytest.mark.parametrize("fusion", EVERY, ids=lambda f: f.name)
def test_a_fusion_the_cluster_cannot_run_is_kept_and_fused_in_the_client(fusion):
    """A cluster without neural-search runs no fusion: each falls back to itself, in the client."""
    fp = EmbeddingFingerprint("m", "s", "abc", 2, True)
    legs = {
        "took": 2,
        "responses": [{"took": 1, "hits": {"hits": [{"_id": d, "_score": s} for d, s in run]}} for run in RUNS],
    }
    client = FakeClient({"POST */_msearch": legs, "POST */_search": page_answer({d: {"text": d} for d in "abcd"})})
    searcher = Searcher(client, IndexInfo("docs", "docs-v1", fp), opensearch_capabilities("3.6.0", neural_search=False))
    result = searcher.search("x", fusion=fusion, k=4, query_vector=[1.0, 0.0])
    assert result.technique is Technique.CLIENT and result.fused_by is FusedBy.CLIENT and result.fusion == fusion
    assert f"fell back to client-side {fusion.name}" in result.notices[0]
    assert [(h.id, h.score) for h in result.hits] == [(f.id, f.score) for f in fusion.fuse(RUNS)]
