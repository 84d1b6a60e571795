"""The measured default (computed from the eval reports, not written down) and the BM25 text layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapter import defaults
from adapter.assets import COMBINED_FIELD, IndexNames, IndexSpec
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import AssetError, ConfigurationError
from adapter.queries import TextLeg, termvectors_body
from adapter.types import EmbeddingFingerprint

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
FP = EmbeddingFingerprint("m", "s", "abc", 4, True)


# -- the measured default --------------------------------------------------------------------------
def test_choose_default_takes_the_best_mean_over_sets_measured_everywhere():
    sets = {"a": {"hybrid-min_max-arithmetic_mean": 0.70, "hybrid-adaptive": 0.72, "hybrid-rrf": 0.90},
            "b": {"hybrid-min_max-arithmetic_mean": 0.90, "hybrid-adaptive": 0.93}}
    assert defaults.choose_default(sets) == "hybrid-adaptive"  # rrf was not measured on b
    tie = {"a": {"hybrid-min_max-arithmetic_mean": 0.8, "hybrid-adaptive": 0.8}}
    assert defaults.choose_default(tie) == "hybrid-min_max-arithmetic_mean"  # ties go to the simpler fusion
    with pytest.raises(AssetError, match="no default candidate"):
        defaults.choose_default({"a": {"hybrid-tuned-rrf": 0.99}})


def test_the_shipped_default_is_recomputed_from_the_committed_eval_reports():
    shipped = defaults.measured()
    reports = {label: json.loads((ROOT / path).read_text()) for label, path in shipped["sources"].items()}
    recomputed = defaults.summarize(reports)
    assert recomputed["sets"] == shipped["sets"]
    assert recomputed["default"] == shipped["default"] == defaults.default_technique()
    for label, report in reports.items():
        assert report["split"] != (report.get("tuning") or {}).get("split"), f"{label} was tuned on its reported split"
        assert report["settings"]["default_technique"] == shipped["default"]
    name = defaults.default_fusion_name()
    assert shipped["default"] == f"hybrid-{name}"


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
