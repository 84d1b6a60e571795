"""Start and wait: each node launched as a daemon (as the node user when there is one), its pid read
from the file the JVM writes once bootstrapped and checked to be the node, then the cluster waited for
until it answers yellow or green with every node joined."""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.error
from pathlib import Path
from typing import Any, Callable

from adapter.errors import NodeStartError
from adapter.local import procs
from adapter.local.layout import Layout
from adapter.local.state import why_not_ours

PROGRESS_EVERY = 15.0  # seconds between "waiting for the node to answer" lines while it starts


def http_options(layout: Layout) -> dict[str, Any]:
    """TLS context and auth for the node's own requests (nothing for a node without security)."""
    if not layout.release.security:
        return {}
    from adapter.local import security

    pki = security.ensure_pki(layout.node_dir)
    return security.http_options(pki, security.Credentials.load_or_create(pki.credentials_file))


def spawn(layout: Layout, state: dict[str, Any], index: int) -> None:
    """Start node ``index`` of ``state`` as a daemon and record its pid (not yet healthy)."""
    node = state["nodes"][index]
    node_dir = Path(node["dir"])
    pidfile = node_dir / f"{layout.distribution.name}.pid"
    pidfile.unlink(missing_ok=True)
    env = {
        layout.distribution.env_conf: str(node_dir / "config"),
        layout.distribution.env_tmp: str(node_dir / "tmp"),
        layout.distribution.env_java_opts: f"-Xms{layout.config.heap} -Xmx{layout.config.heap}",
        layout.distribution.env_java_home: state["java_home"],
    }
    cmd = [
        "env",
        *[f"{k}={v}" for k, v in env.items()],
        str(Path(state["home"]) / "bin" / layout.distribution.launcher),
        "-d",
        "-p",
        str(pidfile),
    ]
    if state.get("user"):
        cmd = ["runuser", "-u", state["user"], "--", *cmd]
    # To a file, not a pipe: the daemonised JVM keeps inherited descriptors open.
    startup_out = node_dir / "logs" / "startup.out"
    with open(startup_out, "w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=node_dir)
    if proc.returncode != 0:
        text = "\n".join(startup_out.read_text(errors="replace").strip().splitlines()[-30:])
        raise NodeStartError(
            f"{layout.distribution.name} node-{index + 1} exited with {proc.returncode} at start:\n{text}\n--- log "
            f"tail ---\n{layout.log_tail(index=index)}"
        )
    pid = read_pid(layout, pidfile, index)
    node["pid"] = pid
    node["start_time"] = procs.start_time(pid)
    why = why_not_ours(layout, state, node)
    if why is not None:
        raise NodeStartError(
            f"the pid file {pidfile} names process {pid}, which is not the node ({why})\n--- log tail "
            f"---\n{layout.log_tail(index=index)}"
        )


def read_pid(layout: Layout, pidfile: Path, index: int) -> int:
    # The JVM writes it once bootstrapped: over 30 s for a second node on a loaded machine.
    deadline = time.monotonic() + layout.config.start_timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return int(pidfile.read_text().strip())
        time.sleep(0.2)
    raise NodeStartError(
        f"{layout.distribution.name} wrote no pid file at {pidfile}\n--- log tail ---\n{layout.log_tail(index=index)}"
    )


def wait_healthy(
    layout: Layout, state: dict[str, Any], timeout: float, log: Callable[[str], None], nodes: int | None = None
) -> None:
    """Until the cluster answers yellow or green with ``nodes`` nodes joined (default: all)."""
    nodes = nodes or len(state["nodes"])
    started = time.monotonic()
    deadline, said = started + timeout, started
    last = ""
    while time.monotonic() < deadline:
        if time.monotonic() - said >= PROGRESS_EVERY:  # a first start takes 1-2 minutes: say it is alive, not stuck
            said = time.monotonic()
            log(
                f"waiting for {layout.name} to answer: {said - started:.0f} s so far (a start takes about 1-2 minutes "
                f"here; up to {timeout:g} s; its log: {layout.log_file(0)})"
            )
        for index, node in enumerate(state["nodes"]):
            if node.get("pid") and not procs.pid_alive(node["pid"]):
                raise NodeStartError(
                    f"{layout.distribution.name} node-{index + 1} (pid {node['pid']}) died during start\n--- log tail "
                    f"---\n{layout.log_tail(index=index)}"
                )
        url = next(
            (n["url"] for n in state["nodes"] if n.get("pid") and procs.pid_alive(n["pid"])), state["nodes"][0]["url"]
        )
        try:
            health = procs.get_json(
                f"{url}/_cluster/health?wait_for_status=yellow&wait_for_nodes={nodes}&timeout=2s",
                **http_options(layout),
            )
            if health.get("status") in ("yellow", "green") and health.get("number_of_nodes") == nodes:
                return
            last = f"status {health.get('status')}, {health.get('number_of_nodes')} of {nodes} nodes"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = str(exc)
        time.sleep(0.5)
    raise NodeStartError(
        f"{layout.distribution.name} at {url} not healthy after {timeout:.0f}s ({last})\n--- log tail "
        f"---\n{layout.log_tail()}"
    )
