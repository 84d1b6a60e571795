"""Native asyncio for the framework components, with no framework imported.

A component built with an :class:`~adapter.AsyncSearcher` (and an :class:`~adapter.AsyncIngestor`
for writes) runs its async methods through :mod:`adapter.aio`: the component's own sync code runs
on the event loop's thread, in a greenlet, over the sync searcher/ingestor inside the async one (its
client is the bridged asyncio client), so each request is awaited on the loop and the results are
the sync code's. A component built only with a sync :class:`~adapter.Searcher` has no asyncio client:
its async methods run the sync code on a worker thread (``asyncio.to_thread``), as before.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from adapter import aio
from adapter.errors import InputError

T = TypeVar("T")


def is_async(part: Any) -> bool:
    """Whether ``part`` is an :class:`~adapter.AsyncSearcher` or an :class:`~adapter.AsyncIngestor`."""
    from adapter.ingest.async_ingestor import AsyncIngestor
    from adapter.search.async_searcher import AsyncSearcher

    return isinstance(part, (AsyncSearcher, AsyncIngestor))


def bridged(part: Any) -> Any:
    """The sync searcher (ingestor) inside an async one: over the bridged asyncio client, it runs only
    inside :func:`adapter.aio.run`. ``None`` stays ``None``."""
    if part is None:
        return None
    if not is_async(part):
        raise InputError(f"expected an adapter.AsyncSearcher or AsyncIngestor, got {type(part).__name__}")
    return getattr(part, "searcher", None) or getattr(part, "ingestor")


def split(part: Any, given_async: Any) -> tuple[Any, Any]:
    """``(sync side, async part)`` from a component's argument (a sync or an async searcher/ingestor)
    and its ``async_*`` argument; both async: an error. Given only an async part, the sync side is the one
    inside it (:func:`bridged`: info and embedder, no request outside :func:`run`); neither: ``(None, None)``."""
    if is_async(part):
        if given_async is not None:
            raise InputError(
                f"an {type(part).__name__} was given twice: pass the sync one first, or only the async one"
            )
        return bridged(part), part
    if given_async is not None and not is_async(given_async):
        raise InputError(
            "async_searcher / async_ingestor must be an AsyncSearcher / AsyncIngestor, got "
            f"{type(given_async).__name__}"
        )
    return part, given_async


async def run(native: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``: on this loop through the asyncio bridge when ``native`` (its requests
    awaited here), else on a worker thread (the component has no asyncio client; the context follows)."""
    if native:
        return await aio.run(fn, *args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
