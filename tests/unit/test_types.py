import pytest

from adapter.errors import InputError
from adapter.types import Combination, EmbeddingFingerprint, Fusion, Normalization, Technique


def test_technique_parse_names_the_choices():
    assert Technique.parse("Client-RRF") is Technique.CLIENT_RRF
    with pytest.raises(InputError, match="bm25, dense, hybrid, client-rrf"):
        Technique.parse("cosine-only")


def test_fusion_parses_enums_and_names():
    f = Fusion(normalization="l2", combination="harmonic_mean", weights=[0.3, 0.7])
    assert f.normalization is Normalization.L2 and f.combination is Combination.HARMONIC_MEAN
    assert f.weights == (0.3, 0.7) and f.name == "l2-harmonic_mean"
    assert Fusion.rrf().name == "rrf" and Fusion.rrf(20).name == "rrf-20"
    with pytest.raises(InputError):
        Fusion(normalization="minmax")
    with pytest.raises(InputError):
        Fusion.rrf(0)


def test_weights_must_fit_the_legs_and_the_server():
    Fusion(weights=(0.4, 0.6)).validate_weights(2, require_unit_sum=True)
    with pytest.raises(InputError, match="3 weights given for 2 legs"):
        Fusion(weights=(0.2, 0.3, 0.5)).validate_weights(2, require_unit_sum=True)
    with pytest.raises(InputError, match="sum to 1"):
        Fusion(weights=(0.5, 0.7)).validate_weights(2, require_unit_sum=True)
    Fusion.rrf(weights=(2.0, 1.0)).validate_weights(2, require_unit_sum=False)
    with pytest.raises(InputError, match="negative"):
        Fusion.rrf(weights=(-1.0, 1.0)).validate_weights(2, require_unit_sum=False)


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
