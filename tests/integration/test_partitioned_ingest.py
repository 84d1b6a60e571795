"""`hybrid ingest --partition I/N`: three processes index one input at the same time, on the real node."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapter.index.init import init_index
from adapter.index.assets import IndexSpec
from tests.support.cli import TEST_EMBEDDER

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
ROOT = Path(__file__).resolve().parents[2]
BAD_LINES = {41: "{not json", 90: json.dumps({"id": "empty", "text": "  "})}  # line -> content


def corpus(path: Path, n: int = 300) -> dict[str, str]:
    """``n`` good rows (id -> text) and the bad rows of BAD_LINES, one duplicate id among them."""
    good, lines = {}, []
    for i in range(n):
        line_no = len(lines) + 1
        if line_no in BAD_LINES:
            lines.append(BAD_LINES[line_no])
        doc_id, text = f"doc-{i}", f"documento {i} sobre el tema {i % 17} con palabras {i * 7 % 101}"
        good[doc_id] = text
        lines.append(json.dumps({"id": doc_id, "text": text, "n": i}))
    lines.append(json.dumps({"id": "doc-5", "text": "a second doc-5"}))  # a duplicate: a failure, the first one stays
    path.write_text("\n".join(lines) + "\n")
    return good


def checksum(pairs) -> str:
    sha = hashlib.sha256()
    for doc_id, text in sorted(pairs):
        sha.update(f"{doc_id}\t{text}\n".encode())
    return sha.hexdigest()


def test_three_partitions_at_once_index_every_row_once_with_one_failures_file_each(client, index_name, cluster_url, tmp_path):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    src = tmp_path / "docs.jsonl"
    good = corpus(src)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-m", "tests.support.cli", "ingest", str(src), "--index", index_name, "--url", cluster_url,
                          "--embedder", "test:hashing", "--no-cache", "--batch-size", "16", "--partition", f"{i}/3",
                          "--failures", str(tmp_path / "failures.jsonl"), "-q"],
                         cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in (1, 2, 3)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = [p.returncode for p in procs]
    assert set(codes) <= {0, 3}, outs  # 3: this partition had a bad row

    kept = [int(next(line for line in out.splitlines() if line.startswith("partition ")).split()[2]) for out, _ in outs]
    total_rows = len(good) + len(BAD_LINES) + 1
    assert sum(kept) == total_rows and all(k > 0 for k in kept)

    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == len(good)
    hits = client.search(index=index_name, body={"size": 1000, "_source": ["text"], "query": {"match_all": {}}})["hits"]["hits"]
    assert checksum((h["_id"], h["_source"]["text"]) for h in hits) == checksum(good.items())

    files = sorted(tmp_path.glob("failures.part-*-of-3.jsonl"))
    assert [code == 3 for code in codes] == [(tmp_path / f"failures.part-{i}-of-3.jsonl").exists() for i in (1, 2, 3)]
    failed = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert sorted(f["line"] for f in failed) == sorted([*BAD_LINES, total_rows])  # each bad row once, in one file
