"""OpenTelemetry spans of searches and ingests (the ``otel`` extra: ``opentelemetry-api``).

Without ``opentelemetry-api`` every span here is a no-op; with the API but no SDK configured, the
API's own tracer records nothing. Configure an SDK ``TracerProvider`` (and an exporter) in the
application and the adapter's spans appear under the current span, named by the tracer
``opensearch-hybrid-adapter``:

- ``hybrid.search``: one per search, attributes ``hybrid.index``, ``hybrid.technique``,
  ``hybrid.fusion``, ``hybrid.fused_by``, ``hybrid.took_ms`` (the server's), ``hybrid.requests``,
  ``hybrid.fallback`` (the plan fell back; ``hybrid.fallback_reason`` says why), ``hybrid.retries``
  (attempts asked again), ``hybrid.hits``, ``hybrid.request_id`` (the X-Opaque-Id);
- its children: ``hybrid.embed`` (the query's vector), ``hybrid.request`` for each request sent
  (``hybrid.leg``: ``bm25``, ``dense``, ``hybrid`` (both legs, fused by the server), ``bm25+dense``
  (both in one ``_msearch``), ``documents``, ``excerpts``, ``facets``, ``signals``;
  ``db.operation.name``; ``hybrid.took_ms``), ``hybrid.fuse`` (client-side fusion), ``hybrid.rerank``
  and ``hybrid.mmr``;
- ``hybrid.ingest``: one per ingest (``hybrid.index``, ``hybrid.documents``, ``hybrid.failed``), with a
  ``hybrid.ingest.batch`` child per bulk request (``hybrid.rows``, ``hybrid.failed``,
  ``hybrid.retries``).

A span ends with an error status when its block raises (the API records the exception).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Protocol

TRACER = "opensearch-hybrid-adapter"
AttributeValue = str | bool | int | float


class Span(Protocol):
    """What the adapter does with a span (OpenTelemetry's ``Span`` has it; so does the no-op one)."""

    def set_attribute(self, key: str, value: Any) -> None: ...


class _NoSpan:
    def set_attribute(self, key: str, value: Any) -> None:
        pass


NO_SPAN = _NoSpan()

try:
    from opentelemetry import trace as _trace

    _NO_PROVIDERS: tuple[type, ...] = (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)
except ImportError:  # the otel extra is not installed: spans are no-ops
    _trace = None  # type: ignore[assignment]
    _NO_PROVIDERS = ()


def enabled() -> bool:
    """Whether ``opentelemetry-api`` is installed (it may still have no SDK: then nothing is recorded)."""
    return _trace is not None


def recording() -> bool:
    """Whether an application set a tracer provider: without one the API's proxy would make a
    non-recording span per call (~16 us each, four a search), so none is made at all."""
    return _trace is not None and not isinstance(_trace.get_tracer_provider(), _NO_PROVIDERS)


@contextlib.contextmanager
def span(name: str, attributes: dict[str, AttributeValue | None] | None = None) -> Iterator[Span]:
    """A span ``name`` around the block, child of the current one; attributes whose value is None are left out."""
    if not recording():
        yield NO_SPAN
        return
    from adapter._version import __version__

    tracer = _trace.get_tracer(TRACER, __version__)
    given = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(name, attributes=given) as current:
        yield current


def annotate(target: Span, attributes: dict[str, AttributeValue | None]) -> None:
    """Set ``attributes`` on ``target`` (those whose value is None are left out)."""
    for key, value in attributes.items():
        if value is not None:
            target.set_attribute(key, value)
