"""`hybrid init` against the real node: templates, alias, pipelines, idempotence, refusals.

Tests marked for both engines hold on Elasticsearch too (no pipelines there: see
tests/integration/test_elastic_adapter.py for what it puts instead)."""

import re

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.catalog import alias_indices, read_pipeline as get_pipeline
from adapter.engines.opensearch import OPENSEARCH
from adapter.errors import ConfigurationError, IndexMismatchError, InputError
from adapter.fusion import RRF, ScoreNormalization
from adapter.engines import cluster_for
from tests.support.indexes import SCORE_FUSIONS

BOTH = pytest.mark.engine("opensearch", "elasticsearch")


@pytest.fixture
def spec(e5):
    return IndexSpec(e5.fingerprint, analyzer="spanish")


def test_init_creates_templates_index_alias_and_pipelines(client, index_name, spec, target):
    report = init_index(client, index_name, spec)
    assert report.index == f"{index_name}-v1"
    actions = {(c.kind, c.name): c.action for c in report.changes}
    made = [a for k, a in actions.items() if k[0] != "mapping"]
    assert made and all(a == "created" for a in made), actions
    for part in ("text", "vector", "metadata"):
        assert client.cluster.exists_component_template(name=f"{index_name}-{part}")
    assert client.indices.exists_index_template(name=index_name)
    assert alias_indices(cluster_for(client), index_name) == [f"{index_name}-v1"]
    mapping = client.indices.get_mapping(index=index_name)[f"{index_name}-v1"]["mappings"]
    assert mapping["_meta"]["embedding"] == spec.fingerprint.to_meta()
    assert mapping["properties"]["embedding"]["dimension"] == 384
    assert mapping["properties"]["text"]["analyzer"] == "spanish"
    names = {c.name for c in report.changes if c.kind == "pipeline"}
    z_score = ("z_score-arithmetic_mean",) if target.at_least("3.0") else ()  # z_score exists from 3.0
    # the measured default, as `hybrid init`'s (adapter.fusion.choice.defaults)
    assert spec.default_fusion == "adaptive"
    assert names == {f"{index_name}-{n}" for n in (*SCORE_FUSIONS, "rrf", *z_score, "adaptive")}
    rrf = get_pipeline(cluster_for(client), f"{index_name}-rrf")
    assert OPENSEARCH.pipeline_fusion(rrf) == RRF(60)
    assert rrf["response_processors"] == [{"hybrid_score_explanation": {}}]


@BOTH
def test_second_init_is_a_no_op(client, index_name, spec):
    init_index(client, index_name, spec)
    again = init_index(client, index_name, spec)
    assert not again.changed
    assert {c.action for c in again.changes} == {"unchanged"}


def test_changed_pipeline_weights_are_updated_with_a_diff(client, index_name, spec, target):
    init_index(client, index_name, spec)
    report = init_index(client, index_name, spec, weights=(0.3, 0.7))
    updated = [c for c in report.changes if c.action == "updated"]
    z_score = {f"{index_name}-z_score-arithmetic_mean"} if target.at_least("3.0") else set()
    assert {c.name for c in updated} == {
        f"{index_name}-{n}-{c}"
        for n in ("min_max", "l2")
        for c in ("arithmetic_mean", "geometric_mean", "harmonic_mean")
    } | z_score
    assert re.search(r"^-\s+0\.5,?$", updated[0].diff, re.M) and re.search(r"^\+\s+0\.3,$", updated[0].diff, re.M)
    stored = get_pipeline(cluster_for(client), f"{index_name}-min_max-arithmetic_mean")
    assert stored["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"] == [
        0.3,
        0.7,
    ]


def test_extra_pipeline_asset_is_applied(client, index_name, spec):
    body = OPENSEARCH.render_pipeline(ScoreNormalization("l2", weights=(0.6, 0.4)), OPENSEARCH.probe(client))
    report = init_index(client, index_name, spec, extra_pipelines={"tuned": body})
    assert ("pipeline", f"{index_name}-tuned", "created") in {(c.kind, c.name, c.action) for c in report.changes}


@BOTH
def test_mapping_change_that_needs_a_new_index_is_refused_before_writing(client, index_name, spec, e5):
    init_index(client, index_name, spec)
    before = client.cluster.get_component_template(name=f"{index_name}-text")
    with pytest.raises(IndexMismatchError, match=r"analyzer.*needs a new index \(.*-v2\)"):
        init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="standard"))
    with pytest.raises(IndexMismatchError, match="dimension"):
        from tests.conftest import HashingEmbedder

        init_index(client, index_name, IndexSpec(HashingEmbedder(64).fingerprint, analyzer="spanish"))
    assert client.cluster.get_component_template(name=f"{index_name}-text") == before


@BOTH
def test_init_refuses_an_existing_plain_index_with_that_name(client, index_name, spec):
    client.indices.create(index=index_name)
    with pytest.raises(ConfigurationError, match="not an alias"):
        init_index(client, index_name, spec)


@BOTH
def test_init_refuses_bad_names_and_bad_weights(client, spec):
    with pytest.raises(InputError, match="not valid"):
        init_index(client, "Bad Name", spec)
    with pytest.raises(InputError, match="sum to 1"):
        init_index(client, "t-bad-weights", spec, weights=(0.9, 0.9))
    assert client.indices.get(index="t-bad-weights*") == {}


def test_native_engines_follow_the_probed_cluster(client, index_name, e5):
    """faiss is refused where the cluster has no native k-NN libraries (the Maven-built node) and
    accepted where it has them (the official image, compose.yaml, managed clusters)."""
    spec = IndexSpec(e5.fingerprint, analyzer="spanish", knn_method="faiss")
    if not OPENSEARCH.probe(client).native_engines:
        with pytest.raises(ConfigurationError, match="native libraries"):
            init_index(client, index_name, spec)
        assert client.indices.get(index=f"{index_name}*") == {}
        return
    report = init_index(client, index_name, spec)
    mapping = client.indices.get_mapping(index=index_name)[report.index]["mappings"]
    assert mapping["properties"]["embedding"]["method"]["engine"] == "faiss"


@BOTH
def test_dry_run_changes_nothing(client, index_name, spec, target):
    report = init_index(client, index_name, spec, dry_run=True)
    assert {c.action for c in report.changes} == {"would create"}
    assert client.indices.get(index=f"{index_name}*") == {}
    if target.engine == "opensearch":
        assert get_pipeline(cluster_for(client), f"{index_name}-rrf") is None


@BOTH
def test_query_field_boost_is_updated_in_place(client, index_name, e5):
    from adapter.search import Searcher

    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    report = init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish", title_boost=0.5))
    changed = [c for c in report.changes if c.action == "updated"]
    assert [(c.kind, c.name) for c in changed] == [
        ("index_template", index_name),
        ("mapping _meta", f"{index_name}-v1"),
    ]
    assert '"title^0.5"' in changed[1].diff
    assert Searcher.open(client, index_name, e5).text_leg.fields == ("title^0.5", "text")


def test_a_bare_hybrid_query_from_any_client_is_fused_by_the_default_pipeline(
    client, index_name, e5, support_docs_path
):
    """What a user of plain opensearch-py gets: no search_pipeline parameter, still fused scores."""
    from adapter.ingest.ingestor import Ingestor
    from adapter.search import Searcher
    from adapter.ingest.sources import read_source

    report = init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    # the measured default: calibrated corpus weights for any client
    assert report.default_pipeline == f"{index_name}-adaptive"
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    query = "¿cómo devuelvo un pedido?"
    vector = [float(x) for x in e5.embed_query(query)]
    bare = {
        "size": 5,
        "query": {
            "hybrid": {
                "queries": [
                    {"multi_match": {"query": query, "fields": ["title", "text"], "type": "most_fields"}},
                    {"knn": {"embedding": {"vector": vector, "k": 100}}},
                ],
                "pagination_depth": 100,
            }
        },
    }
    hits = client.search(index=index_name, body=bare)["hits"]["hits"]
    assert hits and all(0.0 <= h["_score"] <= 1.0 for h in hits) and len({h["_id"] for h in hits}) == len(hits)
    ours = Searcher.open(client, index_name, e5).search(query, k=5, query_vector=vector)
    assert [h["_id"] for h in hits] == ours.ids
    assert [h["_score"] for h in hits] == pytest.approx([h.score for h in ours.hits], rel=1e-5)
    # A single-leg query is untouched by the default pipeline.
    single = {"query": {"match": {"text": "pedido"}}}
    bm25 = client.search(index=index_name, body=single)["hits"]["hits"]
    no_pipeline = client.search(index=index_name, body=single, params={"search_pipeline": "_none"})["hits"]["hits"]
    assert [(h["_id"], h["_score"]) for h in bm25] == [(h["_id"], h["_score"]) for h in no_pipeline]
    # Another default fusion is applied in place (the setting, and _meta.default_fusion), and the searcher follows it.
    again = init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="rrf"))
    assert [(c.kind, c.action) for c in again.changes if c.action != "unchanged"] == [
        ("index_template", "updated"),
        ("mapping _meta", "updated"),
        ("settings", "updated"),
    ]
    assert Searcher.open(client, index_name, e5).search(query, k=3).pipeline == f"{index_name}-rrf"
