"""The pure parts of adapter.index.facets: a search term as literal wildcard text, and a value's text."""

from __future__ import annotations

import pytest

from adapter.index.facets import _text, typed, wildcard_escape

pytestmark = pytest.mark.unit


def test_a_search_term_is_literal_inside_a_wildcard_pattern():
    assert wildcard_escape("All_Beauty") == "All_Beauty"
    assert wildcard_escape("a*b?c\\d") == "a\\*b\\?c\\\\d"


def test_a_value_is_matched_on_its_text_as_its_type_writes_it():
    assert [
        _text(typed(v, k))
        for v, k in ((True, "boolean"), (0, "boolean"), (2023.0, "long"), (0.6000000238418579, "float"))
    ] == ["true", "false", "2023", "0.6"]
