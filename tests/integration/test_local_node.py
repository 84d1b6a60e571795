"""The local node's lifecycle and what it serves, on every local target (OpenSearch 2.19/3.6, Elasticsearch).

Second nodes reuse the session node's assembled home, so nothing is downloaded twice.
"""

import json
import shutil
import socket
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from adapter.errors import NodeStartError, PortInUseError
from adapter.local import LocalNode, NodeConfig
from adapter.local.procs import get_json

pytestmark = [pytest.mark.local_node, pytest.mark.engine("opensearch", "elasticsearch")]


@pytest.fixture
def session_node(local_cluster, cluster_url):
    assert local_cluster is not None and local_cluster.url == cluster_url
    return local_cluster


def test_status_shows_version_plugins_and_modules(session_node, target):
    status = session_node.status()
    assert status.running and status.version == target.version and status.engine == target.engine
    assert status.health in ("green", "yellow")
    if target.engine == "opensearch":
        plugin_version = f"{target.version}.0"
        assert dict(status.plugins) == {"opensearch-knn": plugin_version, "opensearch-neural-search": plugin_version}
        assert {"analysis-common", "lang-painless", "transport-netty4"} <= set(status.modules)
        if target.at_least("3.0"):  # the 3.x zip ships these; nothing is built
            assert {"reindex", "transport-grpc", "search-pipeline-common"} <= set(status.modules)
    else:
        assert {"x-pack-core", "x-pack-security", "transport-netty4"} <= set(status.modules)
    assert set(status.hunspell) == {"pl_PL", "es_ES"}
    assert status.heap_max_bytes and status.rss_bytes


def test_up_is_idempotent(session_node):
    before = session_node.status()
    again = session_node.up()
    assert again.pid == before.pid and again.url == before.url


def test_status_lists_the_running_cluster(session_node):
    names = [node.name for node in LocalNode.running_clusters(session_node.cache_dir, log=lambda m: None)]
    assert session_node.name in names


def _analyze(url: str, index: str, text: str) -> list[str]:
    return [
        t["token"]
        for t in get_json(f"{url}/{index}/_analyze", method="POST", body={"analyzer": "pl", "text": text})["tokens"]
    ]


def test_hunspell_polish_stems_inflections_and_matches_without_diacritics(session_node, cluster_url):
    """The pl_PL dictionary under config/hunspell/ serves a hunspell filter; asciifolding (where the
    engine has it) lets a query typed without diacritics match."""
    index = f"t-hunspell-pl-{session_node.distribution.name}"
    # asciifolding is in analysis-common, absent from ES's integ-test zip
    folding = session_node.distribution.name == "opensearch"
    filters = ["lowercase", "pl_stem"] + (["asciifolding"] if folding else [])
    body = {
        "settings": {
            "analysis": {
                "filter": {"pl_stem": {"type": "hunspell", "locale": "pl_PL", "dedup": True}},
                "analyzer": {"pl": {"type": "custom", "tokenizer": "standard", "filter": filters}},
            }
        }
    }
    get_json(f"{cluster_url}/{index}", method="PUT", body=body, timeout=30)
    try:
        base = _analyze(cluster_url, index, "książka")
        assert _analyze(cluster_url, index, "książkami") == base  # instrumental plural -> the lemma
        assert _analyze(cluster_url, index, "książek") == base  # genitive plural
        assert _analyze(cluster_url, index, "Książkach") == base  # locative plural, capitalised
        if folding:
            assert base == ["ksiazka"] and _analyze(cluster_url, index, "ksiazka") == base
        else:
            assert base == ["książka"]
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{cluster_url}/{index}", method="DELETE"), timeout=30).close()


def test_hunspell_spanish_dictionary_is_served(session_node, cluster_url):
    index = f"t-hunspell-es-{session_node.distribution.name}"
    body = {
        "settings": {
            "analysis": {
                "filter": {"es_stem": {"type": "hunspell", "locale": "es_ES", "dedup": True}},
                "analyzer": {"pl": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "es_stem"]}},
            }
        }
    }
    get_json(f"{cluster_url}/{index}", method="PUT", body=body, timeout=30)
    try:
        assert sorted(_analyze(cluster_url, index, "contraseñas")) == sorted(_analyze(cluster_url, index, "contraseña"))
        assert "factura" in _analyze(cluster_url, index, "facturas")
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{cluster_url}/{index}", method="DELETE"), timeout=30).close()


@pytest.fixture
def node_tmp(session_node):
    """A folder the unprivileged node user can traverse (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="test-", dir=session_node.cache_dir))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_second_node_up_down_and_port_in_use(session_node, node_tmp, target):
    home = session_node.status().home  # reuse the assembled files: no second download
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = LocalNode(NodeConfig(cache_dir=node_tmp / "busy", port=port, opensearch_home=home), log=lambda m: None)
        with pytest.raises(PortInUseError, match=str(port)):
            busy.up()

    node = LocalNode(
        NodeConfig(cache_dir=node_tmp / "second", opensearch_home=home, heap="512m", hunspell=False), log=lambda m: None
    )
    status = node.up()
    try:
        assert status.running and status.version == target.version
        assert "started" in node.logs(200)
        state = json.loads(node.state_file.read_text())
        assert node.state_file.stat().st_uid == __import__("os").geteuid()
        assert state["nodes"][0]["start_time"] and state["java"].endswith("/bin/java")
        get_json(f"{status.url}/_cluster/health")
    finally:
        assert node.down() is True
    assert not node.status().running
    assert node.down() is False
    with pytest.raises(OSError):
        urllib.request.urlopen(status.url, timeout=2)


def test_a_node_that_dies_at_start_shows_why(session_node, node_tmp):
    node = LocalNode(
        NodeConfig(cache_dir=node_tmp / "bad", opensearch_home=session_node.status().home, heap="1x", hunspell=False),
        log=lambda m: None,
    )
    with pytest.raises(NodeStartError, match="(?s)(exited with .* at start|died during start).*(heap|Xms|Xmx)"):
        node.up()
    assert not node.status().running


@pytest.mark.engine("opensearch")
@pytest.mark.parametrize("engine", ["faiss", "nmslib"])
def test_a_faiss_or_nmslib_index_does_not_kill_the_node(session_node, cluster_url, engine):
    """The Maven k-NN zip has no native libraries: without the node's guard template the first
    refresh of such an index exits the JVM (UnsatisfiedLinkError). With it: exact search."""
    index = f"t-native-{engine}"
    body = {
        "settings": {"index.knn": True},
        "mappings": {
            "properties": {
                "v": {
                    "type": "knn_vector",
                    "dimension": 2,
                    "method": {"name": "hnsw", "engine": engine, "space_type": "l2"},
                }
            }
        },
    }
    try:
        get_json(f"{cluster_url}/{index}", method="PUT", body=body, timeout=30)
    except urllib.error.HTTPError as exc:  # 3.x refuses new nmslib indices by itself: as good
        assert engine == "nmslib" and exc.code == 400
        return
    try:
        for i in range(3):
            get_json(f"{cluster_url}/{index}/_doc/{i}?refresh=true", method="PUT", body={"v": [i, 2]}, timeout=30)
        get_json(f"{cluster_url}/{index}/_forcemerge?max_num_segments=1", method="POST", timeout=60)
        hits = get_json(
            f"{cluster_url}/{index}/_search", method="POST", body={"query": {"knn": {"v": {"vector": [2, 2], "k": 1}}}}
        )["hits"]["hits"]
        assert hits[0]["_id"] == "2"
        assert session_node.status().running
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{cluster_url}/{index}", method="DELETE"), timeout=30).close()


def test_a_node_that_fails_after_it_started_is_stopped_not_left_behind(session_node, node_tmp):
    from adapter.errors import LocalNodeError
    from adapter.local import procs

    node = LocalNode(
        NodeConfig(
            cache_dir=node_tmp / "half", opensearch_home=session_node.status().home, heap="512m", hunspell=False
        ),
        log=lambda m: None,
    )

    def fail(*args, **kwargs):
        raise LocalNodeError("simulated failure after the JVM started")

    node._guard_native_knn = fail
    with pytest.raises(LocalNodeError, match="simulated"):
        node.up()
    marker = f"-Djava.io.tmpdir={node.node_dir}/node-1/tmp"
    assert not any(marker in procs.cmdline(int(p.name)) for p in Path("/proc").glob("[0-9]*"))
    assert not node.state_file.exists() and "started" in node.logs(200)
