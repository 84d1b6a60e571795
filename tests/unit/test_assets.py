import json

import pytest

from adapter.assets import (
    IndexNames,
    IndexSpec,
    fusion_from_pipeline,
    list_assets,
    load_asset,
    render_components,
    render_index_mapping,
    render_index_template,
    render_pipeline,
    validate_index_name,
)
from adapter.errors import AssetError, ConfigurationError, InputError
from adapter.types import EmbeddingFingerprint, Fusion


def fp(dimension=384, normalized=True):
    return EmbeddingFingerprint("m", "s", "abc", dimension, normalized)


@pytest.mark.parametrize("kind", ["mappings", "pipelines"])
def test_every_asset_is_valid_json_with_a_description(kind):
    names = list_assets(kind)
    assert names, f"no assets in {kind}"
    for name in names:
        body = load_asset(kind, name)
        assert isinstance(body, dict)
        assert body.get("description") or body.get("_meta", {}).get("description"), f"{kind}/{name} lacks a description"


def test_load_asset_returns_fresh_copies_and_names_missing_ones():
    a = load_asset("pipelines", "rrf")
    a["description"] = "changed"
    assert load_asset("pipelines", "rrf")["description"] != "changed"
    with pytest.raises(AssetError, match="nope"):
        load_asset("pipelines", "nope")


def test_components_render_analyzer_vector_and_metadata():
    names = IndexNames("docs")
    spec = IndexSpec(fp(768), analyzer="spanish", m=24, ef_construction=256, vector_field="vec", text_fields=("title", "body"))
    comps = render_components(names, spec)
    assert set(comps) == {"docs-text", "docs-vector", "docs-metadata"}
    props = comps["docs-text"]["template"]["mappings"]["properties"]
    assert props == {"title": {"type": "text", "analyzer": "spanish"}, "body": {"type": "text", "analyzer": "spanish"}}
    assert comps["docs-text"]["template"]["settings"]["analysis"]["analyzer"]["folding"]["filter"] == ["lowercase", "asciifolding"]
    vec = comps["docs-vector"]["template"]["mappings"]["properties"]["vec"]
    assert vec == {
        "type": "knn_vector",
        "dimension": 768,
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil", "parameters": {"m": 24, "ef_construction": 256}},
    }
    assert comps["docs-vector"]["template"]["settings"] == {"index.knn": True}


def test_index_template_carries_the_fingerprint_and_pattern():
    names = IndexNames("docs")
    body = render_index_template(names, IndexSpec(fp(), shards=2))
    assert body["index_patterns"] == ["docs-v*"]
    assert body["composed_of"] == ["docs-text", "docs-vector", "docs-metadata"]
    assert body["template"]["settings"]["index.number_of_shards"] == 2
    meta = body["template"]["mappings"]["_meta"]
    assert meta["embedding"] == fp().to_meta() and meta["vector_field"] == "embedding"
    mapping = render_index_mapping(names, IndexSpec(fp()))
    assert set(mapping["properties"]) == {"title", "text", "embedding", "parent_id", "chunk_index", "metadata"}
    assert mapping["dynamic"] == "strict"


def test_dot_product_needs_normalised_vectors():
    IndexSpec(fp(normalized=True), space_type="innerproduct")
    IndexSpec(fp(normalized=False), space_type="cosinesimil")
    with pytest.raises(ConfigurationError, match="L2-normalised"):
        IndexSpec(fp(normalized=False), space_type="innerproduct")
    with pytest.raises(ConfigurationError, match="L2-normalised"):
        IndexSpec(fp(normalized=False), space_type="l2")
    with pytest.raises(ConfigurationError):
        IndexSpec(fp(), engine="annoy")


def test_normalization_pipeline_renders_parameters():
    body = render_pipeline(Fusion(normalization="l2", combination="geometric_mean", weights=(0.3, 0.7)), explanation=True)
    proc = body["phase_results_processors"][0]["normalization-processor"]
    assert proc == {"normalization": {"technique": "l2"}, "combination": {"technique": "geometric_mean", "parameters": {"weights": [0.3, 0.7]}}}
    assert body["response_processors"] == [{"hybrid_score_explanation": {}}]
    assert "response_processors" not in render_pipeline(Fusion())
    with pytest.raises(InputError):
        render_pipeline(Fusion(weights=(0.9, 0.9)))


def test_rrf_pipeline_and_round_trip():
    body = render_pipeline(Fusion.rrf(20))
    assert body["phase_results_processors"][0]["score-ranker-processor"] == {"combination": {"technique": "rrf", "rank_constant": 20}}
    for fusion in (Fusion.rrf(20), Fusion(normalization="l2", combination="harmonic_mean", weights=(0.2, 0.8))):
        assert fusion_from_pipeline(json.loads(json.dumps(render_pipeline(fusion)))) == fusion
    assert fusion_from_pipeline({"request_processors": []}) is None


@pytest.mark.parametrize("bad", ["Docs", "a b", "x/y", "_x", "-x", "a*", "..", "", "a:b", "x" * 201])
def test_index_names_opensearch_would_reject_are_refused(bad):
    with pytest.raises(InputError, match="not valid"):
        validate_index_name(bad)


def test_index_names_and_versions():
    names = IndexNames("support")
    assert names.index(3) == "support-v3" and IndexNames.version_of("support-v12") == 12
    assert names.pipeline(Fusion()) == "support-min_max-arithmetic_mean"
    with pytest.raises(InputError):
        IndexNames.version_of("support")
