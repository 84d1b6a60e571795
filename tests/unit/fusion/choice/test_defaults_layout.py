"""The measured default (computed from the eval reports, not written down) and the BM25 text layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapter.fusion.choice import defaults
from adapter.index.assets import COMBINED_FIELD, IndexNames, IndexSpec
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import AssetError, ConfigurationError
from adapter.engines.dsl import TextLeg, termvectors_body
from adapter.fusion.choice.selection import ClusterKind
from adapter.models.fingerprint import EmbeddingFingerprint

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[4]
FP = EmbeddingFingerprint("m", "s", "abc", 4, True)


# -- the measured default --------------------------------------------------------------------------
def test_choose_default_takes_the_smallest_worst_case_regret_per_cluster_kind():
    legs = {"bm25": 0.5, "dense": 0.5}
    sets = {
        "a": {
            **legs,
            "hybrid-min_max-arithmetic_mean": 0.70,
            "hybrid-z_score-arithmetic_mean": 0.74,
            "hybrid-adaptive": 0.80,
        },
        "b": {
            **legs,
            "hybrid-min_max-arithmetic_mean": 0.90,
            "hybrid-z_score-arithmetic_mean": 0.89,
            "hybrid-adaptive": 0.80,
        },
    }
    # adaptive's mean is the best (0.80) but it loses 0.10 on b; z_score's worst loss is 0.01.
    assert defaults.choose_default(sets) == "hybrid-z_score-arithmetic_mean"
    assert (
        defaults.choose_default(sets, ClusterKind.OPENSEARCH_2) == "hybrid-min_max-arithmetic_mean"
    )  # no z_score on 2.19
    tie = {"a": {**legs, "hybrid-min_max-arithmetic_mean": 0.8, "hybrid-adaptive": 0.8}}
    assert defaults.choose_default(tie) == "hybrid-min_max-arithmetic_mean"  # ties go to the simpler fusion
    with pytest.raises(AssetError, match="no default candidate"):
        defaults.choose_default({"a": {**legs, "hybrid-tuned-rrf": 0.99}})
    assert defaults.fusion_name("hybrid-adaptive-min_max") == "adaptive" and defaults.fusion_name("client-rrf") == "rrf"
    assert defaults.fusion_name("hybrid-z_score-arithmetic_mean") == "z_score-arithmetic_mean"


def test_the_shipped_default_is_recomputed_from_the_committed_eval_reports():
    shipped = defaults.measured()
    reports = {label: json.loads((ROOT / path).read_text()) for label, path in shipped["sources"].items()}
    recomputed = defaults.summarize(reports)
    assert recomputed["sets"] == shipped["sets"]
    assert recomputed["defaults"] == shipped["defaults"] and recomputed["selection"] == shipped["selection"]
    shipped_as = defaults.SHIPPED_AS.get  # the guarded policy's row is what `hybrid eval` runs as its adaptive row
    assert (
        shipped_as(shipped["defaults"]["opensearch-3"], shipped["defaults"]["opensearch-3"])
        == defaults.default_technique()
    )
    for kind in ClusterKind:
        if kind.value in shipped["defaults"]:
            assert defaults.default_technique(kind) == shipped_as(
                shipped["defaults"][kind.value], shipped["defaults"][kind.value]
            )
            assert defaults.default_fusion_name(kind) == defaults.fusion_name(shipped["defaults"][kind.value])
    for label, report in reports.items():
        assert report["split"] == "test" and report["split"] != (report.get("tuning") or {}).get("split"), label
        if "results" in report:  # a `hybrid eval` report: it names the default the product ships
            assert report["settings"]["default_technique"] == shipped["defaults"]["opensearch-3"]
            assert report["settings"]["engine"] == "opensearch" and report["settings"]["version"].startswith("3.")
        else:  # offline rows of scripts/study_default_rule.py: legs fetched from OpenSearch 3.x, every row per query
            assert report["engine"] == "opensearch" and report["version"].startswith("3.")
            assert all(len(v) == len(report["queries"]) for v in report["per_query_ndcg@10"].values())


# -- the text layout -------------------------------------------------------------------------------
def test_combined_layout_copies_every_text_field_into_one_and_queries_it():
    spec = IndexSpec(FP, analyzer="english", text_layout="combined")
    props = OPENSEARCH.render_components(IndexNames("docs"), spec)["docs-text"]["template"]["mappings"]["properties"]
    assert props["title"] == {"type": "text", "analyzer": "english", "copy_to": [COMBINED_FIELD]}
    assert props["text"] == {"type": "text", "analyzer": "english", "copy_to": [COMBINED_FIELD]}
    assert props[COMBINED_FIELD] == {"type": "text", "analyzer": "english"}
    assert spec.query_fields == [COMBINED_FIELD] and spec.meta["text_layout"] == "combined"
    assert TextLeg(tuple(spec.query_fields)).body("q") == {"match": {COMBINED_FIELD: {"query": "q", "operator": "or"}}}
    assert termvectors_body("q", TextLeg(tuple(spec.query_fields)))["doc"] == {COMBINED_FIELD: "q"}


def test_fields_layout_is_unchanged_and_bad_layouts_are_refused():
    spec = IndexSpec(FP, title_boost=0.5)
    props = OPENSEARCH.render_components(IndexNames("docs"), spec)["docs-text"]["template"]["mappings"]["properties"]
    assert set(props) == {"title", "text"} and "copy_to" not in props["title"]
    assert spec.query_fields == ["title^0.5", "text"]
    with pytest.raises(ConfigurationError, match="unknown text layout"):
        IndexSpec(FP, text_layout="flat")
    with pytest.raises(ConfigurationError, match="title_boost applies to the fields layout"):
        IndexSpec(FP, text_layout="combined", title_boost=0.5)
    with pytest.raises(ConfigurationError, match="combined layout's field"):
        IndexSpec(FP, text_fields=("all_text", "body"))


def test_adaptive_is_a_default_fusion_with_its_own_pipeline_name():
    spec = IndexSpec(FP, default_fusion="adaptive")
    assert IndexNames("docs").default_pipeline(spec) == "docs-adaptive" and spec.meta["default_fusion"] == "adaptive"
    with pytest.raises(ConfigurationError, match="unknown fusion 'adaptiv'.*or adaptive"):
        IndexSpec(FP, default_fusion="adaptiv")  # a typo is named, with adaptive among the choices


def test_the_default_policy_runs_the_form_the_selection_chose():
    from adapter.fusion.choice.policy import DEFAULT_POLICY
    from adapter.fusion import Normalization

    chosen = defaults.default_technique()
    expected = Normalization.MIN_MAX if chosen == "hybrid-adaptive-min_max" else Normalization.Z_SCORE
    assert DEFAULT_POLICY.base(True) == defaults.measured_adaptive_base() == expected
    assert DEFAULT_POLICY.base(False) == Normalization.MIN_MAX  # 2.19: no z_score
    assert defaults.default_layout() == defaults.measured()["text_layout"]["chosen"]


def test_the_reports_the_default_is_chosen_from_follow_the_eval_contract():
    pytest.importorskip("jsonschema")
    from adapter.index.contracts import Contract, validate

    for path in defaults.measured()["sources"].values():
        report = json.loads((ROOT / path).read_text(encoding="utf-8"))
        if "results" in report:  # offline rows are not `hybrid eval` reports
            validate(Contract.EVAL, report)


def test_a_cluster_without_z_score_is_selected_on_the_adaptive_form_its_policy_runs():
    # The default policy's base follows the cluster's z_score capability, and Elasticsearch reports
    # none (its client fusion could run z_score, the policy does not), as 2.19: on both the policy
    # runs the min_max form, so the z_score form's row is no candidate there.
    from adapter.fusion.choice import selection
    from adapter.fusion.choice.policy import DEFAULT_POLICY
    from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
    from adapter.engines.opensearch.capabilities import opensearch_capabilities

    for caps, kind in (
        (opensearch_capabilities("2.19.1"), ClusterKind.OPENSEARCH_2),
        (elasticsearch_capabilities("9.2.4"), ClusterKind.ELASTICSEARCH),
    ):
        assert DEFAULT_POLICY.base(caps.z_score).value == "min_max"
        assert selection.runs_on("hybrid-adaptive-min_max", kind) and not selection.runs_on("hybrid-adaptive", kind), (
            kind
        )
    legs = {"bm25": 0.5, "dense": 0.5}
    sets = {
        "a": {**legs, "hybrid-min_max-arithmetic_mean": 0.70, "hybrid-adaptive": 0.80, "hybrid-adaptive-min_max": 0.72}
    }
    assert defaults.choose_default(sets, ClusterKind.ELASTICSEARCH) == "hybrid-adaptive-min_max"
    assert defaults.choose_default(sets, ClusterKind.OPENSEARCH_3) == "hybrid-adaptive"
