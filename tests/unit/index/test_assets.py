import json

import pytest

from adapter.index.assets import IndexNames, IndexSpec, list_assets, load_asset, validate_index_name
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import AssetError, ConfigurationError, InputError
from adapter.fusion import RRF, ScoreNormalization
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.engines.opensearch.capabilities import opensearch_capabilities

render_components = OPENSEARCH.render_components
render_index_template = OPENSEARCH.render_index_template
render_index_mapping = OPENSEARCH.render_mapping
fusion_from_pipeline = OPENSEARCH.pipeline_fusion
CAPS = opensearch_capabilities("2.19.1")
CAPS_3 = opensearch_capabilities("3.6.0")


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
    spec = IndexSpec(
        fp(768), analyzer="spanish", m=24, ef_construction=256, vector_field="vec", text_fields=("title", "body")
    )
    comps = render_components(names, spec)
    assert set(comps) == {"docs-text", "docs-vector", "docs-metadata"}
    props = comps["docs-text"]["template"]["mappings"]["properties"]
    assert props == {"title": {"type": "text", "analyzer": "spanish"}, "body": {"type": "text", "analyzer": "spanish"}}
    assert comps["docs-text"]["template"]["settings"]["analysis"]["analyzer"]["folding"]["filter"] == [
        "lowercase",
        "asciifolding",
    ]
    vec = comps["docs-vector"]["template"]["mappings"]["properties"]["vec"]
    assert vec == {
        "type": "knn_vector",
        "dimension": 768,
        "method": {
            "name": "hnsw",
            "engine": "lucene",
            "space_type": "cosinesimil",
            "parameters": {"m": 24, "ef_construction": 256},
        },
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
    assert set(mapping["properties"]) == {
        "title",
        "text",
        "embedding",
        "parent_id",
        "chunk_index",
        "metadata",
        "embedded_by",
    }
    assert mapping["dynamic"] == "strict"


def test_dot_product_needs_normalised_vectors():
    IndexSpec(fp(normalized=True), space_type="innerproduct")
    IndexSpec(fp(normalized=False), space_type="cosinesimil")
    with pytest.raises(ConfigurationError, match="L2-normalised"):
        IndexSpec(fp(normalized=False), space_type="innerproduct")
    with pytest.raises(ConfigurationError, match="L2-normalised"):
        IndexSpec(fp(normalized=False), space_type="l2")
    with pytest.raises(ConfigurationError):
        IndexSpec(fp(), knn_method="annoy")


def test_normalization_pipeline_renders_parameters():
    body = OPENSEARCH.render_pipeline(ScoreNormalization("l2", "geometric_mean", (0.3, 0.7)), CAPS)
    proc = body["phase_results_processors"][0]["normalization-processor"]
    assert proc == {
        "normalization": {"technique": "l2"},
        "combination": {"technique": "geometric_mean", "parameters": {"weights": [0.3, 0.7]}},
    }
    assert body["response_processors"] == [{"hybrid_score_explanation": {}}]
    # Before 2.19 the cluster has no explanation processor: the pipeline must not name it.
    assert "response_processors" not in OPENSEARCH.render_pipeline(
        ScoreNormalization(), opensearch_capabilities("2.18.0")
    )
    default = OPENSEARCH.render_pipeline(ScoreNormalization(), CAPS)["phase_results_processors"][0][
        "normalization-processor"
    ]
    assert default["combination"]["parameters"]["weights"] == [0.5, 0.5]


def test_rrf_rank_constant_sits_where_the_version_reads_it():
    # 2.19 and 3.0 read parameters.rank_constant (and ignore combination.rank_constant); 3.1 moved it.
    old = OPENSEARCH.render_pipeline(RRF(20), CAPS)["phase_results_processors"][0]["score-ranker-processor"]
    assert old == {"combination": {"technique": "rrf", "parameters": {"rank_constant": 20}}}
    new = OPENSEARCH.render_pipeline(RRF(20, (0.7, 0.3)), CAPS_3)["phase_results_processors"][0][
        "score-ranker-processor"
    ]
    assert new == {"combination": {"technique": "rrf", "rank_constant": 20, "parameters": {"weights": [0.7, 0.3]}}}
    with pytest.raises(InputError, match="3.1"):
        OPENSEARCH.render_pipeline(RRF(20, (0.7, 0.3)), CAPS)


def test_pipelines_round_trip():
    for caps in (CAPS, CAPS_3):
        for fusion in (RRF(20), ScoreNormalization("l2", "harmonic_mean", (0.2, 0.8))):
            assert fusion_from_pipeline(json.loads(json.dumps(OPENSEARCH.render_pipeline(fusion, caps)))) == fusion
    assert fusion_from_pipeline(json.loads(json.dumps(OPENSEARCH.render_pipeline(RRF(60, (0.7, 0.3)), CAPS_3)))) == RRF(
        60, (0.7, 0.3)
    )
    assert fusion_from_pipeline({"request_processors": []}) is None


@pytest.mark.parametrize("bad", ["Docs", "a b", "x/y", "_x", "-x", "a*", "..", "", "a:b", "x" * 201])
def test_index_names_opensearch_would_reject_are_refused(bad):
    with pytest.raises(InputError, match="not valid"):
        validate_index_name(bad)


def test_index_names_and_versions():
    names = IndexNames("support")
    assert names.index(3) == "support-v3" and IndexNames.version_of("support-v12") == 12
    assert names.pipeline(ScoreNormalization()) == "support-min_max-arithmetic_mean"
    assert names.pipeline(RRF(40)) == "support-rrf-40"
    with pytest.raises(InputError):
        IndexNames.version_of("support")
