"""The adapter on a real Elasticsearch node: probe, init without pipelines, Hunspell Spanish, the
free-tier query + knn sum (explained, and reproduced offline), a retriever the node refuses turned
into the fallback, the command line and `hybrid eval`.

The local node is the integ-test zip (no rank-rrf, no analysis-common, basic licence); tests that
depend on exactly that are marked ``local_node``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.cli import main
from adapter.engines import connect_cluster, open_cluster
from adapter.engines.elasticsearch import ELASTICSEARCH
from adapter.errors import CapabilityError, ConfigurationError
from adapter.fusion import fuse
from adapter.fusion import RRF, ScoreNormalization, ScoreSum
from adapter.search import Searcher
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.integration.test_evaluation import tiny_beir  # noqa: F401 (fixtures)
from tests.conftest import drop_hybrid_index
from tests.support.datasets import eval_args, tuning_args
from tests.support.elastic import assert_min_max_fused_in_the_client
from tests.integration.test_search import searcher, support  # noqa: F401 (the seed's support index, Spanish, e5)

pytestmark = pytest.mark.engine("elasticsearch")


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.local_node
def test_the_probe_reads_version_modules_hunspell_and_licence(client, cluster_url, target):
    caps = ELASTICSEARCH.probe(client, refresh=True)
    assert (caps.engine, caps.version, caps.license) == ("elasticsearch", target.version, "basic")
    assert "rank-rrf" not in caps.plugins and not caps.analysis_common and "es_ES" in caps.hunspell
    assert not caps.rrf and not caps.normalization and caps.score_sum
    # GET / answers 405 here: that alone says Elasticsearch, and the right client comes back
    assert type(connect_cluster(cluster_url)).__module__ == "adapter.engines.elasticsearch.client"
    assert open_cluster(cluster_url).name == "elasticsearch" and open_cluster(cluster_url).pipelines is None


def test_init_puts_templates_and_the_index_and_no_pipelines(client, index_name, e5, target):
    # the product's default fusion (adapter.fusion.choice.defaults: measured)
    spec = IndexSpec(e5.fingerprint, analyzer="spanish")
    report = init_index(client, index_name, spec)
    assert {c.kind for c in report.changes} == {"component_template", "index_template", "index"}
    assert report.default_pipeline is None and report.default_fusion == spec.default_fusion
    assert any("no search pipelines" in n for n in report.notices)
    index = client.indices.get(index=index_name)[f"{index_name}-v1"]
    mapping, settings = index["mappings"], index["settings"]["index"]
    assert mapping["properties"]["embedding"] == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 128},
    }
    assert mapping["_meta"]["default_fusion"] == spec.default_fusion and "search" not in settings
    assert mapping["properties"]["metadata"] == {"type": "object", "dynamic": "strict"}  # the ingest declares its keys
    if target.at_least("9.2"):
        assert settings["mapping"]["exclude_source_vectors"] == "false"  # the adapter reads vectors back (MMR, check)
    again = init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    assert not again.changed  # the templates' server timestamps are not changes


@pytest.mark.local_node
def test_analyzers_the_node_lacks_are_rebuilt_said_or_refused(client, index_name, e5):
    spanish = init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    assert any("spanish_hunspell" in n and "es_ES" in n for n in spanish.notices)
    other = f"{index_name}-f"
    try:
        folding = init_index(client, other, IndexSpec(e5.fingerprint))  # the default analyzer
        assert any("NOT folded" in n for n in folding.notices)
    finally:
        drop_hybrid_index(client, other)  # its templates too (the index_name fixture drops only its own)
    with pytest.raises(ConfigurationError, match="analysis-common"):
        init_index(client, f"{index_name}-e", IndexSpec(e5.fingerprint, analyzer="english"))
    assert client.indices.get(index=f"{index_name}-e*", allow_no_indices=True) == {}
    with pytest.raises(ConfigurationError, match="Lucene's HNSW only"):
        init_index(client, f"{index_name}-e", IndexSpec(e5.fingerprint, analyzer="spanish", knn_method="faiss"))


@pytest.mark.local_node
def test_spanish_stems_with_hunspell_and_accents_stay(searcher):
    assert searcher.search("contraseñas", technique="bm25", k=1).ids == ["contrasena"]  # plural -> singular stem
    assert "contrasena" not in searcher.search("contrasenas", technique="bm25", k=3).ids  # no asciifolding on this node
    assert searcher.search("contrasenas", technique="hybrid", k=1).ids == ["contrasena"]  # the dense leg still finds it


def test_min_max_without_the_linear_retriever_is_fused_in_the_client(searcher):
    """The integ-test node has no rank-rrf module: min_max (the default's base) runs in the client,
    by the same formula, from both legs fetched in one _msearch."""
    result = searcher.search("error E-4012", k=12, depth=12, fusion=ScoreNormalization())
    assert_min_max_fused_in_the_client(result)
    offline = fuse(searcher.legs("error E-4012", depth=12), ScoreNormalization())
    assert [(h.id, h.score) for h in result.hits] == [(f.id, f.score) for f in offline][: len(result.hits)]
    assert result.ids[0] == "e-4012"


def test_hybrid_is_the_query_knn_sum_explained_leg_by_leg(searcher):
    result = searcher.search("error E-4012", fusion=ScoreSum((0.5, 0.5)), k=5, explain=True)
    assert result.technique is Technique.HYBRID and result.fused_by is FusedBy.SERVER_SUM and result.ids[0] == "e-4012"
    assert result.fusion == ScoreSum((0.5, 0.5)) and not result.notices
    body = result.request_body
    assert body["knn"]["boost"] == 0.5 and body["query"]["bool"]["boost"] == 0.5 and "retriever" not in body
    for hit in result.hits:
        assert sum(leg.contribution for leg in hit.legs) == pytest.approx(hit.score, rel=1e-5)
        bm25, dense = hit.legs
        if dense.rank is not None:
            assert 0.0 < dense.normalized_score <= 1.0  # the cosine score, (1 + cos) / 2: nothing normalises it
    assert result.hits[0].legs[0].normalized_score > 1.0  # BM25 is unbounded: it dominates equal boosts


@pytest.mark.parametrize("weights", [(0.3, 0.7), (1.0, 20.0)])
def test_offline_sum_reproduces_the_server(searcher, weights):
    """What tuning computes from the legs is what the node computes for query + knn (12 documents: every leg is
    complete)."""
    for query in ("¿cómo devuelvo un pedido?", "error E-4012 tarjeta", "envío del pedido"):
        server = searcher.search(query, fusion=ScoreSum(weights), k=12, depth=12)
        offline = fuse(searcher.legs(query, depth=12), ScoreSum(weights))
        assert [h.score for h in server.hits] == pytest.approx(
            [f.score for f in offline][: len(server.hits)], rel=1e-5
        ), query
        assert {h.id for h in server.hits} == {f.id for f in offline[: len(server.hits)]}, query


@pytest.mark.local_node
def test_a_retriever_the_node_lacks_is_refused_live_and_falls_back(client, support, e5):
    """As if the probe had been wrong (a licence or module it could not read): the node answers 400
    unknown retriever, and the search falls back instead of failing."""
    probed = Searcher.open(client, support, e5)
    searcher = Searcher(
        client,
        probed.info,
        replace(probed.caps, rrf=True, normalization=True, plugins=(*probed.caps.plugins, "rank-rrf")),
        e5,
    )
    rrf = searcher.search("error E-4012", fusion=RRF(), k=3)
    assert rrf.fused_by is FusedBy.CLIENT and rrf.technique is Technique.CLIENT and rrf.ids[0] == "e-4012"
    assert "unknown retriever [rrf]" in rrf.notices[0]
    linear = searcher.search("error E-4012", fusion=ScoreNormalization(weights=(0.3, 0.7)), k=3)
    assert linear.fused_by is FusedBy.CLIENT and linear.fusion == ScoreNormalization(weights=(0.3, 0.7))
    assert "unknown retriever [linear]" in linear.notices[0] and linear.sent[0].path == "/_msearch"
    strict = Searcher(
        client,
        probed.info,
        replace(probed.caps, rrf=True, plugins=(*probed.caps.plugins, "rank-rrf")),
        e5,
        allow_fallback=False,
    )
    with pytest.raises(CapabilityError, match=r"unknown retriever \[rrf\]"):
        strict.search("error E-4012", fusion=RRF())


@pytest.mark.parametrize("fusion", [ScoreSum(), ScoreNormalization()], ids=["sum", "min_max-in-the-client"])
def test_pages_are_cut_from_one_list(searcher, fusion):
    both = searcher.search("pedido envío devolución cuenta", fusion=fusion, k=8, depth=12)
    pages = [searcher.search("pedido envío devolución cuenta", fusion=fusion, k=4, from_=f, depth=12) for f in (0, 4)]
    assert pages[0].ids + pages[1].ids == both.ids


def test_command_line_on_elasticsearch(capsys, cluster_url, index_name, support_docs_path, tmp_path):
    url = ("--url", cluster_url)  # the engine is asked, not told
    code, out, _ = run(
        capsys, "init", "--index", index_name, "--embedder", "multilingual-e5-small", "--analyzer", "spanish", *url
    )
    assert code == 0 and f"created  index              {index_name}-v1" in out and "no search pipelines" in out
    code, out, _ = run(
        capsys, "ingest", support_docs_path, "--index", index_name, "--quiet", "--cache", tmp_path / "c.sqlite", *url
    )
    assert code == 0 and "documents: 12  chunks: 12  failures: 0" in out
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--explain", "-k", "3", *url)
    rows = [line for line in out.splitlines() if re.match(r"\s*\d+\s+\d+\.\d{4}\s", line)]
    assert code == 0 and "fused by client:min_max-arithmetic_mean" in out and rows[0].split()[3] == "e-4012"
    code, out, _ = run(
        capsys, "search", "error E-4012", "--index", index_name, "--fusion", "sum", "--show-query", "-k", "3", *url
    )
    request = out[out.index("== request 1/1") :].splitlines()
    assert request[1] == f"POST /{index_name}/_search"
    assert set(json.loads("\n".join(request[2:]))) >= {"query", "knn"}
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--fusion", "rrf", "--json", *url)
    data = json.loads(out)
    from adapter.index.contracts import Contract, validate

    validate(Contract.SEARCH, data)
    assert code == 0 and data["fused_by"] in ("client", "server-retriever") and data["hits"][0]["id"] == "e-4012"


def test_eval_and_tuning_on_elasticsearch(capsys, cluster_url, tiny_beir, tmp_path, index_name):  # noqa: F811
    out_json, tuned, policy = tmp_path / "eval.json", tmp_path / "tuned.json", tmp_path / "policy.json"
    options = (
        "--analyzer",
        "spanish",
        *tuning_args(tmp_path),
        "--json",
        out_json,
        "--quiet",
        "--cache",
        tmp_path / "c.sqlite",
    )
    code, out, _ = run(capsys, *eval_args(tiny_beir, index_name, cluster_url, *options))
    assert code == 0
    data = json.loads(out_json.read_text())
    from adapter.index.contracts import Contract, validate

    validate(Contract.EVAL, data)
    assert {"bm25", "dense", "hybrid-sum", "client-rrf"} <= set(data["results"]) and data["settings"][
        "engine"
    ] == "elasticsearch"
    assert any(n.startswith("hybrid-tuned-") for n in data["results"])
    assert json.loads(policy.read_text())["kind"] == "adaptive-fusion-policy"  # where it was asked to go, not the cwd
    assert data["results"]["bm25"]["mrr@10"] > 0.3
    asset = json.loads(tuned.read_text())
    assert asset["fusion"] and "hybrid search --fusion" in asset["description"] and "winning fusion written" in out
