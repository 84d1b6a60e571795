"""`hybrid plan | apply | diff` with a spec file against the real node: convergence, each kind of drift
made by hand, exit codes (diff: 0 in sync, 2 drift, 1 error), flags that build a spec."""

from __future__ import annotations

import json

import pytest
import yaml

from adapter.index.catalog import alias_indices, read_pipeline
from adapter.engines import cluster_for
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401  (fixture)
from tests.support.indexes import TUNED_PIPELINE


@pytest.fixture(autouse=True)
def target_url(monkeypatch, opensearch_url):
    """The CLI speaks to the session's target (without it, to the default local node)."""
    monkeypatch.setenv("OPENSEARCH_URL", opensearch_url)


@pytest.fixture
def spec_file(tmp_path, index_name):
    """A spec for ``index_name`` with a tuned pipeline as the default (the fingerprint pinned)."""
    (tmp_path / "tuned.json").write_text(json.dumps(TUNED_PIPELINE))
    doc = {
        "version": 1,
        "alias": index_name,
        "embedder": {"spec": "test:hashing", "fingerprint": TEST_EMBEDDER.fingerprint.to_meta()},
        "index": {"analyzer": "english", "title_boost": 0.5, "hnsw": {"m": 24, "ef_construction": 100}},
        "pipelines": {"weights": [0.4, 0.6], "extra": {"tuned": "tuned.json"}, "default": "tuned"},
    }
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _applied(cli, spec_file):
    code, out, err = cli("apply", spec_file)
    assert code == 0, err
    code, out, err = cli("diff", spec_file)
    assert code == 0 and "in sync" in out, out + err
    return out


def test_apply_converges_and_is_idempotent(cli, client, spec_file, index_name):
    code, out, err = cli("plan", spec_file)
    assert code == 0 and "+ create" in out and f"index              {index_name}-v1" in out, out + err
    code, out, err = cli("diff", spec_file)
    assert code == 2 and "drift" in out
    _applied(cli, spec_file)
    mapping = client.indices.get_mapping(index=index_name)[f"{index_name}-v1"]["mappings"]
    assert mapping["properties"]["embedding"]["method"]["parameters"] == {"m": 24, "ef_construction": 100}
    assert mapping["_meta"]["query_fields"] == ["title^0.5", "text"]
    settings = client.indices.get_settings(index=index_name)[f"{index_name}-v1"]["settings"]["index"]
    assert settings["search"]["default_pipeline"] == f"{index_name}-tuned"
    weights = read_pipeline(cluster_for(client), f"{index_name}-min_max-arithmetic_mean")["phase_results_processors"][0]
    assert weights["normalization-processor"]["combination"]["parameters"]["weights"] == [0.4, 0.6]
    code, out, _ = cli("apply", spec_file)
    assert code == 0 and "in sync" in out and "changed" not in out


def test_pipeline_weights_edited_by_hand(cli, client, spec_file, index_name):
    _applied(cli, spec_file)
    name = f"{index_name}-l2-harmonic_mean"
    body = read_pipeline(cluster_for(client), name)
    body["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"] = [0.9, 0.1]
    client.transport.perform_request("PUT", f"/_search/pipeline/{name}", body=body)
    code, out, _ = cli("diff", spec_file)
    assert code == 2 and f"~ update        pipeline           {name}" in out
    assert "-              0.9," in out and "+              0.4," in out
    _applied(cli, spec_file)


def test_templates_deleted_by_hand(cli, client, spec_file, index_name):
    _applied(cli, spec_file)
    client.indices.delete_index_template(name=index_name)
    client.cluster.delete_component_template(name=f"{index_name}-metadata")  # free once the index template is gone
    code, out, _ = cli("diff", spec_file)
    assert code == 2
    assert f"+ create        index_template     {index_name}  (missing on the cluster)" in out
    assert f"+ create        component_template {index_name}-metadata  (missing on the cluster)" in out
    _applied(cli, spec_file)
    assert client.indices.exists_index_template(name=index_name)


def test_default_pipeline_removed_from_the_index_settings(cli, client, spec_file, index_name):
    _applied(cli, spec_file)
    client.indices.put_settings(index=f"{index_name}-v1", body={"index.search.default_pipeline": None})
    code, out, _ = cli("diff", spec_file)
    assert code == 2 and "the index has no default search pipeline" in out and f'"{index_name}-tuned"' in out
    _applied(cli, spec_file)


def test_fingerprint_in_meta_no_longer_matches_the_spec(cli, client, spec_file, index_name):
    """Drift that needs a new index: diff says so, apply refuses before writing anything."""
    _applied(cli, spec_file)
    meta = client.indices.get_mapping(index=index_name)[f"{index_name}-v1"]["mappings"]["_meta"]
    meta["embedding"]["weights_sha256"] = "0" * 64
    client.indices.put_mapping(index=f"{index_name}-v1", body={"_meta": meta})
    client.indices.delete_index_template(name=index_name)  # in-place drift next to it
    code, out, _ = cli("diff", spec_file)
    # Before: "embedding fingerprint: weights_sha256: '3c2a...' != '0000...'", and "`hybrid apply` fixes 1 in place"
    # though apply refuses.
    assert (
        code == 2
        and "! rebuild" in out
        and "embedding model: the index was embedded by" in out
        and "differ in weights" in out
    )
    assert f"needs a new index ({index_name}-v2)" in out and f"hybrid reindex {spec_file}" in out
    assert (
        "fixes 1 in place" not in out
        and "`hybrid apply` changes nothing while the index needs that (the other change comes with it)" in out
    )
    assert "objects compared (not the index's mapping and _meta: the index needs rebuilding)" in out
    code, out, err = cli("apply", spec_file)
    assert code == 2 and "cannot take in place" in err and "hybrid reindex" in err
    assert not client.indices.exists_index_template(name=index_name)  # refused before anything was written


def test_pipelines_added_and_removed(cli, client, spec_file, index_name):
    _applied(cli, spec_file)
    rrf10 = {"phase_results_processors": [{"score-ranker-processor": {"combination": {"technique": "rrf"}}}]}
    client.transport.perform_request("PUT", f"/_search/pipeline/{index_name}-rrf-10", body=rrf10)  # made by hand
    client.transport.perform_request("PUT", f"/_search/pipeline/{index_name}-es-rrf", body=rrf10)  # another alias's
    client.indices.create(index=f"{index_name}-es-v1", body={"aliases": {f"{index_name}-es": {}}})
    client.transport.perform_request("DELETE", f"/_search/pipeline/{index_name}-rrf")  # deleted by hand
    code, out, _ = cli("diff", spec_file)
    assert code == 2
    assert f"- delete        pipeline           {index_name}-rrf-10" in out
    assert f"+ create        pipeline           {index_name}-rrf  (missing on the cluster)" in out
    assert f"{index_name}-es-rrf" not in out
    # Dropping an extra pipeline from the spec deletes it (the default moves back to a standard one).
    doc = yaml.safe_load(spec_file.read_text())
    doc["pipelines"] = {"weights": [0.4, 0.6], "default": "rrf"}
    spec_file.write_text(yaml.safe_dump(doc))
    code, out, _ = cli("plan", spec_file)
    assert f"- delete        pipeline           {index_name}-tuned" in out
    _applied(cli, spec_file)
    assert (
        read_pipeline(cluster_for(client), f"{index_name}-tuned") is None
        and read_pipeline(cluster_for(client), f"{index_name}-rrf-10") is None
    )
    assert read_pipeline(cluster_for(client), f"{index_name}-es-rrf") is not None


def test_alias_deleted_by_hand_is_put_back(cli, client, spec_file, index_name):
    _applied(cli, spec_file)
    client.indices.delete_alias(index=f"{index_name}-v1", name=index_name)
    code, out, _ = cli("diff", spec_file)
    assert code == 2 and f"the alias is missing: put it back on {index_name}-v1" in out
    _applied(cli, spec_file)
    assert alias_indices(cluster_for(client), index_name) == [f"{index_name}-v1"]


def test_diff_errors_are_not_drift(cli, tmp_path, spec_file):
    code, _, err = cli("diff", tmp_path / "missing.yaml")
    assert code == 1 and "cannot read the spec" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("alias: x\nembedder: minilm\nindex: {analyser: english}\n")
    code, _, err = cli("diff", bad)
    assert code == 1 and "unknown key 'analyser'" in err
    code, _, err = cli("diff", spec_file, "--url", "http://127.0.0.1:1")
    assert code == 1 and "cannot reach" in err
    code, _, err = cli("diff", spec_file, "--no-such-flag")
    assert code == 1 and "unrecognized arguments" in err
    code, _, err = cli("diff", spec_file, "--analyzer", "spanish")
    assert code == 1 and "--analyzer cannot be combined with a spec file" in err


def test_flags_build_a_spec_and_write_it(cli, client, tmp_path, index_name):
    written = tmp_path / "from-flags.json"
    code, out, err = cli(
        "apply",
        "--index",
        index_name,
        "--embedder",
        "test:hashing",
        "--analyzer",
        "spanish",
        "--weights",
        "0.3,0.7",
        "--write-spec",
        written,
    )
    assert code == 0, err
    doc = json.loads(written.read_text())
    assert doc["index"]["analyzer"] == "spanish" and doc["pipelines"]["weights"] == [0.3, 0.7]
    assert doc["embedder"]["fingerprint"] == TEST_EMBEDDER.fingerprint.to_meta()  # pinned: CI needs no model
    code, out, _ = cli("diff", written)
    assert code == 0, out
    code, out, _ = cli(
        "diff", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "english", "--weights", "0.3,0.7"
    )
    assert code == 2 and "needs a new index" in out and "analyzer" in out


def test_init_and_apply_agree(cli, client, index_name, tmp_path):
    """`init` with flags is `apply` with the same flags: one leaves nothing for the other to do."""
    code, _, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "english")
    assert code == 0, err
    code, out, _ = cli("diff", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "english")
    assert code == 0 and "in sync" in out


def test_reindex_rollback_prune_from_the_command_line(cli, client, spec_file, index_name, support_docs_path):
    """An analyzer change needs a new index: reindex builds it with the same model (vectors reused,
    no model call), diff is in sync after the swap; rollback and prune finish the round."""
    _applied(cli, spec_file)
    code, _, err = cli(
        "ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache"
    )
    assert code == 0, err
    doc = yaml.safe_load(spec_file.read_text())
    doc["index"]["analyzer"] = "spanish"
    spec_file.write_text(yaml.safe_dump(doc))
    code, out, _ = cli("diff", spec_file)
    assert code == 2 and "needs a new index" in out
    code, out, err = cli("reindex", spec_file, "-q", "--no-cache", "--checkpoint", spec_file.parent / "ckpt.json")
    assert code == 0, err
    assert (
        f"alias {index_name}: {index_name}-v1 -> {index_name}-v2 (12 entries" in out
        and "embedded: 0" in out
        and "vectors reused: 12" in out
    )
    code, out, _ = cli("diff", spec_file)
    assert code == 0, out
    code, out, err = cli("rollback", spec_file, "--embedder", "test:hashing", "--no-cache")
    assert code == 0 and f"{index_name}-v2 -> {index_name}-v1" in out, err
    code, out, _ = cli("prune", index_name, "--unfinished", "--dry-run")
    assert code == 0 and f"would delete: {index_name}-v2" in out and client.indices.exists(index=f"{index_name}-v2")
    code, out, _ = cli("prune", index_name, "--unfinished")
    assert code == 0 and not client.indices.exists(index=f"{index_name}-v2")


@pytest.mark.engine("elasticsearch")
def test_init_then_diff_is_in_sync_on_elasticsearch(cli, client, index_name):
    """Elasticsearch has no search pipelines: plan/diff read none there (they used to ask for
    every stored pipeline and failed), and what init made is what diff expects."""
    code, _, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "standard")
    assert code == 0, err
    code, out, err = cli("diff", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "standard")
    assert code == 0 and "in sync" in out, out + err
