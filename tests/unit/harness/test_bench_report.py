"""docs/BENCHMARKS.md is written by several commands and holds hand-written sections: a run
replaces the sections it measured and keeps every other one."""

from __future__ import annotations

import pytest

from benchmarks.run import Section, write_report

pytestmark = pytest.mark.unit

EXISTING = """# Benchmarks

old header

## Query latency

old table

## Reading the numbers (hand-written)

a paragraph nobody can measure again

## Against peers

peer table
"""


def test_a_full_run_replaces_its_sections_and_keeps_the_others(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(EXISTING)
    write_report(path, [Section("Query latency", ["new table"]), Section("Model latency", ["new section"])])
    text = path.read_text()
    assert "new table" in text and "old table" not in text and "old header" not in text
    assert "a paragraph nobody can measure again" in text and "peer table" in text
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert titles == ["Query latency", "Reading the numbers (hand-written)", "Against peers", "Model latency"]


def test_the_first_run_writes_a_new_report(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    write_report(path, [Section("Query latency", ["a table"])])
    assert path.read_text().startswith("# Benchmarks") and "## Query latency\n\na table" in path.read_text()
