"""The pages' part of issue 32 (what a newcomer sees), in a real headless Chromium; no cluster needed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adapter.search.excerpt import excerpt
from tests.support.browser import watched_page

STATIC = Path(__file__).resolve().parents[2] / "adapter" / "web" / "static"


def test_the_compare_page_cuts_a_text_as_the_search_does(chromium):
    """Before: the compare page showed a hit without snippets as text.slice(0, 220), cut inside a word, with no "…"."""
    page = watched_page(chromium)
    page.page.set_content("<!doctype html><meta charset=utf-8><body></body>")
    page.page.add_script_tag(path=str(STATIC / "dom.js"))
    rng = random.Random(32)
    alphabet = "ab c,.\n\t()é\u0301日本xyz"
    cases = [("The container was killed because it used too much memory. " * 5, 220), ("OOMKilled (exit code 137)", 220),
             ("a" * 300, 220), ("日本語のテキストです。" * 30, 220)]
    cases += [("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))), rng.randrange(2, 50)) for _ in range(500)]
    got = page.page.evaluate("cases => cases.map(([t, n]) => window.Dom.excerpt(t, n))", cases)
    assert got == [excerpt(t, n) for t, n in cases]
    assert got[0].endswith("because it used too…") and len(got[0]) <= 220 and got[1] == "OOMKilled (exit code 137)"
    assert page.errors == []
