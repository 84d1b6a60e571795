"""Fusion.normalized (one leg's scores before weighting) agrees with what fuse puts in each leg."""

import pytest

from adapter.fusion import RRF, ScoreNormalization, methods

pytestmark = pytest.mark.unit

BM25 = [("a", 12.0), ("b", 9.5), ("a", 7.0), ("c", 3.0)]  # "a" twice: its first rank counts
DENSE = [("b", 0.91), ("d", 0.90), ("a", 0.2)]


@pytest.mark.parametrize("method", methods(), ids=lambda m: m.__name__)
def test_every_method_normalises_a_leg_as_its_fuse_does(method):
    for fusion in method.variants((0.3, 0.7), (60, 5)):
        fused = {f.id: f.legs for f in fusion.fuse([BM25, DENSE])}
        for i, run in enumerate((BM25, DENSE)):
            mine = fusion.normalized(run)
            assert set(mine) == {d for d, _ in run}
            for doc, value in mine.items():
                assert value == pytest.approx(fused[doc][i].normalized_score, rel=1e-6, abs=1e-9), (fusion.name, doc)


def test_the_arithmetic():
    assert RRF(40).normalized(BM25) == {
        "a": pytest.approx(1 / 41, rel=1e-6),
        "b": pytest.approx(1 / 42, rel=1e-6),
        "c": pytest.approx(1 / 44, rel=1e-6),
    }
    # min_max over the leg's first occurrences: (s - 3) / (12 - 3); the minimum becomes 0.001.
    assert ScoreNormalization().normalized(BM25) == {"a": 1.0, "b": pytest.approx(6.5 / 9, rel=1e-6), "c": 0.001}
