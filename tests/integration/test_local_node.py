"""The local node's lifecycle, on a second node so the session's node keeps serving other tests."""

import shutil
import socket
import tempfile
import urllib.request
from pathlib import Path

import pytest

from adapter.errors import PortInUseError
from adapter.local import LocalNode, NodeConfig


@pytest.fixture
def session_node(opensearch_url):
    node = LocalNode(log=lambda m: None)
    if node.url != opensearch_url:
        pytest.fail("these tests need the session cluster to be the local node (OPENSEARCH_URL is set to another cluster)")
    return node


def test_status_shows_version_plugins_and_modules(session_node):
    status = session_node.status()
    assert status.running and status.version == "2.19.1"
    assert dict(status.plugins) == {"opensearch-knn": "2.19.1.0", "opensearch-neural-search": "2.19.1.0"}
    assert {"analysis-common", "lang-painless", "transport-netty4"} <= set(status.modules)
    assert status.heap_max_bytes and status.rss_bytes


def test_up_is_idempotent(session_node):
    before = session_node.status()
    again = session_node.up()
    assert again.pid == before.pid and again.url == before.url


@pytest.fixture
def node_tmp(session_node):
    """A folder the unprivileged node user can traverse (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="test-", dir=session_node.config.cache_dir))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_second_node_up_down_and_port_in_use(session_node, node_tmp):
    tmp_path = node_tmp
    home = session_node.status().home  # reuse the assembled files: no second download
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = LocalNode(NodeConfig(cache_dir=tmp_path / "busy", port=port, opensearch_home=home), log=lambda m: None)
        with pytest.raises(PortInUseError, match=str(port)):
            busy.up()

    cache = tmp_path / "second"
    node = LocalNode(NodeConfig(cache_dir=cache, opensearch_home=home, heap="512m"), log=lambda m: None)
    status = node.up()
    try:
        assert status.running and status.version == "2.19.1"
        assert "opensearch-neural-search" in dict(status.plugins)
        assert "started" in node.logs(200)
        assert urllib.request.urlopen(status.url).status == 200
    finally:
        assert node.down() is True
    assert not node.status().running
    assert node.down() is False
    with pytest.raises(OSError):
        urllib.request.urlopen(status.url, timeout=2)


def test_a_node_that_dies_at_start_shows_why(session_node, node_tmp):
    from adapter.errors import NodeStartError

    node = LocalNode(NodeConfig(cache_dir=node_tmp / "bad", opensearch_home=session_node.status().home, heap="1x"), log=lambda m: None)
    with pytest.raises(NodeStartError, match="(?s)exited with .* at start.*heap"):
        node.up()
    assert not node.status().running
