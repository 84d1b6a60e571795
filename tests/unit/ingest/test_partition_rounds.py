"""Partitioned ingest cannot lose rows (issue 33, item 2: ``--partition 1/2``, then ``2/3`` and ``3/3``,
left 4,996 of 6,000 rows, each run saying "every row landed"). The index records the round: its
partition count and the partitions that ran to their end; a run with another count is refused while the
round is unfinished. The property: any sequence of partitioned and whole runs, some killed midway,
never writes on a refusal, never records a partition done while a row of it is missing, and following
the record to its end leaves every row in the index exactly once. On the port-level fake."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest import rounds
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.partition import Ledger, Partition, admit
from adapter.ingest.sources import SourceDoc
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(8)
ROWS = [SourceDoc(f"r{i}", f"texto {i}", line=i + 1) for i in range(40)]
IDS = {r.id for r in ROWS}


# -- the rules --------------------------------------------------------------------------------------
def test_a_first_run_starts_a_round_of_its_count():
    assert admit(None, Partition(1, 2)) == Ledger(2)


def test_a_run_of_another_count_is_refused_while_the_round_is_unfinished_naming_the_partitions_left():
    ledger = Ledger(2).finished(Partition(1, 2))
    with pytest.raises(
        InputError, match=r"ingested in 2 partitions \(finished: 1/2\), not 3.*--partition 2/2.*without --partition"
    ):
        admit(ledger, Partition(2, 3))


def test_a_complete_round_lets_a_new_count_start_and_the_same_count_run_again():
    done = Ledger(2, frozenset({1, 2}))
    assert done.complete and admit(done, Partition(1, 3)) == Ledger(3) and admit(done, Partition(2, 2)) == done


@pytest.mark.parametrize("meta", [{"count": 0, "done": []}, {"count": 2, "done": [3]}, {"count": "x"}, [1], "2/3"])
def test_a_record_edited_out_of_shape_is_named(meta):
    with pytest.raises(InputError, match="_meta.ingest_partitions is unreadable"):
        Ledger.from_meta({"ingest_partitions": meta})


# -- the shell on the fake ------------------------------------------------------------------------------
def fresh() -> FakeCluster:
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    return cluster


class Killed(BaseException):
    """The process ended midway (as SIGKILL would: nothing after it runs)."""


def killed_after(n: int):
    for i, row in enumerate(ROWS):
        if i == n:
            raise Killed()
        yield row


def run(cluster, partition: Partition | None, kill: int | None = None):
    """``hybrid ingest`` of ROWS, as the command runs it: a whole run ends the round on record."""
    rows = ROWS if kill is None else killed_after(kill)
    report = Ingestor.open(cluster, "docs", EMBEDDER, progress=False, batch_size=4).ingest(rows, partition=partition)
    if partition is None:
        rounds.end(cluster, "docs-v1")
    return report


def stored(cluster) -> set[str]:
    return set(cluster.indices["docs-v1"].docs)


def test_the_issues_sequence_is_refused_at_its_second_run_and_says_what_is_left():
    cluster = fresh()
    first = run(cluster, Partition(1, 2))
    assert first.complete and "partitions still to run before the input is complete: 2/2" in first.partition.summary
    before = stored(cluster)
    with pytest.raises(InputError, match="ingested in 2 partitions"):
        run(cluster, Partition(2, 3))
    assert stored(cluster) == before
    last = run(cluster, Partition(2, 2))
    assert "all 2 partitions have run to their end" in last.partition.summary and stored(cluster) == IDS


def test_a_whole_run_ends_the_round_so_another_count_may_start():
    cluster = fresh()
    run(cluster, Partition(1, 2))
    run(cluster, None)
    assert rounds.read(cluster, "docs-v1") is None and stored(cluster) == IDS
    assert run(cluster, Partition(1, 3)).partition.ledger == Ledger(3, frozenset({1}))


def test_the_record_keeps_the_other_meta_keys():
    cluster = fresh()
    before = {k: v for k, v in cluster.get_mapping("docs-v1")["docs-v1"]["mappings"]["_meta"].items()}
    run(cluster, Partition(1, 2))
    after = cluster.get_mapping("docs-v1")["docs-v1"]["mappings"]["_meta"]
    assert {k: v for k, v in after.items() if k != "ingest_partitions"} == before


STEP = st.one_of(
    st.tuples(
        st.integers(1, 4).flatmap(lambda n: st.tuples(st.integers(1, n), st.just(n))), st.none() | st.integers(0, 39)
    ),
    st.tuples(st.none(), st.none() | st.integers(0, 39)),
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_any_sequence_of_partitionings_and_kills_ends_with_every_row_once_or_a_refusal(steps):
    cluster = fresh()
    for spec, kill in steps:
        partition = Partition(*spec) if spec is not None else None
        before = stored(cluster)
        try:
            report = run(cluster, partition, kill)
        except InputError:
            assert partition is not None and stored(cluster) == before  # a refusal writes nothing
            continue
        except Killed:
            assert kill is not None
            continue
        if partition is None or report.partition.ledger.complete:  # what it claims: the whole input is in
            assert stored(cluster) == IDS
        ledger = rounds.read(cluster, "docs-v1")
        for n in ledger.done if ledger else ():  # a partition recorded done has every row of its in the index
            assert {r.id for r in ROWS if Partition(n, ledger.count).owns(r)} <= stored(cluster)
    ledger = rounds.read(cluster, "docs-v1")
    for n in ledger.left if ledger else ():  # follow the record to its end
        run(cluster, Partition(n, ledger.count))
    if ledger is not None:
        assert rounds.read(cluster, "docs-v1").complete and stored(cluster) == IDS
    assert stored(cluster) <= IDS and len(cluster.indices["docs-v1"].docs) == len(stored(cluster))  # each row once


# -- issue 38, item 5: 1/2 of one file, then 2/2 of another, said "the whole input is written" -----------------------
def test_a_partition_of_another_input_is_refused_naming_both(tmp_path):
    from dataclasses import replace

    from adapter.ingest.sources import input_fingerprint

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "1", "text": "uno"}\n', encoding="utf-8")
    b.write_text('{"id": "2", "text": "dos"}\n', encoding="utf-8")
    one, two = (
        replace(Partition(1, 2), input=input_fingerprint(a)),
        replace(Partition(2, 2), input=input_fingerprint(b)),
    )
    ledger = admit(None, one).finished(one)
    with pytest.raises(
        InputError,
        match=r"in 2 partitions of a\.jsonl \(blake2b [0-9a-f]{12}\), not of b\.jsonl \(blake2b "
        r"[0-9a-f]{12}\).*--partition 2/2\) on a\.jsonl",
    ):
        admit(ledger, two)
    assert Ledger.from_meta({"ingest_partitions": ledger.to_meta()}) == ledger  # the input is recorded and read back
    assert admit(ledger, replace(two, input=input_fingerprint(a))) == ledger
    # a finished round: a new one
    assert admit(Ledger(2, frozenset({1, 2}), one.input), two) == Ledger(2, input=two.input)


def test_the_shell_refuses_another_inputs_partition_before_writing_and_keeps_the_round():
    from adapter.ingest.sources import InputFingerprint

    cluster = fresh()
    first = Partition(1, 2, InputFingerprint("a.jsonl", "aa" * 16))
    assert run(cluster, first).complete
    before = stored(cluster)
    with pytest.raises(InputError, match=r"partitions of a\.jsonl .*, not of b\.jsonl"):
        run(cluster, Partition(2, 2, InputFingerprint("b.jsonl", "bb" * 16)))
    assert stored(cluster) == before and rounds.read(cluster, "docs-v1") == Ledger(2, frozenset({1}), first.input)
    last = run(cluster, Partition(2, 2, InputFingerprint("a.jsonl", "aa" * 16)))
    assert "all 2 partitions have run to their end" in last.partition.summary and stored(cluster) == IDS


def test_a_folders_fingerprint_follows_its_files_names_and_bytes(tmp_path):
    from adapter.ingest.sources import input_fingerprint

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.md").write_text("# x\nuno", encoding="utf-8")
    first = input_fingerprint(tmp_path / "d")
    (tmp_path / "d" / "x.md").rename(tmp_path / "d" / "y.md")
    assert first.name == "d" and input_fingerprint(tmp_path / "d") != first
