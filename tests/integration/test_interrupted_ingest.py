"""Ctrl-C and SIGTERM stop an ingest at once, even in the middle of a model call, and the ingest
says what landed, lists what it did not confirm and how to finish (issue 33, item 4: Ctrl-C waited
58.7 s for the e5 embedder's call, over 2 minutes with the size limit lifted, and an interrupted
ingest printed nothing and wrote no failures file though 8,896 of 20,000 rows had landed).

``test:stuck`` (tests/support/cli.py) embeds the first batch, then stays in C code for minutes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from tests.support.cli import TEST_EMBEDDER, cli_process, ingest_args

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
ROWS = 120


def ingest(src: Path, index: str, url: str, embedder: str, tmp_path: Path) -> subprocess.Popen:
    args = ingest_args(
        src, index, url, "--batch-size", 40, "--failures", tmp_path / "failures.jsonl", embedder=embedder
    )
    return cli_process(
        *args, cwd=tmp_path, env={"HYBRID_TEST_STUCK_MARK": str(tmp_path / "stuck"), "PYTHONUNBUFFERED": "1"}
    )


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_an_ingest_stuck_in_its_model_within_seconds_and_it_says_what_landed(
    client, index_name, cluster_url, tmp_path, signum, code
):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": f"doc-{i}", "text": f"documento {i}"}) + "\n" for i in range(ROWS)))
    proc = ingest(src, index_name, cluster_url, "test:stuck", tmp_path)
    deadline = time.monotonic() + 120
    while not (tmp_path / "stuck").exists():  # the second batch's model call has begun (and will not end for minutes)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signum)
    first = ""
    # up to the summary's first line (unbuffered): the ingest has stopped, its rows listed
    while line := proc.stdout.readline():
        first += line
        if line.startswith("interrupted"):
            break
    said = time.monotonic() - sent
    rest, err = proc.stdout.read(), proc.stderr.read()  # not communicate(): it reads past readline's buffer
    proc.wait(timeout=60)
    out, took = first + rest, time.monotonic() - sent
    print(f"\n{signal.Signals(signum).name}: summary {said:.2f} s, exit {took:.2f} s after the signal")
    assert proc.returncode == code, (out, err)
    assert said < 2, said  # the bound
    # then the interpreter's own teardown: 0.3-3.5 s here, most of it garbage collection under load
    assert took < 8, took

    listed = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    client.indices.refresh(index=index_name)
    landed = client.count(index=index_name)["count"]
    assert (
        "interrupted" in err
        and f"failures file: {tmp_path / 'failures.jsonl'}" in out
        and "run the same command again" in err
    ), (out, err)
    assert f"landed: {landed}" in out, out
    ids = {h["_id"] for h in client.search(index=index_name, body={"size": ROWS, "_source": False})["hits"]["hits"]}
    # the batch in the model
    assert {r["stage"] for r in listed} == {"not-sent"} and {r["line"] for r in listed} >= set(range(41, 81))
    # every row read: landed, or listed as not confirmed
    assert ids | {r["id"] for r in listed} == {f"doc-{i}" for i in range(80)}

    # as the message says: the same command, to finish
    again = ingest(src, index_name, cluster_url, "test:hashing", tmp_path)
    assert again.wait(timeout=300) == 0, again.communicate()
    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == ROWS
