"""Logs, traces and metrics of the adapter, from an asyncio application (docs/OPERATIONS.md, "Run it in production").

    pip install 'opensearch-hybrid-adapter[async,otel,metrics,e5]' opentelemetry-sdk
    python examples/observed_async_service.py --url http://127.0.0.1:9200 --index docs

Searches the index (an index ``hybrid init`` / ``Ingestor`` made) with 8 searches at once on one event
loop; logs each request and search to stderr, prints each span (the SDK's console exporter) and ends
with the adapter's Prometheus metrics as a scrape of ``/metrics`` would read them (here served on
``--metrics-port`` while it runs).
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from prometheus_client import generate_latest, start_http_server

from adapter import AsyncSearcher, connect_async
from adapter.observability.telemetry import request_id


def observe(metrics_port: int) -> None:
    # Logs: the adapter logs under "adapter" and says nothing until the application configures logging.
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("adapter").setLevel(logging.DEBUG)  # DEBUG: every request and search; INFO: fallbacks, notices
    # Traces: any TracerProvider; the adapter's spans come from the tracer "opensearch-hybrid-adapter".
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
    # Metrics: the adapter's are in prometheus-client's default registry; serve it as any other.
    start_http_server(metrics_port, addr="127.0.0.1")


async def main(url: str, index: str) -> None:
    client = connect_async(url)  # AsyncOpenSearch (connect_elasticsearch_async: AsyncElasticsearch)
    try:
        searcher = await AsyncSearcher.open(client, index)
        queries = ["refund", "error E-4012", "reset my password", "shipping abroad"] * 2
        with request_id("example-batch-1"):  # every request of these searches carries this X-Opaque-Id
            results = await asyncio.gather(*(searcher.search(q, k=3) for q in queries))
        for q, r in zip(queries, results):
            print(f"{q!r}: {[h.id for h in r.hits]} ({r.fused_by_label}, {r.total_ms:.0f} ms)")
    finally:
        await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--index", default="docs")
    parser.add_argument("--metrics-port", type=int, default=9464)
    args = parser.parse_args()
    observe(args.metrics_port)
    asyncio.run(main(args.url, args.index))
    print(b"\n".join(line for line in generate_latest().splitlines() if line.startswith(b"hybrid_")).decode())
