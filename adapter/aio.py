"""The asyncio bridge: the sync use cases (search, ingest) run unchanged on an asyncio event loop,
their requests sent by the engine's asyncio client (``AsyncOpenSearch``, ``AsyncElasticsearch``).

A use case runs in a greenlet (:func:`run`), whose parent is the awaiting task; each request the
port sends through :class:`Blocking` (the async client as the sync port sees it) hands its coroutine
to that parent (:func:`wait`), which awaits it on the loop and switches back with the answer. So one
event loop holds many searches at once (each waits on its own requests, no thread per search), and
the steps, request bodies, fusion and parsing are the sync ones: only the I/O differs. The technique
is SQLAlchemy's asyncio extension's (``greenlet_spawn`` / ``await_only``). The ``async`` extra
brings greenlet and aiohttp.

Contextvars (the X-Opaque-Id, the OpenTelemetry span) follow: the greenlet runs in its task's context.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from typing import Any, AsyncIterable, Awaitable, Callable, Iterable, Iterator, TypeVar

from adapter._optional import require

T = TypeVar("T")


def _greenlet() -> Any:
    return require("greenlet", "the asyncio API (AsyncSearcher, AsyncIngestor)")


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` run on this task: each :func:`wait` inside it awaits here."""
    greenlet = _greenlet().greenlet
    child = greenlet(fn, greenlet.getcurrent())
    child.gr_context = greenlet.getcurrent().gr_context  # the task's contextvars
    child.bridged = True
    step = child.switch(*args, **kwargs)
    while not child.dead:
        try:
            answer = await step
        except BaseException as exc:  # raised into the use case where it waited: its own handlers see it
            step = child.throw(exc)
        else:
            step = child.switch(answer)
    result: T = step
    return result


def bridged() -> bool:
    """Whether this code runs inside :func:`run` (so :func:`wait` can await)."""
    greenlet = sys.modules.get("greenlet")  # not imported: nothing ran bridged
    return greenlet is not None and bool(getattr(greenlet.getcurrent(), "bridged", False))


def offload(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` (CPU work: an embedding) on a worker thread inside :func:`run`, so the loop's other
    tasks go on meanwhile (``asyncio.to_thread``: the context follows); else here."""
    if bridged():
        return wait(asyncio.to_thread(fn, *args))
    return fn(*args)


def pause(seconds: float) -> None:
    """A retry's pause: ``asyncio.sleep`` on the loop inside :func:`run` (the loop's other tasks go on), else
    ``time.sleep``."""
    if bridged():
        wait(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)


def wait(awaitable: Awaitable[T]) -> T:
    """The result of ``awaitable``, awaited by the task that :func:`run` this use case."""
    current = _greenlet().getcurrent()
    if not getattr(current, "bridged", False):
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise RuntimeError(
            "an asyncio client was called from sync code: use the Async* classes (AsyncSearcher, "
            "AsyncIngestor), or a sync client"
        )
    result: T = current.parent.switch(awaitable)
    return result


def iterate(items: AsyncIterable[T]) -> Iterator[T]:
    """An async iterable as a sync iterator, inside :func:`run`."""
    it = items.__aiter__()
    while True:
        try:
            yield wait(it.__anext__())
        except StopAsyncIteration:
            return


def is_blocking(client: object) -> bool:
    """Whether ``client`` is an asyncio client bridged by :class:`Blocking` (its calls wait on the loop)."""
    return isinstance(client, Blocking)


def streaming(
    sync_helper: Callable[..., Iterable[T]],
    async_helper: Callable[..., AsyncIterable[T]],
    client: object,
    *args: Any,
    **kwargs: Any,
) -> Iterator[T]:
    """A client library's streaming helper (``streaming_bulk``): the sync one over a sync client; over a
    bridged asyncio one (wrapped or not), the library's async one (``async_streaming_bulk``: its pauses
    are ``asyncio.sleep``), iterated here."""
    # the port's counting wrapper holds it as _client
    if not (is_blocking(client) or is_blocking(getattr(client, "__dict__", {}).get("_client"))):
        return iter(sync_helper(client, *args, **kwargs))
    return iterate(async_helper(Awaiting(client), *args, **kwargs))


class Awaiting:
    """A sync client object over a bridged one (:class:`Blocking`, or a wrapper of it) as an async
    helper sees it: each call a coroutine, run by :func:`run`; ``options()`` (elasticsearch-py's copy) as is."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def options(self, **kwargs: Any) -> Awaiting:
        return Awaiting(self._target.options(**kwargs))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await run(value, *args, **kwargs)

        return call


class Blocking:
    """An asyncio client as the sync port sees it: each call waits for its coroutine (:func:`wait`);
    namespaces (``indices``, ``transport``...) are wrapped alike; other attributes read through.

    ``namespace`` says which attribute values are namespaces of the client: its engine knows its own
    library's (:func:`adapter.engines.bridge` builds the bridge); without one, a value whose class has a
    coroutine method is. Its engine is the wrapped client's (:func:`adapter.engines.registry.name_of_client`
    reads :attr:`async_client`): the bridge itself knows no engine and no client library."""

    def __init__(self, target: Any, namespace: Callable[[object], bool] | None = None) -> None:
        self._target = target
        self._namespace = namespace or has_coroutine_methods

    @property
    def async_client(self) -> Any:
        """The wrapped asyncio client (or namespace)."""
        return self._target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value) or (callable(value) and inspect.ismethod(value)):
            return _waiting(value, type(self._target), self._namespace)
        if not isinstance(value, (str, bytes, int, float, dict, list)) and self._namespace(value):
            return Blocking(value, self._namespace)
        return value


def _waiting(method: Callable[..., Any], client_type: type, namespace: Callable[[object], bool]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if inspect.isawaitable(result):
            return wait(result)
        # elasticsearch-py's client.options(): a copy of the client, bridged alike
        return Blocking(result, namespace) if isinstance(result, client_type) else result

    return call


_COROUTINE_METHODS: dict[type, bool] = {}  # by class: read once per class, not per attribute read


def has_coroutine_methods(value: object) -> bool:
    """Whether ``value``'s class (or a base of it, ``object`` aside) defines a coroutine method: a namespace of
    an asyncio client whose engine said nothing of its library."""
    cls = type(value)
    found = _COROUTINE_METHODS.get(cls)
    if found is None:
        found = _COROUTINE_METHODS[cls] = any(
            inspect.iscoroutinefunction(v) for c in cls.__mro__[:-1] for v in vars(c).values()
        )
    return found


def is_async_client(value: object) -> bool:
    """Whether ``value`` is an asyncio client (``AsyncOpenSearch``, ``AsyncElasticsearch``, any engine's): one
    used as ``async with`` whose ``close`` is a coroutine, as every asyncio client library's is."""
    return hasattr(type(value), "__aenter__") and inspect.iscoroutinefunction(getattr(type(value), "close", None))
