"""Real models (torch): the sentence-transformers embedder and the cross-encoder rerank plumbing."""

import numpy as np
import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.models.embedders import load_embedder
from adapter.ingest.ingestor import Ingestor
from adapter.search.rerank import CrossEncoderReranker
from adapter.search import Searcher
from adapter.ingest.sources import read_source

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm():
    return load_embedder("minilm")


def test_minilm_fingerprint_matches_the_loaded_model(minilm):
    fp = minilm.fingerprint  # read from the model folder, without torch
    assert (fp.dimension, fp.normalized, fp.spec) == (384, True, "minilm")
    docs = minilm.embed_documents(
        ["The cat sat on the mat.", "A feline rested on the rug.", "Quantum entanglement theory."]
    )
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert minilm.model.get_embedding_dimension() == fp.dimension
    sims = docs @ docs[0]
    assert sims[1] > 0.5 > sims[2]  # paraphrase close, unrelated far


def test_e5_adds_prefixes_and_normalises(e5):
    q = e5.embed_query("¿cómo devuelvo un pedido?")
    p = e5.embed_documents(
        ["Las devoluciones se aceptan durante 30 días.", "El error E-4012 aparece cuando la tarjeta ha caducado."]
    )
    assert q.shape == (384,) and np.isclose(np.linalg.norm(q), 1.0, atol=1e-4)
    assert e5.fingerprint.query_prefix == "query: " and e5.fingerprint.passage_prefix == "passage: "
    assert p[0] @ q > p[1] @ q


@pytest.fixture(scope="module")
def local_cross_encoder(tmp_path_factory, minilm):
    """No trained cross-encoder is obtainable here: build one from MiniLM to test the plumbing."""
    from sentence_transformers import CrossEncoder

    path = tmp_path_factory.mktemp("ce") / "minilm-ce"
    CrossEncoder(minilm.model_name, num_labels=1).save(str(path))
    return CrossEncoderReranker(str(path))


def test_rerank_reorders_the_top_n_and_keeps_first_stage_scores(
    client, index_name, minilm, local_cross_encoder, support_docs_path
):
    init_index(client, index_name, IndexSpec(minilm.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, minilm, progress=False).ingest(read_source(support_docs_path))
    searcher = Searcher.open(client, index_name, minilm, reranker=local_cross_encoder)
    first = searcher.search("devoluciones del pedido", technique="hybrid", k=8)
    reranked = searcher.search("devoluciones del pedido", technique="hybrid", k=3, rerank_top=8)
    assert len(reranked.hits) == 3
    by_id = {h.id: h.score for h in first.hits}
    scores = [h.rerank_score for h in reranked.hits]
    assert scores == sorted(scores, reverse=True)
    for h in reranked.hits:
        assert h.first_stage_score == pytest.approx(by_id[h.id])
        assert h.score == h.rerank_score
    direct = local_cross_encoder.score("devoluciones del pedido", [f"{h.title}\n{h.text}" for h in first.hits])
    assert reranked.hits[0].rerank_score == pytest.approx(float(direct.max()), rel=1e-5)
    with pytest.raises(Exception, match="must cover"):
        searcher.search("x", k=5, rerank_top=3)
