"""Running the ``hybrid serve`` app: uvicorn, with the timeouts and signals ops expect.

- A request's head and body must arrive within ``header_timeout`` seconds of the connection (or of
  its previous answer), else the connection is closed: uvicorn has a keep-alive timeout but none
  for a request being sent, so 200 connections that never finish their headers were held forever
  (:class:`TimedH11Protocol`, uvicorn's own h11 protocol with that one timer added).
- An idle keep-alive connection is closed after ``keep_alive`` seconds (uvicorn's).
- SIGTERM or SIGINT: no new connections, the requests in flight answered (each is bounded by the
  deadline), then exit 0.
- ``workers`` > 1: uvicorn's supervisor runs that many processes on one socket, each with its own
  searcher and model (``factory``: an import string of a function that builds a worker's app);
  ``/metrics`` adds up every worker's values (``PROMETHEUS_MULTIPROC_DIR``, a folder made here).
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn import Config, Server
from uvicorn.protocols.http.h11_impl import H11Protocol

from adapter.serve.metrics import MULTIPROCESS

LOOPBACK = "127.0.0.1"


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
        if self.workers < 1 or self.header_timeout <= 0 or self.keep_alive <= 0 or self.max_connections < 1 or self.graceful < 0:
            raise ValueError(f"invalid listen settings: {self}")


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request has not fully arrived within the
    header timeout (``config.hybrid_header_timeout``) of its opening or of its last answer."""

    def __init__(self, config: Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.header_timeout = float(getattr(config, "hybrid_header_timeout", Listen.header_timeout))
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):  # the whole request is in
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm()  # the next request on this connection has the same time to arrive

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
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


def uvicorn_config(app: Any, listen: Listen, *, factory: bool = False) -> Config:
    """uvicorn's configuration for ``app`` (an ASGI app, or with ``workers`` > 1 an import string)."""
    config = Config(app, host=listen.host, port=listen.port, workers=listen.workers, factory=factory,
                    http="adapter.serve.server:TimedH11Protocol", timeout_keep_alive=max(1, math.ceil(listen.keep_alive)),
                    timeout_graceful_shutdown=max(1, math.ceil(listen.graceful)), limit_concurrency=listen.max_connections,
                    lifespan="on", log_level="warning", server_header=False)
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
