"""The spec file (parsing, validation, round trip) and the pure plan (no cluster)."""

from __future__ import annotations

import json

import pytest

from adapter.index.assets import IndexNames
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import ConfigurationError, InputError
from adapter.engines.opensearch.placement import owned
from adapter.admin.desired import desired_pipelines, render
from adapter.index.plan import Desired, LiveState, Plan, canonical_template, plan
from adapter.index.spec import Spec, dump_spec, load_spec, parse_spec_text
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.engines.opensearch.capabilities import opensearch_capabilities

FP = EmbeddingFingerprint("m", "minilm", "ab" * 32, 384, True)
CAPS = opensearch_capabilities("3.6.0")
YAML = """
version: 1
alias: docs
embedder: minilm
index:
  analyzer: english
  title_boost: 0.5
  hnsw: {m: 32}
pipelines:
  weights: [0.3, 0.7]
  default: rrf
"""


def test_yaml_spec_with_defaults_for_what_it_omits():
    spec = parse_spec_text(YAML, origin="docs.yaml")
    assert (spec.alias, spec.embedder, spec.fingerprint) == ("docs", "minilm", None)
    assert (spec.analyzer, spec.title_boost, spec.m, spec.ef_construction, spec.weights) == (
        "english",
        0.5,
        32,
        128,
        (0.3, 0.7),
    )
    index = spec.resolved(lambda name: FP).index_spec()
    assert index.default_fusion == "rrf" and index.default_pipeline is None and index.fingerprint == FP


@pytest.mark.parametrize(
    "text, message",
    [
        ("alias: docs\nembedder: minilm\ncolour: red\n", "unknown key 'colour'; expected version, alias"),
        ("alias: docs\nembedder: minilm\nindex: {hnsw: {M: 3}}\n", "index.hnsw: unknown key 'M'"),
        ("alias: docs\n", "'embedder' is required"),
        ("alias: Docs\nembedder: minilm\n", "must be lowercase"),
        ("version: 2\nalias: docs\nembedder: minilm\n", "spec version 2 is not supported"),
        ("alias: docs\nembedder: minilm\npipelines: {weights: [0.9, 0.9]}\n", "sum to 1"),
        ("alias: docs\nembedder: minilm\npipelines: {default: tuned}\n", "neither an extra pipeline nor a fusion"),
        ("alias: docs\nembedder: minilm\nindex: {space_type: dot}\n", "unknown space_type 'dot'"),
        ("alias: docs\nembedder: minilm\nindex: {shards: two}\n", "index.shards must be an integer"),
        ("alias: docs\nembedder: {spec: minilm, fingerprint: {spec: e5}}\n", "lacks 'model'"),
        ("alias: [docs\n", "not valid YAML"),
    ],
)
def test_bad_specs_are_refused_naming_the_key(text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_spec_text(text, origin="bad.yaml")


def test_a_pinned_fingerprint_must_be_the_named_models():
    doc = {"alias": "docs", "embedder": {"spec": "multilingual-e5-small", "fingerprint": FP.to_meta()}}
    with pytest.raises(InputError, match="pin the fingerprint of the model the spec names"):
        parse_spec_text(json.dumps(doc))


def test_round_trip_with_extra_pipelines_from_files(tmp_path):
    body = {
        "phase_results_processors": [
            {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 20}}}
        ]
    }
    (tmp_path / "tuned.json").write_text(json.dumps(body))
    (tmp_path / "docs.yaml").write_text(YAML.replace("default: rrf", "default: tuned\n  extra: {tuned: tuned.json}"))
    spec = load_spec(tmp_path / "docs.yaml").resolved(lambda name: FP)
    assert spec.pipelines == {"tuned": body} and spec.index_spec().default_pipeline == "tuned"
    assert IndexNames("docs").default_pipeline(spec.index_spec()) == "docs-tuned"
    for name in ("again.yaml", "again.json"):
        again = load_spec(dump_spec(spec, tmp_path / name))
        assert again == spec and again.fingerprint == FP  # pinned: no model needed to read it back


def test_a_missing_pipeline_file_is_named(tmp_path):
    (tmp_path / "docs.yaml").write_text("alias: docs\nembedder: minilm\npipelines: {extra: {tuned: nope.json}}\n")
    with pytest.raises(InputError, match="pipelines.extra.tuned: cannot read pipeline asset .*nope.json"):
        load_spec(tmp_path / "docs.yaml")


# -- the plan ----------------------------------------------------------------------------------------
def _desired(**options) -> Desired:
    spec = Spec("docs", "minilm", FP, analyzer="english", **options)
    return Desired("docs", spec.index_spec(), spec.weights, spec.pipelines)


def _live_in_sync(desired: Desired, **changes) -> LiveState:
    names = desired.names
    components = OPENSEARCH.render_components(names, desired.spec)
    mapping = OPENSEARCH.render_mapping(names, desired.spec)
    settings = {
        "index": {
            "number_of_shards": "1",
            "search": {"default_pipeline": names.default_pipeline(desired.spec)},
            **components["docs-text"]["template"]["settings"],
        }
    }
    pipelines = desired_pipelines(desired, CAPS, OPENSEARCH)
    state = dict(
        indices=("docs-v1",),
        versions=("docs-v1",),
        index_body={"mappings": mapping, "settings": settings},
        components=components,
        index_template=OPENSEARCH.render_index_template(names, desired.spec),
        pipelines=pipelines,
        owned_pipelines=tuple(pipelines),
    )
    state.update(changes)
    return LiveState("docs", **state)


def _plan(desired: Desired, live: LiveState, **options) -> Plan:
    """The pure diff of ``desired`` as OpenSearch 3.6 renders it against ``live``."""
    return plan(desired, render(desired, CAPS, OPENSEARCH, live_meta=live.meta), live, **options)


def test_a_cluster_that_matches_is_in_sync():
    desired = _desired()
    result = _plan(desired, _live_in_sync(desired), prune_pipelines=True)
    assert result.in_sync and result.index == "docs-v1" and result.next_index == "docs-v2"


def test_drift_of_each_kind_is_planned():
    desired = _desired()
    live = _live_in_sync(desired)
    edited = dict(live.pipelines)
    edited["docs-l2-arithmetic_mean"] = json.loads(
        json.dumps(edited["docs-l2-arithmetic_mean"]).replace("0.5", "0.8", 1)
    )
    del edited["docs-rrf"]
    edited["docs-rrf-10"] = live.pipelines["docs-rrf"]
    settings = {"index": {k: v for k, v in live.index_body["settings"]["index"].items() if k != "search"}}
    drifted = _live_in_sync(
        desired,
        pipelines=edited,
        owned_pipelines=tuple(edited),
        index_template=None,
        components={**live.components, "docs-vector": None},
        index_body={**live.index_body, "settings": settings},
    )
    result = _plan(desired, drifted, prune_pipelines=True)
    got = {(c.kind, c.name, c.action) for c in result.drift}
    assert got == {
        ("pipeline", "docs-l2-arithmetic_mean", "update"),
        ("pipeline", "docs-rrf", "create"),
        ("pipeline", "docs-rrf-10", "delete"),
        ("index_template", "docs", "create"),
        ("component_template", "docs-vector", "create"),
        ("settings", "docs-v1", "update"),
    }
    assert not result.rebuild


def test_a_changed_model_or_analyzer_is_a_rebuild_with_nothing_in_place_for_the_index():
    desired = _desired()
    live = _live_in_sync(desired)
    other = EmbeddingFingerprint("m2", "minilm", "cd" * 32, 384, True)
    meta = {**live.index_body["mappings"]["_meta"], "embedding": other.to_meta()}
    result = _plan(
        desired,
        _live_in_sync(
            desired, index_body={**live.index_body, "mappings": {**live.index_body["mappings"], "_meta": meta}}
        ),
    )
    assert result.rebuild and "embedding model: the index was embedded by m2 (minilm" in result.rebuild[0]
    assert result.rebuild[0].endswith("they differ in weights")
    assert [(c.kind, c.action) for c in result.drift] == [("index", "rebuild")]  # the _meta is not rewritten in place
    spanish = _plan(_desired(), _live_in_sync(desired))
    assert spanish.in_sync
    english_live = _live_in_sync(desired)
    result = _plan(Desired("docs", Spec("docs", "minilm", FP, analyzer="spanish").index_spec()), english_live)
    assert any("analyzer" in why for why in result.rebuild)


def test_pipelines_of_a_longer_alias_are_not_this_ones():
    assert owned("docs", "docs-rrf", set()) and not owned("docs", "docs-es-rrf", {"docs-es"})
    assert owned("docs", "docs-es-rrf", set()) and not owned("docs", "other-rrf", set())


def test_things_in_the_way_are_errors_not_plans():
    desired = _desired()
    with pytest.raises(ConfigurationError, match="not an alias"):
        _plan(desired, LiveState("docs", plain_index=True))
    with pytest.raises(ConfigurationError, match="--reattach-alias"):
        _plan(desired, LiveState("docs", orphans=("docs-v3",), versions=("docs-v3",)))
    result = _plan(desired, LiveState("docs", versions=()))
    assert [c.action for c in result.changes if c.kind == "index"] == ["create"] and result.index == "docs-v1"


def test_templates_compare_as_the_server_echoes_them():
    desired = _desired()
    body = OPENSEARCH.render_index_template(desired.names, desired.spec)
    echoed = json.loads(json.dumps(body))
    echoed["template"]["settings"] = {
        "index": {
            "number_of_shards": "1",
            "auto_expand_replicas": "0-1",
            "refresh_interval": "1s",
            "search": {"default_pipeline": desired.names.default_pipeline(desired.spec)},
        }
    }
    assert canonical_template(echoed) == canonical_template(body)
