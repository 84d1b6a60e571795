"""Two local nodes on loopback: green with a replica, yellow while the data node is stopped, green
again after it restarts. The mechanism other tests use to check ingest and search through a node loss."""

import time
import uuid

import pytest

from adapter.local import LocalNode, NodeConfig
from adapter.local.procs import get_json

pytestmark = [pytest.mark.local_node, pytest.mark.engine("opensearch", "elasticsearch")]


def _health(url: str, status: str, nodes: int) -> dict:
    return get_json(
        f"{url}/_cluster/health?wait_for_status={status}&wait_for_nodes={nodes}&wait_for_no_initializing_shards=true&timeout=90s",
        timeout=100,
    )


def test_two_nodes_green_yellow_with_one_stopped_green_after_restart(local_cluster, target):
    cluster = LocalNode(
        NodeConfig(
            distribution=target.engine,
            version=target.version,
            nodes=2,
            cache_dir=local_cluster.cache_dir,
            hunspell=False,
        ),
        log=lambda m: None,
    )
    status = cluster.up()
    try:
        assert [n["running"] for n in status.nodes] == [True, True]
        url = status.url  # node 0: the cluster manager, which stays up
        index = f"t-two-nodes-{uuid.uuid4().hex[:6]}"
        get_json(
            f"{url}/{index}",
            method="PUT",
            body={"settings": {"number_of_shards": 3, "number_of_replicas": 1}},
            timeout=60,
        )
        for i in range(20):
            get_json(f"{url}/{index}/_doc/{i}", method="PUT", body={"n": i}, timeout=30)
        get_json(f"{url}/{index}/_refresh", method="POST", timeout=30)
        assert _health(url, "green", 2)["status"] == "green"

        cluster.stop_node(1)
        assert not cluster.status().nodes[1]["running"]
        health = get_json(f"{url}/_cluster/health?wait_for_nodes=1&timeout=60s", timeout=70)
        deadline = time.monotonic() + 60
        while health["number_of_nodes"] != 1 or health["status"] == "green":
            assert time.monotonic() < deadline, health
            time.sleep(0.5)
            health = get_json(f"{url}/_cluster/health", timeout=30)
        assert health["status"] == "yellow"  # every primary is on node 0 now; replicas unassigned
        assert get_json(f"{url}/{index}/_count", timeout=30)["count"] == 20

        cluster.start_node(1)
        assert _health(url, "green", 2)["status"] == "green"
        assert get_json(f"{url}/{index}/_count", timeout=30)["count"] == 20
        get_json(f"{url}/{index}", method="DELETE", timeout=30)
    finally:
        assert cluster.down() is True
    assert not cluster.status().running
