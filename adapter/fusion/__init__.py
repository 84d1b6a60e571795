"""Fusion: how the two legs of a hybrid search become one list. Pure.

One module per method, each a frozen dataclass deriving :class:`~adapter.fusion.base.Fusion` that
carries its validated parameters, its name (``rrf``, ``rrf-40``, ``min_max-arithmetic_mean``,
``sum``, ``dbsf``) and its client-side :meth:`~adapter.fusion.base.Fusion.fuse`, computed as the
server it mirrors computes it (float32, and rounding where the server rounds):

- :mod:`.rrf` — Reciprocal Rank Fusion (``score-ranker-processor``; Elasticsearch's ``rrf`` retriever);
- :mod:`.normalization` — score normalisation + combination (``normalization-processor``; the
  ``linear`` retriever);
- :mod:`.score_sum` — Elasticsearch's ``query`` + ``knn`` request: raw scores times boosts, summed;
- :mod:`.dbsf` — distribution-based score fusion (Qdrant's): client-side only.

A method names no search engine: an engine that runs it server-side registers a renderer for it
(:mod:`adapter.engines.render`): OpenSearch as a search-pipeline processor or in-query fusion,
Elasticsearch as a retriever or the summed request. Everywhere else the searcher fetches both legs
and fuses them here, with a notice. Whether one cluster (its version, plugins,
licence) runs a fusion: :meth:`adapter.engines.capabilities.Capabilities.supports`.

Adding a method: one module here (a frozen dataclass deriving ``Fusion`` with ``kind``,
``spellings``, ``name``, ``parse`` and ``fuse``) and its unit tests, whose expected scores are the arithmetic written
out. The package imports every module of its own, so ``parse_fusion``, ``hybrid search --fusion`` and ``hybrid eval`` (a
``client-<name>`` row for each client-only method) know it with no other edit. To run it on a
server too, register a renderer in that engine's ``adapter.engines.<engine>.fusion`` module.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Sequence, overload

from adapter.errors import InputError
from adapter.fusion.base import DEFAULT_WEIGHTS, LEGS, FusedDoc, Fusion, Run, methods, parse_weights
from adapter.fusion.compare import same_ranking_up_to_ties
from adapter.fusion.normalization import (
    Combination,
    Normalization,
    ScoreNormalization,
    combine,
    contributions,
    fuse_normalized,
    normalize,
)
from adapter.fusion.rrf import DEFAULT_RANK_CONSTANT, RRF, rrf, rrf_term
from adapter.fusion.score_sum import ScoreSum, score_sum

# Every module of the package, so that each method registers itself (a new module needs no edit here).
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

DEFAULT_FUSION: Fusion = ScoreNormalization()

__all__ = [
    "DEFAULT_FUSION",
    "DEFAULT_RANK_CONSTANT",
    "DEFAULT_WEIGHTS",
    "LEGS",
    "RRF",
    "Combination",
    "FusedDoc",
    "Fusion",
    "Normalization",
    "Run",
    "ScoreNormalization",
    "ScoreSum",
    "combine",
    "contributions",
    "fuse",
    "fuse_normalized",
    "methods",
    "normalize",
    "parse_fusion",
    "parse_weights",
    "rrf",
    "rrf_term",
    "same_ranking_up_to_ties",
    "score_sum",
]


@overload
def parse_fusion(
    text: str, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
) -> Fusion: ...


@overload
def parse_fusion(
    text: str | None, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
) -> Fusion | None: ...


def parse_fusion(
    text: str | None, *, weights: tuple[float, ...] | None = None, rank_constant: int | None = None
) -> Fusion | None:
    """A fusion from its short name plus optional weights / rank constant (the CLI's flags).

    ``None`` when nothing was asked for. A rank constant alone means RRF; weights alone mean the
    default normalisation with those weights. A parameter the named method does not take is an
    error, never silently dropped.
    """
    if text is None and weights is None and rank_constant is None:
        return None
    name = (text or ("rrf" if rank_constant is not None else DEFAULT_FUSION.name)).strip().lower()
    for method in methods():
        fusion = method.parse(name, weights=weights, rank_constant=rank_constant)
        if fusion is not None:
            return fusion
    choices = ", ".join(spelling for method in methods() for spelling in method.spellings)
    raise InputError(f"unknown fusion {text!r}; expected one of: {choices}")


def fuse(runs: Sequence[Run], fusion: Fusion, *, leg_names: Sequence[str] = LEGS) -> list[FusedDoc]:
    """Fuse ``runs`` as the server would run ``fusion`` (weights default as the server's do)."""
    return fusion.fuse(runs, leg_names=leg_names)
