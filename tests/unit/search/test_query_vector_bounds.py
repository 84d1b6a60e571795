"""A query vector the server could not score is refused in the client, whichever way it came
(issue 33, item 11: one whose norm overflows reached the server as ``Infinity``; NaN was caught only by
the command line). The servers compute similarities in float32."""

from __future__ import annotations

import pytest

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster
from tests.unit.engines.test_fake_engine import DOCS

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(16)


@pytest.fixture(scope="module")
def searcher():
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    Ingestor.open(cluster, "docs", EMBEDDER, progress=False).ingest(DOCS)
    return Searcher.open(cluster, "docs", EMBEDDER)


@pytest.mark.parametrize(
    "vector, says",
    [
        ([float("nan")] * 16, "not finite"),
        ([float("inf")] + [0.0] * 15, "not finite"),
        (
            [1e39] + [0.0] * 15,
            "not finite in 32-bit floats",
        ),  # finite in Python, inf once float32, as the server reads it
        ([1e20] * 16, "its squared norm overflows 32-bit floats"),
    ],
)
@pytest.mark.parametrize("technique", ["dense", "hybrid", "client-rrf"])
def test_a_vector_the_server_cannot_score_is_refused_before_sending(searcher, vector, says, technique):
    with pytest.raises(InputError, match=says):
        searcher.search("refund", technique=technique, query_vector=vector)


def test_a_large_vector_whose_norm_fits_is_searched(searcher):
    assert searcher.search("refund", technique="dense", query_vector=[1e18] * 16).hits
