"""A row whose metadata the mapping cannot take (over the total-fields or depth limit, or a name the
server refuses) fails alone, with the server's reason; every good row of its batch lands (issue 33,
item 1: one such row sank its whole bulk batch, each good row reported with a misleading
``strict_dynamic_mapping_exception``). Then a fuzz of metadata shapes against the limits."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from tests.conftest import drop_hybrid_index
from tests.support.cli import TEST_EMBEDDER

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")


def nested(depth: int) -> dict:
    value: dict = {"leaf": "x"}
    for i in range(depth - 1):
        value = {f"n{i}": value}
    return value


def good_rows(n: int) -> list[SourceDoc]:
    return [SourceDoc(f"good-{i}", f"documento {i}", metadata={"cat": f"c{i % 3}", "n": i}) for i in range(n)]


def ingest(client, alias: str, rows, **options):
    return Ingestor.open(client, alias, TEST_EMBEDDER, progress=False, batch_size=64, **options).ingest(rows)


@pytest.mark.parametrize(
    "bad, says",
    [
        ({f"k{i}": i for i in range(1_200)}, "Limit of total fields [1000]"),
        (nested(100), "Limit of mapping depth [20]"),
    ],
)
def test_a_row_over_a_mapping_limit_fails_alone_with_the_servers_reason(client, index_name, tmp_path, bad, says):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    rows = good_rows(64)
    rows.insert(10, SourceDoc("bad", "documento malo", metadata=bad, line=11))
    report = ingest(client, index_name, rows, failures_path=tmp_path / "failures.jsonl")
    assert [(f.id, f.line) for f in report.failures] == [("bad", 11)], report.failures[:3]
    assert says in report.failures[0].reason and "strict_dynamic_mapping" not in report.failures[0].reason, (
        report.failures[0]
    )
    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == 64 and report.chunks == 64


# -- the fuzz -----------------------------------------------------------------------------------------
# Bad shapes, each over a limit the server keeps whatever the neighbours (an index's total fields: 1000; depth: 20; a
# field name that is empty or only dots). Good shapes: a few keys from a small alphabet, shallow, values of one type
# per key (keys typed apart: a string key never meets a number), so any set of them fits together.
KEYS = ["cat", "lang", "tags", "owner", "team"]
GOOD = st.dictionaries(st.sampled_from(KEYS), st.text("abcxyz", min_size=1, max_size=4), max_size=3) | st.builds(
    lambda n, inner: {"stats": {"n": n, **inner}},
    st.integers(0, 99),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
)
BAD = st.one_of(
    st.integers(1_001, 1_300).map(lambda n: {f"wide{i}": i for i in range(n)}),
    st.integers(21, 120).map(nested),
    st.sampled_from([{"": "empty name"}, {"...": "dots"}, {"a": {"": 1}}]),
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(rows=st.lists(st.tuples(st.booleans(), st.data()), min_size=2, max_size=24), batch=st.integers(1, 16))
def test_no_good_row_is_refused_because_of_a_bad_neighbour(client, tmp_path, rows, batch):
    alias = f"t-meta-fuzz-{uuid.uuid4().hex[:8]}"
    init_index(client, alias, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="standard"))
    try:
        docs, bad_ids = [], set()
        for i, (is_bad, data) in enumerate(rows):
            metadata = data.draw(BAD if is_bad else GOOD)
            docs.append(SourceDoc(f"r{i}", f"texto {i}", metadata=metadata, line=i + 1))
            if is_bad:
                bad_ids.add(f"r{i}")
        report = Ingestor.open(
            client, alias, TEST_EMBEDDER, progress=False, batch_size=batch, failures_path=tmp_path / f"{alias}.jsonl"
        ).ingest(docs)
        failed = {f.id: f.reason for f in report.failures}
        assert set(failed) == bad_ids, failed  # every bad row fails, no good one
        assert not any("strict_dynamic_mapping" in reason for reason in failed.values()), failed
        client.indices.refresh(index=alias)
        assert client.count(index=alias)["count"] == len(docs) - len(bad_ids)
    finally:
        drop_hybrid_index(client, alias)
