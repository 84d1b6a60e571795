"""Serving an ASGI app for a test: uvicorn in a thread on a free loopback port, stopped after; as
``hybrid serve`` configures it (adapter.serve.server: header and keep-alive timeouts) unless the
app is not ours."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any, Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served(app: Any, **listen: Any) -> Iterator[str]:
    """The app at ``http://127.0.0.1:<port>`` until the block ends; ``listen``: fields of
    :class:`adapter.serve.server.Listen` (``header_timeout``, ``keep_alive``, ...)."""
    import uvicorn

    from adapter.serve.server import Listen, uvicorn_config

    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, Listen(port=port, **listen)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
