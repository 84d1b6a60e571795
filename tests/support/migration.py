"""Migration test helpers: a synthetic corpus, slow and counting embedders, and a reindex to crash.

``python -m tests.support.migration URL ALIAS CHECKPOINT CACHE`` runs a reindex to the second test
model, slowly (so the test can SIGKILL it midway, as a crash would stop it);
``python -m tests.support.migration cli reindex|rollback URL ALIAS CHECKPOINT CACHE [PAUSE [old|new]]`` runs
``hybrid reindex`` / ``hybrid rollback`` as a user would (its exit code, its SIGTERM handling), with the test models.
"""

from __future__ import annotations

import sys
import threading
import time

from tests.conftest import HashingEmbedder

OLD = HashingEmbedder(32, "mig-old")
NEW = HashingEmbedder(48, "mig-new")
WORDS = "protein cell gene virus cancer immune brain heart blood lung liver kidney bone skin muscle".split()


def corpus(n: int, prefix: str = "d") -> list[dict]:
    """``n`` documents; each holds a token of its own (``tok<i>x``) that only it has."""
    return [
        {
            "id": f"{prefix}{i:04d}",
            "title": f"Title {WORDS[i % len(WORDS)]}",
            "text": f"{' '.join(WORDS[(i + j) % len(WORDS)] for j in range(6))} tok{i}x",
            "lang": "en" if i % 2 else "es",
        }
        for i in range(n)
    ]


class Slow(HashingEmbedder):
    """The test model ``model`` (its fingerprint, its vectors), taking ``pause`` seconds per batch and recording the
    texts it was asked for."""

    def __init__(self, model: HashingEmbedder, pause: float = 0.0) -> None:
        super().__init__(model.dimension)
        self._fp = model.fingerprint  # a hashing model's vectors depend on its dimension alone: the same vectors
        self.pause = pause
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed_documents(self, texts):
        time.sleep(self.pause)
        with self._lock:
            self.texts += list(texts)
        return super().embed_documents(texts)


def by_spec(spec: str, **_):
    """``load_index_embedder`` for the test models (what the searcher loads when the alias moves)."""
    for model in (OLD, NEW):
        if model.fingerprint.spec == spec:
            return model
    raise AssertionError(f"no test model {spec}")


def main(url: str, alias: str, checkpoint: str, cache: str) -> None:
    from adapter.models.cache import EmbeddingCache
    from adapter.engines import connect_cluster
    from adapter.admin.migrate import reindex
    from adapter.index.plan import Desired
    from adapter.index.assets import IndexSpec

    desired = Desired(alias, IndexSpec(NEW.fingerprint, analyzer="standard"))
    reindex(
        connect_cluster(url),
        desired,
        Slow(NEW, pause=0.2),
        cache=EmbeddingCache(cache),
        checkpoint=checkpoint,
        batch=16,
        progress=False,
        log=lambda m: None,
    )


def cli(command: str, url: str, alias: str, checkpoint: str, cache: str, pause: str = "0", model: str = "new") -> int:
    import adapter.models.embedders as embedders
    from adapter.cli import main as hybrid

    models = {m.fingerprint.spec: m for m in (OLD, NEW)}
    real = embedders.load_embedder
    slow = {spec: Slow(model, pause=float(pause)) for spec, model in models.items()}
    embedders.load_embedder = lambda spec, **o: slow[spec] if spec in slow else real(spec, **o)
    embedders.load_index_embedder = lambda spec, **o: slow[spec]
    if command == "reindex":
        target = {"old": OLD, "new": NEW}[model]
        args = [
            "reindex",
            "--index",
            alias,
            "--embedder",
            target.fingerprint.spec,
            "--analyzer",
            "standard",
            "--checkpoint",
            checkpoint,
            "--batch-size",
            "16",
        ]
    else:
        args = ["rollback", alias]
    return hybrid([*args, "--url", url, "--cache", cache, *(["-q"] if command == "reindex" else [])])


if __name__ == "__main__":
    if sys.argv[1] == "cli":
        sys.exit(cli(*sys.argv[2:]))
    main(*sys.argv[1:5])
