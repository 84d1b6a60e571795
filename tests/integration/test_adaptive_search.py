"""Adaptive fusion against a real node: the seed's support documents, the demo's query, calibration
stored with the index, the combined text layout's term statistics, and the policy asset in use."""

from __future__ import annotations

import uuid
from importlib import resources

import pytest

from adapter.fusion.choice.policy import AdaptivePolicy, Calibration, QuerySignals
from adapter.admin.init import init_index
from adapter.index.assets import COMBINED_FIELD, IndexSpec
from adapter.admin.calibrate import calibrate_index
from adapter.index.catalog import read_index_info, read_pipeline
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import FieldMap, read_source
from adapter.fusion.base import FusedBy
from adapter.engines import cluster_for
from tests.conftest import delete_pipelines

RETURNS = {"reembolso", "devoluciones", "devoluciones-copia", "etiqueta-devolucion"}


def sample_queries() -> list[str]:
    return (resources.files("adapter") / "data" / "support_es_queries.txt").read_text(encoding="utf-8").splitlines()


def _drop(client, alias):
    client.indices.delete(index=f"{alias}*", expand_wildcards="all")
    client.indices.delete_index_template(name=alias)
    for part in ("text", "vector", "metadata"):
        client.cluster.delete_component_template(name=f"{alias}-{part}")
    delete_pipelines(client, f"{alias}-")


@pytest.fixture(scope="module", params=["fields", "combined"])
def adaptive_index(request, client, e5, support_docs_path):
    alias = f"t-adaptive-{request.param}-{uuid.uuid4().hex[:6]}"
    init_index(
        client,
        alias,
        IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="adaptive", text_layout=request.param),
    )
    report = Ingestor.open(client, alias, e5, progress=False).ingest(
        read_source(support_docs_path, FieldMap(metadata=("category", "lang")))
    )
    assert report.documents == 12 and not report.failures
    yield alias, request.param
    _drop(client, alias)


def test_uncalibrated_adaptive_index_is_even_and_its_pipeline_fuses_bare_queries(client, adaptive_index, e5):
    adaptive_index, _ = adaptive_index
    info = read_index_info(client, adaptive_index)
    assert info.default_fusion == "adaptive" and info.default_pipeline == f"{adaptive_index}-adaptive"
    body = read_pipeline(cluster_for(client), info.default_pipeline)
    assert body["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"] == [
        0.5,
        0.5,
    ]
    assert Searcher.open(client, adaptive_index, e5).search("hola", k=1).choice.weights == (0.5, 0.5)


def test_calibration_makes_the_demo_query_find_a_returns_document_first(client, adaptive_index, e5):
    adaptive_index, _ = adaptive_index
    report = calibrate_index(client, adaptive_index, sample_queries(), source="support_es_queries.txt")
    assert report.calibration.queries == len(sample_queries()) and report.calibration.match_quality < 1.0
    assert report.weights[0] < 0.5 and report.pipeline == f"{adaptive_index}-adaptive"
    searcher = Searcher.open(client, adaptive_index, e5)  # follows the index: adaptive
    assert searcher.calibration == report.calibration
    result = searcher.search("¿cómo devuelvo un pedido?", k=3, explain=True)
    assert result.hits[0].id in RETURNS
    # The better-leg guard (issue 31): a natural-language query follows the departure in full (bm25 0.05);
    # the pipeline holds the calibration's mix of natural-language and code queries (report.weights), so
    # this query's own weights go inline.
    assert result.choice is not None and result.choice.weights == (0.05, 0.95) and result.choice.per_query
    assert result.choice.weights[0] < report.weights[0] < 0.5
    assert result.fused_by is FusedBy.SERVER_INLINE and result.fusion.weights == result.choice.weights
    # the explanation shows the chosen weights
    assert result.hits[0].legs[1].weight == pytest.approx(result.choice.weights[1])
    code = searcher.search("E-4012", k=3)  # a bare code keeps the baseline
    assert code.hits[0].id == "e-4012" and code.choice is not None and code.choice.weights == (0.5, 0.5)
    # A code among words follows the departure by their share (issue 39, docs/EVALUATION.md "code-heavy corpora").
    mixed = searcher.search("error E-4012", k=3)
    assert (
        mixed.hits[0].id == "e-4012"
        and mixed.choice is not None
        and result.choice.weights[0] < mixed.choice.weights[0] < 0.5
    )
    # A bare hybrid query from any other client gets the calibrated corpus weights from the index's default pipeline.
    vector = [float(x) for x in e5.embed_query("¿cómo devuelvo un pedido?")]
    text = searcher.text_leg.body("¿cómo devuelvo un pedido?")
    bare = client.search(
        index=adaptive_index,
        body={
            "size": 3,
            "_source": False,
            "query": {"hybrid": {"queries": [text, {"knn": {"embedding": {"vector": vector, "k": 10}}}]}},
        },
    )
    assert bare["hits"]["hits"][0]["_id"] in RETURNS


def test_query_match_quality_reads_the_layouts_fields(client, adaptive_index, e5):
    adaptive_index, layout = adaptive_index
    searcher = Searcher.open(client, adaptive_index, e5)
    full, _ = searcher.query_match_quality("Error E-4012")
    partial, _ = searcher.query_match_quality("¿cómo devuelvo un pedido?")
    nothing, _ = searcher.query_match_quality("zzzqqq")
    assert full > 1.0 > partial > 0 and nothing == 0.0
    assert (searcher.info.query_fields == (COMBINED_FIELD,)) == (layout == "combined")


def test_a_learned_policy_file_is_used_and_kept_with_the_index(client, adaptive_index, e5, tmp_path):
    adaptive_index, layout = adaptive_index
    # A policy that leans on BM25 whatever the corpus (no coverage departure), as a learned one may.
    learned = AdaptivePolicy(
        bias=3.0, coverage_start=0.0, coverage_full=0.0, name="learned-test", trained_on={"dataset": "unit"}
    )
    path = tmp_path / "policy.json"
    path.write_text(learned.dumps())
    loaded = AdaptivePolicy.loads(path.read_text())
    result = Searcher.open(client, adaptive_index, e5).search("hola", fusion=loaded, k=3)
    assert result.choice.policy == "learned-test" and result.choice.weights[0] > 0.5
    report = calibrate_index(client, adaptive_index, sample_queries(), policy=loaded)
    assert report.policy == loaded and report.weights[0] > 0.5
    again = Searcher.open(client, adaptive_index, e5)
    assert again.policy == loaded and again.search("hola", k=3).choice.policy == "learned-test"
    # init again (same assets): the calibration and the policy stay; the adaptive pipeline keeps their weights.
    init_index(
        client,
        adaptive_index,
        IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="adaptive", text_layout=layout),
    )
    kept = Searcher.open(client, adaptive_index, e5)
    assert kept.policy == loaded and isinstance(kept.calibration, Calibration)
    weights = read_pipeline(cluster_for(client), f"{adaptive_index}-adaptive")["phase_results_processors"][0][
        "normalization-processor"
    ]
    assert (
        tuple(weights["combination"]["parameters"]["weights"])
        == loaded.fusion(loaded.choose(QuerySignals("natural"), kept.calibration)).weights
    )
