"""Query embedding at its floor (issue 37 item 2): the same vectors, faster, with threads per call."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from adapter.models.query_cache import QueryVectorCache
from tests.support.extras import requires_extra

ROOT = Path(__file__).resolve().parents[3]


def thousand_texts() -> list[str]:
    """The repo's labelled sets' queries (839), then their documents' titles: 1,000 query-like texts in
    English, Spanish and Polish, short and long."""
    texts: list[str] = []
    for path in sorted((ROOT / "benchmarks" / "data").glob("*/queries.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for path in sorted((ROOT / "benchmarks" / "data").glob("*/corpus.jsonl")):
        texts += [json.loads(line).get("title") or "" for line in path.read_text(encoding="utf-8").splitlines()[:80]]
    texts = [t for t in dict.fromkeys(texts) if t.strip()]
    assert len(texts) >= 1000
    return texts[:1000]


# -- the cache ---------------------------------------------------------------------------------------
def test_a_query_is_embedded_once_per_model_and_the_oldest_leaves_first():
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return np.full(3, float(len(calls)), dtype=np.float32)

    cache = QueryVectorCache(size=2)
    first = cache.get("model-a", "q1", embed)
    assert np.array_equal(cache.get("model-a", "q1", embed), first) and calls == ["q1"]
    cache.get("model-b", "q1", embed)  # another model's vector of the same text: its own entry
    assert calls == ["q1", "q1"]
    cache.get("model-a", "q2", embed)  # a third entry: the least recently used (model-a q1) leaves
    cache.get("model-a", "q1", embed)
    assert calls == ["q1", "q1", "q2", "q1"] and len(cache) == 2 and (cache.hits, cache.misses) == (1, 4)


def test_a_cached_vector_cannot_be_changed_by_its_caller():
    cache = QueryVectorCache()
    vector = cache.get("m", "q", lambda t: np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError):
        vector[0] = 5.0
    assert cache.get("m", "q", lambda t: np.zeros(4, dtype=np.float32))[0] == 1.0


def test_size_zero_embeds_every_time():
    calls: list[str] = []
    cache = QueryVectorCache(size=0)
    for _ in range(3):
        cache.get("m", "q", lambda t: calls.append(t) or np.zeros(2, dtype=np.float32))
    assert len(calls) == 3 and len(cache) == 0


# -- e5: threads per call ----------------------------------------------------------------------------
@requires_extra("e5")
def test_e5_sets_its_threads_for_the_call_and_the_calling_thread_only():
    from adapter.models.embedders import E5Embedder

    before_env = os.environ.get("OMP_NUM_THREADS")
    embedder = E5Embedder(num_threads=2, query_threads=1)
    lib = embedder.engine._lib
    assert os.environ.get("OMP_NUM_THREADS") == before_env  # nothing process-wide
    start = lib.omp_get_max_threads()
    one = embedder.embed_query("¿Cómo devuelvo un pedido?")
    assert lib.omp_get_max_threads() == start  # put back after the call
    seen: list[int] = []
    worker = threading.Thread(target=lambda: (lib.omp_set_num_threads(1), seen.append(lib.omp_get_max_threads())))
    worker.start()
    worker.join()
    assert seen == [1] and lib.omp_get_max_threads() == start  # another thread's setting is its own
    batch = embedder.embed_queries(["¿Cómo devuelvo un pedido?", "factura"])
    assert float(one @ batch[0]) > 1 - 1e-5  # one thread or two: the same vector


# -- MiniLM in ONNX Runtime ----------------------------------------------------------------------------
@requires_extra("models", "onnx")
def test_minilm_queries_in_onnx_runtime_are_torchs_vectors_on_a_thousand_queries(tmp_path, monkeypatch):
    from adapter.models.embedders import load_embedder

    monkeypatch.setenv("HYBRID_CACHE_DIR", str(tmp_path))  # exported afresh here, into the test's folder
    fast, reference = load_embedder("minilm"), load_embedder("minilm", query_runtime="torch")
    texts = thousand_texts()
    ours = np.vstack([fast.embed_query(t) for t in texts])
    assert fast.query_runtime_in_use == "onnxruntime" and reference.query_runtime_in_use == "torch"
    assert (tmp_path / "onnx").is_dir()
    theirs = reference.embed_queries(texts)
    gaps = 1.0 - (ours * theirs).sum(axis=1)
    assert float(gaps.max()) <= 1e-3, f"worst 1 - cos {gaps.max():.2e} at {texts[int(gaps.argmax())]!r}"
    assert fast.fingerprint == reference.fingerprint  # the same model: an index built with either accepts both
    batch = fast.embed_queries(texts[:16])  # padded batch (serve's micro-batches): each row as alone
    assert float((1.0 - (batch * ours[:16]).sum(axis=1)).max()) <= 1e-5


@requires_extra("models", "onnx")
def test_asking_for_onnx_where_it_cannot_run_says_why(tmp_path, monkeypatch):
    from adapter.errors import ConfigurationError
    from adapter.models.embedders import SentenceTransformerEmbedder

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            ]
        )
    )
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 8, "pooling_mode_mean_tokens": True})
    )
    (folder / "2_Dense").mkdir()
    (folder / "2_Dense" / "config.json").write_text(json.dumps({"out_features": 4}))
    (folder / "model.safetensors").write_bytes(b"0")
    with pytest.raises(ConfigurationError, match="Dense"):
        SentenceTransformerEmbedder(str(folder), query_runtime="onnx")._query_encoder()
    assert SentenceTransformerEmbedder(str(folder))._query_encoder() is None  # auto: stays on torch, quietly at INFO
    with pytest.raises(ConfigurationError, match="unknown query runtime"):
        SentenceTransformerEmbedder(str(folder), query_runtime="tensorflow")
