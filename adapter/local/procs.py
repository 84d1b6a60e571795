"""Processes and ports on this machine, as the local node needs them (Linux /proc)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now.

    SO_REUSEADDR, as the JVM sets it: a port held only by connections in TIME_WAIT (a node killed
    a moment ago) is free; one with a listener is not.
    """
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def get_json(
    url: str,
    timeout: float = 5.0,
    method: str = "GET",
    body: dict[str, Any] | None = None,
    *,
    context: ssl.SSLContext | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """A JSON request to a local node; ``context`` (TLS) and ``headers`` (auth) for a secured one."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:  # noqa: S310 (loopback)
        return json.loads(resp.read())


def pid_alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def open_paths() -> set[str]:
    """The paths of the files every readable process has open."""
    paths = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                with contextlib.suppress(OSError):
                    paths.add(os.readlink(fd))
        except OSError:
            continue
    return paths


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process for good."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def owner_uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def executable(pid: int) -> str | None:
    try:
        return os.path.realpath(f"/proc/{pid}/exe") if os.path.exists(f"/proc/{pid}/exe") else None
    except OSError:
        return None


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def is_node_process(
    pid: int, *, java: str, uid: int, main_class: str, node_arg: str, started: int | None
) -> str | None:
    """None when ``pid`` is the node described; else why not (for the log).

    A node is the JVM binary recorded at start, run by the recorded user, with the engine's main
    class (``-m module/class`` counts) and this node's own folder in its arguments, started at the recorded time (so a
    reused pid does not pass). A state file can be forged; all of these together cannot point
    `down` at an unrelated process.
    """
    if not pid_alive(pid):
        return "not running"
    exe = executable(pid)
    if exe is None:
        return "its executable cannot be read"
    if exe != os.path.realpath(java):
        return f"its executable is {exe}, not {java}"
    if owner_uid(pid) != uid:
        return f"it runs as uid {owner_uid(pid)}, not {uid}"
    args = cmdline(pid)
    if not any(a == main_class or a.endswith("/" + main_class) for a in args):
        return f"its main class is not {main_class}"
    if node_arg not in args:
        return f"it does not run with {node_arg}"
    if started is not None and start_time(pid) != started:
        return "it started at another time (the pid was reused)"
    return None
