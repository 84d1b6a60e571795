"""What a newcomer meets in the first hour, round 3 (issue 32), against a real node: each failed before its fix."""

from __future__ import annotations

import pytest

from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.search import Searcher
from adapter.search.page import SearchOptions
from adapter.engines import cluster_for
from tests.conftest import HashingEmbedder

BOTH = pytest.mark.engine("opensearch", "elasticsearch")
SHORT = {  # what a troubleshooting corpus holds: codes and their parentheses, full stops, a trailing line break
    "oom": ("OOMKilled (exit code 137)", "The container was killed because it used too much memory. Raise its limit."),
    "copy": ("Política de devoluciones (copia)", "Puede devolver un pedido en 30 días (sin gastos)."),
    "conn": ("ECONNREFUSED!", "Nothing listens on that port: is the service up?\n"),
}
LONG = "CrashLoopBackOff means the container starts, fails and is restarted with a growing delay. " * 3


@pytest.fixture(scope="module")
def troubleshooting(client):
    import uuid

    from tests.conftest import drop_hybrid_index

    alias = f"t-excerpts-{uuid.uuid4().hex[:6]}"
    embedder = HashingEmbedder()
    init_index(client, alias, IndexSpec(embedder.fingerprint))
    docs = [SourceDoc(i, text, title) for i, (title, text) in SHORT.items()] + [
        SourceDoc("long", LONG, "CrashLoopBackOff")
    ]
    assert Ingestor.open(client, alias, embedder, progress=False).ingest(docs).complete
    yield Searcher.open(client, alias, embedder)
    drop_hybrid_index(client, alias)


@BOTH
@pytest.mark.parametrize("technique", ["bm25", "dense", "hybrid", "client-rrf"])
@pytest.mark.parametrize("query", ["memory limit", "devolver pedido", "nothing matches this"])
def test_an_excerpt_never_changes_a_text_that_fits(troubleshooting, technique, query):
    """Before: "OOMKilled (exit code 137", "Política de devoluciones (copia", every text without its full stop
    (the plain highlighter's no-match fragment ends at the last word), in title, text and source alike."""
    result = troubleshooting.search(query, technique=technique, k=10, options=SearchOptions(max_text_chars=200))
    short = [h for h in result.hits if h.id in SHORT]
    assert short, [h.id for h in result.hits]
    for hit in short:
        title, text = SHORT[hit.id]
        assert (hit.title, hit.source["title"]) == (title, title)
        # the ends' line breaks aside
        assert hit.text == hit.source["text"] and hit.text.strip() == text.strip(), hit.id


@BOTH
@pytest.mark.parametrize("technique", ["bm25", "hybrid"])
def test_a_cut_text_ends_at_a_word_boundary_with_an_ellipsis(troubleshooting, technique):
    """Before: a cut text ended wherever the highlighter's fragment did, with nothing to say it was cut."""
    result = troubleshooting.search(
        "CrashLoopBackOff", technique=technique, k=10, options=SearchOptions(max_text_chars=100)
    )
    hit = next(h for h in result.hits if h.id == "long")
    assert len(hit.text) <= 100 and hit.text.endswith("…") and hit.text == hit.source["text"]
    kept = hit.text[:-1]
    assert LONG.startswith(kept) and LONG[len(kept)] == " ", hit.text  # the start of the text, cut where a word ends
    whole = troubleshooting.search("CrashLoopBackOff", technique=technique, k=10, options=SearchOptions(full_text=True))
    assert next(h for h in whole.hits if h.id == "long").text == LONG


def test_readmes_python_example_runs_after_make_demo(local_cluster, index_name, tmp_path, monkeypatch):
    """Before: `load_embedder("minilm")` needed the 6 GB models extra `make demo` does not install, and
    `connect("http://localhost:9200")` missed the demo node's port (connect() without a URL did not look for it),
    and connect() found only the default releases' nodes (this failed on 2.19.1 in CI).
    The README's first Python block, as written (its index renamed), on the light install `make demo` makes."""
    import json
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    from adapter.engines.connection import local_node_url

    if local_cluster is None or local_node_url() != local_cluster.url:  # a kept node of another release, say
        pytest.skip(
            f"connect() without a URL finds {local_node_url()}, not this target's local node: another local "
            "cluster runs in the test cache folder"
        )
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    python = readme.split("\n## Python\n", 1)[1]
    block = re.search(r"```python\n(.*?)```", python, re.S).group(1).replace('"docs"', json.dumps(index_name))
    # `make demo`'s install
    blocked = "import sys\nfor name in ('sentence_transformers', 'torch'):\n    sys.modules[name] = None\n"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENSEARCH_URL", "HYBRID_CONFIG")}
    env["XDG_CONFIG_HOME"] = str(tmp_path)  # no config file either: nothing names a URL
    clone = Path(__file__).resolve().parents[2]  # the block reads the clone's own sample corpus, as README says
    out = subprocess.run(
        [sys.executable, "-c", blocked + block], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"^1 err-e4012 ", out.stdout, re.M) and "server:" in out.stdout, out.stdout


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from adapter.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_calibrate_says_what_is_wrong_and_keeps_the_better_calibration(
    client, index_name, opensearch_url, tmp_path, capsys
):
    """Before: on an empty index it blamed the queries' language; three queries silently replaced a 22-query
    calibration; and it led with "BM25 match quality 1.124", a number that no longer sets the weights."""
    from adapter.fusion.choice.policy import Calibration
    from adapter.index.catalog import index_meta, read_index_info

    embedder = HashingEmbedder()
    init_index(client, index_name, IndexSpec(embedder.fingerprint))
    queries = tmp_path / "queries.txt"
    queries.write_text("pod CrashLoopBackOff restarting\nE1234 on checkout\nECONNREFUSED to the database\n")
    code, out, err = _cli(
        capsys, "calibrate", "--index", index_name, "--queries", str(queries), "--url", opensearch_url
    )
    assert code == 2 and "holds no documents" in err and "language" not in err

    docs = [
        SourceDoc(f"d{i}", f"pod CrashLoopBackOff E1234 ECONNREFUSED database checkout restarting number {i}", f"T{i}")
        for i in range(30)
    ]
    assert Ingestor.open(client, index_name, embedder, progress=False).ingest(docs).complete
    many = tmp_path / "many.txt"
    many.write_text("".join(f"pod restarting {i} database checkout\n" for i in range(22)))
    code, out, _ = _cli(capsys, "calibrate", "--index", index_name, "--queries", str(many), "--url", opensearch_url)
    said, lines = out.splitlines()[0], out.splitlines()[1:]  # first, which analyzer and embedder it used (issue 39)
    assert code == 0 and said == f"index {index_name}: analyzer: folding, embedder: test:hashing"
    assert lines[0].startswith(f"index {index_name} (") and "over 22 queries" in lines[0]
    assert "match quality" not in "\n".join(lines[:2]) and lines[-1].startswith("diagnostic: BM25 match quality")

    def stored() -> Calibration | None:
        info = read_index_info(client, index_name)
        return Calibration.from_meta(index_meta(cluster_for(client), info.index)["adaptive"]["calibration"])

    code, out, _ = _cli(capsys, "calibrate", "--index", index_name, "--queries", str(queries), "--url", opensearch_url)
    assert code == 0 and "note: kept the calibration on 22 queries (many.txt): these 3 are fewer than the 10" in out
    assert stored().queries == 22
    code, out, _ = _cli(
        capsys, "calibrate", "--index", index_name, "--queries", str(queries), "--url", opensearch_url, "--replace"
    )
    assert code == 0 and stored().queries == 3 and "note: 3 queries are fewer than the 10 a confidence needs" in out


def test_zero_results_and_dense_only_hits_say_why(client, index_name, opensearch_url, e5, capsys):
    """Before: an empty index and a stopword-only query gave exit 0 and no note (bm25: 0 hits; hybrid: the dense leg's
    hits)."""
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="english"))
    search = ("search", "--index", index_name, "--url", opensearch_url, "--embedder", "multilingual-e5-small")
    code, out, _ = _cli(capsys, *search, "pod restarting", "-t", "bm25")
    assert code == 0 and f"note: index '{index_name}' holds no documents" in out
    docs = [SourceDoc(i, text, title) for i, (title, text) in SHORT.items()]
    assert Ingestor.open(client, index_name, e5, progress=False).ingest(docs).complete
    code, out, _ = _cli(capsys, *search, "the of and", "-t", "bm25")
    assert (
        code == 0
        and "note: the query has no word the index's analyzer keeps (stopwords only): BM25 matched nothing" in out
    )
    code, out, _ = _cli(capsys, *search, "the of and")
    assert code == 0 and "BM25 matched nothing, so these hits are the dense leg's alone" in out and "| 3 hits |" in out
    code, out, _ = _cli(capsys, *search, "container memory limit")
    assert code == 0 and "BM25 matched nothing" not in out and "note: no document" not in out
