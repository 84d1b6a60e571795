"""Load for a service on loopback: N clients for T seconds, each one request at a time on its own
keep-alive connection; every answer recorded (test support and benchmarks/serve.py, not the package)."""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Answer:
    status: str  # the HTTP status, or the exception's name when there was none
    ms: float
    retry_after: str | None = None


Call = Callable[[], tuple[str, str | None]]


def drive(clients: int, seconds: float, make_call: Callable[[int], Call]) -> list[Answer]:
    """``clients`` threads, each calling its own ``make_call(i)()`` until ``seconds`` pass; every answer."""
    answers: list[Answer] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(i: int) -> None:
        once = make_call(i)
        mine: list[Answer] = []
        start.wait()
        while time.monotonic() < stop_at[0]:
            t0 = time.perf_counter()
            try:
                status, retry_after = once()
            except Exception as exc:  # counted: an error is a result here, not a crash
                status, retry_after = type(exc).__name__, None
            mine.append(Answer(status, (time.perf_counter() - t0) * 1000, retry_after))
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    stop_at[0] = time.monotonic() + seconds
    start.wait()
    for t in threads:
        t.join(timeout=seconds + 180)
    return answers


def json_poster(
    base: str, path: str, bodies: Sequence[Any], *, headers: dict[str, str] | None = None, timeout: float = 120
) -> Callable[[int], Call]:
    """Clients that POST ``bodies`` in turn (shared among them) to ``base + path``."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    counter = itertools.count()
    sent_headers = {"Content-Type": "application/json", **(headers or {})}

    def make_call(i: int) -> Call:
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)

        def once() -> tuple[str, str | None]:
            body = json.dumps(bodies[next(counter) % len(bodies)])
            try:
                conn.request("POST", path, body=body, headers=sent_headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                raise
            return str(response.status), response.getheader("Retry-After")

        return once

    return make_call


def statuses(answers: Sequence[Answer]) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in answers:
        out[a.status] = out.get(a.status, 0) + 1
    return dict(sorted(out.items()))


def in_a_process(base: str, path: str, bodies: Sequence[Any], *, clients: int, seconds: float) -> list[Answer]:
    """:func:`drive` with :func:`json_poster` in a process of its own: the clients' threads share no
    interpreter lock with the test, its probes and its fault proxy."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        given = Path(tmp) / "bodies.json"
        given.write_text(json.dumps(list(bodies)))
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.load", base, path, str(given), str(clients), str(seconds)],
            cwd=str(root),
            capture_output=True,
            text=True,
            timeout=seconds + 300,
            env=dict(os.environ),
        )
    if done.returncode != 0:
        raise RuntimeError(f"the load clients failed: {done.stderr[-2000:]}")
    return [Answer(**row) for row in json.loads(done.stdout)]


if __name__ == "__main__":
    import sys

    base_url, route, bodies_file, n, t = sys.argv[1:6]
    with open(bodies_file) as fh:
        given_bodies = json.load(fh)
    result = drive(int(n), float(t), json_poster(base_url, route, given_bodies))
    print(json.dumps([a.__dict__ for a in result]))
