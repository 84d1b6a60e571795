"""What a cluster can do for hybrid search: the one place that knows which fusions exist where. Pure.

The engine probes the cluster (:meth:`adapter.engines.Engine.probe`) and derives these flags from
the version and plugins it finds. For OpenSearch they follow the neural-search releases: the
``hybrid`` query and ``normalization-processor`` 2.10; RRF (``score-ranker-processor``),
``hybrid_score_explanation`` and ``pagination_depth`` 2.19; ``z_score`` 3.0; RRF weights 3.1.
Native k-NN engines (faiss, nmslib) are assumed present unless a node says otherwise with the
``knn_native: false`` attribute (``hybrid local up`` sets it: the Maven k-NN zip has no native
libraries).

For Elasticsearch there are no search pipelines: fusion is part of the request. The ``rrf`` (8.14+)
and ``linear`` (8.18+; min_max, and l2 from 8.19/9.1) retrievers need the ``rank-rrf`` module *and*
an Enterprise or trial licence; every 8.4+ cluster runs the free-tier ``query`` + ``knn`` request
whose scores are summed with boosts (:class:`~adapter.fusions.ScoreSum`, not normalised).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from dataclasses import replace

from .fusions import DEFAULT_RANK_CONSTANT, RRF, Combination, Fusion, Normalization, ScoreNormalization, ScoreSum

# Elasticsearch licences under which rank-rrf's retrievers run (RRF was Platinum before 8.17).
RETRIEVER_LICENSES = ("enterprise", "trial")
ANALYSIS_MODULE = "analysis-common"
RANK_MODULE = "rank-rrf"


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
    search_pipelines: bool = True  # fusion runs in a search pipeline (OpenSearch), else in the request (Elasticsearch)
    score_sum: bool = False  # Elasticsearch: query + knn in one request, raw scores summed with boosts
    license: str | None = None  # Elasticsearch: the licence type (basic, trial, enterprise...); None: unknown
    analysis_common: bool = True  # language analyzers, asciifolding, stemmers (absent from Elasticsearch's integ-test zip)
    hunspell: tuple[str, ...] = ()  # Hunspell dictionaries every node has (node attribute `hunspell`)

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

    @classmethod
    def elasticsearch(cls, version: str, *, modules: Iterable[str] | None = None, license: str | None = None,
                      hunspell: Iterable[str] = ()) -> Capabilities:
        """An Elasticsearch ``version`` with these ``modules`` and plugins (None: unknown, a standard
        distribution is assumed) under ``license`` (None: unknown; retrievers are tried, and a
        refusal is turned into the fallback by the searcher)."""
        v = version_tuple(version)
        names = set(modules) if modules is not None else {RANK_MODULE, ANALYSIS_MODULE}
        retrievers = RANK_MODULE in names and (license is None or license in RETRIEVER_LICENSES)
        return cls(
            version=version,
            distribution="elasticsearch",
            plugins=tuple(sorted(p for p in names if p)),
            hybrid=True,
            normalization=retrievers and v >= (8, 18, 0),  # the linear retriever
            rrf=retrievers and v >= (8, 14, 0),
            rrf_weights=retrievers and v >= (9, 3, 0),
            z_score=False,
            explanation=False,
            pagination_depth=False,
            native_engines=False,  # Lucene HNSW only: no faiss or nmslib
            engine="elasticsearch",
            search_pipelines=False,
            score_sum=v >= (8, 4, 0),
            license=license,
            analysis_common=ANALYSIS_MODULE in names,
            hunspell=tuple(sorted(set(hunspell))),
        )

    def normalizations(self) -> tuple[Normalization, ...]:
        if self.engine == "elasticsearch":  # the linear retriever's normalizers: minmax; l2_norm from 8.19 / 9.1
            v = version_tuple(self.version)
            l2 = v >= (9, 1, 0) or (8, 19, 0) <= v < (9, 0, 0)
            return (Normalization.MIN_MAX, Normalization.L2) if l2 else (Normalization.MIN_MAX,)
        norms = [Normalization.MIN_MAX, Normalization.L2]
        if self.z_score:
            norms.append(Normalization.Z_SCORE)
        return tuple(norms)

    def combinations(self) -> tuple[Combination, ...]:
        """Elasticsearch's linear retriever sums weighted scores: the arithmetic mean only."""
        return (Combination.ARITHMETIC_MEAN,) if self.engine == "elasticsearch" else tuple(Combination)

    def without(self, fusion: Fusion) -> Capabilities:
        """These capabilities less the server-side way of running ``fusion`` (after the cluster
        refused it: an unknown retriever, a licence that does not cover it)."""
        if isinstance(fusion, RRF):
            return replace(self, rrf=False, rrf_weights=False)
        if isinstance(fusion, ScoreSum):
            return replace(self, score_sum=False)
        return replace(self, normalization=False)

    def fusions(self, weights: tuple[float, ...] | None = None, *, rank_constants: Iterable[int] = (DEFAULT_RANK_CONSTANT,)) -> list[Fusion]:
        """Every server-side fusion this cluster runs: each normalisation x combination the server
        allows (with ``weights``), then RRF with each of ``rank_constants``, then (Elasticsearch) the
        score sum with ``weights`` as boosts."""
        out: list[Fusion] = []
        if self.normalization:
            for norm in self.normalizations():
                for comb in self.combinations():
                    if norm is Normalization.Z_SCORE and comb is not Combination.ARITHMETIC_MEAN:
                        continue
                    out.append(ScoreNormalization(norm, comb, weights))
        if self.rrf:
            out += [RRF(rc) for rc in rank_constants]
        if self.score_sum:
            out.append(ScoreSum(weights))
        return out

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why."""
        if isinstance(fusion, ScoreSum):
            if self.score_sum:
                return True, ""
            if self.engine == "elasticsearch":
                return False, f"the query + knn score sum needs Elasticsearch 8.4+, the cluster runs {self.version}"
            return False, ("the score sum is Elasticsearch's query + knn request; OpenSearch fuses in a search pipeline "
                           "(min_max, l2, z_score or RRF)")
        if self.engine == "elasticsearch":
            return self._retriever_supports(fusion)
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

    def _retriever_gap(self) -> str:
        """Why rank-rrf's retrievers do not run here (Elasticsearch)."""
        gaps = []
        if RANK_MODULE not in self.plugins:
            gaps.append("it has no rank-rrf module (the integ-test distribution has none)")
        if self.license is not None and self.license not in RETRIEVER_LICENSES:
            gaps.append(f"its licence is {self.license}")
        return " and ".join(gaps) or "it refused the retriever"

    def _retriever_supports(self, fusion: Fusion) -> tuple[bool, str]:
        v = version_tuple(self.version)
        if isinstance(fusion, RRF):
            if not self.rrf:
                return False, (f"the rrf retriever needs the rank-rrf module and an Enterprise or trial licence; this cluster "
                               f"(Elasticsearch {self.version}) lacks them: {self._retriever_gap()}")
            if fusion.weights is not None and not self.rrf_weights:
                return False, f"RRF weights need Elasticsearch 9.3+, the cluster runs {self.version}"
            return True, ""
        if fusion.technique is Normalization.Z_SCORE or fusion.combination is not Combination.ARITHMETIC_MEAN:
            return False, (f"Elasticsearch's linear retriever sums weighted min_max or l2 scores (the arithmetic mean); "
                           f"{fusion.name} is OpenSearch's")
        if not self.normalization:
            why = "Elasticsearch 8.18+" if v < (8, 18, 0) else f"the rank-rrf module and an Enterprise or trial licence: {self._retriever_gap()}"
            return False, f"{fusion.name} runs in the linear retriever, which needs {why} (cluster: Elasticsearch {self.version})"
        if fusion.technique not in self.normalizations():
            return False, f"the linear retriever's l2_norm normalizer needs Elasticsearch 8.19 or 9.1+, the cluster runs {self.version}"
        return True, ""
