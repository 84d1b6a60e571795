"""Running the ``hybrid serve`` app: uvicorn, with the timeouts and signals ops expect.

- A request's head and body must arrive within ``header_timeout`` seconds of the connection (or of
  its previous answer), else the connection is closed: uvicorn has a keep-alive timeout but none
  for a request being sent, so 200 connections that never finish their headers were held forever
  (:class:`TimedH11Protocol`, uvicorn's own h11 protocol with that one timer added).
- An idle keep-alive connection is closed after ``keep_alive`` seconds (uvicorn's).
- A connection closed while the client still sends its body (a 413 at the cap, to a client that
  asked ``Connection: close``) lingers: the answer is followed by a FIN and what still arrives is
  read and dropped, for at most ``LINGER_IDLE`` seconds between reads and ``LINGER_TOTAL`` in all,
  as nginx's lingering close does. Closed at once, the kernel answers the unread bytes with a
  reset, and a client that sends its whole body before it reads (urllib, requests) saw the reset,
  never the 413.
- A request line or header block over ``HEAD_BYTES`` (16 KiB) is answered 414 or 431 in JSON, and the
  connection lingers as above: uvicorn answered any head h11 refused with a plain-text 400 and closed
  at once, so a client still sending a 160 KB query string saw a reset.
- SIGTERM or SIGINT: no new connections, the requests in flight answered (each is bounded by the
  deadline), then exit 0.
- ``workers`` > 1: uvicorn's supervisor runs that many processes on one socket, each with its own
  searcher and model (``factory``: an import string of a function that builds a worker's app);
  ``/metrics`` adds up every worker's values (``PROMETHEUS_MULTIPROC_DIR``, a folder made here).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, cast

import h11
from uvicorn import Config, Server
from uvicorn.protocols.http.h11_impl import H11Protocol

from adapter.serve.door import HEADERS
from adapter.serve.metrics import MULTIPROCESS

LOOPBACK = "127.0.0.1"
LINGER_IDLE = 2.0  # seconds without a byte before a lingering connection is closed
LINGER_TOTAL = 5.0  # seconds a lingering connection is read at most
HEAD_BYTES = 16 * 1024  # the most a request's head may be (h11's default, given to uvicorn explicitly)


@dataclass(frozen=True)
class Listen:
    """Where and how ``hybrid serve`` listens."""

    host: str = LOOPBACK
    port: int = 8765
    workers: int = 1
    header_timeout: float = 10.0  # seconds for a request's head and body to arrive
    keep_alive: float = 5.0  # seconds an idle connection stays open
    max_connections: int = 1000  # beyond this, uvicorn answers 503 at once
    graceful: float = 15.0  # seconds SIGTERM waits for the requests in flight

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"the port must be from 1 to 65535, got {self.port}")
        if (
            self.workers < 1
            or self.header_timeout <= 0
            or self.keep_alive <= 0
            or self.max_connections < 1
            or self.graceful < 0
        ):
            raise ValueError(f"invalid listen settings: {self}")


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request has not fully arrived within the
    header timeout (``config.hybrid_header_timeout``) of its opening or of its last answer."""

    def __init__(self, config: Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.header_timeout = float(getattr(config, "hybrid_header_timeout", Listen.header_timeout))
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._raw = transport
        self._lost = False
        self._linger: _Linger | None = None
        self._head: bytes = b""  # the start of the request being read (its first HEAD_BYTES + 2 bytes)
        self._head_seen = 0  # bytes of it so far
        super().connection_made(cast(asyncio.Transport, _LingeringTransport(transport, self)))
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:  # the answer is sent: what still comes of the body is dropped
            self._linger.read()
            return
        if self.conn.their_state is h11.IDLE:
            self._head_seen += len(data)
            if len(self._head) < HEAD_BYTES + 2:
                self._head += data[: HEAD_BYTES + 2 - len(self._head)]
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):  # the whole request is in
            self._disarm()

    def close_while_sending(self) -> bool:
        """Linger instead of closing when the client is still sending its body; False otherwise."""
        if self._lost or self._linger is not None or self.conn.their_state is not h11.SEND_BODY:
            return False
        self._disarm()
        self._linger = _Linger(self.loop, self._raw)
        return True

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 refused: a head over the cap is 414 (its request line) or
        431 (its headers), in JSON, and the rest of what the client sends is read and dropped."""
        if self._head_seen <= HEAD_BYTES:
            super().send_400_response(msg)
            return
        line_too_long = b"\r\n" not in self._head[:HEAD_BYTES]
        status = 414 if line_too_long else 431
        said = "request line (the path and query string) is" if line_too_long else "request headers are"
        body = json.dumps({"error": f"the {said} over this server's limit of {HEAD_BYTES} bytes"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"connection", b"close"),
            *((k.lower().encode(), v.encode()) for k, v in HEADERS.items()),
        ]
        for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
            self._raw.write(self.conn.send(event) or b"")
        self._disarm()
        self._linger = _Linger(self.loop, self._raw)

    def on_response_complete(self) -> None:
        self._head, self._head_seen = b"", 0
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm()  # the next request on this connection has the same time to arrive

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._disarm()
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self.transport.close()


class _Linger:
    """A connection being closed the lingering way: FIN after the answer, then reads dropped until
    the client closes, is idle ``LINGER_IDLE`` seconds, or ``LINGER_TOTAL`` seconds have passed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
        self.loop, self.transport = loop, transport
        self.deadline = loop.time() + LINGER_TOTAL
        self.timer: asyncio.TimerHandle | None = None
        if transport.can_write_eof():
            transport.write_eof()  # after the buffered answer: the client reads it, then its end
        transport.resume_reading()  # uvicorn may have paused it at its high-water mark
        self.read()

    def read(self) -> None:
        self.cancel()
        wait = min(LINGER_IDLE, self.deadline - self.loop.time())
        if wait <= 0:
            self.transport.close()
        else:
            self.timer = self.loop.call_later(wait, self.transport.close)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: ``close()`` lingers while the client still
    sends (:meth:`TimedH11Protocol.close_while_sending`), and a lingering connection is closing."""

    def __init__(self, transport: asyncio.Transport, protocol: TimedH11Protocol) -> None:
        self._transport, self._protocol = transport, protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._protocol._linger is not None or self._transport.is_closing()

    def close(self) -> None:
        if not self.is_closing() and not self._protocol.close_while_sending():
            self._transport.close()


def uvicorn_config(app: Any, listen: Listen, *, factory: bool = False) -> Config:
    """uvicorn's configuration for ``app`` (an ASGI app, or with ``workers`` > 1 an import string)."""
    config = Config(
        app,
        host=listen.host,
        port=listen.port,
        workers=listen.workers,
        factory=factory,
        http="adapter.serve.server:TimedH11Protocol",
        timeout_keep_alive=max(1, math.ceil(listen.keep_alive)),
        timeout_graceful_shutdown=max(1, math.ceil(listen.graceful)),
        limit_concurrency=listen.max_connections,
        lifespan="on",
        log_level="warning",
        server_header=False,
        h11_max_incomplete_event_size=HEAD_BYTES,
        # At "warning" the access lines are never shown, but uvicorn still formats each one's path (quote()):
        # ~2 % of the serve's CPU a search. Requests are counted and timed in /metrics instead.
        access_log=False,
    )
    config.hybrid_header_timeout = listen.header_timeout  # type: ignore[attr-defined]  # read by TimedH11Protocol
    return config


def run(app: Any, listen: Listen, *, factory: bool = False) -> None:
    """Serve until SIGTERM or SIGINT, then return once the requests in flight are answered."""
    from uvicorn.supervisors import Multiprocess

    config = uvicorn_config(app, listen, factory=factory)
    if listen.workers == 1:
        config.load_app()
        Server(config=config).run()
        return
    made = None if os.environ.get(MULTIPROCESS) else tempfile.mkdtemp(prefix="hybrid-serve-metrics-")
    if made:
        os.environ[MULTIPROCESS] = made  # before the workers start: they read it when prometheus-client loads
    try:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)
            del os.environ[MULTIPROCESS]
