"""A single-node OpenSearch for development and tests: ``up``, ``down``, ``status``, ``logs``.

The node's files live in a cache folder::

    <cache>/downloads/              verified Maven artifacts
    <cache>/opensearch-<version>/   the assembled home (or OPENSEARCH_HOME, used as is)
    <cache>/node/                   config/, data/, logs/, tmp/, opensearch.pid, state.json

``up`` is idempotent: it reuses the assembled home and an already running node. ``down`` stops
exactly the process recorded in ``state.json`` (checked against its command line first).
OpenSearch refuses to run as root, so as root the node runs as an unprivileged user.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..errors import ConfigurationError, LocalNodeError, NodeStartError, PortInUseError
from .artifacts import make_fetcher
from .distribution import DEFAULT_VERSION, assemble
from .java import find_java

DEFAULT_RUN_USER = "opensearch"


def default_cache_dir() -> Path:
    """``HYBRID_CACHE_DIR``, else a folder the unprivileged node user can traverse.

    Root's home is usually mode 700, which the node user cannot enter, so root gets /var/cache.
    """
    if os.environ.get("HYBRID_CACHE_DIR"):
        return Path(os.environ["HYBRID_CACHE_DIR"])
    if os.geteuid() == 0:
        return Path("/var/cache/opensearch-hybrid")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "opensearch-hybrid"


@dataclass(frozen=True)
class NodeConfig:
    version: str = DEFAULT_VERSION
    cache_dir: Path = field(default_factory=default_cache_dir)
    port: int | None = None  # None: keep the running node's port, or pick a free one
    heap: str = "1g"
    java_home: str | None = None
    run_user: str | None = None  # as root: defaults to "opensearch"
    opensearch_home: str | None = None  # an existing install; default: OPENSEARCH_HOME
    fetcher: str = "auto"  # auto | maven | https
    repository: str | None = None  # Maven repository base URL for the HTTPS fetcher
    start_timeout: float = 180.0
    settings: Mapping[str, str] = field(default_factory=dict)  # extra opensearch.yml lines (static node settings)


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    url: str | None = None
    pid: int | None = None
    version: str | None = None
    plugins: tuple[tuple[str, str], ...] = ()
    modules: tuple[str, ...] = ()
    heap_max_bytes: int | None = None
    rss_bytes: int | None = None
    home: str | None = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback)
        return json.loads(resp.read())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class LocalNode:
    """One development node per cache folder."""

    def __init__(self, config: NodeConfig | None = None, *, log=print) -> None:
        self.config = config or NodeConfig()
        self.log = log
        self.node_dir = Path(self.config.cache_dir) / "node"
        self.state_file = self.node_dir / "state.json"

    # -- state ---------------------------------------------------------------------------------
    def _state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    @contextlib.contextmanager
    def _lock(self):
        Path(self.config.cache_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(self.config.cache_dir) / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _running_state(self) -> dict | None:
        """The recorded node, if its process still runs and is ours."""
        state = self._state()
        if not state:
            return None
        pid = state.get("pid")
        if pid and _pid_alive(pid) and str(self.node_dir) in _cmdline(pid):
            return state
        return None

    @property
    def url(self) -> str | None:
        state = self._running_state()
        return state["url"] if state else None

    # -- home and user -------------------------------------------------------------------------
    def _home(self) -> Path:
        existing = self.config.opensearch_home or os.environ.get("OPENSEARCH_HOME")
        if existing:
            home = Path(existing)
            if not (home / "bin" / "opensearch").exists():
                raise ConfigurationError(f"OPENSEARCH_HOME={home} has no bin/opensearch")
            return home
        fetcher = make_fetcher(self.config.fetcher, repository=self.config.repository)
        return assemble(self.config.version, Path(self.config.cache_dir), fetcher, log=self.log)

    def _run_user(self) -> str | None:
        if os.geteuid() != 0:
            return None
        user = self.config.run_user or os.environ.get("HYBRID_RUN_USER") or DEFAULT_RUN_USER
        try:
            pwd.getpwnam(user)
        except KeyError:
            useradd = shutil.which("useradd")
            if not useradd:
                raise LocalNodeError(f"OpenSearch refuses to run as root and user {user!r} does not exist (no useradd to create it)") from None
            self.log(f"creating system user {user!r} to run OpenSearch (it refuses to run as root)")
            subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
        return user

    def _prepare_node_dir(self, home: Path, port: int, transport_port: int, user: str | None) -> dict[str, str]:
        conf = self.node_dir / "config"
        for sub in ("config", "data", "logs", "tmp"):
            (self.node_dir / sub).mkdir(parents=True, exist_ok=True)
        src_conf = home / "config"
        shutil.copy2(src_conf / "log4j2.properties", conf / "log4j2.properties")
        # The stock jvm.options write GC logs, heap dumps and crash files relative to the home,
        # which the node user may not write to (and which is shared): point them at our logs.
        logs = self.node_dir / "logs"
        jvm_options = (src_conf / "jvm.options").read_text()
        for old, new in (
            ("file=logs/gc.log", f"file={logs}/gc.log"),
            ("-XX:HeapDumpPath=data", f"-XX:HeapDumpPath={logs}"),
            ("-XX:ErrorFile=logs/", f"-XX:ErrorFile={logs}/"),
        ):
            jvm_options = jvm_options.replace(old, new)
        (conf / "jvm.options").write_text(jvm_options)
        if (src_conf / "jvm.options.d").is_dir():
            shutil.copytree(src_conf / "jvm.options.d", conf / "jvm.options.d", dirs_exist_ok=True)
        (conf / "opensearch.yml").write_text(
            "# Written by `hybrid local up`: a single development node on loopback, no security plugin.\n"
            "cluster.name: hybrid-local\n"
            "node.name: hybrid-local-1\n"
            "network.host: 127.0.0.1\n"
            f"http.port: {port}\n"
            f"transport.port: {transport_port}\n"
            "discovery.type: single-node\n"
            f"path.data: {self.node_dir / 'data'}\n"
            f"path.logs: {self.node_dir / 'logs'}\n"
            "cluster.routing.allocation.disk.threshold_enabled: false\n"
            "# The k-NN zip on Maven has no faiss/nmslib libraries: only the lucene engine works.\n"
            "node.attr.knn_native: false\n"
            + "".join(f"{key}: {value}\n" for key, value in self.config.settings.items())
        )
        if user:
            pw = pwd.getpwnam(user)
            for path in [self.node_dir, *self.node_dir.rglob("*")]:
                os.chown(path, pw.pw_uid, pw.pw_gid)
            # Every folder above the node's files must be traversable by that user.
            for target in (home / "lib", self.node_dir / "data"):
                probe = subprocess.run(["runuser", "-u", user, "--", "test", "-r", str(target)], capture_output=True)
                if probe.returncode != 0:
                    raise LocalNodeError(
                        f"user {user!r} cannot reach {target}; choose a cache folder every user can traverse "
                        "(HYBRID_CACHE_DIR or --cache-dir), e.g. /var/cache/opensearch-hybrid"
                    )
        return {
            "OPENSEARCH_PATH_CONF": str(conf),
            "OPENSEARCH_TMPDIR": str(self.node_dir / "tmp"),
            "OPENSEARCH_JAVA_OPTS": f"-Xms{self.config.heap} -Xmx{self.config.heap}",
        }

    def _log_file(self) -> Path:
        return self.node_dir / "logs" / "hybrid-local.log"

    def _log_tail(self, lines: int = 40) -> str:
        path = self._log_file()
        if not path.exists():
            return "(no log written)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- commands ------------------------------------------------------------------------------
    def up(self) -> NodeStatus:
        """Start the node (or reuse the running one) and wait until it is healthy."""
        with self._lock():
            state = self._running_state()
            if state:
                if self.config.port and self.config.port != state["port"]:
                    raise PortInUseError(
                        f"a node from {self.config.cache_dir} already runs on port {state['port']}; "
                        "run `hybrid local down` before asking for another port"
                    )
                self._wait_healthy(state["url"], state["pid"], timeout=self.config.start_timeout)
                self.log(f"node already running at {state['url']} (pid {state['pid']})")
                return self.status()
            port = self.config.port or _free_port()
            if not _port_is_free(port):
                raise PortInUseError(f"port {port} on 127.0.0.1 is already in use by another process; pick another with --port")
            java = find_java(self.config.version, self.config.java_home)
            home = self._home()
            user = self._run_user()
            env = self._prepare_node_dir(home, port, _free_port(), user)
            env["JAVA_HOME"] = str(java.home)
            pidfile = self.node_dir / "opensearch.pid"
            pidfile.unlink(missing_ok=True)
            cmd = ["env", *[f"{k}={v}" for k, v in env.items()], str(home / "bin" / "opensearch"), "-d", "-p", str(pidfile)]
            if user:
                cmd = ["runuser", "-u", user, "--", *cmd]
            self.log(f"starting OpenSearch {self.config.version} on 127.0.0.1:{port} with Java {java.major} ({java.home})")
            started = time.monotonic()
            # To a file, not a pipe: the daemonised JVM keeps inherited descriptors open.
            startup_out = self.node_dir / "logs" / "startup.out"
            with open(startup_out, "w") as out:
                proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.node_dir)
            if proc.returncode != 0:
                out = "\n".join(startup_out.read_text(errors="replace").strip().splitlines()[-30:])
                raise NodeStartError(f"OpenSearch exited with {proc.returncode} at start:\n{out}\n--- log tail ---\n{self._log_tail()}")
            pid = self._read_pid(pidfile)
            url = f"http://127.0.0.1:{port}"
            state = {"pid": pid, "port": port, "url": url, "home": str(home), "version": self.config.version, "started": time.time()}
            self.state_file.write_text(json.dumps(state, indent=2))
            self._wait_healthy(url, pid, timeout=self.config.start_timeout)
            self.log(f"OpenSearch is up at {url} (pid {pid}, {time.monotonic() - started:.1f}s)")
            return self.status()

    def _read_pid(self, pidfile: Path) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                return int(pidfile.read_text().strip())
            time.sleep(0.2)
        raise NodeStartError(f"OpenSearch wrote no pid file at {pidfile}\n--- log tail ---\n{self._log_tail()}")

    def _wait_healthy(self, url: str, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                raise NodeStartError(f"OpenSearch (pid {pid}) died during start\n--- log tail ---\n{self._log_tail()}")
            try:
                health = _get_json(f"{url}/_cluster/health?wait_for_status=yellow&timeout=2s")
                if health.get("status") in ("yellow", "green"):
                    return
                last = f"status {health.get('status')}"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.5)
        raise NodeStartError(f"OpenSearch at {url} not healthy after {timeout:.0f}s ({last})\n--- log tail ---\n{self._log_tail()}")

    def down(self) -> bool:
        """Stop the node this cache folder started. Returns False when none was running."""
        with self._lock():
            state = self._running_state()
            if not state:
                self.state_file.unlink(missing_ok=True)
                return False
            pid = state["pid"]
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
            self.state_file.unlink(missing_ok=True)
            self.log(f"stopped OpenSearch (pid {pid})")
            return True

    def status(self) -> NodeStatus:
        state = self._running_state()
        if not state:
            return NodeStatus(running=False)
        url = state["url"]
        try:
            root = _get_json(url)
            nodes = _get_json(f"{url}/_nodes/plugins,jvm")["nodes"]
        except (urllib.error.URLError, OSError, ValueError):
            return NodeStatus(running=True, url=url, pid=state["pid"], home=state["home"])
        node = next(iter(nodes.values()))
        return NodeStatus(
            running=True,
            url=url,
            pid=state["pid"],
            version=root["version"]["number"],
            plugins=tuple(sorted((p["name"], p["version"]) for p in node.get("plugins", []))),
            modules=tuple(sorted(m["name"] for m in node.get("modules", []))),
            heap_max_bytes=node.get("jvm", {}).get("mem", {}).get("heap_max_in_bytes"),
            rss_bytes=_rss_bytes(state["pid"]),
            home=state["home"],
        )

    def logs(self, lines: int = 50) -> str:
        return self._log_tail(lines)
