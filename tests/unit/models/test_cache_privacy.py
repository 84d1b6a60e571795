"""The embedding cache is private to its user and keyed: a vector planted without the key is not trusted (issue 20 item
15)."""

from __future__ import annotations

import os
import stat

import numpy as np

from tests.support.counting import FP, CountingEmbedder


# -- 15. the cache digest had no key; cache files were created 0644 in a 0755 folder ------------------------------
def _plant(path, fp, text, vector):
    """What anyone who can write the cache file can do: add a row whose unkeyed digest is right."""
    import sqlite3

    from adapter.models.cache import entry_digest, text_key

    blob = np.asarray(vector, dtype=np.float32).tobytes()
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT OR REPLACE INTO vectors (fp, h, v, dim, dtype, digest) VALUES (?, ?, ?, ?, ?, ?)",
            (fp, text_key(text), blob, len(vector), "float32", entry_digest(fp, text_key(text), blob, len(vector))),
        )


def test_the_embedding_cache_its_folder_and_its_key_are_private_to_their_user(tmp_path):
    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "fresh" / "embeddings.sqlite"
    embed_documents(CountingEmbedder(), ["some text"], EmbeddingCache(path))
    modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in (path.parent, path, path.parent / "cache.key")}
    assert modes == {"fresh": 0o700, "embeddings.sqlite": 0o600, "cache.key": 0o600}


def test_a_vector_planted_without_the_key_is_rejected_and_embedded_again(tmp_path):
    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "c.sqlite"
    model = CountingEmbedder()
    embed_documents(model, ["honest text"], EmbeddingCache(path))
    _plant(path, FP.key, "the planted text", [1.0, 0.0, 0.0, 0.0])
    got = embed_documents(model, ["honest text", "the planted text"], EmbeddingCache(path))
    assert got.from_cache == 1 and got.rejected == 1 and model.texts == 2  # the planted one went to the model
    assert not np.allclose(got.vectors[1], [1.0, 0.0, 0.0, 0.0])


def test_a_cache_from_before_the_key_stays_usable_when_only_its_user_can_write_it(tmp_path):
    """The shared embedding cache of this round must keep its entries: those a private file held when
    the key was made are signed once (trust on first use); a row added later without the key is not trusted."""
    import sqlite3

    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the schema before the key
        db.execute(
            "CREATE TABLE vectors (fp TEXT, h TEXT, v BLOB, dim INTEGER, dtype TEXT, digest TEXT, PRIMARY KEY (fp, h))"
        )
    os.chmod(path, 0o600)
    model = CountingEmbedder()
    old = model.embed_documents(["kept text"])[0]
    _plant(path, FP.key, "kept text", old)
    got = embed_documents(model, ["kept text"], EmbeddingCache(path))
    assert (got.from_cache, got.rejected, model.texts) == (1, 0, 1)  # the one call was ours, above
    _plant(path, FP.key, "added later", [0.0, 1.0, 0.0, 0.0])
    later = embed_documents(model, ["kept text", "added later"], EmbeddingCache(path))
    assert (later.from_cache, later.rejected) == (1, 1)


def test_a_cache_others_could_write_is_not_trusted_on_first_use(tmp_path):
    import sqlite3

    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "shared.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE vectors (fp TEXT, h TEXT, v BLOB, dim INTEGER, dtype TEXT, digest TEXT, PRIMARY KEY (fp, h))"
        )
    _plant(path, FP.key, "who wrote this", [0.0, 0.0, 1.0, 0.0])
    os.chmod(path, 0o666)
    got = embed_documents(CountingEmbedder(), ["who wrote this"], EmbeddingCache(path))
    assert (got.from_cache, got.rejected) == (0, 1)
