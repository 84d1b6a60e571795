"""How a text is cut to an excerpt. Pure: one function, whatever the text came from (a highlight, a
stored preview, a page's column).

A text that fits is never changed, not by one character. A text that does not fit is its start up to
a word boundary, then "…", at most ``max_chars`` characters in all. Only a word longer than half the
room (a URL, a hash, a run of CJK without spaces) is cut inside, and never between a character and
its combining marks.
"""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"


def excerpt(text: str, max_chars: int) -> str:
    """``text`` itself when it has at most ``max_chars`` characters; else its start cut at a word
    boundary (trailing spaces dropped) and ended with ``…``, at most ``max_chars`` characters."""
    if max_chars < 2:
        raise ValueError(f"an excerpt needs room for a character and '…': max_chars must be >= 2, got {max_chars}")
    if len(text) <= max_chars:
        return text
    room = max_chars - len(ELLIPSIS)
    cut = _word_boundary(text, room)
    kept = text[:cut].rstrip() or text[: _inside(text, room)]  # nothing but spaces before the boundary: cut inside
    return kept + ELLIPSIS


def is_cut(value: str) -> bool:
    """Whether ``value`` is an excerpt that was cut (it ends with the ellipsis :func:`excerpt` adds)."""
    return value.endswith(ELLIPSIS)


def _word_boundary(text: str, room: int) -> int:
    """The last position at most ``room`` where a word ends (a space follows, or a CJK character
    meets its neighbour), when it keeps at least half the room; else a cut inside the word."""
    for i in range(room, room // 2, -1):
        if _boundary(text[i - 1], text[i]):
            return i
    return _inside(text, room)


def _boundary(before: str, after: str) -> bool:
    if _mark(after):  # a mark belongs to the character before it
        return False
    return after.isspace() or before.isspace() or _unspaced(before) or _unspaced(after)


def _mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def _unspaced(char: str) -> bool:
    """Scripts written without spaces between words: every character is a boundary (CJK, kana)."""
    code = ord(char)
    return (
        0x3000 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x2FFFF
    )


def _inside(text: str, room: int) -> int:
    """``room``, moved back so that no combining mark loses its base character (unless one base
    carries more marks than the room holds)."""
    i = room
    while i > 0 and _mark(text[i]):
        i -= 1
    return i or room
