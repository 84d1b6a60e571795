"""A learned fusion model is checked before it scores (issue 33, item 7): weights too large to score
with are refused with the model named (they scored every hit inf, and ``search --json`` printed
``Infinity``, which is no JSON, with exit 0); a model is checked against the index, embedder and depth
it was trained on. The pure model, then a search on the port-level fake."""

from __future__ import annotations

import json

import pytest

from adapter.cli import main
from adapter.errors import InputError
from adapter.fusion.choice.learned import SCHEMA1_FEATURES, LearnedFusion
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster
from tests.unit.engines.test_fake_engine import DOCS

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(16)
RUNS = ([("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 0.9), ("d", 0.5)])


def model(weight: float = 1.0, **trained_on) -> LearnedFusion:
    return LearnedFusion((weight,) * len(SCHEMA1_FEATURES), 0.0, trained_on or None, SCHEMA1_FEATURES)


@pytest.mark.parametrize("weight", [1e308, -1e308, 1e200])
def test_weights_too_large_to_score_with_are_refused_when_the_model_is_read(weight):
    with pytest.raises(InputError, match="too large to score with"):
        model(weight)
    with pytest.raises(InputError, match="too large to score with"):
        LearnedFusion.loads(json.dumps({**model().to_json(), "weights": [weight] * len(SCHEMA1_FEATURES)}))


def test_a_score_that_is_not_a_number_is_refused_not_ranked():
    with pytest.raises(InputError, match="scored 1 of 3 candidates as inf or nan"):
        model().fuse(([("a", float("inf")), ("b", 1.0), ("c", 0.5)], []))
    assert [d.id for d in model().fuse(RUNS)][:2] == ["b", "a"]  # finite: ranked as before


def test_search_json_with_a_huge_model_is_an_error_not_infinity(tmp_path, capsys):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({**model().to_json(), "weights": [1e308] * len(SCHEMA1_FEATURES)}))
    code = main(
        [
            "search",
            "refund",
            "--index",
            "docs",
            "--fusion",
            "learned",
            "--model",
            str(path),
            "--json",
            "--url",
            "http://127.0.0.1:9",
        ]
    )  # refused before connecting
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "too large to score with" in err and "Infinity" not in out + err


KEY = EMBEDDER.fingerprint.key


def test_a_model_is_checked_against_the_index_embedder_and_depth_it_was_trained_on():
    assert model(index="docs", embedder=KEY, depth=100).fit_for(index="docs", embedder=KEY, depth=100) == ()
    with pytest.raises(InputError, match="trained on vectors of embedder 0123456789abcdef"):
        model(index="docs", embedder="0123456789abcdef", depth=100).fit_for(index="docs", embedder=KEY, depth=100)
    other = model(index="scifact", embedder=KEY, depth=50).fit_for(index="docs", embedder=KEY, depth=100)
    assert len(other) == 2 and "index scifact, not docs" in other[0] and "pass --depth 50" in other[1]
    (unknown,) = model(dataset="hand-made").fit_for(index="docs", embedder=KEY, depth=100)
    assert "does not record the index, embedder and depth" in unknown


def test_a_search_says_where_the_model_does_not_fit_and_refuses_another_embedder():
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    Ingestor.open(cluster, "docs", EMBEDDER, progress=False).ingest(DOCS)
    searcher = Searcher.open(cluster, "docs", EMBEDDER)
    fits = searcher.search(
        "refund order", technique="client", fusion=model(index="docs", embedder=KEY, depth=40), depth=40
    )
    assert fits.hits and not [n for n in fits.notices if "learned fusion model" in n]
    deeper = searcher.search("refund order", technique="client", fusion=model(index="docs", embedder=KEY, depth=40))
    assert any("trained on 40 candidates per leg" in n for n in deeper.notices), deeper.notices
    with pytest.raises(InputError, match="trained on vectors of embedder"):
        searcher.search("refund order", technique="client", fusion=model(index="docs", embedder="0" * 16, depth=100))
