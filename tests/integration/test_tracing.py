"""OpenTelemetry spans of real searches and an ingest, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from adapter.fusion.base import FusedBy
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.search import Searcher
from tests.support.cli import TEST_EMBEDDER

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
QUERY = "¿cómo devuelvo un pedido?"


@pytest.fixture(scope="module")
def exporter():
    """The SDK's in-memory exporter behind the process's tracer provider (set once per process)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    memory.shutdown()


@pytest.fixture(scope="module")
def indexed(client, support_docs_path):
    from tests.conftest import drop_hybrid_index

    alias = f"t-tracing-{uuid.uuid4().hex[:6]}"
    init_index(client, alias, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    Ingestor.open(client, alias, TEST_EMBEDDER, progress=False).ingest(read_source(support_docs_path))
    yield alias
    drop_hybrid_index(client, alias)


def _ours(exporter):
    return [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "opensearch-hybrid-adapter"]


def test_an_ingest_has_a_span_and_one_per_bulk_request(client, index_name, support_docs_path, exporter):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    exporter.clear()
    report = Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False, bulk_batch_size=5).ingest(
        read_source(support_docs_path)
    )
    spans = _ours(exporter)
    (ingest,) = [s for s in spans if s.name == "hybrid.ingest"]
    batches = [s for s in spans if s.name == "hybrid.ingest.batch"]
    assert (
        ingest.attributes["hybrid.index"] == index_name
        and ingest.attributes["hybrid.documents"] == report.documents == 12
    )
    assert ingest.attributes["hybrid.failed"] == 0 and ingest.attributes["hybrid.request_id"].startswith("hybrid-")
    # sender threads under the ingest
    assert batches and all(b.parent.span_id == ingest.context.span_id for b in batches)
    assert sum(b.attributes["hybrid.rows"] for b in batches) == report.chunks and all(
        b.attributes["hybrid.failed"] == 0 for b in batches
    )


@pytest.mark.parametrize(
    "technique, legs", [("hybrid", None), ("client-rrf", ["bm25+dense", "documents"]), ("bm25", ["bm25"])]
)
def test_a_search_has_a_span_with_its_stages_as_children(client, indexed, exporter, technique, legs):
    index_name = indexed
    searcher = Searcher.open(client, index_name, TEST_EMBEDDER)
    exporter.clear()
    result = searcher.search(QUERY, technique=technique, k=3, mmr_lambda=0.5 if technique == "client-rrf" else None)
    spans = _ours(exporter)
    (search,) = [s for s in spans if s.name == "hybrid.search"]
    children = [s for s in spans if s.parent is not None and s.parent.span_id == search.context.span_id]
    a = search.attributes
    assert (a["hybrid.index"], a["hybrid.technique"], a["hybrid.fused_by"]) == (
        index_name,
        result.technique.value,
        result.fused_by_label,
    )
    assert a["hybrid.requests"] == result.requests and a["hybrid.took_ms"] == result.took_ms and a["hybrid.hits"] == 3
    # Elasticsearch without a licence for retrievers
    fell_back = technique == "hybrid" and result.fused_by is FusedBy.CLIENT
    assert a["hybrid.fallback"] is fell_back and a["hybrid.retries"] == 0
    assert a.get("hybrid.fallback_reason") in ((*result.notices,) if fell_back else (None,))
    assert a.get("hybrid.fusion") == (result.fusion.name if result.fusion else None)
    requests = [s for s in children if s.name == "hybrid.request"]
    assert len(requests) == result.requests  # one span per request the search sent
    if fell_back:
        legs = ["bm25+dense", "documents"]
    if legs is not None:
        assert [s.attributes["hybrid.leg"] for s in requests] == legs
    else:  # the server fuses: one request with both legs (and the excerpts after, where the cluster needs them)
        assert requests[0].attributes["hybrid.leg"] == "hybrid"
    timed = [s for s in requests if s.attributes["db.operation.name"] != "mget"]
    assert timed and all("hybrid.took_ms" in s.attributes for s in timed)
    names = {s.name for s in children}
    assert ("hybrid.embed" in names) == (technique != "bm25")
    assert ("hybrid.fuse" in names) == (technique == "client-rrf" or fell_back) and ("hybrid.mmr" in names) == (
        technique == "client-rrf"
    )


def test_a_search_runs_the_same_without_opentelemetry(opensearch_url, target, indexed, client):
    """No opentelemetry-api at all (the otel extra not installed): the spans are no-ops, the search the same."""
    index_name = indexed
    expected = Searcher.open(client, index_name, TEST_EMBEDDER).search(QUERY, k=3).ids
    code = f"""
import sys
sys.modules["opentelemetry"] = None  # as if it were not installed: importing it fails
from adapter.observability import tracing
from adapter.engines import connect_cluster
from adapter.search import Searcher
from tests.support.cli import TEST_EMBEDDER
assert not tracing.enabled()
client = connect_cluster({opensearch_url!r}, engine={target.engine!r})
print(",".join(Searcher.open(client, {index_name!r}, TEST_EMBEDDER).search({QUERY!r}, k=3).ids))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().split(",") == list(expected)
