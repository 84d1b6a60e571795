"""The index names its model, the client decides whether to load it (issue 10 item 6)."""

from __future__ import annotations

import pytest

from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.errors import ConfigurationError
from adapter.index.catalog import IndexInfo
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.testing import FakeClient
from tests.support.extras import requires_extra


# -- 6. the index decides which model the client loads ----------------------------------------------
def planted(spec):
    """An index whose _meta names ``spec``, as anyone with mapping rights can write it."""
    return IndexInfo("docs", "docs-v1", EmbeddingFingerprint("planted", spec, "abc", 4, True))


def test_the_searcher_refuses_a_model_the_index_names_but_nobody_allowed(monkeypatch):
    import adapter.models.embedders as embedders
    from adapter.search import Searcher

    monkeypatch.delenv("HYBRID_ALLOWED_MODELS", raising=False)
    loaded = []
    monkeypatch.setattr(embedders, "SentenceTransformerEmbedder", lambda *a, **k: loaded.append(a))
    searcher = Searcher(FakeClient(), planted("st:/tmp/evil-model"), opensearch_capabilities("2.19.1"))
    with pytest.raises(
        ConfigurationError,
        match=r"'st:/tmp/evil-model'.*not on the allow-list.*--allow-model st:/tmp/evil-model.*HYBRID_ALLOWED_MODELS",
    ):
        searcher.search("hello", technique="dense")
    assert loaded == []


@requires_extra("e5")
def test_allowed_models_come_from_the_built_ins_the_environment_and_the_caller(monkeypatch):
    from adapter.models.embedders import allowed_models, load_index_embedder

    monkeypatch.setenv("HYBRID_ALLOWED_MODELS", "st:org/model-a, st:/models/b")
    assert {"minilm", "multilingual-e5-small", "st:org/model-a", "st:/models/b", "st:c"} <= set(
        allowed_models(["st:c"])
    )
    with pytest.raises(ConfigurationError, match="'st:org/other', which is not on the allow-list"):
        load_index_embedder("st:org/other")
    assert load_index_embedder("all-MiniLM-L6-v2").spec == "minilm"  # another name of a built-in
    with pytest.raises(ConfigurationError, match="variant 'nope'.*original"):
        load_index_embedder("multilingual-e5-small:nope")
