"""The command line end to end: init, ingest, search, render; errors exit 2 with a message."""

import json

import pytest

from adapter.cli import main
from adapter.client import connect
from adapter.engines.opensearch import OPENSEARCH


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_ingest_search_from_the_command_line(capsys, opensearch_url, index_name, support_docs_path, tmp_path, target):
    url = ("--url", opensearch_url)
    code, out, _ = run(capsys, "init", "--index", index_name, "--embedder", "multilingual-e5-small", "--analyzer", "spanish", *url)
    assert code == 0 and f"created  index              {index_name}-v1" in out
    code, out, _ = run(capsys, "init", "--index", index_name, "--embedder", "multilingual-e5-small", "--analyzer", "spanish", *url)
    assert code == 0 and "nothing to change" in out
    code, out, _ = run(capsys, "ingest", str(support_docs_path), "--index", index_name, "--quiet", "--cache", str(tmp_path / "c.sqlite"), *url)
    assert code == 0 and "documents: 12  chunks: 12  failures: 0" in out
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--explain", "-k", "3", *url)
    rows = [line for line in out.splitlines() if line[:1].isdigit()]
    assert code == 0 and "fused by server:" in out and rows[0].split()[:3] == ["1", "1.0000", "e-4012"]
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--show-query", "-k", "3", *url)
    request = out[out.index("== request 1/1"):].splitlines()
    assert request[1] == f"POST /{index_name}/_search?search_pipeline={index_name}-min_max-arithmetic_mean"
    assert json.loads("\n".join(request[2:]))["query"]["hybrid"]["pagination_depth"] == 100
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--json", "-t", "client-rrf", *url)
    data = json.loads(out)
    assert data["technique"] == "client-rrf" and data["hits"][0]["id"] == "e-4012"
    code, out, _ = run(capsys, "search", "x", "--index", index_name, "--fusion", "z_score-arithmetic_mean", "--json", *url)
    data = json.loads(out)
    if OPENSEARCH.probe(connect(opensearch_url)).z_score:  # the capability follows the probed cluster
        assert code == 0 and data["fused_by"] == "server-pipeline" and data["pipeline"] == f"{index_name}-z_score-arithmetic_mean"
    else:
        assert code == 0 and "z_score normalisation needs OpenSearch 3.0+" in data["notices"][0] and data["fused_by"] == "client"
    assert data["sent"] and data["sent"][0]["method"] == "POST"


@pytest.mark.engine("opensearch", "elasticsearch")
def test_cli_errors_are_one_clear_line(capsys, opensearch_url):
    code, _, err = run(capsys, "search", "  ", "--index", "whatever", "--url", opensearch_url)
    assert code == 2 and err.startswith("error: ")
    code, _, err = run(capsys, "search", "hola", "--index", "whatever", "--url", "http://127.0.0.1:9")
    assert code == 2 and "cannot reach OpenSearch" in err
    code, _, err = run(capsys, "init", "--index", "Bad Name", "--url", opensearch_url)
    assert code == 2 and "not valid" in err


def test_render_prints_assets_without_a_cluster(capsys):
    code, out, _ = run(capsys, "render", "--index", "docs", "--embedder", "multilingual-e5-small", "--analyzer", "english")
    data = json.loads(out)
    assert code == 0 and data["index_template"]["docs"]["index_patterns"] == ["docs-v*"]
    assert data["component_templates"]["docs-text"]["template"]["mappings"]["properties"]["text"]["analyzer"] == "english"
    assert "docs-rrf" in data["pipelines"]
