"""What other tools and people see: the requests on a result, the Serverless probe, the tables."""

from __future__ import annotations

import json
from types import SimpleNamespace

from adapter.cli.printers import compact_numbers, print_result
from adapter.engines.opensearch import OpenSearchEngine
from adapter.fusion import RRF, ScoreNormalization
from tests.support.pages import page_answer
from adapter.testing import FakeClient
from adapter.fusion.base import FusedBy, LegScore
from adapter.search.results import Hit, SearchResult, Technique
from adapter.engines.dsl import SentRequest
from tests.unit.search.test_shell import hits, pipelines, searcher
from adapter.engines.opensearch.capabilities import serverless_capabilities


def signed_for(service: str, **answers) -> FakeClient:
    client = FakeClient(answers)
    # as opensearch-py's SigV4 signers carry it
    client.transport.kwargs = {"http_auth": SimpleNamespace(service=service)}
    return client


def test_serverless_probe_asks_nothing_the_collection_lacks():
    client = signed_for("aoss")
    caps = OpenSearchEngine().probe(client)
    assert client.calls == []  # before: GET / (404 on Serverless)
    assert caps.serverless and caps.pagination_depth and not caps.rrf


def test_managed_service_probe_reads_the_version():
    nodes = {
        "nodes": {
            "n": {"version": "2.19.1", "plugins": [{"name": "opensearch-knn"}, {"name": "opensearch-neural-search"}]}
        }
    }
    client = signed_for(
        "es", **{"GET /": {"cluster_uuid": "u", "version": {"number": "2.19.1"}}, "GET /_nodes*": nodes}
    )
    caps = OpenSearchEngine().probe(client)
    assert (
        [c.key for c in client.calls] == ["GET /", "GET /_nodes/plugins"]
        and caps.version == "2.19.1"
        and not caps.serverless
    )


def test_the_result_carries_the_exact_requests_sent():
    client = FakeClient({"* /_search/pipeline/*": pipelines(ScoreNormalization()), "POST */_search": hits(("a", 0.9))})
    result = searcher(client).search("hola", k=3)
    (sent,) = result.sent  # the hybrid beside the empty shard, its page's bounded texts inside it
    (call,) = client.calls_to("POST */_search")  # the empty shard is taken as there: not checked first
    assert sent == SentRequest(
        "POST", "/docs,hybrid-empty-shard/_search", {"search_pipeline": "docs-min_max-arithmetic_mean"}, call.body
    )
    assert set(call.body["highlight"]["fields"]) == {"title", "text"}
    assert result.request_body == call.body  # the body that went out, as the node read it
    hybrid = result.request_body["query"]["hybrid"]
    assert hybrid["pagination_depth"] == 100
    assert hybrid["queries"][0] == {
        "multi_match": {"query": "hola", "fields": ["title", "text"], "type": "most_fields", "operator": "or"}
    }
    assert hybrid["queries"][1]["knn"]["embedding"]["k"] == 100
    text = sent.as_text()
    assert text.startswith("POST /docs,hybrid-empty-shard/_search?search_pipeline=docs-min_max-arithmetic_mean\n")
    assert json.loads(text.split("\n", 1)[1]) == call.body


def test_client_rrf_records_its_msearch_and_the_page_fetch():
    client = FakeClient(
        {
            "POST */_msearch": {"took": 4, "responses": [hits(("a", 2.0)), hits(("a", 0.9))]},
            "POST */_search": page_answer({"a": {"text": "uno"}}),
        }
    )
    result = searcher(client).search("hola", technique="client-rrf", fusion=RRF(40))
    assert [(s.method, s.path) for s in result.sent] == [("POST", "/_msearch"), ("POST", "/docs-v1/_search")]
    assert result.hits[0].text == "uno"  # the excerpt, from the page fetch's highlight
    assert result.sent[0].body == client.calls_to("POST */_msearch")[0].body
    assert (
        result.sent[1].params == {"search_pipeline": "_none"}
        and result.sent[1].body == client.calls_to("POST */_search")[0].body
    )
    assert result.sent[1].body["query"] == {"ids": {"values": ["a"]}}
    ndjson = result.sent[0].as_text().splitlines()[1:]
    assert [json.loads(line) for line in ndjson] == result.sent[0].body


def test_show_query_puts_vectors_on_one_line():
    text = json.dumps({"knn": {"embedding": {"vector": [0.1, -2e-05, 3.0], "k": 100}}}, indent=2)
    compact = compact_numbers(text)
    assert '"vector": [0.1, -2e-05, 3.0]' in compact and json.loads(compact) == json.loads(text)


def explained(title: str, rank: int) -> Hit:
    legs = (LegScore("bm25", rank, 12.3456, 1.0, 0.5, 0.5), LegScore("dense", None, None, None, 0.5, 0.0))
    return Hit(f"doc-{rank}", 0.5 / rank, {}, rank, legs, title=title)


def test_explain_columns_line_up_whatever_the_titles(capsys):
    """Before: titles shorter or longer than 48 characters pushed the per-leg cells off their header."""
    titles = ["E-4012", "¿Cómo devuelvo un pedido que llegó dañado o incompleto a mi domicilio?", "Pago"]
    result = SearchResult(
        "q",
        Technique.HYBRID,
        tuple(explained(t, i + 1) for i, t in enumerate(titles)),
        FusedBy.SERVER_PIPELINE,
        ScoreNormalization(),
        "docs-min_max-arithmetic_mean",
        3.0,
        5.0,
    )
    print_result(result, explain=True)
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("#"))
    rows = [line for line in lines if line[:1] in "123"]
    assert len(rows) == 3 and "rank" in header and "contrib" in header
    # Right-aligned figures: every cell ends exactly where its header ends.
    for column in (header.index("raw") + 3, header.rindex("contrib") + 7):
        for row in rows:
            assert row[column - 1] != " " and row[column : column + 1] in ("", " "), (column, header, row)
    raw = header.index("raw") + 3
    assert rows and all(row[raw - 6 : raw] == "12.346" for row in rows)


def test_serverless_capabilities_render_pipelines_without_the_explanation_processor():
    body = OpenSearchEngine().render_pipeline(ScoreNormalization(), serverless_capabilities())
    assert "response_processors" not in body
