"""Serving an ASGI app for a test: uvicorn in a thread on a free loopback port, stopped after; as
``hybrid serve`` configures it (adapter.serve.server: header and keep-alive timeouts) unless the
app is not ours."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
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


def call(
    url: str, *, method: str = "GET", body: bytes | None = None, headers: dict | None = None, timeout: float = 60
) -> tuple[int, dict, bytes, float]:
    """(status, headers, body, seconds) of one request, errors included."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read(), time.perf_counter() - started
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read(), time.perf_counter() - started


def post_json(url: str, document, **options):
    return call(
        url, method="POST", body=json.dumps(document).encode(), headers={"Content-Type": "application/json"}, **options
    )


def counter(metrics_text: str, name: str, **labels) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def serve_command(
    index: str, cluster_url: str, *extra: str, embedder: str | None = "test:hashing"
) -> tuple[subprocess.Popen, str]:
    """``hybrid serve`` in a process of its own, embedding with ``embedder`` (``test:hashing`` loadable:
    tests.support.cli; None: the model the index records)."""
    from tests.support.cli import cli_process

    port = free_port()
    model = ("--embedder", embedder) if embedder else ()
    process = cli_process(
        "serve", "--index", index, "--port", port, *model, *extra, env={"OPENSEARCH_URL": cluster_url}
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if call(f"{base}/readyz", timeout=5)[0] == 200:
                return process, base
        except OSError:
            pass
        time.sleep(0.3)
    process.kill()
    raise AssertionError(f"hybrid serve did not become ready: {process.communicate()}")
