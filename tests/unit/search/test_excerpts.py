"""Text fields come back as bounded excerpts (issue 20 item 2); an excerpt never changes a text that fits, and a cut
one ends at a word boundary with "…" (issue 32 item 1)."""

from __future__ import annotations

import pytest


# -- 2. search results carried whole texts (a 1,000,000-character one tripped the breaker)
# ------------------------------
def test_text_fields_come_back_as_bounded_excerpts_unless_the_full_text_is_asked_for():
    from adapter.search.page import (
        Excerpts,
        SearchOptions,
        excerpt_highlight,
        hit_ids,
        merge_highlight,
        plan_excerpts,
        with_excerpts,
        with_texts,
    )
    from adapter.engines.responses import RawHit

    fields = ("title", "text")
    plain = plan_excerpts(SearchOptions(), fields, highlighted=False, request_highlights=True)
    assert plain == Excerpts(("title", "text"), ("title", "text"), (), 10_000)
    assert not plan_excerpts(SearchOptions(full_text=True), fields, highlighted=True, request_highlights=True)
    # A field the page highlights is highlighted once per request: its excerpt comes from a search for the page's ids.
    shown = plan_excerpts(
        SearchOptions(highlight=True, highlight_fields=("text",)), fields, highlighted=True, request_highlights=True
    )
    assert (shown.bounded, shown.in_request, shown.after) == (fields, ("title",), ("text",))
    # A request that carries no highlight (Elasticsearch's retrievers): every excerpt comes after.
    apart = plan_excerpts(SearchOptions(), fields, highlighted=False, request_highlights=False)
    assert (apart.in_request, apart.after) == ((), fields)

    clause = excerpt_highlight(("text",), SearchOptions(max_text_chars=500), offset_option="max_analyzer_offset")
    # The text's start, one character past the bound when longer (issue 32: excerpt() cuts it, with "…").
    assert clause["fields"]["text"] == {
        "type": "unified",
        "fragment_size": 501,
        "number_of_fragments": 1,
        "no_match_size": 501,
        "pre_tags": [""],
        "post_tags": [""],
        "highlight_query": {"match_none": {}},
    }
    assert clause["max_analyzer_offset"] == 5_000
    snippets = {"fields": {"title": {}}, "fragment_size": 150}
    assert set((merge_highlight(snippets, clause) or {})["fields"]) == {"title", "text"}

    chunk = RawHit("a#1", 0.5, {}, highlight={"text": ("its chunk",)})
    raw = RawHit(
        "a",
        1.0,
        {"title": "T", "lang": "es"},
        highlight={"text": ("an excerpt",), "title": ("<em>T</em>",)},
        inner_hits={"chunks": (chunk,)},
    )
    filled = with_excerpts(raw, ("text",), 100)
    assert filled.source == {"title": "T", "lang": "es", "text": "an excerpt"} and filled.highlight == {
        "title": ("<em>T</em>",)
    }
    assert filled.inner_hits["chunks"][0].source == {"text": "its chunk"}
    assert hit_ids([raw, RawHit("b", 0.2)]) == ["a", "a#1", "b"]
    fetched = with_texts(raw, {"a": {"title": "T2"}, "a#1": {"title": "C"}})
    assert fetched.source["title"] == "T2" and fetched.inner_hits["chunks"][0].source == {"title": "C"}
    with pytest.raises(Exception, match="max_text_chars"):
        SearchOptions(max_text_chars=10)


def test_the_command_line_bounds_texts_unless_asked_for_the_full_text():
    from adapter.cli import build_parser
    from adapter.cli.search import search_options

    parse = build_parser().parse_args
    assert search_options(parse(["search", "q", "--index", "docs"])).full_text is False
    assert search_options(parse(["search", "q", "--index", "docs"])).max_text_chars == 10_000
    assert search_options(parse(["search", "q", "--index", "docs", "--full-text"])).full_text is True
    assert search_options(parse(["search", "q", "--index", "docs", "--max-text-chars", "500"])).max_text_chars == 500


# -- item 1: an excerpt never changes a text that fits; a cut one ends at a word boundary, with "…" --------
@pytest.mark.parametrize(
    "text",
    [
        "OOMKilled (exit code 137)",
        "Política de devoluciones (copia)",
        "Raise the limit.",
        "  spaces around \n",
        "",
        "«¿Qué?»",
        "x" * 40,
    ],
)
def test_a_text_that_fits_is_its_own_excerpt(text):
    from adapter.search.excerpt import excerpt

    assert excerpt(text, 40) == text


@pytest.mark.parametrize(
    "text, n, expected",
    [
        ("The container was killed because it used too much memory.", 20, "The container was…"),
        ("The container was killed because it used too much memory.", 26, "The container was killed…"),
        ("word " * 10, 12, "word word…"),
        ("a" * 50, 10, "a" * 9 + "…"),  # one word longer than half the room: cut inside it
        (
            "日本語のテキストです。" * 5,
            10,
            "日本語のテキストで…",
        ),  # no spaces between words: any character is a boundary
        ("ab " + "c" * 40, 12, "ab ccccccccc"[:11] + "…"),  # the only boundary keeps less than half the room
        ("Fin.   " + "x" * 20, 8, "Fin.…"),  # the spaces before the cut are dropped
    ],
)
def test_a_cut_text_ends_at_a_word_boundary_with_an_ellipsis(text, n, expected):
    from adapter.search.excerpt import excerpt

    assert excerpt(text, n) == expected and len(expected) <= n


def test_excerpts_keep_the_bound_and_the_start_of_any_text():
    import random
    import unicodedata

    from adapter.search.excerpt import ELLIPSIS, excerpt, is_cut

    rng = random.Random(32)
    alphabet = "ab c,.\n\t()é\u0301日本"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        n = rng.randrange(2, 50)
        cut = excerpt(text, n)
        assert len(cut) <= n
        if len(text) <= n:
            assert cut == text and not (is_cut(cut) and not text.endswith(ELLIPSIS))
            continue
        kept = cut[: -len(ELLIPSIS)]
        assert is_cut(cut) and text.startswith(kept)
        if not all(unicodedata.combining(c) for c in text[1:n]):  # unless one character carries more marks than fit
            assert not unicodedata.combining(text[len(kept)])  # no mark loses its character


def test_an_excerpt_needs_room():
    from adapter.search.excerpt import excerpt

    with pytest.raises(ValueError, match="max_chars must be >= 2"):
        excerpt("some text", 1)
