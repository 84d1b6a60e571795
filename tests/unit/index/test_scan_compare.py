"""scan.compare on hand-made entry lists (``pages`` replaced): what to copy, what to delete, counts and checksums."""

from __future__ import annotations

import hashlib
from typing import Any, Iterator, Mapping, Sequence

import pytest

from adapter.index import scan
from adapter.index.scan import Entry, compare, content_hash

Side = Sequence[tuple[str, tuple[Any, ...], Mapping[str, Any]]]


@pytest.fixture
def sides(monkeypatch: pytest.MonkeyPatch) -> dict[str, Side]:
    held: dict[str, Side] = {}

    def pages(cluster: Any, index: str, *, vector_field: str) -> Iterator[list[Entry]]:
        entries = [Entry(i, k, s) for i, k, s in held[index]]
        for start in range(0, len(entries), 2):  # pages of two
            yield entries[start : start + 2]

    monkeypatch.setattr(scan, "pages", pages)
    return held


def checksum(side: Side, vector: str) -> str:
    digest = hashlib.sha256()
    for i, _, s in side:
        digest.update(f"{i}\0{content_hash(s, vector)}\n".encode())
    return digest.hexdigest()


def test_the_same_entries_are_the_same(sides):
    sides["a"] = [("x", ("p", 0), {"text": "t", "v": [1]}), ("y", ("p", 1), {"text": "u", "v": [2]})]
    sides["b"] = [("x", ("p", 0), {"text": "t", "w": [9]}), ("y", ("p", 1), {"text": "u", "w": [8]})]
    out = compare(None, "a", "b", source_vector="v", target_vector="w")  # type: ignore[arg-type]
    assert out.same and (out.source_count, out.target_count) == (2, 2)
    assert out.source_checksum == out.target_checksum == checksum(sides["a"], "v")


def test_differences_missing_extra_changed_and_renamed(sides):
    sides["a"] = [
        ("a0", ("a", 0), {"text": "same"}),
        ("b0", ("b", 0), {"text": "changed"}),
        ("c0", ("c", 0), {"text": "renamed"}),
        ("d0", ("d", 0), {"text": "missing in the target"}),
        ("f0", ("f", 0), {"text": "last"}),
    ]
    sides["b"] = [
        ("a0", ("a", 0), {"text": "same"}),
        ("b0", ("b", 0), {"text": "old"}),
        ("old-c", ("c", 0), {"text": "renamed"}),
        ("e0", ("e", 0), {"text": "only in the target"}),
        ("g0", ("g", 0), {"text": "after the end"}),
        ("h0", ("h", 0), {"text": "after the end too"}),
    ]
    out = compare(None, "a", "b", source_vector="v", target_vector="v")  # type: ignore[arg-type]
    assert [e.id for e in out.to_copy] == ["b0", "c0", "d0", "f0"]
    assert out.to_delete == ["old-c", "e0", "g0", "h0"]
    assert (out.source_count, out.target_count) == (5, 6) and not out.same
    assert (out.source_checksum, out.target_checksum) == (checksum(sides["a"], "v"), checksum(sides["b"], "v"))


def test_an_empty_side(sides):
    sides["a"], sides["b"] = [("x", ("p", 0), {"text": "t"})], []
    out = compare(None, "a", "b", source_vector="v", target_vector="v")  # type: ignore[arg-type]
    assert (
        [e.id for e in out.to_copy] == ["x"] and out.to_delete == [] and (out.source_count, out.target_count) == (1, 0)
    )
    out = compare(None, "b", "a", source_vector="v", target_vector="v")  # type: ignore[arg-type]
    assert out.to_copy == [] and out.to_delete == ["x"] and out.target_checksum == checksum(sides["a"], "v")
    sides["a"] = []
    out = compare(None, "a", "b", source_vector="v", target_vector="v")  # type: ignore[arg-type]
    assert out.same and out.source_checksum == out.target_checksum == hashlib.sha256().hexdigest()
