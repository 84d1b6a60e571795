import pytest

from adapter.errors import InputError
from adapter.fusion import RRF, Combination, Normalization, ScoreNormalization, parse_fusion
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.search.results import Technique


def test_technique_parse_names_the_choices():
    assert Technique.parse("Client-RRF") is Technique.CLIENT_RRF
    with pytest.raises(InputError, match="bm25, dense, hybrid, client-rrf"):
        Technique.parse("cosine-only")


def test_fusion_parses_enums_and_names():
    f = ScoreNormalization("l2", "harmonic_mean", [0.3, 0.7])
    assert f.technique is Normalization.L2 and f.combination is Combination.HARMONIC_MEAN
    assert f.weights == (0.3, 0.7) and f.name == "l2-harmonic_mean"
    assert RRF().name == "rrf" and RRF(20).name == "rrf-20"
    with pytest.raises(InputError, match="min_max, l2, z_score"):
        ScoreNormalization("minmax")
    with pytest.raises(InputError, match="between 1 and 10000"):
        RRF(0)
    with pytest.raises(InputError, match="only with arithmetic_mean"):
        ScoreNormalization("z_score", "harmonic_mean")


@pytest.mark.parametrize(
    "text, weights, rank_constant, expected",
    [
        ("rrf", None, None, RRF()),
        ("rrf-40", None, None, RRF(40)),
        (None, None, 20, RRF(20)),
        ("rrf", (0.7, 0.3), 10, RRF(10, (0.7, 0.3))),
        ("l2-harmonic_mean", (0.2, 0.8), None, ScoreNormalization("l2", "harmonic_mean", (0.2, 0.8))),
        ("z_score", None, None, ScoreNormalization("z_score")),
        (None, (0.3, 0.7), None, ScoreNormalization(weights=(0.3, 0.7))),
        (None, None, None, None),
    ],
)
def test_parse_fusion_reads_every_name_back(text, weights, rank_constant, expected):
    assert parse_fusion(text, weights=weights, rank_constant=rank_constant) == expected
    if expected is not None:
        assert parse_fusion(expected.name, weights=expected.weights) == expected


@pytest.mark.parametrize(
    "text, weights, rank_constant, match",
    [
        ("cosine", None, None, "unknown fusion"),
        ("rrf-x", None, None, "rrf-<rank constant>"),
        ("min_max-mean", None, None, "combination"),
        ("rrf", None, 0, "between 1 and 10000"),  # not silently 60
        ("min_max-arithmetic_mean", None, 60, "RRF only"),
        ("rrf-40", None, 20, "disagree"),
    ],
)
def test_parse_fusion_refuses_what_the_server_would(text, weights, rank_constant, match):
    with pytest.raises(InputError, match=match):
        parse_fusion(text, weights=weights, rank_constant=rank_constant)


def test_weights_must_fit_the_legs_and_the_server():
    ScoreNormalization(weights=(0.4, 0.6))
    ScoreNormalization(weights=(0.333, 0.667))
    with pytest.raises(InputError, match="3 weights given for 2 legs"):
        ScoreNormalization(weights=(0.2, 0.3, 0.5))
    with pytest.raises(InputError, match="sum to 1"):
        ScoreNormalization(weights=(0.5, 0.7))
    RRF(weights=(0.7, 0.3))
    with pytest.raises(InputError, match="sum to 1"):
        RRF(weights=(2.0, 1.0))  # the server checks RRF weights like normalisation weights
    with pytest.raises(InputError, match="negative"):
        RRF(weights=(-1.0, 1.0))
    for bad in ((float("nan"), float("nan")), (float("inf"), 0.0)):
        with pytest.raises(InputError, match="finite"):
            ScoreNormalization(weights=bad)
        with pytest.raises(InputError, match="finite"):
            RRF(weights=bad)


def _fp(**kw):
    base = dict(model="m", spec="s", weights_sha256="abc", dimension=384, normalized=True)
    base.update(kw)
    return EmbeddingFingerprint(**base)


def test_fingerprint_identity_ignores_where_the_model_lives():
    assert _fp().key == _fp(model="/other/path", spec="st:/other/path").key
    assert _fp().differences(_fp(model="elsewhere")) == []
    assert _fp().key != _fp(weights_sha256="def").key
    assert _fp().differences(_fp(dimension=768)) == ["dimension: 384 != 768"]
    assert _fp().differences(_fp(query_prefix="query: ")) == ["query_prefix: '' != 'query: '"]


def test_fingerprint_round_trips_through_meta():
    fp = _fp(query_prefix="q: ")
    assert EmbeddingFingerprint.from_meta(fp.to_meta()) == fp
    with pytest.raises(InputError, match="lacks"):
        EmbeddingFingerprint.from_meta({"model": "m"})
