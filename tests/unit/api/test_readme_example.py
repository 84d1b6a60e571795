"""The Python examples of README.md and adapter/__init__.py make the index `hybrid init` makes (issue 22)."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest


def _python_example_spec(text: str, fingerprint):
    """The ``IndexSpec(...)`` of a Python example, evaluated as written (the names it uses imported from adapter)."""
    import re

    import adapter
    from adapter.fusion.choice.defaults import default_layout

    call = re.search(r"IndexSpec\((embedder\.fingerprint[^\n]*?\))\)", text)
    assert call, "no IndexSpec(embedder.fingerprint, ...) in the example"
    names = {
        "IndexSpec": adapter.IndexSpec,
        "default_layout": default_layout,
        "embedder": SimpleNamespace(fingerprint=fingerprint),
        "choice": SimpleNamespace(analyzer="english", embedder=fingerprint.spec),
    }  # what choose_analysis answers for English
    return eval(f"IndexSpec({call.group(1)}", names)  # noqa: S307 (the repository's own README)


@pytest.mark.parametrize("where", ["README.md", "adapter/__init__.py"])
def test_the_python_example_makes_the_index_hybrid_init_makes(where, monkeypatch):
    """Before: README's `init_index(client, "docs", IndexSpec(embedder.fingerprint, analyzer="english"))` made a
    fields-layout index, while `hybrid init --index docs --analyzer english` gives a new index the measured default
    (combined): the same words, two different indices."""
    from pathlib import Path

    from adapter.models import embedders
    from adapter.cli import common
    from adapter.models.fingerprint import EmbeddingFingerprint

    fp = EmbeddingFingerprint("sentence-transformers/all-MiniLM-L6-v2", "minilm", "abc", 384, True)
    monkeypatch.setattr(embedders, "load_embedder", lambda spec, **_: SimpleNamespace(fingerprint=fp))
    parser = argparse.ArgumentParser()
    common.add_index_spec_options(parser)
    from_cli = common.index_spec(parser.parse_args(["--embedder", "minilm", "--analyzer", "english"]))
    text = (Path(__file__).resolve().parents[3] / where).read_text(encoding="utf-8")
    assert _python_example_spec(text, fp) == from_cli
