"""The command line end to end: init, ingest, search, render; errors exit 2 with a message."""

import json
import re

import pytest

from adapter.fusion.choice.policy import DEFAULT_POLICY
from adapter.cli import main
from adapter.index.contracts import SEARCH_SCHEMA_VERSION, Contract, validate
from adapter.engines import connect
from adapter.engines.opensearch import OPENSEARCH

# A hit row of the table: its rank, then its score (the timing line, wrapped, can start with a number too).
HIT_ROW = re.compile(r"^\d+\s+-?\d+\.\d{4}\s")


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def init_support(capsys, index, url):
    """``hybrid init`` of the support index: e5, the Spanish analyzer."""
    return run(capsys, "init", "--index", index, "--embedder", "multilingual-e5-small", "--analyzer", "spanish", *url)


def ingest_support(capsys, source, index, cache, url, *options):
    """``hybrid ingest`` of the support documents, quietly, with ``options`` and an embedding cache."""
    return run(capsys, "ingest", str(source), "--index", index, "--quiet", *options, "--cache", str(cache), *url)


def test_init_ingest_search_from_the_command_line(
    capsys, opensearch_url, index_name, support_docs_path, tmp_path, target
):
    url = ("--url", opensearch_url)
    code, out, _ = init_support(capsys, index_name, url)
    assert code == 0 and f"created  index              {index_name}-v1" in out
    code, out, _ = init_support(capsys, index_name, url)
    assert code == 0 and "nothing to change" in out
    code, out, _ = ingest_support(capsys, support_docs_path, index_name, tmp_path / "c.sqlite", url)
    assert code == 0 and "documents: 12  chunks: 12  failures: 0" in out
    # The index's adaptive default runs its baseline until it is calibrated: the ingest says how.
    assert f"next: hybrid calibrate --index {index_name} --queries FILE" in out
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--explain", "-k", "3", *url)
    rows = [line for line in out.splitlines() if HIT_ROW.match(line)]
    assert code == 0 and "fused by server:" in out and rows[0].split()[:1] == ["1"] and "e-4012" in rows[0]
    # `hybrid init` made the index adaptive (the measured default); calibrating it needs only query texts.
    # Its baseline is the form the selection chose where the cluster runs z_score, else min_max.
    base = DEFAULT_POLICY.base(OPENSEARCH.probe(connect(opensearch_url)).z_score).value
    assert f"adaptive fusion: baseline {base} 0.50 / 0.50" in out and "corpus: not calibrated" in out
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--show-query", "-k", "3", *url)
    first = re.split(r"^== request \d+/\d+$", out, flags=re.M)[1].strip().splitlines()
    # beside the empty shard init created: one request
    assert first[0].startswith(f"POST /{index_name},hybrid-empty-shard/_search")
    assert json.loads("\n".join(first[1:]))["query"]["hybrid"]["pagination_depth"] == 100
    queries = tmp_path / "queries.txt"
    # Ten natural-language requests (fewer are too few to depart from the 0.5 / 0.5 baseline), most of
    # whose words this 12-document corpus lacks: the policy moves the weight to the dense leg.
    queries.write_text(
        "¿cómo devuelvo un pedido?\nno recuerdo mi clave\n¿cuánto tarda un envío a Canarias?\n"
        "quiero que me devuelvan el dinero\n¿dónde está mi paquete?\nme cobraron dos veces\n"
        "no puedo entrar en mi cuenta\n¿puedo cambiar la dirección de entrega?\nel producto llegó roto\n"
        "¿cómo imprimo la etiqueta para enviarlo de vuelta?\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "calibrate", "--index", index_name, "--queries", str(queries), *url)
    assert code == 0 and "over 10 queries" in out and f"search pipeline {index_name}-adaptive updated" in out
    code, out, _ = run(capsys, "search", "¿cómo devuelvo un pedido?", "--index", index_name, "-k", "3", *url)
    hits = [line for line in out.splitlines() if HIT_ROW.match(line)]
    # Without --explain the choice is one line of weights (issue 39: the whole explanation was printed every time).
    assert (
        code == 0
        and "(natural query; --explain says why)" in out
        and "calibration queries" not in out
        and "facturacion" not in hits[0]
    )
    code, out, _ = run(
        capsys, "search", "¿cómo devuelvo un pedido?", "--index", index_name, "-k", "3", "--explain", *url
    )
    assert code == 0 and "calibration queries" in out and "more dense" in out
    # Piped (as here), --json is one line: a 10-hit answer of short documents within 10 KB (it was 11.4 KB indented).
    code, out, _ = run(capsys, "search", "pedido", "--index", index_name, "--json", "-k", "10", *url)
    assert code == 0 and len(json.loads(out)["hits"]) == 10 and len(out.strip().splitlines()) == 1
    assert len(out.encode("utf-8")) <= 10_240, len(out.encode("utf-8"))
    code, out, _ = run(capsys, "search", "error E-4012", "--index", index_name, "--json", "-t", "client-rrf", *url)
    data = json.loads(out)
    validate(Contract.SEARCH, data)  # the documented contract (adapter/schemas/search.schema.json)
    assert (
        data["technique"] == "client-rrf"
        and data["hits"][0]["id"] == "e-4012"
        and data["schema_version"] == SEARCH_SCHEMA_VERSION
    )
    code, out, _ = run(
        capsys, "search", "x", "--index", index_name, "--fusion", "z_score-arithmetic_mean", "--json", *url
    )
    data = json.loads(out)
    validate(Contract.SEARCH, data)
    if OPENSEARCH.probe(connect(opensearch_url)).z_score:  # the capability follows the probed cluster
        assert (
            code == 0
            and data["fused_by"] == "server-pipeline"
            and data["pipeline"] == f"{index_name}-z_score-arithmetic_mean"
        )
    else:
        assert (
            code == 0
            and "z_score normalisation needs OpenSearch 3.0+" in data["notices"][0]
            and data["fused_by"] == "client"
        )
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
    code, out, _ = run(
        capsys, "render", "--index", "docs", "--embedder", "multilingual-e5-small", "--analyzer", "english"
    )
    data = json.loads(out)
    assert code == 0 and data["index_template"]["docs"]["index_patterns"] == ["docs-v*"]
    assert (
        data["component_templates"]["docs-text"]["template"]["mappings"]["properties"]["text"]["analyzer"] == "english"
    )
    assert "docs-rrf" in data["pipelines"]


def test_search_page_flags(capsys, opensearch_url, index_name, support_docs_path, tmp_path):
    """--highlight, --facet, --collapse/--inner-hits, --sort, --min-score: in the table and in --json,
    with the notice where the cluster cannot do one on the server (collapse before 3.1)."""
    url = ("--url", opensearch_url)
    init_support(capsys, index_name, url)
    chunked = ("--chunk-size", "6", "--chunk-overlap", "2", "--metadata-fields", "category,lang")
    code, out, _ = ingest_support(capsys, support_docs_path, index_name, tmp_path / "c.sqlite", url, *chunked)
    assert code == 0 and "chunks: 38" in out
    page = ("--highlight", "--facet", "category", "--collapse", "--inner-hits", "1")
    code, out, _ = run(capsys, "search", "devoluciones del pedido", "--index", index_name, "-k", "3", *page, *url)
    assert code == 0 and "snippet" in out and "more" in out and "facet category: devoluciones" in out and "docs)" in out
    code, out, _ = run(
        capsys, "search", "devoluciones del pedido", "--index", index_name, "-k", "3", *page, "--json", *url
    )
    data = json.loads(out)
    validate(Contract.SEARCH, data)  # highlight, facets, collapsed chunks
    hits = data["hits"]
    assert code == 0 and len({h["source"]["parent_id"] for h in hits}) == 3 and any(h["highlight"] for h in hits)
    chunks = [(h, c) for h in hits for c in h["chunks"]]
    assert chunks and all(c["source"]["parent_id"] == h["source"]["parent_id"] for h, c in chunks)
    assert data["aggregations"]["category"]["buckets"][0]["key"] == "devoluciones"
    collapsed_on_server = OPENSEARCH.probe(connect(opensearch_url)).hybrid_collapse
    assert ("collapse" in data["sent"][0]["body"]) == collapsed_on_server
    assert any("collapse" in n for n in data["notices"]) == (not collapsed_on_server)
    code, out, _ = run(
        capsys, "search", "pedido", "--index", index_name, "-k", "4", "--sort", "chunk_index:desc", "--json", *url
    )
    values = [h["source"]["chunk_index"] for h in json.loads(out)["hits"]]
    assert code == 0 and values == sorted(values, reverse=True)
    code, _, err = run(capsys, "search", "pedido", "--index", index_name, "--sort", "year", "--min-score", "0.2", *url)
    assert code == 2 and "field sort" in err
    code, _, err = run(capsys, "search", "pedido", "--index", index_name, "--inner-hits", "2", *url)
    assert code == 2 and "--inner-hits needs --collapse" in err
