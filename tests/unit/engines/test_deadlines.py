"""A search's deadline over the real client libraries' tries (adapter.engines.deadlines), against a
loopback socket that accepts requests and never answers: each try waits at most what is left, no
try starts after the deadline, and a thread outside a deadline keeps the client's own timeout and
retries (issue 38 item 4)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from adapter.engines import deadlines
from adapter.errors import HybridError

pytestmark = pytest.mark.unit


class Silent:
    """A loopback HTTP port that reads each request and never answers; counts the requests begun."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.tries = 0
        self.held: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.tries += data.count(b"HTTP/1.1\r\n")

    def close(self) -> None:
        self._stop = True
        self.listener.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent():
    server = Silent()
    yield server
    server.close()


def test_opensearch_py_tries_end_by_the_deadline_and_none_starts_after(silent):
    pytest.importorskip("opensearchpy")
    from adapter.engines.opensearch import OPENSEARCH
    from adapter.engines.opensearch.client import connect

    client = connect(f"http://127.0.0.1:{silent.port}", timeout=1.0)  # 3 retries on timeout: 4 s unbounded
    assert deadlines.install(client) and deadlines.install(client)  # idempotent
    cluster = OPENSEARCH.cluster(client)
    started = time.monotonic()
    with deadlines.within(0.4), pytest.raises(HybridError):
        cluster.count("any", action="counting")
    bounded = time.monotonic() - started
    time.sleep(0.1)
    assert bounded < 0.9 and silent.tries == 1, (bounded, silent.tries)
    # Outside a deadline the client is as it was: its own timeout, every retry.
    started = time.monotonic()
    with pytest.raises(HybridError):
        cluster.count("any", action="counting")
    assert time.monotonic() - started >= 3.5 and silent.tries == 5, silent.tries


def test_a_passed_deadline_sends_nothing(silent):
    pytest.importorskip("opensearchpy")
    from adapter.engines.opensearch.client import connect

    client = connect(f"http://127.0.0.1:{silent.port}", timeout=1.0)
    deadlines.install(client)
    with deadlines.within(-0.1), pytest.raises(Exception, match="deadline passed"):
        client.count(index="any")
    time.sleep(0.1)
    assert silent.tries == 0


def test_elasticsearch_py_tries_end_by_the_deadline(silent):
    pytest.importorskip("elasticsearch")
    from adapter.engines.elasticsearch.client import connect_elasticsearch as connect

    client = connect(f"http://127.0.0.1:{silent.port}", timeout=1.0)
    assert deadlines.install(client)
    started = time.monotonic()
    with deadlines.within(0.4), pytest.raises(Exception):
        client.count(index="any")
    bounded = time.monotonic() - started
    time.sleep(0.1)
    assert bounded < 0.9 and silent.tries == 1, (bounded, silent.tries)


def test_a_client_of_another_shape_is_left_alone():
    assert deadlines.install(object()) is False
    assert deadlines.left() is None
    with deadlines.within(2.0):
        assert 1.9 < deadlines.left() <= 2.0
    assert deadlines.left() is None
