"""Download and install: the release's home (assembled from verified artifacts, or an existing
install used as is), the Java that runs it, the Hunspell dictionaries, and the unprivileged user
the nodes run as when the caller is root (both engines refuse to run as root)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from adapter.errors import ConfigurationError, LocalNodeError
from adapter.local.artifacts import make_fetcher
from adapter.local.config import DEFAULT_RUN_USER, NodeConfig
from adapter.local.distribution import assemble
from adapter.local.java import Java, find_java
from adapter.local.lock import held
from adapter.local.releases import DISTRIBUTIONS, Release, resolve_release


def existing_home(config: NodeConfig) -> Path | None:
    """An install to use as is: ``opensearch_home``, else ``OPENSEARCH_HOME`` (OpenSearch only)."""
    existing = config.opensearch_home or (
        os.environ.get("OPENSEARCH_HOME") if config.distribution == "opensearch" else None
    )
    if not existing:
        return None
    home = Path(existing)
    if not any((home / "bin" / e).exists() for e in DISTRIBUTIONS):
        raise ConfigurationError(f"OPENSEARCH_HOME={home} has no bin/opensearch")
    return home


def detect_release(home: Path) -> Release:
    """The release an existing home holds (from its manifest, else its server jar)."""
    marker = home / ".assembled.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        distribution, version = info.get("engine", "opensearch"), info["version"]  # the manifest's key stays
    else:
        jars = sorted((home / "lib").glob("opensearch-[0-9]*.jar")) + sorted(
            (home / "lib").glob("elasticsearch-[0-9]*.jar")
        )
        match = re.match(r"(opensearch|elasticsearch)-(\d+\.\d+\.\d+)", jars[0].name) if jars else None
        if not match:
            raise ConfigurationError(
                f"cannot tell which OpenSearch version {home} holds (no lib/opensearch-<version>.jar)"
            )
        distribution, version = match.groups()
    try:
        return resolve_release(distribution, version)
    except ConfigurationError:  # not pinned: still runnable as is, with its major's Java range
        base = resolve_release(distribution, version.split(".")[0])
        return Release(base.distribution, version, base.java, base.build_modules, base.plugins)


@dataclass(frozen=True)
class Installer:
    """What one cluster runs, fetched into ``artifacts_dir`` (another cache folder's, shared, under its lock)."""

    release: Release
    config: NodeConfig
    cache_dir: Path
    artifacts_dir: Path
    log: Callable[[str], None]

    @contextlib.contextmanager
    def artifacts_lock(self) -> Iterator[None]:
        """The artifacts folder's lock, when it is another cache folder's (its own ``up`` may be assembling there)."""
        if self.artifacts_dir == self.cache_dir:
            yield
            return
        with held(self.artifacts_dir / ".lock", self.config.lock_timeout, self.log):
            yield

    def home(self) -> Path:
        existing = existing_home(self.config)
        if existing:
            return existing
        fetcher = make_fetcher(self.config.fetcher, repository=self.config.repository)
        with self.artifacts_lock():
            return assemble(self.release, self.artifacts_dir, fetcher, log=self.log)

    def java(self) -> Java:
        with self.artifacts_lock():
            return find_java(self.release, self.config.java_home, cache_dir=self.artifacts_dir, log=self.log)

    def dictionaries(self) -> Path | None:
        if not self.config.hunspell:
            return None
        from adapter.local.hunspell import ensure_dictionaries

        try:
            with self.artifacts_lock():
                return ensure_dictionaries(self.artifacts_dir, log=self.log)
        except LocalNodeError as exc:  # analyzers without them still work; say loudly what is missing
            self.log(f"WARNING: no hunspell dictionaries, the node starts without them: {exc}")
            return None


def run_user(config: NodeConfig, name: str, log: Callable[[str], None]) -> str | None:
    """The user the nodes run as: None unless the caller is root; then ``run_user`` (or ``HYBRID_RUN_USER``,
    else ``opensearch``), created as a system user when missing, said before it is."""
    if os.geteuid() != 0:
        return None
    user = config.run_user or os.environ.get("HYBRID_RUN_USER") or DEFAULT_RUN_USER
    try:
        pwd.getpwnam(user)
    except KeyError:
        useradd = shutil.which("useradd")
        if not useradd:
            raise LocalNodeError(
                f"{name} refuses to run as root and user {user!r} does not exist (no useradd to create it)"
            ) from None
        log(
            f"{name} refuses to run as root, so the node runs as the system user {user!r} (no home, no "
            f"login shell; HYBRID_RUN_USER picks another): creating it with useradd"
        )
        subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    return user
