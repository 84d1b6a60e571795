"""The ingest declares the metadata keys a batch brings before sending it; a document whose keys the
mapping cannot take fails alone, with the server's reason, and its neighbours' keys are declared
(issue 33, item 1). On the port-level fake with a strict metadata mapping and a field limit, as a
server has; the real limits are in tests/integration/test_metadata_limits.py."""

from __future__ import annotations

import json
from typing import Any, Mapping

import pytest

from adapter.errors import BackendError
from adapter.index import metadata as metadata_mapping
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.report import FailureSource
from adapter.ingest.sources import SourceDoc
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(16)
LIMIT = 40


class LimitedCluster(FakeCluster):
    """A strict metadata mapping (undeclared keys refused per row) of at most LIMIT keys, as a server keeps
    ``index.mapping.total_fields.limit``; counts its put_mapping calls."""

    puts = 0

    def put_mapping(self, index: str, body: Mapping[str, Any], *, action: str | None = None) -> None:
        self.puts += 1
        added = body.get("properties", {}).get("metadata", {}).get("properties", {})
        have = self.indices[self._concrete(index)[0]].mappings["properties"].get("metadata", {}).get("properties", {})
        if len(set(have) | set(added)) > LIMIT:
            raise BackendError(
                f"{action}: the fake engine answered 400",
                status=400,
                reason=f"illegal_argument_exception: Limit of total fields [{LIMIT}] has been exceeded",
            )
        super().put_mapping(index, body, action=action)

    @staticmethod
    def _refused(index: Any, source: Mapping[str, Any]) -> str | None:
        declared = index.mappings["properties"].get("metadata", {}).get("properties", {})
        new = [k for k in source.get("metadata") or {} if k not in declared]
        return (
            f"strict_dynamic_mapping_exception: mapping set to strict, dynamic introduction of [{new[0]}]"
            if new
            else None
        )


@pytest.fixture
def cluster():
    cluster = LimitedCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    assert Ingestor.open(cluster, "docs", EMBEDDER).info.metadata_strict
    return cluster


def test_a_row_over_the_field_limit_fails_alone_and_its_neighbours_keys_are_declared(cluster, tmp_path):
    rows = [SourceDoc(f"d{i}", f"texto {i}", metadata={"cat": "a", f"k{i % 4}": i}) for i in range(32)]
    rows.insert(7, SourceDoc("wide", "texto ancho", metadata={f"w{i}": i for i in range(LIMIT + 5)}, line=8))
    failures = tmp_path / "failures.jsonl"
    report = Ingestor.open(cluster, "docs", EMBEDDER, progress=False, batch_size=64, failures_path=failures).ingest(
        rows
    )
    assert [(f.id, f.line, f.source) for f in report.failures] == [("wide", 8, FailureSource.MAPPING)]
    assert "Limit of total fields [40]" in report.failures[0].reason and "45 new keys" in report.failures[0].reason
    assert report.chunks == 32 and report.documents == 32 and cluster.count("docs") == 32
    assert [json.loads(line)["stage"] for line in failures.read_text().splitlines()] == ["mapping"]
    assert cluster.puts <= 1 + 2 * 6  # halving: about two requests per level down to the one row (33 rows: 6 levels)


def test_rows_whose_keys_fit_are_declared_in_one_request(cluster):
    rows = [SourceDoc(f"d{i}", "texto", metadata={f"k{i % 10}": i}) for i in range(50)]
    report = Ingestor.open(cluster, "docs", EMBEDDER, progress=False, batch_size=64).ingest(rows)
    assert report.complete and cluster.puts == 1


def test_every_chunk_of_a_refused_document_is_listed_and_its_old_chunks_stay(cluster):
    from adapter.ingest.sources import Chunking

    ingestor = Ingestor.open(cluster, "docs", EMBEDDER, progress=False, chunking=Chunking(3, 1))
    assert ingestor.ingest([SourceDoc("long", "uno dos tres cuatro cinco seis siete ocho")]).complete
    before = cluster.count("docs")
    report = ingestor.ingest([SourceDoc("long", "uno dos tres", metadata={f"w{i}": i for i in range(LIMIT + 1)})])
    assert {f.id for f in report.failures} == {"long#0"} and report.chunks == 0
    assert cluster.count("docs") == before  # not written, so nothing is stale: the old chunks are kept


# -- issue 38, item 2: a new key whose first values are null, [] or {} ----------------------------------------------
EMPTY_FIRST = [
    SourceDoc("p0", "texto", metadata={"author": None, "tags": [], "extra": {}, "deep": {"a": None}}),
    SourceDoc("p1", "texto", metadata={"author": "Ana", "tags": ["x"], "extra": {"k": 1}, "deep": {"a": "b", "c": []}}),
    SourceDoc("p2", "texto", metadata={"author": None, "tags": [None], "extra": {}, "deep": {}}),
]


def test_new_keys_whose_first_values_are_empty_land_and_read_back_as_written(cluster):
    ingestor = Ingestor.open(cluster, "docs", EMBEDDER, progress=False)
    for row in EMPTY_FIRST:  # each row alone: in the first, nothing says more than null, [] or {}
        report = ingestor.ingest([row])
        assert report.complete and report.chunks == 1, report.failures
    stored = {d.id: d.metadata for d in ingestor.documents().get(["p0", "p1", "p2"])}
    assert stored == {r.id: r.metadata for r in EMPTY_FIRST}


def test_a_value_later_in_the_batch_decides_the_type_of_a_key_that_came_empty_first():
    declared = metadata_mapping.undeclared({}, [r.metadata for r in EMPTY_FIRST])
    assert declared == {
        "author": {"type": "keyword"},
        "tags": {"type": "keyword"},
        "extra": {"type": "object", "properties": {"k": {"type": "long"}}},
        "deep": {"type": "object", "properties": {"a": {"type": "keyword"}, "c": {"type": "keyword"}}},
    }
    alone = metadata_mapping.undeclared({}, [{"n": None, "l": [None, []], "o": {}, "lo": [{}], "on": {"x": None}}])
    assert alone == {
        "n": {"type": "keyword"},
        "l": {"type": "keyword"},
        "o": {"type": "object", "properties": {}},
        "lo": {"type": "object", "properties": {}},
        "on": {"type": "object", "properties": {"x": {"type": "keyword"}}},
    }
    numbers = metadata_mapping.undeclared({}, [{"page": None}, {"page": 3}])
    assert numbers == {"page": {"type": "long"}}
