"""A live index's spec read back (adapter.index.live.spec_of): every option the spec file sets comes back from
what the engine rendered for it, so `hybrid plan --index X --write-spec FILE` writes what the index has."""

from __future__ import annotations

import json

import pytest

from adapter.engines.elasticsearch import ELASTICSEARCH
from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.opensearch import OPENSEARCH
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.index.assets import IndexNames
from adapter.index.live import spec_of
from adapter.index.spec import Spec
from adapter.models.fingerprint import EmbeddingFingerprint
from tests.support.indexes import TUNED_PIPELINE

FP = EmbeddingFingerprint("m", "minilm", "ab" * 32, 8, True)
OS = opensearch_capabilities("3.6.0", plugins=("analysis-stempel", "analysis-icu"), hunspell=("pl_PL",))
ES = elasticsearch_capabilities("9.2.4", license="basic")


def _live_body(engine, spec: Spec, caps) -> tuple[dict, dict]:
    """What GET <index> answers for an index made from ``spec``'s templates, and the pipelines stored for it."""
    names = IndexNames(spec.alias)
    index_spec = spec.index_spec().for_cluster(caps)
    settings: dict = {}
    for body in engine.render_components(names, index_spec, caps).values():
        settings.update(body["template"].get("settings", {}))
    settings.update(engine.render_index_template(names, index_spec, caps)["template"].get("settings", {}))
    stored = engine.placement.stored(
        names,
        caps,
        weights=spec.weights,
        default_fusion=index_spec.default_fusion,
        default_pipeline=index_spec.default_pipeline,
        extra=spec.pipelines,
    )
    return {
        "mappings": engine.render_mapping(names, index_spec, caps),
        "settings": json.loads(json.dumps(settings)),
    }, stored


def docs(**options) -> Spec:
    """Index ``docs`` for model ``minilm`` with ``options``: the spec every case reads back."""
    return Spec("docs", "minilm", FP, **options)


CASES = [
    (OPENSEARCH, OS, docs()),
    (
        OPENSEARCH,
        OS,
        docs(
            analyzer="english",
            title_boost=0.5,
            text_layout="fields",
            m=24,
            ef_construction=100,
            weights=(0.4, 0.6),
            extra_pipelines=(("tuned", json.dumps(TUNED_PIPELINE, sort_keys=True)),),
            default="tuned",
        ),
    ),
    (
        OPENSEARCH,
        OS,
        docs(
            analyzer="polish",
            space_type="innerproduct",
            knn_method="faiss",
            shards=2,
            replicas="0-2",
            default="rrf",
        ),
    ),
    (OPENSEARCH, OS, docs(analyzer="icu_folding", text_layout="combined", default="adaptive")),
    (ELASTICSEARCH, ES, docs(analyzer="spanish", space_type="l2", m=32, default="rrf")),
]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("engine", "caps", "spec"), CASES, ids=["defaults", "tuned-english", "polish-faiss", "icu", "elasticsearch"]
)
def test_every_option_reads_back_as_written(engine, caps, spec):
    body, stored = _live_body(engine, spec, caps)
    assert spec_of(spec.alias, body, caps, engine, stored=stored).to_document() == spec.to_document()


@pytest.mark.unit
def test_pipeline_weights_edited_on_the_cluster_are_what_is_read():
    spec = docs(weights=(0.4, 0.6))
    body, stored = _live_body(OPENSEARCH, spec, OS)
    assert spec_of("docs", body, OS, OPENSEARCH, stored=stored).weights == (0.4, 0.6)
    assert spec_of("docs", body, OS, OPENSEARCH, stored={}).weights == (0.5, 0.5)  # none stored: the default
