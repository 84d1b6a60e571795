"""Version gates of every search-page feature, the probe that reads them, and where each part runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


from adapter.engines.opensearch.capabilities import MMR_SETTING
from adapter.engines.opensearch import capabilities_from
from adapter.engines.opensearch.capabilities import opensearch_capabilities, serverless_capabilities

RECORDINGS = Path(__file__).parents[1] / "recordings"


def nodes(version, plugins=("opensearch-knn", "opensearch-neural-search"), modules=None, attrs=None, count=1):
    node = {"version": version, "plugins": [{"name": p} for p in plugins], "attributes": attrs or {}}
    if modules is not None:
        node["modules"] = [{"name": m} for m in modules]
    return {"nodes": {f"n{i}": json.loads(json.dumps(node)) for i in range(count)}}


GATES = {  # flag -> first OpenSearch version with it (neural-search / k-NN release notes, docs/OPENSEARCH-FEATURES.md)
    "hybrid_aggregations": "2.13.0",
    "hybrid_sort": "2.16.0",
    "hybrid_filter": "3.0.0",
    "hybrid_collapse": "3.1.0",
    "collapse_inner_hits": "3.2.0",
    "server_mmr": "3.3.0",
    "fused_min_score": "3.5.0",
    "rrf_global_ranks": "3.5.0",
}


def before(version: str) -> str:
    major, minor, _ = (int(x) for x in version.split("."))
    return f"{major}.{minor - 1}.9" if minor else "2.19.1"


@pytest.mark.parametrize("flag", sorted(GATES))
def test_each_page_feature_starts_at_its_release(flag):
    since = GATES[flag]
    assert getattr(opensearch_capabilities(since), flag), since
    assert getattr(opensearch_capabilities("3.6.0"), flag)
    assert not getattr(opensearch_capabilities(before(since)), flag), before(since)


def test_hybrid_features_need_neural_search_but_server_mmr_only_knn():
    caps = opensearch_capabilities("3.6.0", neural_search=False, plugins=("opensearch-knn",))
    assert not (caps.hybrid_filter or caps.hybrid_collapse or caps.fused_min_score or caps.hybrid_aggregations)
    assert caps.server_mmr


def test_server_mmr_is_on_only_when_the_setting_lists_both_factories():
    def on(value):
        return opensearch_capabilities("3.6.0", cluster_settings={MMR_SETTING: value}).server_mmr_enabled

    assert on(["mmr_over_sample_factory", "mmr_rerank_factory"]) and on(["*"]) and on("*")
    assert not on([]) and not on(["mmr_rerank_factory"]) and not on(None)
    assert not opensearch_capabilities("3.2.0", cluster_settings={MMR_SETTING: ["*"]}).server_mmr_enabled


def test_in_query_fusion_is_recognised_by_its_switch_not_a_version():
    # 3.8.0 shipped without it (neural-search 3.8.0.0 tag); the unreleased branch registers the switch.
    assert not opensearch_capabilities("3.8.0").in_query_fusion
    assert not opensearch_capabilities("3.10.0").in_query_fusion
    switch = "plugins.neural_search.hybrid.fusion.enabled"
    assert opensearch_capabilities("3.10.0", cluster_settings={switch: "true"}).in_query_fusion
    assert not opensearch_capabilities("3.10.0", cluster_settings={switch: "false"}).in_query_fusion
    settings = {"defaults": {"plugins": {"neural_search": {"hybrid": {"fusion": {"enabled": "true"}}}}}}
    assert capabilities_from({}, nodes("3.10.0"), settings).in_query_fusion


def test_modules_and_hunspell_count_only_when_every_node_has_them():
    two = nodes("3.6.0", modules=("reindex", "analysis-common"), attrs={"hunspell": "pl_PL,es_ES"}, count=2)
    caps = capabilities_from({}, two)
    assert caps.delete_by_query and caps.hunspell == ("es_ES", "pl_PL") and "reindex" in caps.modules
    two["nodes"]["n1"]["modules"] = [{"name": "analysis-common"}]
    two["nodes"]["n1"]["attributes"] = {"hunspell": "pl_PL"}
    caps = capabilities_from({}, two)
    assert not caps.delete_by_query and caps.hunspell == ("pl_PL",)
    # An answer without module lists says nothing about them; a cluster hiding _nodes is the managed service.
    assert capabilities_from({}, nodes("2.19.1")).delete_by_query
    hidden = capabilities_from({"version": {"number": "2.19.1"}}, None)
    assert hidden.delete_by_query and hidden.stempel and hidden.icu


def test_analysis_plugins():
    caps = capabilities_from(
        {}, nodes("3.6.0", plugins=("opensearch-knn", "opensearch-neural-search", "analysis-stempel"))
    )
    assert caps.stempel and not caps.icu
    serverless = serverless_capabilities()
    assert serverless.stempel and serverless.icu and not serverless.hybrid_collapse and not serverless.delete_by_query


@pytest.mark.parametrize("version", ["3.6.0", "2.19.1"])
def test_the_probe_reads_the_real_nodes_answers(version):
    data = json.loads((RECORDINGS / f"probe-opensearch-{version}.json").read_text())
    caps = capabilities_from(data["root"], data["nodes"], data["settings"])
    assert caps.version == version and caps.hybrid and caps.hunspell == ("es_ES", "pl_PL")
    assert not caps.native_engines and not caps.stempel and not caps.icu and not caps.in_query_fusion
    if version == "3.6.0":  # the 3.6.0 zip has the reindex module; the recording was made with the MMR factories on
        assert caps.delete_by_query and caps.hybrid_collapse and caps.fused_min_score and caps.server_mmr_enabled
        off = capabilities_from(
            data["root"],
            data["nodes"],
            {"defaults": {"cluster": {"search": {"enabled_system_generated_factories": []}}}},
        )
        assert off.server_mmr and not off.server_mmr_enabled
    else:  # 2.19.1's Maven zips: analysis-common, lang-painless, transport-netty4
        assert not caps.delete_by_query and not caps.hybrid_filter and not caps.hybrid_collapse and not caps.server_mmr
        assert caps.hybrid_sort and caps.hybrid_aggregations


def test_probe_asks_settings_only_from_3_3():
    from adapter.engines.opensearch import OpenSearchEngine
    from adapter.testing import FakeClient

    old = FakeClient({"GET /": {"cluster_uuid": "a", "version": {"number": "2.19.1"}}, "GET /_nodes*": nodes("2.19.1")})
    OpenSearchEngine().probe(old, serverless=False)
    assert [c.key for c in old.calls] == ["GET /", "GET /_nodes/plugins"]
    new = FakeClient(
        {
            "GET /": {"cluster_uuid": "b", "version": {"number": "3.6.0"}},
            "GET /_nodes*": nodes("3.6.0"),
            "GET /_cluster/settings": {
                "persistent": {"cluster": {"search": {"enabled_system_generated_factories": ["*"]}}}
            },
        }
    )
    caps = OpenSearchEngine().probe(new, serverless=False)
    assert [c.key for c in new.calls] == [
        "GET /",
        "GET /_nodes/plugins",
        "GET /_cluster/settings",
    ] and caps.server_mmr_enabled
    assert new.calls[-1].params["include_defaults"] == "true"
