"""Issue 10: `down` must signal only the node it started, a TIME_WAIT port is free, and a cached
artifact is re-hashed on every use. Each of these failed before the fix."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapter.local import LocalNode, NodeConfig
from adapter.errors import LocalNodeError
from adapter.local import procs
from adapter.local.ports import choose_ports, remember_ports
from adapter.local.state import read_state


def _fake_state(node: LocalNode, pid: int) -> None:
    node.state_file.parent.mkdir(parents=True, exist_ok=True)
    node.state_file.write_text(
        json.dumps(
            {
                "pid": pid,
                "port": 9,
                "url": "http://127.0.0.1:9",
                "home": str(node.node_dir),
                "version": "2.19.1",
                "started": time.time(),
            }
        )
    )


def test_down_never_signals_a_process_that_only_mentions_the_node_folder(tmp_path):
    node = LocalNode(NodeConfig(cache_dir=tmp_path), log=lambda m: None)
    node.node_dir.mkdir(parents=True, exist_ok=True)
    # Any process whose argv contains the node folder used to pass the check and be killed.
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(node.node_dir)])
    try:
        deadline = time.monotonic() + 10
        while str(node.node_dir) not in Path(f"/proc/{victim.pid}/cmdline").read_bytes().decode(errors="replace"):
            assert time.monotonic() < deadline
            time.sleep(0.05)  # until the child has exec'd: before that its argv is pytest's
        _fake_state(node, victim.pid)
        assert node.down() is False
        time.sleep(0.2)
        assert victim.poll() is None, "down() signalled a process that is not the node"
        assert not node.status().running
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can hand a file to another user")
def test_a_state_file_not_owned_by_the_caller_is_ignored(tmp_path):
    node = LocalNode(NodeConfig(cache_dir=tmp_path), log=lambda m: None)
    node.node_dir.mkdir(parents=True, exist_ok=True)
    _fake_state(node, os.getpid())
    os.chown(node.state_file, 65534, 65534)  # e.g. written by the unprivileged node user
    assert read_state(node.layout, node.log) is None


def test_a_port_left_in_time_wait_counts_as_free():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM's server sockets do
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first, so its end of the connection stays in TIME_WAIT
    time.sleep(0.1)
    client.close()
    server.close()
    assert procs.port_is_free(port), "a port held only by TIME_WAIT was reported busy"
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert not procs.port_is_free(listening.getsockname()[1])


HOLD_LOCK = """
import sys, time
from pathlib import Path
from adapter.local import LocalNode, NodeConfig
node = LocalNode(NodeConfig(cache_dir=Path(sys.argv[1])), log=lambda m: None)
with node._lock():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_lock(cache: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(cache), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_up_says_who_holds_the_cache_lock_and_how_long_it_waits(tmp_path):
    """Issue 20 item 17: `hybrid local up` waited 55 s in silence while another process held the lock."""
    holder = _hold_lock(tmp_path, 1.5)
    logs: list[str] = []
    node = LocalNode(NodeConfig(cache_dir=tmp_path), log=logs.append)
    try:
        started = time.monotonic()
        with node._lock():
            waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    assert waited >= 1.0
    assert logs and f"pid {holder.pid}" in logs[0] and "-c" in logs[0], logs
    assert str(tmp_path / ".lock") in logs[0] and "up to 600 s" in logs[0]
    assert any("got the lock after" in m for m in logs), logs


def test_the_wait_for_the_cache_lock_is_bounded_and_names_the_holder(tmp_path):
    holder = _hold_lock(tmp_path, 20)
    node = LocalNode(NodeConfig(cache_dir=tmp_path, lock_timeout=0.5), log=lambda m: None)
    try:
        with pytest.raises(LocalNodeError, match=rf"after 0\.5 s .*pid {holder.pid}"):
            with node._lock():
                pass
    finally:
        holder.kill()
        holder.wait()


def test_a_restarted_node_gets_the_port_it_had_when_that_port_is_free(tmp_path):
    """Issue 20 item 18: the port changed on every restart (34425, then 48781), breaking a saved OPENSEARCH_URL."""
    logs: list[str] = []
    node = LocalNode(NodeConfig(cache_dir=tmp_path), log=logs.append)
    first = choose_ports(node.layout, node.log)
    remember_ports(node.layout, first)
    assert node.down() is False  # `down` forgets the cluster, not its ports
    assert choose_ports(LocalNode(NodeConfig(cache_dir=tmp_path), log=logs.append).layout, logs.append) == first
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first[0]["http"]))
        taken.listen()
        again = choose_ports(LocalNode(NodeConfig(cache_dir=tmp_path), log=logs.append).layout, logs.append)
    assert again[0]["http"] != first[0]["http"]
    assert any(f"port {first[0]['http']}" in m and "taken" in m for m in logs), logs
    explicit = LocalNode(NodeConfig(cache_dir=tmp_path, port=procs.free_port()), log=logs.append)
    assert choose_ports(explicit.layout, logs.append)[0]["http"] == explicit.config.port  # --port still wins


def test_a_slow_start_says_it_is_still_waiting(tmp_path, monkeypatch):
    """Found walking the first hour (issue 39): the node's 90-105 s first start printed nothing between
    'starting ...' and 'is up', which reads as a hang."""
    import urllib.error

    from adapter.local import start as start_module
    from adapter.local import procs

    logs: list[str] = []
    node = LocalNode(NodeConfig(cache_dir=tmp_path), log=logs.append)
    clock = iter(range(0, 10_000, 4))  # each look at the clock: 4 s later
    monkeypatch.setattr(start_module.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(start_module.time, "sleep", lambda s: None)
    answers = iter([urllib.error.URLError("refused")] * 12 + [{"status": "green", "number_of_nodes": 1}])

    def health(url, **_):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(procs, "get_json", health)
    start_module.wait_healthy(node.layout, {"nodes": [{"url": "http://127.0.0.1:9", "pid": None}]}, 300, node.log)
    waiting = [line for line in logs if line.startswith("waiting for opensearch-")]
    assert len(waiting) >= 2 and "s so far" in waiting[0] and "its log:" in waiting[0], logs
