"""What ingest refuses or normalises, get, delete, update and carried vectors now do the same (issue 38, low items):
``"  spaced  "`` landed as ``spaced`` and get/delete by the id as written found nothing; ``update(id, text=" \\u200b
")``
stored text ingest refuses; carried vectors with NaN, 1e308 or all zeros went to the server unchecked (query vectors
were checked). On the port-level fake."""

from __future__ import annotations

import math
import re

import pytest

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(8)


@pytest.fixture
def ingestor():
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    ingestor = Ingestor.open(cluster, "docs", EMBEDDER, progress=False)
    assert ingestor.ingest([SourceDoc("  spaced  ", "texto uno"), SourceDoc("plain", "texto dos")]).complete
    return ingestor


def test_an_id_written_with_spaces_is_found_updated_and_deleted_by_the_id_as_written(ingestor):
    documents = ingestor.documents()
    assert [d.id for d in documents.get(["  spaced  "])] == ["spaced"]
    assert ingestor.update("  spaced  ", metadata={"k": 1}).complete and documents.get(["spaced"])[0].metadata == {
        "k": 1
    }
    assert documents.delete(["  spaced  "]).deleted == 1 and documents.count() == 1


@pytest.mark.parametrize("text", [" \u200b ", "\u00a0", "\u2060\ufeff"])
def test_update_refuses_text_with_nothing_visible_as_ingest_does(ingestor, text):
    with pytest.raises(InputError, match="no visible character"):
        ingestor.update("plain", text=text)
    assert ingestor.documents().get(["plain"])[0].text == "texto dos"


@pytest.mark.parametrize(
    "vector, reason",
    [
        ([math.nan] + [0.5] * 7, r"1 values that are not finite 32-bit floats.*position 0: nan"),
        ([1e308] + [0.5] * 7, r"not finite 32-bit floats.*position 0: 1e\+308"),
        ([1e38] * 8, r"squared norm overflows 32-bit floats"),
        ([0.0] * 8, r"all zeros: it has no direction"),
    ],
    ids=["nan", "1e308", "norm overflow", "zeros"],
)
def test_carried_vectors_the_server_could_not_score_are_refused_in_the_client(ingestor, vector, reason):
    key = EMBEDDER.fingerprint.key
    report = ingestor.ingest(
        [
            SourceDoc("v", "texto tres", vector=tuple(vector), embedded_by=key),
            SourceDoc("w", "texto cuatro", vector=tuple([0.5] * 8), embedded_by=key),
        ]
    )
    assert [f.id for f in report.failures] == ["v"] and report.chunks == 1
    assert re.search(reason, report.failures[0].reason), report.failures[0].reason
