"""A search's deadline over the cluster client's tries: each try waits at most what is left, and no
try starts once the deadline has passed (issue 38 item 4).

The clients retry a timed-out request (``max_retries`` 3, each try waiting the client's whole
timeout), so before this a search whose caller got its 503 at the deadline kept its worker thread
and slot for up to four timeouts, and the server went on refusing long after a slow cluster had
recovered. :func:`install` wraps the two calls both clients make once per try: taking a
connection (opensearch-py's ``Transport.get_connection``, elastic-transport's ``NodePool.get``),
where a passed deadline raises the client's own ``ConnectionTimeout`` (outside its retry loop, so
it is not retried), and that connection's ``perform_request``, whose timeout is cut to what is
left. Only a thread inside :func:`within` is bounded: anything else that shares the client (the
readiness check has its own) behaves as before.

It knows the two client libraries' transports (and imports their exceptions), so it lives with the
engines, the one package that imports a client library (pyproject's ``clients-in-engines`` contract);
``hybrid serve`` (:mod:`adapter.serve.runner`) bounds its searches with it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Any, Callable, Iterator

# When the current thread's search must end (time.monotonic()), or None: not bounded.
_until: contextvars.ContextVar[float | None] = contextvars.ContextVar("hybrid_serve_search_until", default=None)
_WRAPPED = "_hybrid_serve_bounded"
FLOOR = 0.001  # seconds: a try never gets a zero timeout (urllib3 reads 0 as "do not wait at all", not "none left")


@contextlib.contextmanager
def within(seconds_left: float) -> Iterator[None]:
    """The cluster requests this thread sends in the block end within ``seconds_left`` from now."""
    token = _until.set(time.monotonic() + seconds_left)
    try:
        yield
    finally:
        _until.reset(token)


def left() -> float | None:
    """Seconds left to the current thread's search (None: not bounded)."""
    until = _until.get()
    return None if until is None else until - time.monotonic()


def install(client: Any) -> bool:
    """Bound ``client``'s tries by :func:`within`'s deadlines (idempotent). False when its transport is of
    neither known shape: then only the caller's answer is bounded, not the thread's wait."""
    transport = getattr(client, "transport", None)
    if transport is None or getattr(transport, _WRAPPED, False):
        return transport is not None
    if callable(getattr(transport, "get_connection", None)):  # opensearch-py
        from opensearchpy.exceptions import ConnectionTimeout

        def expired() -> Exception:
            return ConnectionTimeout(
                "TIMEOUT", "the search's deadline passed", TimeoutError("the search's deadline passed before this try")
            )

        transport.get_connection = _taking(transport.get_connection, "timeout", expired)
    elif callable(
        getattr(getattr(transport, "node_pool", None), "get", None)
    ):  # elastic-transport (elasticsearch-py 8+)
        from elastic_transport import ConnectionTimeout as ElasticTimeout

        pool = transport.node_pool
        pool.get = _taking(
            pool.get, "request_timeout", lambda: ElasticTimeout("the search's deadline passed before this try")
        )
    else:
        return False
    setattr(transport, _WRAPPED, True)
    return True


def _taking(take: Callable[[], Any], keyword: str, expired: Callable[[], Exception]) -> Callable[[], Any]:
    """``take`` (a connection for one try) refusing once the deadline has passed, its connection's
    tries cut to what is left (``keyword``: the name its ``perform_request`` gives the timeout)."""

    def bounded_take() -> Any:
        remaining = left()
        if remaining is not None and remaining <= 0:
            raise expired()
        connection = take()
        if not getattr(connection, _WRAPPED, False):
            default = getattr(connection, "timeout", None) or getattr(
                getattr(connection, "config", None), "request_timeout", None
            )
            connection.perform_request = _cut(connection.perform_request, keyword, default)
            setattr(connection, _WRAPPED, True)
        return connection

    return bounded_take


def _cut(perform: Callable[..., Any], keyword: str, default: Any) -> Callable[..., Any]:
    def perform_within(*args: Any, **kwargs: Any) -> Any:
        remaining = left()
        if remaining is not None:
            given = kwargs.get(keyword)
            seconds = _seconds(given) or _seconds(default)
            kwargs[keyword] = max(FLOOR, remaining if seconds is None else min(seconds, remaining))
        return perform(*args, **kwargs)

    return perform_within


def _seconds(timeout: Any) -> float | None:
    """A timeout as seconds to read (a number, or urllib3's Timeout's read); None: none set or a sentinel."""
    if isinstance(timeout, bool):
        return None
    if isinstance(timeout, (int, float)):
        return float(timeout)
    read = getattr(timeout, "read_timeout", None)
    return float(read) if isinstance(read, (int, float)) else None
