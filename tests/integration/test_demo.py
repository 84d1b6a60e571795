"""`hybrid demo` (what `make demo`, the README's first command, runs) end to end against a real node,
read as its user reads it: what it indexed, what each search found, what the adaptive fusion says
about the corpus, and the ending's next steps."""

from __future__ import annotations

import re

from adapter.cli import main
from adapter.cli.common import live_layout
from adapter.index.live import live_analyzer
from adapter.fusion.choice.defaults import default_layout
from adapter.engines import cluster_for, connect
from adapter.engines.opensearch import OPENSEARCH
from adapter.fusion.choice.policy import DEFAULT_POLICY


def test_the_demo_indexes_searches_and_says_what_next(capsys, client, opensearch_url, index_name):
    code = main(["demo", "--url", opensearch_url, "--index", index_name])
    out = capsys.readouterr().out
    assert code == 0
    # The index `hybrid init` would make (before: the fields layout, while init gives a new index the measured one).
    assert (
        live_layout(cluster_for(client), index_name) == default_layout() and f"{default_layout()} text layout)" in out
    )
    # Issue 39: the analyzer and embedder by the rule `hybrid init --sample` follows (it was `spanish`, hard-coded),
    # said in one line.
    assert live_analyzer(cluster_for(client), index_name) == "spanish_stems"
    assert re.search(
        r"^   analyzer: spanish_stems, embedder: multilingual-e5-small \(\d+% of 12 documents of the demo's "
        r"support_es\.jsonl "
        r"are Spanish; spanish_stems keeps the words as written \(folded\) beside their spanish stems",
        out,
        re.M,
    ), out[:2000]
    assert re.search(r"^== ingested 12 documents \(\d+ embedded, \d+ from cache\), 0 failures$", out, re.M)
    sections = dict(re.findall(r"^== ((?:bm25|dense|hybrid): [^\n]+)\n(.*?)(?=^== |\Z)", out, re.M | re.S))
    hybrid = sections["hybrid: error E-4012"]
    # The better-leg guard (issue 31; issue 39 for a code among words): "error E-4012" is half code, so it follows
    # half the departure the calibration found, with its own weights inline.
    base = DEFAULT_POLICY.base(OPENSEARCH.probe(connect(opensearch_url)).z_score).value
    said = " ".join(hybrid.split())
    assert (
        f"baseline {base} 0.50 / 0.50" in said
        and "follows 50% of the departure (50% of its words are not exact terms)" in said
    )
    # the code's own document first (rank, score, relevance, id)
    assert re.search(r"^1\s+\S+\s+\S+\s+e-4012\s", hybrid, re.M)
    # Before: "corpus: 100% of a query's terms are missing from the index" for the demo's Spanish queries on its
    # Spanish documents (the title field's statistics were read; bodies hold pedid, paquet, factur, ...).
    shares = {
        int(s)
        for s in re.findall(r"corpus: (\d+)% of a query's terms are missing from the index", " ".join(out.split()))
    }
    assert shares and max(shares) < 100, shares
    assert f"the index {index_name!r} stays on {opensearch_url}" in out
    assert f'search "¿cómo devuelvo un pedido?" --index {index_name} --explain --url {opensearch_url}' in out
    assert "init --index docs --url" in out and "ingest docs.jsonl --index docs --url" in out
