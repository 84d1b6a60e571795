from adapter.engines.opensearch import capabilities_from
from adapter.fusion import RRF, ScoreNormalization
from adapter.engines.opensearch.capabilities import opensearch_capabilities, serverless_capabilities
from tests.support.indexes import SCORE_FUSIONS


def nodes(version, plugins=("opensearch-knn", "opensearch-neural-search"), attrs=None):
    return {"nodes": {"n1": {"version": version, "plugins": [{"name": p} for p in plugins], "attributes": attrs or {}}}}


def test_real_version_comes_from_nodes_not_the_compatibility_banner():
    caps = capabilities_from({"version": {"number": "7.10.2", "distribution": "opensearch"}}, nodes("2.19.1"))
    assert caps.version == "2.19.1"
    assert caps.hybrid and caps.rrf and caps.explanation and caps.pagination_depth
    assert not caps.z_score and not caps.rrf_weights


def test_features_follow_versions():
    old = capabilities_from({}, nodes("2.11.0"))
    assert old.hybrid and not old.rrf and not old.explanation
    new = capabilities_from({}, nodes("3.1.0"))
    assert new.z_score and new.rrf_weights
    assert [f.name for f in new.fusions()].count("z_score-arithmetic_mean") == 1
    assert "z_score-geometric_mean" not in [f.name for f in new.fusions()]


def test_no_neural_search_means_no_hybrid():
    caps = capabilities_from({}, nodes("2.19.1", plugins=("opensearch-knn",)))
    assert not caps.hybrid and caps.fusions() == []
    ok, why = caps.supports(ScoreNormalization())
    assert not ok and "neural-search" in why


def test_supports_explains_what_is_missing():
    caps = capabilities_from({}, nodes("2.19.1"))
    assert caps.supports(RRF()) == (True, "")
    ok, why = caps.supports(RRF(weights=(0.7, 0.3)))
    assert not ok and "3.1" in why
    ok, why = caps.supports(ScoreNormalization("z_score"))
    assert not ok and "3.0" in why


def test_native_engines_flag_and_serverless():
    assert not capabilities_from({}, nodes("2.19.1", attrs={"knn_native": "false"})).native_engines
    assert capabilities_from({}, nodes("2.19.1")).native_engines
    hidden = capabilities_from({"version": {"number": "2.19.1", "distribution": "opensearch"}}, None)
    assert not hidden.serverless and hidden.pagination_depth and hidden.rrf  # a managed cluster hiding _nodes


def test_serverless_runs_what_aws_documents_and_keeps_pagination_depth():
    caps = serverless_capabilities()
    assert caps.serverless and caps.hybrid and caps.pagination_depth
    assert [f.name for f in caps.fusions()] == list(SCORE_FUSIONS)
    assert not caps.supports(RRF())[0]


def test_capabilities_are_the_one_list_of_fusions():
    caps = opensearch_capabilities("3.6.0")
    names = [f.name for f in caps.fusions(rank_constants=(20, 60))]
    assert names == [*SCORE_FUSIONS, "z_score-arithmetic_mean", "rrf-20", "rrf"]
    weighted = caps.fusions((0.3, 0.7))
    normalized = [f for f in weighted if isinstance(f, ScoreNormalization)]
    assert normalized and all(f.weights == (0.3, 0.7) for f in normalized)
    assert opensearch_capabilities("2.19.1").fusions()[-1] == RRF()
    assert opensearch_capabilities("2.18.0").fusions()[-1] == ScoreNormalization("l2", "harmonic_mean")
