"""hybrid serve's connection handling (adapter.serve.server), on loopback without a cluster."""

from __future__ import annotations

from tests.support.extras import skip_module_without

skip_module_without("serve")  # before the imports that need FastAPI and uvicorn

import json  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
from typing import Iterator  # noqa: E402

import pytest  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402

from adapter.serve.server import LINGER_TOTAL  # noqa: E402
from tests.support.serving import call, served  # noqa: E402

pytestmark = pytest.mark.unit
CAP = 65_536


def _capped() -> FastAPI:
    app = FastAPI(max_body_size=CAP)

    @app.post("/search")
    async def search(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    return app


def _slowly(total: int, part: int = 8192, pause: float = 0.005) -> Iterator[bytes]:
    """A client that sends its body a part at a time (a big upload over a real network)."""
    yield b'{"q": "'
    for _ in range(total // part):
        time.sleep(pause)
        yield b"x" * part
    yield b'"}'


def test_a_client_still_sending_past_the_cap_reads_the_413_not_a_reset():
    """Before: the server answered 413 at the cap, then closed with the client's bytes unread; the
    kernel reset the connection and urllib (which sends its whole body before it reads, with
    ``Connection: close``) raised BrokenPipe/ECONNRESET instead of reading the 413: 10 of 10 here."""
    with served(_capped()) as url:
        for _ in range(5):
            status, _, body, _ = call(
                f"{url}/search",
                method="POST",
                body=_slowly(300_000),
                headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            )
            assert status == 413 and json.loads(body) == {"detail": "Content Too Large"}
        assert (
            call(f"{url}/search", method="POST", body=b'{"q": "x"}', headers={"Content-Type": "application/json"})[0]
            == 200
        )


def test_a_lingering_connection_is_closed_when_its_client_stops_sending():
    """The lingering is bounded: a client that stops mid-body after the 413 is closed on within
    LINGER_IDLE seconds (it is never held past LINGER_TOTAL)."""
    with served(_capped()) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(
                b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            part = b"x" * 8192
            for _ in range(10):  # past the cap, then silence
                s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
            started, answer = time.monotonic(), b""
            while chunk := s.recv(65536):  # the answer, then the server's end of the connection
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 413 ") and answer.endswith(b'{"detail":"Content Too Large"}')
            assert time.monotonic() - started < LINGER_TOTAL + 5  # not held open for good
