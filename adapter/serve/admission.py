"""How many searches run at once, how many may wait, and for how long: ``hybrid serve``'s back-pressure.

At most ``concurrency`` searches run (each on a worker thread of a pool that size); at most ``queue``
more wait for one of them to end. A request that finds the queue full is refused at once
(:class:`Overloaded`); one whose deadline passes while it waits or runs is answered then
(:class:`DeadlineExceeded`): both become a 503 with ``Retry-After``. A search whose caller gave up
keeps its slot until its thread really ends (a blocking client call cannot be interrupted), so a
stuck cluster fills the slots and then the queue, and the server refuses fast instead of piling up
threads. The event loop never runs a search: ``/healthz`` answers while every slot is stuck.

Slot time spent on a search whose caller has gone is lost to everyone, so the queue is bounded by
time as well: from how long searches have been taking (a moving average), a request that would not
start before its deadline is refused at once, and one that reaches a slot with less time left than
a search takes is refused there instead of run. Without that, a slow cluster's queue fills with
requests that all time out after their search started, and hardly any search ends in time.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import queue
import threading
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

# When the request arrived (time.monotonic()), set by the outermost middleware: a deadline counts
# the time a request waited for the event loop and its body too.
arrived: contextvars.ContextVar[float] = contextvars.ContextVar("hybrid_serve_arrived")


class DaemonPool:
    """``size`` daemon threads running what :meth:`submit` gives them, in order. Daemon threads
    (which the standard ThreadPoolExecutor's are not) because a thread stuck on a cluster that
    never answers must not keep the process from exiting once its request has been answered."""

    def __init__(self, size: int, name: str) -> None:
        self._jobs: queue.SimpleQueue[
            tuple[asyncio.AbstractEventLoop, Callable[[], Any], asyncio.Future[Any]] | None
        ] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(size)]
        for thread in self._threads:
            thread.start()

    def submit(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """``work()`` on a thread; its answer (or exception) in the returned future, on the caller's loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, work, future))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, work, future = job
            try:
                outcome: tuple[bool, Any] = (True, work())
            except BaseException as exc:  # handed to the awaiting request, which answers for it
                outcome = (False, exc)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:  # the loop closed (the server stopped) while this ran: nobody waits
                pass

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class Refused(Exception):
    """A request this server will not run now; ``retry_after`` seconds is a fair wait."""

    kind = "refused"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _again(what: str, retry_after: int) -> str:
    """Every 503 of this server in one shape: what happened, then the wait its Retry-After says."""
    return f"{what}; try again in {retry_after} s"


class Overloaded(Refused):
    kind = "overloaded"

    @classmethod
    def full(cls, *, running: int, waiting: int) -> Overloaded:
        return cls(
            _again(f"{running} searches are running and {waiting} waiting, the most this server queues", 1),
            retry_after=1,
        )

    @classmethod
    def too_slow(cls, *, running: int, waiting: int, typical: float, deadline: Deadline, wait: float) -> Overloaded:
        retry_after = max(1, math.ceil(wait))
        return cls(
            _again(
                f"{running} searches are running and {waiting} waiting; at {typical:.2f} s a search, this one would "
                f"not end within its deadline ({deadline.seconds:g} s)",
                retry_after,
            ),
            retry_after=retry_after,
        )


class DeadlineExceeded(Refused):
    kind = "deadline"


class Deadline:
    """A request's clock: ``seconds`` from when it arrived (:data:`arrived`; else from now)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = arrived.get(time.monotonic()) + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def exceeded(self, doing: str) -> DeadlineExceeded:
        retry_after = max(1, math.ceil(self.seconds))
        return DeadlineExceeded(
            _again(f"the request's deadline ({self.seconds:g} s) passed while {doing}", retry_after),
            retry_after=retry_after,
        )


class Admission:
    """The slots and the queue. ``on_change(running, waiting)`` reports to the metrics."""

    def __init__(
        self, *, concurrency: int, queue: int, on_change: Callable[[int, int], None] = lambda running, waiting: None
    ) -> None:
        if concurrency < 1 or queue < 0:
            raise ValueError(f"concurrency must be >= 1 and queue >= 0, got {concurrency}, {queue}")
        self.concurrency = concurrency
        self.queue = queue
        self._slots = asyncio.Semaphore(concurrency)
        self._pool = DaemonPool(concurrency, "hybrid-serve-search")
        self._on_change = on_change
        self.running = 0
        self.waiting = 0
        self.typical: float | None = None  # seconds a search takes: a moving average of the last ones

    async def run(self, work: Callable[[], T], deadline: Deadline) -> T:
        """``work()`` on a worker thread once a slot is free, its answer within ``deadline``."""
        await self._enter(deadline)
        started = time.monotonic()
        future = self._pool.submit(work)
        future.add_done_callback(lambda done: self._leave(done, time.monotonic() - started))
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout=max(deadline.left(), 0.0))
        except asyncio.TimeoutError:
            raise deadline.exceeded("the cluster answered") from None

    def refusal(self, deadline: Deadline) -> Overloaded | None:
        """Why a request arriving now would be refused at once (None: it may wait for a slot). Cheap:
        the server asks it before reading a search's body."""
        if not self._slots.locked():
            return None
        if self.waiting >= self.queue:
            return Overloaded.full(running=self.running, waiting=self.waiting)
        if self.typical is not None and self._wait_ahead() + self.typical > deadline.left():
            return Overloaded.too_slow(
                running=self.running,
                waiting=self.waiting,
                typical=self.typical,
                deadline=deadline,
                wait=self._wait_ahead(),
            )
        return None

    async def _enter(self, deadline: Deadline) -> None:
        refused = self.refusal(deadline)
        if refused is not None:
            raise refused
        queued = self._slots.locked()
        self._change(waiting=1)
        try:
            await asyncio.wait_for(self._slots.acquire(), timeout=max(deadline.left(), 0.0))
        except asyncio.TimeoutError:
            raise deadline.exceeded("waiting for a free search slot") from None
        finally:
            self._change(waiting=-1)
        # Only a request that waited is turned away here: one that finds a slot free always runs,
        # so the average keeps learning (a cluster that recovers is noticed).
        if queued and self.typical is not None and deadline.left() < self.typical:
            self._slots.release()
            raise deadline.exceeded(
                "waiting for a free search slot"
            )  # the same 503 as a wait that timed out, in the same words
        self._change(running=1)

    def _wait_ahead(self) -> float:
        """About how long a request arriving now waits for a slot."""
        return (self.waiting + 1) / self.concurrency * (self.typical or 0.0)

    def _leave(self, future: asyncio.Future[Any], seconds: float) -> None:
        self._slots.release()
        self._change(running=-1)
        self.typical = seconds if self.typical is None else 0.8 * self.typical + 0.2 * seconds
        if not future.cancelled():
            future.exception()  # seen: the caller may have given up on it

    def _change(self, *, running: int = 0, waiting: int = 0) -> None:
        self.running += running
        self.waiting += waiting
        self._on_change(self.running, self.waiting)

    def close(self) -> None:
        self._pool.close()
