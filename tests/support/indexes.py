"""Indexes of the support documents (tests.conftest's ``support_docs_path``) that tests search, each in the test's own
index (``index_name``): import the fixture a test uses (``# noqa: F401``)."""

from __future__ import annotations

import pytest

from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from tests.support.cli import TEST_EMBEDDER


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
