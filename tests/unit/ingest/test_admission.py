"""Admission, a step of its own since the ingestor was split (issue 42): which rows of a batch become
documents to embed and which fail first, decided without a cluster or a model."""

from __future__ import annotations

import pytest

from adapter.errors import InputError
from adapter.index.documents import DocumentLayout
from adapter.ingest.admission import Admission
from adapter.ingest.failures import NOT_SENT
from adapter.ingest.sources import Chunking, RowError, SourceDoc

RULES = Admission(Chunking(size=3, overlap=1), DocumentLayout(), key="m:1", dimension=2, max_chars=40)


def test_a_batch_is_sorted_into_documents_and_the_rows_that_fail_first():
    batch = [
        SourceDoc("a", "one two three four five", line=1),
        RowError(2, "not JSON", "b"),
        SourceDoc("c", "x" * 41, line=3),
        SourceDoc("d", "carried", line=4, vector=(0.5, 0.5), embedded_by="other:2"),
    ]
    admitted = RULES.admit(batch, stopped=False)
    # 3 words a window, 1 shared: "one two three", "three four five"
    assert [e.id for e in admitted.entries] == ["a#0", "a#1"]
    assert [(f.id, f.line, f.source) for f in admitted.failures] == [
        ("b", 2, "input"),
        ("c", 3, "input"),
        ("d", 4, "input"),
    ]
    assert "41 characters, over the limit of 40" in admitted.failures[1].reason
    assert "fingerprint key 'm:1'" in admitted.failures[2].reason
    assert admitted.chunk_counts == (("a", 2),) and dict(admitted.lines) == {"a#0": 1, "a#1": 1}


def test_once_the_senders_stopped_every_row_is_listed_as_not_sent():
    admitted = RULES.admit([SourceDoc("a", "text", line=7)], stopped=True)
    assert not admitted.docs and [(f.id, f.line, f.reason) for f in admitted.failures] == [("a", 7, NOT_SENT)]


def test_strict_refuses_the_whole_input_naming_each_bad_line():
    with pytest.raises(InputError, match="2 bad rows and --strict is set.*line 1: not JSON; line 2: .*over the limit"):
        RULES.strict(
            [RowError(1, "not JSON", None), SourceDoc("big", "y" * 50, line=2), SourceDoc("ok", "fine", line=3)]
        )
