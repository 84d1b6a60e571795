"""The local node's pure parts: Java selection, artifact fetching and verification, assembly plan."""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from adapter.errors import ArtifactNotFoundError, ChecksumError, JavaError
from adapter.local.artifacts import Artifact, HttpsFetcher, pom_dependencies
from adapter.local.distribution import distribution_artifacts
from adapter.local.java import find_java, java_major


def fake_jdk(root: Path, version: str) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("#!/bin/sh\n")
    (root / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return root


def test_java_major_reads_release_files(tmp_path):
    assert java_major(fake_jdk(tmp_path / "a", "17.0.15")) == 17
    assert java_major(fake_jdk(tmp_path / "b", "1.8.0_402")) == 8
    assert java_major(fake_jdk(tmp_path / "c", "25")) == 25


def test_an_explicit_java_that_cannot_run_opensearch_2_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("HYBRID_JAVA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "j25", "25.0.1")))
    with pytest.raises(JavaError, match="JAVA_HOME points to Java 25.*needs Java 11-21.*security manager"):
        find_java("2.19.1")
    ok = fake_jdk(tmp_path / "j17", "17.0.2")
    assert find_java("2.19.1", explicit=ok).major == 17


def test_missing_java_home_binary_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    with pytest.raises(JavaError, match="not a Java installation"):
        find_java("2.19.1", explicit=tmp_path / "empty")


class _Repo(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    art = root / "org/example/thing/1.0"
    art.mkdir(parents=True)
    data = b"jar bytes"
    (art / "thing-1.0.jar").write_bytes(data)
    (art / "thing-1.0.jar.sha1").write_text(hashlib.sha1(data).hexdigest() + "  thing-1.0.jar\n")
    bad = root / "org/example/bad/1.0"
    bad.mkdir(parents=True)
    (bad / "bad-1.0.jar").write_bytes(b"tampered")
    (bad / "bad-1.0.jar.sha512").write_text(hashlib.sha512(b"original").hexdigest())
    bare = root / "org/example/bare/1.0"
    bare.mkdir(parents=True)
    (bare / "bare-1.0.jar").write_bytes(b"no checksum")
    handler = lambda *a, **kw: _Repo(*a, directory=str(root), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_https_fetcher_verifies_checksums(repo, tmp_path):
    fetcher = HttpsFetcher(repo)
    dest = tmp_path / "dl"
    path = fetcher.fetch(Artifact("org.example", "thing", "1.0"), dest)
    assert path.read_bytes() == b"jar bytes"
    assert (dest / "thing-1.0.jar.verified").read_text().split("; ")[1].startswith("sha1 ")
    with pytest.raises(ChecksumError, match="sha512"):
        fetcher.fetch(Artifact("org.example", "bad", "1.0"), dest)
    assert not (dest / "bad-1.0.jar").exists()
    with pytest.raises(ChecksumError, match="publishes no checksum and the project has no pin"):
        fetcher.fetch(Artifact("org.example", "bare", "1.0"), dest)
    assert not (dest / "bare-1.0.jar").exists()


def test_an_artifact_without_published_checksums_is_held_to_the_projects_pin(repo, tmp_path, monkeypatch):
    import adapter.local.artifacts as artifacts

    bare = Artifact("org.example", "bare", "1.0")
    monkeypatch.setitem(artifacts.PINS, bare.coordinates, hashlib.sha256(b"no checksum").hexdigest())
    path = HttpsFetcher(repo).fetch(bare, tmp_path / "ok")
    assert (tmp_path / "ok" / "bare-1.0.jar.verified").read_text().split("; ")[1].startswith("sha256 pin")
    assert path.read_bytes() == b"no checksum"
    monkeypatch.setitem(artifacts.PINS, bare.coordinates, "0" * 64)
    with pytest.raises(ChecksumError, match="project's pin"):
        HttpsFetcher(repo).fetch(bare, tmp_path / "bad")
    # A pin must also match when the repository publishes a checksum.
    thing = Artifact("org.example", "thing", "1.0")
    monkeypatch.setitem(artifacts.PINS, thing.coordinates, "1" * 64)
    with pytest.raises(ChecksumError, match="project's pin"):
        HttpsFetcher(repo).fetch(thing, tmp_path / "both")


def test_a_cached_artifact_tampered_after_verification_is_refused(repo, tmp_path):
    fetcher = HttpsFetcher(repo)
    dest = tmp_path / "dl"
    path = fetcher.fetch(Artifact("org.example", "thing", "1.0"), dest)
    path.write_bytes(b"jar bytez")  # same size, different bytes, after the .verified marker was written
    with pytest.raises(ChecksumError, match="changed since it was verified"):
        fetcher.fetch(Artifact("org.example", "thing", "1.0"), dest)


def test_the_shipped_pins_cover_the_default_version():
    from adapter.local.artifacts import PINS

    for artifact in distribution_artifacts("2.19.1").values():
        assert len(PINS[artifact.coordinates]) == 64


def test_missing_artifact_is_named(repo, tmp_path):
    with pytest.raises(ArtifactNotFoundError, match="org.example:nothere:9.9:zip"):
        HttpsFetcher(repo).fetch(Artifact("org.example", "nothere", "9.9", "zip"), tmp_path)


def test_pom_dependencies_keep_compile_scope(tmp_path):
    pom = tmp_path / "x.pom"
    pom.write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><dependencies>'
        "<dependency><groupId>g</groupId><artifactId>a</artifactId><version>1</version><scope>compile</scope></dependency>"
        "<dependency><groupId>g</groupId><artifactId>t</artifactId><version>1</version><scope>test</scope></dependency>"
        "<dependency><groupId>g</groupId><artifactId>r</artifactId><version>2</version></dependency>"
        "</dependencies></project>"
    )
    assert [d.coordinates for d in pom_dependencies(pom)] == ["g:a:1:jar", "g:r:2:jar"]


def test_distribution_plan_shares_one_version():
    arts = distribution_artifacts("2.19.1")
    assert arts["core"].coordinates == "org.opensearch.distribution.integ-test-zip:opensearch:2.19.1:zip"
    assert arts["opensearch-knn"].coordinates == "org.opensearch.plugin:opensearch-knn:2.19.1.0:zip"
    assert arts["opensearch-neural-search"].coordinates == "org.opensearch.plugin:neural-search:2.19.1.0:zip"
    assert arts["lang-painless"].path == "org/opensearch/plugin/lang-painless/2.19.1/lang-painless-2.19.1.jar"


def test_the_pid_file_is_awaited_as_long_as_the_start(tmp_path, monkeypatch):
    """On a loaded machine a second JVM took over 30 s to write its pid file; `up` gave up and left it
    running. The wait follows start_timeout (the clock is faked: 5 s per look)."""
    import adapter.local.start as start_module
    from adapter.local import LocalNode, NodeConfig

    clock = iter(range(0, 10_000, 5))
    monkeypatch.setattr(start_module.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(start_module.time, "sleep", lambda s: None)
    pidfile = tmp_path / "opensearch.pid"
    looks = []

    def read_text(self, *a, **k):
        looks.append(1)
        if len(looks) < 12:  # written at about 60 s
            raise FileNotFoundError(self)
        return "4242\n"

    monkeypatch.setattr(Path, "read_text", read_text)
    node = LocalNode(NodeConfig(cache_dir=tmp_path, start_timeout=180.0), log=lambda m: None)
    assert start_module.read_pid(node.layout, pidfile, 0) == 4242
