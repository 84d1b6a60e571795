"""One retry policy per request (issue 27): a status the client's transport already asks again is not
asked again by the search above it. Against the real node, through the fault proxy, on each engine.

Before: the transport asked a 503 again three times, then the search's node-left recovery asked the
whole request again, three more times underneath: one 503 reached the server 8 times.
"""

from __future__ import annotations

import pytest

from adapter.engines import open_cluster
from adapter.errors import BackendError
from adapter.index.assets import IndexSpec
from adapter.index.catalog import read_index_info
from adapter.admin.init import init_index
from adapter.search import Searcher
from tests.support.cli import TEST_EMBEDDER
from tests.support.faults import PASS, FaultProxy, Status

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")

# How a coordinating node words a request it could not send to a node that is leaving.
NODE_LEFT = "[node-2][127.0.0.1:9301][indices:data/read/search[phase/query]] Node not connected"


@pytest.fixture
def index(client, index_name):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint))
    return index_name


@pytest.mark.parametrize("status, sends", [(503, 4), (500, 2)])
def test_a_refusal_is_asked_again_by_one_layer_only(client, index, opensearch_url, target, status, sends):
    """503 (the transport retries it: 1 + 3 sends, then the server's error) and 500 (only the search
    recovers from a node leaving: once, after a pause), never both."""
    refused = Status(status, NODE_LEFT, "node_not_connected_exception")
    with FaultProxy(opensearch_url, lambda n, method, path: refused if "_search" in path else PASS) as proxy:
        cluster = open_cluster(proxy.url, engine=target.engine)
        searcher = Searcher(cluster, read_index_info(cluster, index), cluster.probe(), TEST_EMBEDDER)
        with pytest.raises(BackendError) as raised:
            searcher.search("reembolso del pedido", technique="bm25")
    searches = [entry for entry in proxy.log if "_search" in entry[2]]
    assert len(searches) == sends, [entry[2] for entry in proxy.log]
    assert (
        type(raised.value) is BackendError
        and raised.value.status == status
        and "Node not connected" in str(raised.value)
    )
