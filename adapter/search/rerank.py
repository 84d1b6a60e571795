"""Rerankers: the ``Reranker`` protocol and a sentence-transformers ``CrossEncoder`` implementation.

A cross-encoder reads the query and a candidate together, so it ranks better than a bi-encoder but
costs one model call per candidate: use it as a second stage over the top N, never as the first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from adapter._optional import require
from adapter.errors import ConfigurationError

DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


@runtime_checkable
class Reranker(Protocol):
    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance score per text (higher is better), as a float array."""
        ...


class CrossEncoderReranker:
    """``sentence_transformers.CrossEncoder`` by hub name (default MS MARCO MiniLM-L6) or local path."""

    def __init__(
        self,
        model: str = DEFAULT_CROSS_ENCODER,
        *,
        batch_size: int = 32,
        max_length: int | None = 512,
        device: str = "cpu",
    ) -> None:
        self.model_name = str(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model = None

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_name!r})"

    @property
    def model(self) -> Any:  # sentence_transformers.CrossEncoder, imported late
        if self._model is None:
            if Path(self.model_name).is_dir():
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            CrossEncoder = require("sentence_transformers", f"the cross-encoder {self.model_name}").CrossEncoder
            try:
                self._model = CrossEncoder(self.model_name, device=self.device, max_length=self.max_length)
            except OSError as exc:
                raise ConfigurationError(f"cannot load cross-encoder {self.model_name!r}: {exc}") from exc
        return self._model

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query, t) for t in texts]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))
