"""`hybrid ingest --partition I/N`: three processes index one input at the same time, on the real node."""

import hashlib
import json
from pathlib import Path

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.ingest.partition import Partition
from adapter.ingest.sources import SourceDoc
from tests.support.cli import TEST_EMBEDDER, cli, cli_process, ingest_args  # noqa: F401  (cli: the fixture)

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
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


def test_three_partitions_at_once_index_every_row_once_with_one_failures_file_each(
    client, index_name, cluster_url, tmp_path
):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    src = tmp_path / "docs.jsonl"
    good = corpus(src)
    failures = tmp_path / "failures.jsonl"
    procs = [
        cli_process(
            *ingest_args(
                src, index_name, cluster_url, "--batch-size", 16, "--partition", f"{i}/3", "--failures", failures
            ),
            cwd=tmp_path,
        )
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
    hits = client.search(index=index_name, body={"size": 1000, "_source": ["text"], "query": {"match_all": {}}})[
        "hits"
    ]["hits"]
    assert checksum((h["_id"], h["_source"]["text"]) for h in hits) == checksum(good.items())

    files = sorted(tmp_path.glob("failures.part-*-of-3.jsonl"))
    assert [code == 3 for code in codes] == [(tmp_path / f"failures.part-{i}-of-3.jsonl").exists() for i in (1, 2, 3)]
    failed = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert sorted(f["line"] for f in failed) == sorted([*BAD_LINES, total_rows])  # each bad row once, in one file


def test_partitions_of_another_count_are_refused_until_the_round_is_complete(
    cli, client, index_name, cluster_url, tmp_path
):
    """Issue 33 item 2, as found: `--partition 1/2`, then `2/3` and `3/3`, each exit 0 "every row landed", left
    4,996 of 6,000 rows. Now the second run is refused before writing, and each run says what is left."""
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": f"doc-{i}", "text": f"documento {i}"}) + "\n" for i in range(600)))

    def ingest(part):
        return cli(*ingest_args(src, index_name, cluster_url, "--partition", part, "--failures", tmp_path / "f.jsonl"))

    code, out, _ = ingest("1/2")
    assert (
        code == 0
        and "every row of partition 1/2 landed" in out
        and "still to run before the input is complete: 2/2" in out
    ), out
    client.indices.refresh(index=index_name)
    written = client.count(index=index_name)["count"]
    code, out, err = ingest("2/3")
    assert code == 2 and "ingested in 2 partitions (finished: 1/2), not 3" in err and "--partition 2/2" in err, (
        out,
        err,
    )
    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == written  # refused before writing anything
    code, out, _ = ingest("2/2")
    assert code == 0 and "all 2 partitions have run to their end: the whole input is written" in out, out
    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == 600
    code, out, _ = ingest("1/3")  # a complete round: another count may start anew
    assert code == 0 and "still to run before the input is complete: 2/3, 3/3" in out, out


def test_two_runs_of_one_partition_in_the_same_second_write_failures_files_of_their_own(
    cli, client, index_name, cluster_url, tmp_path, monkeypatch
):
    """Issue 33 item 3: the default failures file of a partition was named to the second and opened with O_TRUNC,
    so two runs started in the same second wrote one file and one run's records were lost."""
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    src = tmp_path / "docs.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": f"doc-{i}", "text": "" if i % 10 == 0 else f"documento {i}"}) + "\n" for i in range(100)
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("time.strftime", lambda *a: "20261203-120000")  # the same second for both runs
    for _ in range(2):
        code, out, err = cli(*ingest_args(src, index_name, cluster_url, "--partition", "1/2"))
        assert code == 3, (out, err)
    files = sorted(tmp_path.glob("ingest-failures-*part-1-of-2*.jsonl"))
    empty = sum(1 for i in range(0, 100, 10) if Partition(1, 2).owns(SourceDoc(f"doc-{i}", "")))
    assert len(files) == 2 and [len(f.read_text().splitlines()) for f in files] == [empty, empty], files
