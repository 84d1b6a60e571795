"""What a cluster can do for hybrid search: the one place that knows which fusions exist where. Pure.

The engine probes the cluster (:meth:`adapter.engines.Engine.probe`) and derives these flags from
the version and plugins it finds. For OpenSearch they follow the neural-search releases: the
``hybrid`` query and ``normalization-processor`` 2.10; RRF (``score-ranker-processor``),
``hybrid_score_explanation`` and ``pagination_depth`` 2.19; ``z_score`` 3.0; RRF weights 3.1.
Native k-NN engines (faiss, nmslib) are assumed present unless a node says otherwise with the
``knn_native: false`` attribute (``hybrid local up`` sets it: the Maven k-NN zip has no native
libraries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .fusions import DEFAULT_RANK_CONSTANT, RRF, Combination, Fusion, Normalization, ScoreNormalization


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.19.1"`` -> ``(2, 19, 1)``; suffixes such as ``-SNAPSHOT`` are ignored."""
    parts = []
    for piece in str(version).split("-")[0].split(".")[:3]:
        parts.append(int(piece) if piece.isdigit() else 0)
    return tuple(parts + [0] * (3 - len(parts)))


@dataclass(frozen=True)
class Capabilities:
    version: str
    distribution: str
    plugins: tuple[str, ...]
    hybrid: bool
    normalization: bool
    rrf: bool
    rrf_weights: bool
    z_score: bool
    explanation: bool
    pagination_depth: bool
    native_engines: bool
    serverless: bool = False
    engine: str = "opensearch"
    # BM25 scores carry the legacy (1 + k1) factor: OpenSearch before 3.0 (LegacyBM25Similarity by
    # default). 3.x scores with Lucene's BM25, about 2.2x lower for the same match.
    legacy_bm25: bool = False

    @classmethod
    def opensearch(cls, version: str, *, neural_search: bool = True, native_engines: bool = True,
                   plugins: Iterable[str] = (), distribution: str = "opensearch") -> Capabilities:
        """The feature set of an OpenSearch ``version`` (with or without neural-search)."""
        v = version_tuple(version)
        return cls(
            version=version,
            distribution=distribution,
            plugins=tuple(sorted(p for p in plugins if p)),
            hybrid=neural_search and v >= (2, 10, 0),
            normalization=neural_search and v >= (2, 10, 0),
            rrf=neural_search and v >= (2, 19, 0),
            rrf_weights=neural_search and v >= (3, 1, 0),
            z_score=neural_search and v >= (3, 0, 0),
            explanation=neural_search and v >= (2, 19, 0),
            pagination_depth=neural_search and v >= (2, 19, 0),
            native_engines=native_engines,
            legacy_bm25=v < (3, 0, 0),
        )

    @classmethod
    def serverless_collection(cls, distribution: str = "opensearch") -> Capabilities:
        """Amazon OpenSearch Serverless: no version, nodes or plugins to read. AWS documents hybrid
        search with ``normalization-processor`` (min_max, l2; the three means), not RRF or z_score.
        ``pagination_depth`` is sent as to a managed cluster, so scores and order match it; where a
        collection rejects it, the searcher drops it and says so (``SearchResult.notices``)."""
        return cls(version="serverless", distribution=distribution, plugins=(), hybrid=True, normalization=True, rrf=False,
                   rrf_weights=False, z_score=False, explanation=False, pagination_depth=True, native_engines=True,
                   serverless=True)

    def normalizations(self) -> tuple[Normalization, ...]:
        norms = [Normalization.MIN_MAX, Normalization.L2]
        if self.z_score:
            norms.append(Normalization.Z_SCORE)
        return tuple(norms)

    def fusions(self, weights: tuple[float, ...] | None = None, *, rank_constants: Iterable[int] = (DEFAULT_RANK_CONSTANT,)) -> list[Fusion]:
        """Every server-side fusion this cluster runs: each normalisation x combination the server
        allows (with ``weights``), then RRF with each of ``rank_constants``."""
        if not self.normalization:
            return []
        out: list[Fusion] = []
        for norm in self.normalizations():
            for comb in Combination:
                if norm is Normalization.Z_SCORE and comb is not Combination.ARITHMETIC_MEAN:
                    continue
                out.append(ScoreNormalization(norm, comb, weights))
        if self.rrf:
            out += [RRF(rc) for rc in rank_constants]
        return out

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why."""
        if not self.hybrid:
            return False, f"the cluster ({self.engine} {self.version}) has no neural-search plugin with the hybrid query"
        if isinstance(fusion, RRF):
            if not self.rrf:
                return False, f"RRF (score-ranker-processor) needs OpenSearch 2.19+, the cluster runs {self.version}"
            if fusion.weights is not None and not self.rrf_weights:
                return False, f"RRF weights need OpenSearch 3.1+, the cluster runs {self.version}"
            return True, ""
        if fusion.technique is Normalization.Z_SCORE and not self.z_score:
            return False, f"z_score normalisation needs OpenSearch 3.0+, the cluster runs {self.version}"
        return True, ""
