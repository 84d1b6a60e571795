"""Spans cost nothing until an application sets a tracer provider (issue 37 item 4: ~16 us a span,
four a search, went to the API's proxy tracer, which records nothing)."""

from __future__ import annotations

import subprocess
import sys

from adapter.observability import tracing
from tests.support.extras import requires_extra


def test_no_span_is_made_without_a_tracer_provider():
    assert not tracing.recording()
    with tracing.span("hybrid.search", {"hybrid.index": "docs"}) as span:
        assert span is tracing.NO_SPAN


@requires_extra("otel")
def test_spans_are_recorded_once_the_application_sets_a_provider():
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "from adapter.observability import tracing\n"
        "assert not tracing.recording()\n"
        "provider, memory = TracerProvider(), InMemorySpanExporter()\n"
        "provider.add_span_processor(SimpleSpanProcessor(memory)); trace.set_tracer_provider(provider)\n"
        "with tracing.span('hybrid.search', {'hybrid.index': 'docs', 'none': None}) as span:\n"
        "    assert span is not tracing.NO_SPAN\n"
        "[done] = memory.get_finished_spans()\n"
        "print(done.name, dict(done.attributes))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "hybrid.search {'hybrid.index': 'docs'}"
