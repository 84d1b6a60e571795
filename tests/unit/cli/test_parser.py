"""The parser as a newcomer meets it: an unknown flag, a query that starts with a dash, the help's words (issue 32 item
12)."""

from __future__ import annotations

from tests.support.cli import fresh_cli


def test_an_unknown_flag_gets_the_commands_usage_and_a_did_you_mean():
    """Before: the top-level usage (every command's name) and no suggestion."""
    out = fresh_cli("search", "q", "--index", "docs", "--explian")
    assert out.returncode == 2 and out.stderr.startswith("usage: hybrid search ")
    assert "hybrid search: error: unrecognized arguments: --explian\n  --explian: did you mean --explain?" in out.stderr


def test_a_query_that_starts_with_a_dash_is_told_about_double_dash():
    """Before: `hybrid search --index docs -E1234` said only "the following arguments are required: query"."""
    out = fresh_cli("search", "--index", "docs", "-E1234")
    assert out.returncode == 2 and "put it after '--', last, e.g. `hybrid search --index docs -- -E1234`" in out.stderr
    out = fresh_cli(
        "search", "--index", "docs", "--", "-E1234", "--url", "http://127.0.0.1:9"
    )  # '--' not last: the rest are values
    assert (
        out.returncode == 2
        and "options after '--' are read as values" in out.stderr
        and "did you mean" not in out.stderr
    )


def test_the_help_says_adaptive_weights_are_per_index_as_the_readme_does():
    """Before: `--default-fusion` and `--fusion` said "weights chosen per query"; README: every query of an index gets
    the same."""
    helps = " ".join(" ".join(fresh_cli(command, "--help").stdout.split()) for command in ("init", "search"))
    assert "chosen per query" not in helps and "chosen per index" in helps and "the index's calibrated weights" in helps
