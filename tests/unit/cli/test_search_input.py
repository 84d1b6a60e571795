"""`hybrid search --query-vector` input and the result line's timing (no cluster)."""

import io

import pytest

from adapter.cli.search import QueryTiming, read_query_vector
from adapter.errors import InputError

pytestmark = pytest.mark.unit


def test_a_query_vector_is_json_or_numbers_separated_by_spaces_commas_or_lines(tmp_path, monkeypatch):
    (tmp_path / "v.json").write_text("[0.5, -1, 2e-3]\n")
    assert read_query_vector(str(tmp_path / "v.json")) == [0.5, -1.0, 0.002]
    monkeypatch.setattr("sys.stdin", io.StringIO("0.5, -1\n2e-3\n"))
    assert read_query_vector("-") == [0.5, -1.0, 0.002]


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "non-empty"),
        ("[]", "non-empty"),
        ('["a"]', "list of numbers"),
        ("[true]", "list of numbers"),
        ("1 two", "neither a JSON array"),
        ("[1, NaN]", "not finite"),
        ('{"v": [1]}', "neither"),
    ],
)
def test_a_bad_query_vector_is_refused_saying_why(tmp_path, text, says):
    (tmp_path / "v").write_text(text)
    with pytest.raises(InputError, match=says):
        read_query_vector(str(tmp_path / "v"))


def test_a_missing_vector_file_is_named(tmp_path):
    with pytest.raises(InputError, match="cannot read the query vector from .*nope"):
        read_query_vector(str(tmp_path / "nope"))


def test_the_result_line_keeps_the_models_load_apart_from_the_query():
    line = QueryTiming(load_s=8.14, embed_ms=6.2).line(21.0)
    assert line.startswith("27 ms (query: 6 ms embedding + 21 ms search)") and "model loaded in 8.1 s" in line
    assert QueryTiming(source="-").line(12.0) == "12 ms (search; query vector from standard input)"
    assert QueryTiming().line(12.0) == "12 ms (search)"


# -- item 7: zero results say why ------------------------------------------------------------------------------
def test_an_empty_index_and_a_query_bm25_cannot_match_get_a_note():
    """Before: exit 0 and nothing said; bm25 returned 0 hits, hybrid returned the dense leg's hits alone."""
    from adapter.cli.search import match_notes

    assert match_notes("docs", documents=0, coverage=-1.0, technique="hybrid", hits=0) == [
        "index 'docs' holds no documents: nothing can match yet (hybrid ingest FILE --index docs)"
    ]
    assert match_notes("docs", documents=None, coverage=None, technique="hybrid", hits=10) == [
        "the query has no word the index's analyzer keeps (stopwords only): BM25 matched nothing, so these hits are "
        "the dense leg's alone"
    ]
    assert match_notes("docs", documents=12, coverage=None, technique="bm25", hits=0) == [
        "the query has no word the index's analyzer keeps (stopwords only): BM25 matched nothing; -t dense searches by "
        "meaning"
    ]
    assert match_notes("docs", documents=12, coverage=0.0, technique="bm25", hits=0)[0].startswith(
        "none of the query's words is in the index: BM25 matched nothing"
    )
    assert (
        match_notes("docs", documents=None, coverage=0.5, technique="hybrid", hits=10) == []
    )  # BM25 matched: nothing to say
    assert match_notes("docs", documents=12, coverage=0.5, technique="bm25", hits=0) == [
        "no document matched the query (and its filters, if any)"
    ]


def test_an_empty_page_past_the_last_match_is_not_said_to_match_nothing():
    """Before: `search --from 100` past the end of a fused list ended on "no document matched the query",
    after the searcher's own "past the end of the fused results" (integration test_bad_input)."""
    from adapter.cli.search import match_notes

    said = ("no hits: the page starting at 100 is past the end of the fused results (...)",)
    assert match_notes("docs", documents=12, coverage=0.5, technique="hybrid", hits=0, page_from=100, said=said) == []
    assert match_notes("docs", documents=12, coverage=0.5, technique="bm25", hits=0, page_from=100) == [
        "no hits from offset 100: fewer matches than that (--from 0 shows the first page)"
    ]
