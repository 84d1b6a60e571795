"""`hybrid demo` and `make demo`: the port, and an ending that says what runs where and what to do next (issues 22,
32)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

from tests.support.extras import requires_extra


def test_the_demo_ends_with_what_runs_where_and_what_next(capsys):
    from adapter.cli.demo import print_next_steps

    node = SimpleNamespace(engine="opensearch", version="3.6.0", home="/var/cache/x/nodes/opensearch-3.6.0")
    print_next_steps("http://127.0.0.1:9200", "demo-support", node)
    out = capsys.readouterr().out
    assert (
        "opensearch 3.6.0 is still running at http://127.0.0.1:9200 (its files: /var/cache/x/nodes/opensearch-3.6.0)"
        in out
    )
    assert 'hybrid search "¿cómo devuelvo un pedido?" --index demo-support --explain\n' in out
    assert "hybrid init --index docs\n" in out and "hybrid ingest docs.jsonl --index docs " in out
    assert "hybrid local down" in out
    print_next_steps("http://elsewhere:9200", "demo-support", None)
    out = capsys.readouterr().out
    assert "--url http://elsewhere:9200" in out and "local down" not in out


def test_the_printed_commands_run_as_printed(tmp_path, monkeypatch):
    """Found walking the first hour: after `make demo` the command is .venv/bin/hybrid, not on PATH, yet the ending said
    `hybrid`."""
    from adapter.cli.demo import hybrid_command

    script = tmp_path / ".venv" / "bin" / "hybrid"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nowhere")
    assert hybrid_command(str(script)) == ".venv/bin/hybrid"
    monkeypatch.setenv("PATH", str(script.parent))
    script.chmod(0o755)
    assert hybrid_command(str(script)) == "hybrid"
    assert hybrid_command("/usr/lib/python3/pytest") == "hybrid"


# -- item 9: the demo's port and its ending ---------------------------------------------------------------------
def test_make_demo_takes_a_port(tmp_path):
    """Before: `make demo` could not take a port; fixing one later cost another node start."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "demo", "PORT=9250"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1].endswith("/hybrid demo --port 9250")
    from adapter.cli import build_parser

    assert build_parser().parse_args(["demo", "--port", "9250"]).port == 9250


def test_the_demo_ends_on_what_convinces(capsys):
    """Before: the ending listed init, ingest and search, not calibrate, eval --report or serve."""
    from types import SimpleNamespace

    from adapter.cli.demo import print_next_steps

    node = SimpleNamespace(engine="opensearch", version="3.6.0", home="/var/cache/x/nodes/opensearch-3.6.0")
    print_next_steps("http://127.0.0.1:9250", "demo-support", node, clone=True)
    out = capsys.readouterr().out
    steps = [line.strip() for line in out.splitlines()]
    assert any(s.startswith("compare it:") and "serve --index demo-support" in s for s in steps)
    five = steps[steps.index(next(s for s in steps if s.startswith("== your own data in five commands"))) + 1 :][:5]
    assert [s.split()[1] for s in five] == ["init", "ingest", "calibrate", "search", "serve"]
    assert any(s.startswith("make demo-report") for s in steps) and any(
        " eval --dataset DIR --report " in s for s in steps
    )
    print_next_steps(
        "http://127.0.0.1:9250", "demo-support", node, clone=False
    )  # from a wheel: no make, the extras' install line
    assert "make demo-report" not in (out := capsys.readouterr().out) and "eval,report" in out


def test_ingest_next_step_names_the_command_as_it_runs(tmp_path, monkeypatch, capsys):
    """Found walking the first hour (issue 39): after `make demo`, ingest's `next:` hint said bare `hybrid`, not on
    PATH."""
    import sys

    from adapter.cli.ingest import _next_steps
    from adapter.index.catalog import IndexInfo
    from adapter.models.fingerprint import EmbeddingFingerprint

    script = tmp_path / ".venv" / "bin" / "hybrid"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nowhere")
    monkeypatch.setattr(sys, "argv", [str(script), "ingest"])
    _next_steps(IndexInfo("docs", "docs-v1", EmbeddingFingerprint("m", "s", "x", 4, True), default_fusion="adaptive"))
    assert "next: .venv/bin/hybrid calibrate --index docs --queries FILE" in capsys.readouterr().out


@requires_extra("language")
def test_the_demo_chooses_its_analyzer_and_embedder_as_init_does():
    """Issue 39: `hybrid demo` hard-coded the `spanish` analyzer while `hybrid init --sample` on the same Spanish
    documents chooses `folding` (one-language corpus -> folding + e5, docs/EVALUATION.md). It now asks the same rule;
    an index an earlier demo made keeps its own analyzer and embedder."""
    from importlib import resources

    from adapter.cli.demo import SAMPLE, demo_analysis
    from adapter.index.assets import IndexSpec
    from adapter.index.choose import choose_analysis
    from adapter.admin.init import init_index
    from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl
    from tests.conftest import HashingEmbedder
    from tests.support.fake_engine import FakeCluster

    with resources.as_file(resources.files("adapter") / "data" / SAMPLE) as path:
        texts = [f"{r.title}\n{r.text}" for r in read_jsonl(path, FieldMap()) if isinstance(r, SourceDoc)]
    cluster = FakeCluster()
    choice, new = demo_analysis(cluster, "demo-support", texts, source=f"the demo's {SAMPLE}")
    assert new and choice == choose_analysis(
        cluster, texts, source=f"the demo's {SAMPLE}"
    )  # the rule init --sample follows
    assert (choice.analyzer, choice.embedder) == ("spanish_stems", "multilingual-e5-small")
    assert choice.line().startswith("analyzer: spanish_stems, embedder: multilingual-e5-small (")
    assert (
        f"% of {len(texts)} documents of the demo's {SAMPLE} are Spanish; spanish_stems keeps the words as written"
        in choice.line()
    )
    # An earlier demo's index (made with `spanish` before this change) keeps what it has.
    init_index(cluster, "old-demo", IndexSpec(HashingEmbedder(16).fingerprint, analyzer="spanish"))
    kept, new = demo_analysis(cluster, "old-demo", texts, source="x")
    assert not new and kept.analyzer == "spanish" and kept.why == "the existing index old-demo's"
