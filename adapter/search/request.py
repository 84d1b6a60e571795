"""One search as asked: its parameters, validated, and the sizes that follow from them. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence, Union

import numpy as np

from adapter.engines.dsl import clean_query
from adapter.errors import InputError
from adapter.fusion import Fusion
from adapter.fusion.choice.policy import AdaptivePolicy
from adapter.search.fast_path import FastPath
from adapter.search.page import SearchOptions
from adapter.search.results import Technique

KNN_MAX_K = 10_000
# The techniques by name, so that a misspelt one is a type error (the CLI parses them at its edge).
TechniqueName = Literal["bm25", "dense", "hybrid", "client-rrf", "client"]
TechniqueLike = Union[Technique, TechniqueName]
# A query vector computed elsewhere: a list of floats or a NumPy array.
VectorLike = Union[Sequence[float], np.ndarray]


@dataclass(frozen=True)
class SearchRequest:
    """What :meth:`adapter.search.Searcher.search` was asked (see its docstring)."""

    query: str
    technique: Technique = Technique.HYBRID
    k: int = 10
    from_: int = 0
    filters: Mapping[str, Any] | None = None
    fusion: Fusion | None = None  # a fixed fusion ...
    policy: AdaptivePolicy | None = None  # ... or a policy that chooses its weights for this query
    pipeline: str | None = None
    depth: int | None = None
    rerank_top: int | None = None
    mmr_lambda: float | None = None
    mmr_candidates: int | None = None
    explain: bool = False
    query_vector: VectorLike | None = None
    options: SearchOptions = field(default_factory=SearchOptions)
    fast_path: FastPath = FastPath.AUTO  # the parallel-legs fast path (adapter.search.fast_path)

    def __post_init__(self) -> None:
        object.__setattr__(self, "query", clean_query(self.query))
        object.__setattr__(self, "technique", Technique.parse(self.technique))
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise InputError(f"k must be a positive integer, got {self.k!r}")
        if self.from_ < 0:
            raise InputError(f"from must be >= 0, got {self.from_}")
        if self.mmr_lambda is not None and not 0.0 <= self.mmr_lambda <= 1.0:
            raise InputError(f"MMR lambda must be between 0 and 1, got {self.mmr_lambda}")
        if self.rerank_top is not None and self.rerank_top < self.wanted:
            raise InputError(f"rerank_top ({self.rerank_top}) must cover from + k ({self.wanted})")
        if self.technique is Technique.CLIENT_RRF and (
            self.policy is not None or (self.fusion and self.fusion.kind != "rrf")
        ):
            raise InputError(
                f"client-rrf fuses by RRF only; pass RRF(rank_constant, weights), or technique client to fuse "
                f"{self.policy.name if self.policy else self.fusion.name if self.fusion else ''} in the client"
            )

    @property
    def wanted(self) -> int:
        """The hits up to the end of the page."""
        return self.from_ + self.k

    @property
    def post(self) -> bool:
        """Rerank or MMR reorders the first stage's hits."""
        return self.rerank_top is not None or self.mmr_lambda is not None

    @property
    def first_stage(self) -> int:
        """The hits the first stage must bring: the page, the rerank window, the MMR candidates."""
        mmr = (self.mmr_candidates or 3 * self.wanted) if self.mmr_lambda is not None else 0
        return max(self.wanted, self.rerank_top or 0, mmr)

    @property
    def needs_vector(self) -> bool:
        return self.technique is not Technique.BM25 or self.mmr_lambda is not None


@dataclass(frozen=True)
class Shape:
    """The sizes of one search on one index: candidates per leg and the first stage's page."""

    depth: int  # candidates per leg
    page_from: int
    page_size: int

    @classmethod
    def of(cls, request: SearchRequest, *, default_depth: int, max_window: int, has_reranker: bool) -> Shape:
        limit = min(max_window, KNN_MAX_K)
        if request.wanted > limit:
            raise InputError(
                f"from + k = {request.wanted} exceeds the cluster's limit of {limit} (index.max_result_window / k-NN k)"
            )
        if request.rerank_top is not None and not has_reranker:
            raise InputError("rerank was asked for but the searcher has no reranker")
        depth = max(request.depth or default_depth, request.first_stage)
        if depth > KNN_MAX_K:
            raise InputError(f"candidate depth {depth} exceeds the k-NN limit of {KNN_MAX_K}")
        page_from, page_size = (0, request.first_stage) if request.post else (request.from_, request.k)
        return cls(depth, page_from, page_size)
