"""hybrid serve: what a request may ask for, refused with a reason before the cluster sees it."""

from tests.support.extras import skip_module_without

skip_module_without("serve")  # before the imports that need FastAPI and pydantic

import pytest  # noqa: E402

from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities  # noqa: E402
from adapter.engines.opensearch.capabilities import opensearch_capabilities  # noqa: E402
from adapter.errors import InputError  # noqa: E402
from adapter.serve import Limits, engine_notes  # noqa: E402
from adapter.serve.service import offered_fusions  # noqa: E402
from adapter.serve.params import parse_compare, parse_config, query_text  # noqa: E402
from adapter.search.results import Technique  # noqa: E402

pytestmark = pytest.mark.unit

LIMITS = Limits()


def test_a_configuration_from_query_string_values():
    c = parse_config(
        {
            "technique": "hybrid",
            "fusion": "RRF",
            "weights": "0.3,0.7",
            "k": "5",
            "from": "10",
            "depth": "50",
            "mmr": "0.5",
            "explain": "false",
            "filter": ["lang=es", "category=a|b"],
        },
        LIMITS,
        reranker=False,
    )
    assert (c.technique, c.fusion, c.weights, c.k, c.from_, c.depth, c.mmr, c.explain) == (
        Technique.HYBRID,
        "rrf",
        (0.3, 0.7),
        5,
        10,
        50,
        0.5,
        False,
    )
    assert c.filters == (("lang", "es"), ("category", ("a", "b")))
    assert parse_config({}, LIMITS, reranker=False) == parse_config({"technique": "hybrid"}, LIMITS, reranker=False)
    assert parse_config({"weights": [0.2, 0.8]}, LIMITS, reranker=False).weights == (0.2, 0.8)  # a JSON body's list


@pytest.mark.parametrize(
    "params, says",
    [
        ({"k": "500"}, "k must be from 1 to 100"),
        ({"k": "ten"}, "whole number"),
        ({"from": "995", "k": "10"}, "at most 1000"),
        ({"depth": "5000"}, "depth must be from"),
        ({"mmr": "1.5"}, "mmr must be from 0 to 1"),
        ({"technique": "magic"}, "technique"),
        ({"weights": "0.5,x"}, "each weight"),
        ({"rerank": "50"}, "no reranker"),
        ({"explain": "maybe"}, "true or false"),
        ({"size": "10"}, "unknown parameters size"),
        ({"filter": "lang"}, "field=value"),
        ({"k": ["1", "2"]}, "given 2 times"),
    ],
)
def test_what_a_request_may_not_ask_for_is_refused_saying_why(params, says):
    with pytest.raises(InputError, match=says):
        parse_config(params, LIMITS, reranker=False)


def test_the_query_is_capped_and_a_compare_has_at_most_four_columns():
    with pytest.raises(InputError, match="empty"):
        query_text("  ", LIMITS)
    with pytest.raises(InputError, match="at most 1000"):
        query_text("x" * 1001, LIMITS)
    query, columns = parse_compare(
        {"q": "red dress", "columns": [{"technique": "bm25"}, {"technique": "hybrid", "fusion": "rrf"}]},
        LIMITS,
        reranker=False,
    )
    assert query == "red dress" and [c.technique for c in columns] == [Technique.BM25, Technique.HYBRID]
    assert columns[1].label == "hybrid · rrf"
    with pytest.raises(InputError, match="at most 4"):
        parse_compare({"q": "x", "columns": [{}] * 5}, LIMITS, reranker=False)
    with pytest.raises(InputError, match="column 2: k must be"):
        parse_compare({"q": "x", "columns": [{}, {"k": 0}]}, LIMITS, reranker=False)
    with pytest.raises(InputError, match="JSON object"):
        parse_compare(["x"], LIMITS, reranker=False)


def test_the_page_says_what_differs_on_each_engine():
    old = " ".join(engine_notes(opensearch_capabilities("2.19.1")))
    new = " ".join(engine_notes(opensearch_capabilities("3.6.0")))
    es = " ".join(engine_notes(elasticsearch_capabilities("9.2.4", license="basic")))
    assert (
        "search pipeline" in new
        and "z_score needs OpenSearch 3.0+" in old
        and "RRF weights need OpenSearch 3.1+" in old
    )
    assert "z_score" not in new and "no search pipelines" in es and "basic" in es and "not normalised" in es


def test_only_a_loopback_address_is_served_without_a_warning():
    from adapter.cli.serve import LOOPBACK, loopback

    assert LOOPBACK == "127.0.0.1"
    assert loopback("127.0.0.1") and loopback("localhost") and loopback("::1") and loopback("127.0.0.2")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.20") and not loopback("example.org")


def test_a_column_may_ask_for_every_fusion_this_engine_can_serve_and_says_where_it_runs():
    # On a basic licence Elasticsearch's server runs only the sum: RRF and min_max are fused in the
    # client (the result's notices say so). The page offered only adaptive, sum and dbsf, so its default
    # RRF column quietly became a second copy of the index-default column; 2.19 lacked z_score, which
    # its own note says runs in the client there.
    es, client = offered_fusions(elasticsearch_capabilities("9.2.4", license="basic"))
    assert es[0] == "adaptive" and {"rrf", "min_max-arithmetic_mean", "z_score-arithmetic_mean", "sum", "dbsf"} <= set(
        es
    )
    assert "sum" not in client and {"rrf", "min_max-arithmetic_mean", "dbsf"} <= set(client)
    old, client = offered_fusions(opensearch_capabilities("2.19.1"))
    assert "z_score-arithmetic_mean" in old and set(client) == {"z_score-arithmetic_mean", "dbsf"}
    new, client = offered_fusions(opensearch_capabilities("3.6.0"))
    # the sum is Elasticsearch's request, not a fusion here
    assert "sum" not in new and "rrf" in new and client == ("dbsf",)


def test_full_text_is_asked_for_by_name_and_off_by_default():
    """Hits carry bounded excerpts unless the request asks for the whole texts (issue 20 item 2)."""
    assert parse_config({}, LIMITS, reranker=False).full_text is False
    assert parse_config({"full_text": "1"}, LIMITS, reranker=False).full_text is True
    assert parse_config({"full_text": True}, LIMITS, reranker=False).full_text is True
