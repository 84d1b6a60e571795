"""What operators see of the adapter's traffic: logs, a request id per search, the User-Agent.

**Logs** go through stdlib :mod:`logging` under the ``adapter`` logger (a ``NullHandler`` sits on it:
a library says nothing until the application configures logging; ``hybrid -v`` / ``-vv`` / ``-q``
does it for the CLI):

- ``adapter.requests``, DEBUG: each HTTP request as it came back: method, path and query string,
  status, the server's ``took``, the time it took on the wire, the request id. A request that got
  no answer, or a 429 or 5xx (which the client, the searcher or the bulk helper may ask again), at
  WARNING.
- ``adapter.search``: each search's summary at DEBUG (technique, fusion, fused_by, took, requests,
  hits); its notices and fallbacks at INFO; an attempt asked again (a partial answer, a node
  leaving, the memory breaker) at WARNING, the alias followed or a refused fusion at INFO.
- ``adapter.ingest``: bulk items the cluster refused with 429 (sent again after a pause), items
  failed with a 5xx (sent once more), requests split to isolate a bad row: WARNING.

A log line never holds a secret: requests are logged by method, path and query string only
(never headers, bodies or the URL's user part; credentials are moved out of URLs when settings are
resolved, :mod:`adapter.engines.connection`).

**X-Opaque-Id**: every request of one search (or one ingest) carries the same id, ``hybrid-`` and
12 hex digits, or the caller's own (``with request_id("checkout-42"): searcher.search(...)``). The
node shows it in ``_tasks`` (``headers``) and in its slow log (``id[...]``), so ops can tell the
adapter's traffic apart and follow one search. **User-Agent**: ``opensearch-hybrid-adapter/<version>``
and the client library's own. Both are sent by the clients :func:`adapter.connect` /
:func:`adapter.connect_cluster` build; a client built by hand keeps its own headers.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import platform
import re
import uuid
from typing import Iterator

REQUESTS = logging.getLogger("adapter.requests")
SEARCH = logging.getLogger("adapter.search")
INGEST = logging.getLogger("adapter.ingest")

_REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("hybrid_request_id", default=None)
# The server's took opens a search and an _msearch answer: read from the first bytes, never the whole body.
_TOOK = re.compile(r'^\{\s*"took"\s*:\s*(\d+)')


def current_request_id() -> str | None:
    """The X-Opaque-Id the requests sent now carry (None: outside a search or ingest)."""
    return _REQUEST_ID.get()


@contextlib.contextmanager
def request_id(value: str | None = None) -> Iterator[str]:
    """Every request sent in this block (this thread or task) carries ``X-Opaque-Id: value``; an id
    already set by an outer block is kept (the caller's id names the whole of its work). Without a
    value: ``hybrid-`` and 12 hex digits."""
    outer = _REQUEST_ID.get()
    if outer is not None:
        yield outer
        return
    if value is not None and (not value or len(value) > 256 or not value.isprintable()):
        raise ValueError(f"a request id must be 1 to 256 printable characters, got {value!r}")
    token = _REQUEST_ID.set(value or f"hybrid-{uuid.uuid4().hex[:12]}")
    try:
        yield _REQUEST_ID.get() or ""
    finally:
        _REQUEST_ID.reset(token)


def user_agent(client: str) -> str:
    """``opensearch-hybrid-adapter/<version> (<client library>/<version>; Python x.y.z)``."""
    from adapter._version import __version__

    return f"opensearch-hybrid-adapter/{__version__} ({client}; Python {platform.python_version()})"


def took_of(raw: str | bytes | None) -> int | None:
    """The server's ``took`` (ms) at the start of a raw JSON answer (None: it has none)."""
    if not raw:
        return None
    head = raw[:48].decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw[:48]
    found = _TOOK.match(head)
    return int(found.group(1)) if found else None


def log_request(
    method: str,
    path: str,
    status: int | None,
    seconds: float,
    raw: str | bytes | None = None,
    error: BaseException | None = None,
) -> None:
    """One HTTP request as it came back (the engines' connections call it for each attempt)."""
    trouble = status is None or status == 429 or status >= 500
    level = logging.WARNING if trouble else logging.DEBUG
    if not REQUESTS.isEnabledFor(level):
        return
    took = took_of(raw)
    REQUESTS.log(
        level,
        "%s %s %s%s in %.1f ms%s%s",
        method,
        path,
        status if status is not None else "no answer",
        f" took={took}ms" if took is not None else "",
        seconds * 1000.0,
        f" id={_REQUEST_ID.get()}" if _REQUEST_ID.get() else "",
        f" ({type(error).__name__})" if error is not None else "",
    )
