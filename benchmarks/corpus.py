"""A synthetic corpus for the scale benchmark, built once and cached on disk (no model in the loop).

- Text: words drawn from a Zipf vocabulary of 50,000 words, each document's length drawn from the
  word counts of SciFact's 5,183 abstracts (median 192 words, p95 345): realistic lengths for
  abstracts or RAG chunks.
- Vectors: 384-d, the L2-normalised sum of a fixed random vector per word over the first 64 words
  of title + text (what ``benchmarks.run.HashedWordsEmbedder`` computes, vectorised), so the dense
  leg agrees with the text as an embedding does; queries are 2-4 mid-frequency words, embedded the
  same way.

On disk (``out/bench-scale/<n>/``): ``corpus.jsonl`` (id, title, text), ``vectors.f32`` (row i is
line i's vector), ``digests.u64`` / ``rows.u32`` (BLAKE2b-64 of each document's embedding text,
sorted, and the row each belongs to: how :class:`CachedVectors` answers ``embed_documents``),
``queries.json``, ``meta.json`` (written last: a corpus without it is rebuilt).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from adapter.index.documents import embedding_text
from adapter.models.fingerprint import EmbeddingFingerprint

DIM = 384
VOCAB = 50_000
WORDS_EMBEDDED = 64
VERSION = 1
SCIFACT_CORPUS = (
    Path(os.environ.get("HYBRID_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    / "scifact"
    / "corpus.jsonl"
)


def digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _lengths(rng: np.random.Generator, n: int) -> np.ndarray:
    """Document lengths in words, drawn from SciFact's abstracts (a log-normal of the same median and spread without
    it)."""
    if SCIFACT_CORPUS.exists():
        with open(SCIFACT_CORPUS, encoding="utf-8") as fh:
            observed = np.array([len((json.loads(line).get("text") or "").split()) for line in fh])
        observed = observed[observed >= 5]
        return rng.choice(observed, size=n)
    return np.clip(rng.lognormal(np.log(192), 0.45, size=n), 5, 2000).astype(int)


def _word_vectors(seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 1).standard_normal((VOCAB, DIM), dtype=np.float32)


def _embed(word_ids: Sequence[np.ndarray], table: np.ndarray) -> np.ndarray:
    """The normalised sum of the first WORDS_EMBEDDED words' vectors, one row per document."""
    heads = [ids[:WORDS_EMBEDDED] for ids in word_ids]
    flat = np.concatenate(heads)
    starts = np.cumsum([0] + [len(h) for h in heads[:-1]])
    sums = np.add.reduceat(table[flat], starts, axis=0)
    return (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)


@dataclass(frozen=True)
class Corpus:
    folder: Path
    n: int

    @property
    def jsonl(self) -> Path:
        return self.folder / "corpus.jsonl"

    @property
    def vectors(self) -> Path:
        return self.folder / "vectors.f32"

    def queries(self) -> list[tuple[str, np.ndarray]]:
        data = json.loads((self.folder / "queries.json").read_text())
        return [(q["text"], np.asarray(q["vector"], dtype=np.float32)) for q in data]

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, dict]]:
        """(row number, record) for rows ``start`` to ``stop`` of the JSONL."""
        stop = self.n if stop is None else stop
        with open(self.jsonl, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i >= stop:
                    break
                if i >= start:
                    yield i, json.loads(line)

    def vector_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start`` to ``stop`` of the vectors, read from the file (not mapped: the reader's RSS stays flat)."""
        with open(self.vectors, "rb") as fh:
            fh.seek(start * DIM * 4)
            return np.frombuffer(fh.read((stop - start) * DIM * 4), dtype=np.float32).reshape(-1, DIM)


def build(folder: Path, n: int, *, seed: int = 23, queries: int = 200, log=print) -> Corpus:
    """The corpus of ``n`` documents in ``folder`` (reused when ``meta.json`` says it is this one)."""
    meta = {"version": VERSION, "n": n, "seed": seed, "queries": queries, "dim": DIM}
    corpus = Corpus(folder, n)
    marker = folder / "meta.json"
    if marker.exists() and json.loads(marker.read_text()) == meta:
        return corpus
    folder.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(VOCAB)])
    p = 1.0 / np.arange(1, VOCAB + 1)
    p /= p.sum()
    table = _word_vectors(seed)
    lengths = _lengths(rng, n)
    digests = np.empty(n, dtype=np.uint64)
    block = 2_000
    with open(corpus.jsonl, "w", encoding="utf-8") as text_out, open(corpus.vectors, "wb") as vec_out:
        for start in range(0, n, block):
            stop = min(n, start + block)
            title_len = rng.integers(4, 13, size=stop - start)
            words = rng.choice(VOCAB, size=int(lengths[start:stop].sum() + title_len.sum()), p=p)
            cuts = np.cumsum(np.ravel(np.column_stack([title_len, lengths[start:stop]])))[:-1]
            parts = np.split(words, cuts)
            titles, texts = parts[0::2], parts[1::2]
            ids = [np.concatenate([t, x]) for t, x in zip(titles, texts)]
            vec_out.write(_embed(ids, table).tobytes())
            for j, (t, x) in enumerate(zip(titles, texts)):
                title, text = " ".join(vocab[t]), " ".join(vocab[x])
                digests[start + j] = digest(embedding_text(title, text))
                text_out.write(json.dumps({"id": f"s{start + j}", "title": title, "text": text}) + "\n")
            if start % 100_000 == 0:
                log(f"corpus: {stop:,} of {n:,} documents")
    order = np.argsort(digests, kind="stable")
    digests[order].tofile(folder / "digests.u64")
    order.astype(np.uint32).tofile(folder / "rows.u32")
    qrng = np.random.default_rng(seed + 2)
    qs = []
    for _ in range(queries):
        ids = qrng.integers(100, 5_000, size=int(qrng.integers(2, 5)))
        qs.append({"text": " ".join(vocab[ids]), "vector": _embed([ids], table)[0].tolist()})
    (folder / "queries.json").write_text(json.dumps(qs))
    marker.write_text(json.dumps(meta))
    return corpus


class CachedVectors:
    """An embedder that answers from the corpus' cached vectors, by the text's digest (no model).

    Reads the rows it needs from ``vectors.f32`` on each call, so memory stays at the two index
    arrays (12 bytes a document) whatever the corpus size. A text not in the corpus is an error.
    """

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._digests = np.fromfile(corpus.folder / "digests.u64", dtype=np.uint64)
        self._rows = np.fromfile(corpus.folder / "rows.u32", dtype=np.uint32)
        self._fh = open(corpus.vectors, "rb", buffering=0)
        self._fp = EmbeddingFingerprint(
            "bench/hashed-words", "bench:cached", hashlib.sha256(b"hashed-words-v1").hexdigest(), DIM, True
        )

    fingerprint = property(lambda self: self._fp)
    dimension = property(lambda self: DIM)
    normalized = property(lambda self: True)

    def _row(self, text: str) -> int:
        key = np.uint64(digest(text))
        at = int(np.searchsorted(self._digests, key))
        if at >= len(self._digests) or self._digests[at] != key:
            raise KeyError(f"text not in the cached corpus: {text[:60]!r}")
        return int(self._rows[at])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = np.frombuffer(os.pread(self._fh.fileno(), DIM * 4, self._row(text) * DIM * 4), dtype=np.float32)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        raise NotImplementedError("queries come with their vectors (Corpus.queries)")
