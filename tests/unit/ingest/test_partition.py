"""Partitioned ingest's pure part: which partition a row belongs to."""

import hashlib
from pathlib import Path

import pytest

from adapter.errors import InputError
from adapter.ingest.partition import Partition, Selection, bucket
from adapter.ingest.sources import RowError, SourceDoc

pytestmark = pytest.mark.unit


def test_parse_reads_i_of_n_from_one():
    assert Partition.parse("2/3") == Partition(2, 3)
    assert Partition.parse(" 1 / 1 ") == Partition(1, 1)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0/3", "numbered 1 to 3"),
        ("4/3", "numbered 1 to 3"),
        ("1/0", "at least 1"),
        ("2", "written I/N"),
        ("a/b", "written I/N"),
        ("-1/3", "written I/N"),
        ("", "written I/N"),
    ],
)
def test_bad_partitions_say_what_is_expected(text, expected):
    with pytest.raises(InputError, match=expected):
        Partition.parse(text)


def test_bucket_is_blake2b_of_the_id_modulo_n():
    # The hash is fixed (not Python's salted hash()), so every machine agrees on it.
    digest = hashlib.blake2b(b"doc-42", digest_size=8).digest()
    assert bucket("doc-42", 7) == int.from_bytes(digest, "big") % 7


def test_every_row_belongs_to_exactly_one_partition_and_they_are_balanced():
    rows = [SourceDoc(f"d{i}", "text") for i in range(3000)] + [
        RowError(line, "invalid JSON") for line in range(1, 301)
    ]
    parts = [Partition(i, 3) for i in (1, 2, 3)]
    owners = [[p.number for p in parts if p.owns(r)] for r in rows]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(1 for o in owners if o == [p.number]) for p in parts]
    assert sum(sizes) == len(rows)
    assert min(sizes) > 0.9 * len(rows) / 3  # a hash, not a round robin: near equal shares


def test_chunks_follow_their_document_and_a_bad_row_with_an_id_follows_its_id():
    part = Partition(2, 5)
    doc = SourceDoc("same-id", "text")
    assert part.owns(doc) == part.owns(RowError(9, "no text", "same-id"))


def test_selection_keeps_this_partitions_rows_in_order_and_counts_the_rest():
    rows = [SourceDoc(f"d{i}", "t", line=i) for i in range(100)]
    selection = Selection(Partition(1, 2))
    kept = list(selection(rows))
    assert kept == [r for r in rows if Partition(1, 2).owns(r)]
    assert (selection.kept, selection.others) == (len(kept), 100 - len(kept))


def test_each_partition_gets_its_own_failures_file():
    assert Partition(2, 3).failures_path("out/f.jsonl") == Path("out/f.part-2-of-3.jsonl")
    assert Partition(1, 3).failures_path("f.jsonl") != Partition(2, 3).failures_path("f.jsonl")
