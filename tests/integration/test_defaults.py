"""The measured defaults on a real node (issue 18): what `hybrid init` chooses for this cluster and
says why, the text layout it gives a new index and keeps on an existing one, and learned fusion
as an explicit opt-in that fuses in the client."""

from __future__ import annotations

import json

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import COMBINED_FIELD, IndexSpec
from adapter.index.catalog import read_index_info
from adapter.engines.registry import engine_named
from adapter.engines.engine import measured_kind
from adapter.fusion.choice.defaults import default_fusion_name, default_layout
from adapter.engines import cluster_for
from adapter.ingest.ingestor import Ingestor
from adapter.fusion.choice.learned import SCHEMA1_FEATURES, LearnedFusion
from adapter.ingest.sources import FieldMap, read_source
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401

pytestmark = pytest.mark.engine("opensearch")


def test_init_gives_a_new_index_the_measured_fusion_and_layout_and_says_why(cli, client, index_name, cluster_url):  # noqa: F811
    code, out, _ = cli(
        "init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "spanish", "--url", cluster_url
    )
    assert code == 0
    caps = cluster_for(client).probe()
    kind = measured_kind(engine_named(caps.engine), caps)
    info = read_index_info(client, index_name)
    assert info.default_fusion == default_fusion_name(kind)
    assert f"{caps.engine} {caps.version}: default fusion {default_fusion_name(kind)}" in out
    assert "worst-case loss against the best untuned alternative over 10 labelled sets" in out
    assert default_layout() == "combined" and info.query_fields == (COMBINED_FIELD,)
    assert "text layout: combined (the measured default for new indexes" in out


def test_init_keeps_the_layout_of_an_existing_index(cli, client, index_name, cluster_url):  # noqa: F811
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish", text_layout="fields"))
    code, out, _ = cli(
        "init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "spanish", "--url", cluster_url
    )
    assert code == 0 and "text layout: fields (the existing index's" in out  # not refused as a layout change
    assert COMBINED_FIELD not in read_index_info(client, index_name).query_fields


def test_learned_fusion_is_an_opt_in_that_fuses_in_the_client(
    cli, client, index_name, support_docs_path, tmp_path, cluster_url
):  # noqa: F811
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    report = Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False).ingest(
        read_source(support_docs_path, FieldMap())
    )
    assert not report.failures
    # Found by both legs counts, then BM25's min_max score: the code's article first.
    model = LearnedFusion(
        tuple({"bm25_found": 1.0, "dense_found": 1.0, "bm25_min_max": 2.0}.get(f, 0.0) for f in SCHEMA1_FEATURES),
        trained_on={"dataset": "hand-made", "split": "none", "queries": 0},
        features=SCHEMA1_FEATURES,
    )
    path = tmp_path / "model.json"
    path.write_text(model.dumps())
    code, out, _ = cli(
        "search",
        "error E-4012",
        "--index",
        index_name,
        "--embedder",
        "test:hashing",
        "--fusion",
        "learned",
        "--model",
        path,
        "--json",
        "--url",
        cluster_url,
    )
    data = json.loads(out)
    assert (
        code == 0
        and data["fused_by"] == "client"
        and data["technique"] == "client"
        and data["hits"][0]["id"] == "e-4012"
    )
    assert data["fusion"]["name"] == "learned" and data["fusion"]["trained_on"]["dataset"] == "hand-made"
    code, _, err = cli(
        "search", "x", "--index", index_name, "--embedder", "test:hashing", "--fusion", "learned", "--url", cluster_url
    )
    assert code != 0 and "needs its model" in err
