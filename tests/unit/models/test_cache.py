"""The embedding cache: entries checked against their text and model, a file that is not SQLite named, and where it
lives (issue 10 item 4, issue 32 item 10)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from adapter.errors import ConfigurationError
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.models.cache import EmbeddingCache, embed_documents, text_key
from adapter.testing import FakeClient, bulk_answer
from tests.support.counting import INFO, CountingEmbedder


# -- 4. the embedding cache is trusted blindly -------------------------------------------------------
def test_swapped_cache_entries_are_caught_re_embedded_and_counted(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = ["alpha", "beta", "gamma!"]
    first = embed_documents(embedder, texts, cache)
    db = sqlite3.connect(tmp_path / "c.sqlite")
    keys = [text_key(t) for t in texts]
    blobs = {h: v for h, v in db.execute("SELECT h, v FROM vectors")}
    with db:  # rotate the vectors between the keys, as a bad copy or a bug would
        for h, other in zip(keys, keys[1:] + keys[:1]):
            db.execute("UPDATE vectors SET v = ? WHERE h = ?", (blobs[other], h))
    calls = embedder.calls
    again = embed_documents(embedder, texts, EmbeddingCache(tmp_path / "c.sqlite"))
    assert np.array_equal(again.vectors, first.vectors)
    assert (again.from_cache, again.embedded, again.rejected) == (0, 3, 3) and embedder.calls == calls + 3
    healed = embed_documents(embedder, texts, EmbeddingCache(tmp_path / "c.sqlite"))
    assert (healed.from_cache, healed.rejected) == (3, 0)


def test_a_truncated_cache_entry_is_re_embedded_not_a_broadcast_error(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first = embed_documents(embedder, ["alpha"], cache)
    db = sqlite3.connect(tmp_path / "c.sqlite")
    with db:
        db.execute("UPDATE vectors SET v = substr(v, 1, 7)")
    again = embed_documents(embedder, ["alpha"], EmbeddingCache(tmp_path / "c.sqlite"))
    assert np.array_equal(again.vectors, first.vectors) and again.rejected == 1


def test_a_cache_path_that_is_not_sqlite_is_named_with_what_to_do(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(ConfigurationError, match=r"c\.sqlite is not a readable SQLite database.*--no-cache"):
        EmbeddingCache(path)


def test_the_ingest_report_counts_rejected_cache_entries(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    embed_documents(embedder, ["T\nx"], cache)
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("UPDATE vectors SET v = zeroblob(16)")
    client = FakeClient({"POST */_bulk": lambda call: bulk_answer(call), "POST */_refresh": {}})
    report = Ingestor(client, INFO, embedder, cache=cache, progress=False).ingest([SourceDoc("a", "x", "T")])
    assert (report.cache_hits, report.cache_rejected, report.embedded) == (0, 1, 1)


# -- item 10: HYBRID_CACHE_DIR covers the embedding cache -------------------------------------------
def test_the_embedding_cache_follows_hybrid_cache_dir(tmp_path, monkeypatch):
    """Before: it stayed in ~/.cache/opensearch-hybrid/embeddings.sqlite whatever HYBRID_CACHE_DIR said."""
    from adapter.models.cache import default_cache_path

    monkeypatch.delenv("HYBRID_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("HYBRID_CACHE_DIR", str(tmp_path / "cache"))
    assert default_cache_path() == tmp_path / "cache" / "embeddings.sqlite"
    monkeypatch.setenv("HYBRID_EMBEDDING_CACHE", str(tmp_path / "mine.sqlite"))  # the file named for it still wins
    assert default_cache_path() == tmp_path / "mine.sqlite"
