"""A fault-injecting HTTP proxy on 127.0.0.1 for reliability tests (test support, not the package).

It forwards each request to the upstream node and, when the test's ``policy`` says so, answers
with an error status instead, resets the connection (RST, no answer at all), or waits before
forwarding. Everything is bounded: the proxy runs in daemon threads and stops with the context.

    with FaultProxy(node_url, policy) as proxy:
        client = connect(proxy.url)

``policy(n, method, path)`` gets the request's number (from 1), method and path and returns
``PASS``, ``Status(503)`` (or ``Status(500, reason, type)``: the server's words), ``RESET``, ``Delay(seconds)`` or
``Hold(seconds)``; :attr:`FaultProxy.log` keeps ``(n, method, path, action)`` for every request,
:attr:`FaultProxy.headers` its headers.
"""

from __future__ import annotations

import http.client
import json
import http.server
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlparse

PASS = "pass"
RESET = "reset"


@dataclass(frozen=True)
class Status:
    """Answer ``code`` with an error body of this ``type`` and ``reason`` (the server's words, e.g. a node leaving)."""

    code: int
    reason: str | None = None
    type: str = "injected_fault"


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Hold:
    """Forward the request (the node does the work), then wait before answering: a client killed
    meanwhile never learns that its request succeeded."""

    seconds: float


Policy = Callable[[int, str, str], object]

# Hop-by-hop headers are the proxy's own business (RFC 9110, 7.6.1).
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        action = self.server.next_action(self.command, self.path, dict(self.headers.items()))
        if action == RESET:
            # SO_LINGER 0: close() sends RST, the client sees "connection reset", no answer.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if isinstance(action, Status):
            reason = action.reason or f"fault proxy answered {action.code}"
            payload = json.dumps({"error": {"type": action.type, "reason": reason}, "status": action.code}).encode()
            self.send_response(action.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if isinstance(action, Delay):
            time.sleep(action.seconds)
        upstream = http.client.HTTPConnection(self.server.upstream[0], self.server.upstream[1], timeout=120)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP and k.lower() != "host"}
            upstream.request(self.command, self.path, body=body, headers=headers)
            resp = upstream.getresponse()
            data = resp.read()
        except OSError:
            self.send_error(502, "upstream unreachable")
            return
        finally:
            upstream.close()
        if isinstance(action, Hold):
            time.sleep(action.seconds)
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _guarded(self) -> None:
        try:
            self._handle()
        except OSError:  # the client gave up (timeout) or the node went away while we waited: nobody to answer
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _guarded


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog is 5: a burst of new connections (an asyncio pool reconnecting 64 at once after
    # aiohttp's 15 s keep-alive) overflowed it, and each dropped SYN came back a second later (TCP's retry).
    request_queue_size = 128

    def __init__(self, upstream: tuple[str, int], policy: Policy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.policy = policy
        self.log: list[tuple[int, str, str, object]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        """A client that went away (reset) is no error of the proxy's: quiet; anything else as usual."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def next_action(self, method: str, path: str, headers: dict[str, str]) -> object:
        with self._lock:
            n = len(self.log) + 1
            action = self.policy(n, method, path)
            self.log.append((n, method, path, action))
            self.headers.append(headers)
        return action


class FaultProxy:
    def __init__(self, upstream_url: str, policy: Policy = lambda n, method, path: PASS) -> None:
        parsed = urlparse(upstream_url)
        self._server = _Server((parsed.hostname, parsed.port), policy)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def log(self) -> list[tuple[int, str, str, object]]:
        return self._server.log

    @property
    def headers(self) -> list[dict[str, str]]:
        """Each request's headers, in the order of :attr:`log`."""
        return self._server.headers

    def set_policy(self, policy: Policy) -> None:
        self._server.policy = policy

    def faults(self) -> list[tuple[int, str, str, object]]:
        return [entry for entry in self.log if entry[3] != PASS]

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def black_hole() -> tuple[socket.socket, list[socket.socket], int]:
    """A port on 127.0.0.1 whose listen queue is full: new connections get no answer at all, as
    from a host that is down behind a firewall. Returns the sockets to close and the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    for _ in range(16):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=0.3))
        except OSError:
            break
    return listener, held, port
