"""An ingest interrupted by Ctrl-C (or the command's SIGTERM) lists every row it read and did not confirm
written, and raises IngestInterrupted (a KeyboardInterrupt) with what landed (issue 33, item 4); any other
exception that stops it passes through as it is. On the port-level fake; the signals themselves, with a
model stuck in C code, are in tests/integration/test_interrupted_ingest.py."""

from __future__ import annotations

import json

import pytest

from adapter.errors import Terminated
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.report import IngestInterrupted
from adapter.ingest.sources import SourceDoc
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(8)


class Stop(BaseException):
    """Not a signal: passes through the ingest untouched."""


def rows(stop_after: int, signal: BaseException):
    for i in range(100):
        if i == stop_after:
            raise signal
        yield SourceDoc(f"r{i}", f"texto {i}", line=i + 1)


def fresh() -> FakeCluster:
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    return cluster


@pytest.mark.parametrize("signal", [KeyboardInterrupt(), Terminated()])
def test_an_interrupt_lists_what_it_read_and_did_not_confirm_and_reports_what_landed(tmp_path, signal):
    cluster, path = fresh(), tmp_path / "failures.jsonl"
    with pytest.raises(IngestInterrupted) as caught:
        Ingestor.open(cluster, "docs", EMBEDDER, progress=False, batch_size=10, failures_path=path).ingest(
            rows(35, signal)
        )
    report, stored = caught.value.report, set(cluster.indices["docs-v1"].docs)
    listed = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()
    assert caught.value.__cause__ is signal and report.interrupted and not report.complete and report.rows_read == 30
    assert (
        stored | listed == {f"r{i}" for i in range(30)}
        and report.chunks == len(stored)
        and report.failed == len(listed)
    )


def test_another_exception_passes_through_as_it_is():
    with pytest.raises(Stop):
        Ingestor.open(fresh(), "docs", EMBEDDER, progress=False, batch_size=10).ingest(rows(15, Stop()))
