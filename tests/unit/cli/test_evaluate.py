"""`hybrid eval` from the command line: a missing extra named before the corpus is read, outputs beside the outputs
named (issue 22)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.support.cli import fresh_cli


def test_eval_names_its_missing_extra_before_reading_the_corpus(tmp_path):
    """Before: eval with only the demo extra ingested the whole corpus, then asked for ir_measures."""
    out = fresh_cli(
        "eval",
        "--dataset",
        str(tmp_path / "nowhere"),
        "--embedder",
        "multilingual-e5-small",
        "--url",
        "http://127.0.0.1:9",
        block=("ir_measures",),
    )
    assert (
        out.returncode == 2 and "install -c constraints.txt -e '.[eval]'" in out.stderr
    )  # this clone's line (issue 32)
    assert "nowhere" not in out.stderr  # stopped before the dataset was looked at


def test_tune_outputs_go_beside_the_outputs_named():
    """Before: `eval --tune --json out/x.json` still wrote policy-<dataset>.json into the working directory."""
    from pathlib import Path

    from adapter.cli.evaluate import _beside

    none = dict(json=None, plot=None, tune_output=None, policy_output=None, model_output=None)
    args = SimpleNamespace(**{**none, "json": "out/eval.json"})
    assert _beside(args, "policy-scifact.json") == Path("out/policy-scifact.json")
    assert _beside(args, "model-scifact.json") == Path("out/model-scifact.json")
    assert _beside(SimpleNamespace(**none), "p.json") == Path("p.json")
