"""Renamed options keep working, with a warning that names the new one: "engine" is the search engine
only (the k-NN method is knn_method, the local node's engine its distribution); "chunk" is a text
chunk only (bulk actions per request are a batch). Users have scripts with the old spellings."""

from __future__ import annotations

import warnings

import pytest

from adapter.index.assets import IndexSpec
from adapter.cli import build_parser
from adapter.errors import InputError
from adapter.index.spec import parse_spec_text, spec_from_document
from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("m", "s", "x", 4, True)


@pytest.mark.parametrize(
    "command", [["render", "--index", "docs"], ["init", "--index", "docs"], ["plan", "--index", "docs"]]
)
def test_the_k_nn_method_flag_and_its_old_spelling(command, capsys):
    parser = build_parser()
    assert (
        parser.parse_args(command).knn_method is None
    )  # not given: an existing index's own, else IndexSpec's (lucene)
    assert IndexSpec.knn_method == "lucene"
    assert parser.parse_args([*command, "--knn-method", "faiss"]).knn_method == "faiss"
    assert "deprecated" not in capsys.readouterr().err
    assert parser.parse_args([*command, "--engine", "nmslib"]).knn_method == "nmslib"
    assert "warning: --engine is deprecated: use --knn-method" in capsys.readouterr().err


def test_the_spec_key_and_its_old_spelling():
    new = parse_spec_text("alias: docs\nembedder: minilm\nindex: {knn_method: faiss}\n")
    with pytest.warns(FutureWarning, match="index.engine is deprecated: name the k-NN method index.knn_method"):
        old = parse_spec_text("alias: docs\nembedder: minilm\nindex: {engine: faiss}\n")
    assert new.knn_method == old.knn_method == "faiss" and new.to_document()["index"]["knn_method"] == "faiss"
    assert "engine" not in new.to_document()["index"]
    with pytest.raises(InputError, match="give one of them"):
        parse_spec_text("alias: docs\nembedder: minilm\nindex: {engine: faiss, knn_method: lucene}\n")


def test_the_library_keyword_and_attribute_and_their_old_spelling():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert IndexSpec(FP, knn_method="faiss").knn_method == "faiss"
    with pytest.warns(FutureWarning, match="knn_method"):
        spec = IndexSpec(FP, engine="nmslib")
    with pytest.warns(FutureWarning, match="knn_method"):
        assert spec.engine == "nmslib" == spec.knn_method
    assert spec == IndexSpec(FP, knn_method="nmslib")


def test_the_local_node_distribution_flag_and_its_old_spelling(capsys):
    from adapter.local.command import node_config

    parser = build_parser()
    assert node_config(parser.parse_args(["local", "status"])).distribution == "opensearch"
    new = node_config(parser.parse_args(["local", "up", "--distribution", "elasticsearch"]))
    assert new.distribution == "elasticsearch" and "deprecated" not in capsys.readouterr().err
    old = node_config(parser.parse_args(["local", "up", "--engine", "elasticsearch"]))
    assert old.distribution == "elasticsearch"
    assert "warning: --engine is deprecated: use --distribution" in capsys.readouterr().err


def test_the_node_config_keyword_and_attribute_and_their_old_spelling():
    from adapter.local import NodeConfig

    with pytest.warns(FutureWarning, match="distribution"):
        config = NodeConfig(engine="elasticsearch")
    with pytest.warns(FutureWarning, match="distribution"):
        assert config.engine == "elasticsearch" == config.distribution
    assert config == NodeConfig(
        distribution="elasticsearch", cache_dir=config.cache_dir, artifacts_dir=config.artifacts_dir
    )


def test_bulk_actions_per_request_are_a_batch_and_the_old_keyword_still_works():
    from adapter.index.catalog import IndexInfo
    from adapter.ingest.ingestor import Ingestor
    from tests.support.fake_engine import FakeCluster

    class Embedder:
        fingerprint, dimension, normalized = FP, 4, True

    info = IndexInfo("docs", "docs-v1", FP)
    assert Ingestor(FakeCluster(), info, Embedder(), bulk_batch_size=7).bulk_batch_size == 7
    with pytest.warns(FutureWarning, match="bulk_batch_size"):
        assert Ingestor(FakeCluster(), info, Embedder(), bulk_chunk_size=9).bulk_batch_size == 9


def test_the_spec_key_warning_names_the_line_that_read_the_spec():
    # The warning is raised a step below spec_from_document; it must still point at its caller, not at the adapter.
    with pytest.warns(FutureWarning, match="index.engine is deprecated") as caught:
        spec_from_document({"alias": "docs", "embedder": "minilm", "index": {"engine": "faiss"}})
    assert [w.filename for w in caught] == [__file__]
