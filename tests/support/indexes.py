"""Indexes of the support documents (tests.conftest's ``support_docs_path``) that tests search, each in the test's own
index (``index_name``): import the fixture a test uses (``# noqa: F401``)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from tests.support.cli import TEST_EMBEDDER

# The six score fusions of an engine with a hybrid query (normalisation x combination), in the adapter's order.
SCORE_FUSIONS = tuple(
    f"{n}-{c}" for n in ("min_max", "l2") for c in ("arithmetic_mean", "geometric_mean", "harmonic_mean")
)

# A tuned search pipeline as an operator adds one to a spec (its extra pipelines, then its default).
TUNED_PIPELINE = {
    "description": "tuned",
    "phase_results_processors": [
        {
            "normalization-processor": {
                "normalization": {"technique": "l2"},
                "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.3, 0.7]}},
            }
        }
    ],
}


@contextlib.contextmanager
def module_index(client, prefix: str, spec: IndexSpec) -> Iterator[str]:
    """An index a whole module shares (``t-<prefix>-<random>``, made by init): creating one per test costs
    seconds on a busy shared node. Dropped on leaving, its templates and pipelines too."""
    from tests.conftest import drop_hybrid_index

    name = f"t-{prefix}-{uuid.uuid4().hex[:6]}"
    init_index(client, name, spec)
    try:
        yield name
    finally:
        drop_hybrid_index(client, name)


@pytest.fixture(scope="module")
def shared_index(client, e5, request):
    """An empty e5 index the module's tests share (``t-haystack-suite-*`` for test_haystack_suite.py)."""
    prefix = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    with module_index(client, prefix, IndexSpec(e5.fingerprint)) as name:
        yield name


@pytest.fixture
def hashing():
    """The test embedder (``test:hashing`` on a command line: tests.support.cli)."""
    return TEST_EMBEDDER


@pytest.fixture
def small_index(client, index_name, support_docs_path):
    """The support documents embedded by the test embedder (no model): what a service under test serves."""
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint))
    Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False).ingest(read_source(support_docs_path))
    return index_name


@pytest.fixture
def support_index(client, index_name, e5, support_docs_path):
    """The support documents embedded by e5, with the Spanish analyzer: real search results."""
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    return index_name
