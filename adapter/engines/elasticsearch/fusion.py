"""Elasticsearch's fusion renderers: a fusion as the part of the search request that runs it. Pure.

Elasticsearch has no search pipelines: the request fuses. :class:`~adapter.fusion.rrf.RRF` is the
``rrf`` retriever (8.14+; weights 9.3+) and :class:`~adapter.fusion.normalization.ScoreNormalization`
the ``linear`` retriever (8.18+; min_max, l2 from 8.19 / 9.1; the arithmetic mean only), both from
the ``rank-rrf`` module under an Enterprise or trial licence; :class:`~adapter.fusion.score_sum.ScoreSum`
is ``query`` + ``knn`` with boosts (8.4+, every licence), which a normalisation falls back to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol, Sequence

from adapter.engines.capabilities import Capabilities, version_tuple
from adapter.engines.elasticsearch.capabilities import RANK_MODULE, RETRIEVER_LICENSES, ElasticsearchCapabilities
from adapter.engines.placement import InRequest
from adapter.engines.render import Renderers, ServerFusion
from adapter.errors import CapabilityError
from adapter.fusion.base import LEGS, FusedBy, Fusion
from adapter.fusion.normalization import Combination, Normalization, ScoreNormalization
from adapter.fusion.rrf import RRF
from adapter.fusion.score_sum import ScoreSum

NORMALIZERS = {Normalization.MIN_MAX: "minmax", Normalization.L2: "l2_norm"}


class RequestFusion(ServerFusion, Protocol):
    """A fusion as the fusing part of one search request."""

    def body(self, text: dict[str, Any], vector: dict[str, Any], *, depth: int) -> dict[str, Any]:
        """The request's ``retriever`` (or ``query`` + ``knn``) for the two legs: ``text`` a query,
        ``vector`` the ``knn`` section's body; each leg brings its top ``depth``."""
        ...


RENDERERS: Renderers[RequestFusion] = Renderers("elasticsearch")


def _components(text: dict[str, Any], vector: dict[str, Any], weights: Sequence[float] | None) -> list[dict[str, Any]]:
    """The two legs as retrievers (``standard``, ``knn``), wrapped with their weights when given."""
    legs: list[dict[str, Any]] = [{"standard": {"query": text}}, {"knn": vector}]
    if weights is None:
        return legs
    return [{"retriever": leg, "weight": float(w)} for leg, w in zip(legs, weights)]


def _retriever_gap(caps: Capabilities) -> str:
    """Why rank-rrf's retrievers do not run here."""
    gaps = []
    if RANK_MODULE not in caps.plugins:
        gaps.append("it has no rank-rrf module (the integ-test distribution has none)")
    licence = caps.license if isinstance(caps, ElasticsearchCapabilities) else None
    if licence is not None and licence not in RETRIEVER_LICENSES:
        gaps.append(f"its licence is {licence}")
    return " and ".join(gaps) or "it refused the retriever"


def _l2_normalizer(caps: Capabilities) -> bool:
    v = version_tuple(caps.version)
    return v >= (9, 1, 0) or (8, 19, 0) <= v < (9, 0, 0)


@dataclass(frozen=True)
class RRFRetriever:
    fusion: RRF
    fused_by: FusedBy = FusedBy.SERVER_RETRIEVER

    def supports(self, caps: Capabilities) -> str | None:
        if not caps.rrf:
            return (
                f"the rrf retriever needs the rank-rrf module and an Enterprise or trial licence; this cluster "
                f"(Elasticsearch {caps.version}) lacks them: {_retriever_gap(caps)}"
            )
        if self.fusion.weights is not None and not caps.rrf_weights:
            return f"RRF weights need Elasticsearch 9.3+, the cluster runs {caps.version}"
        return None

    def without(self, caps: Capabilities) -> Capabilities:
        return replace(caps, rrf=False, rrf_weights=False)

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        return None

    def body(self, text: dict[str, Any], vector: dict[str, Any], *, depth: int) -> dict[str, Any]:
        rrf = {
            "retrievers": _components(text, vector, self.fusion.weights),
            "rank_window_size": int(depth),
            "rank_constant": self.fusion.rank_constant,
        }
        return {"retriever": {"rrf": rrf}}


@dataclass(frozen=True)
class LinearRetriever:
    fusion: ScoreNormalization
    fused_by: FusedBy = FusedBy.SERVER_RETRIEVER

    def supports(self, caps: Capabilities) -> str | None:
        fusion = self.fusion
        if fusion.technique is Normalization.Z_SCORE or fusion.combination is not Combination.ARITHMETIC_MEAN:
            return (
                f"Elasticsearch's linear retriever sums weighted min_max or l2 scores (the arithmetic mean); "
                f"{fusion.name} is OpenSearch's"
            )
        if not caps.normalization:
            why = (
                "Elasticsearch 8.18+"
                if version_tuple(caps.version) < (8, 18, 0)
                else f"the rank-rrf module and an Enterprise or trial licence: {_retriever_gap(caps)}"
            )
            return (
                f"{fusion.name} runs in the linear retriever, which needs {why} (cluster: Elasticsearch {caps.version})"
            )
        if fusion.technique is Normalization.L2 and not _l2_normalizer(caps):
            return (
                f"the linear retriever's l2_norm normalizer needs Elasticsearch 8.19 or 9.1+, "
                f"the cluster runs {caps.version}"
            )
        return None

    def without(self, caps: Capabilities) -> Capabilities:
        return replace(caps, normalization=False)

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        return None

    def body(self, text: dict[str, Any], vector: dict[str, Any], *, depth: int) -> dict[str, Any]:
        normalizer = NORMALIZERS[self.fusion.technique]
        legs = [{**c, "normalizer": normalizer} for c in _components(text, vector, self.fusion.effective_weights)]
        return {"retriever": {"linear": {"retrievers": legs, "rank_window_size": int(depth)}}}


@dataclass(frozen=True)
class SumRequest:
    fusion: ScoreSum
    fused_by: FusedBy = FusedBy.SERVER_SUM

    def supports(self, caps: Capabilities) -> str | None:
        if isinstance(caps, ElasticsearchCapabilities) and caps.score_sum:
            return None
        return f"the query + knn score sum needs Elasticsearch 8.4+, the cluster runs {caps.version}"

    def without(self, caps: Capabilities) -> Capabilities:
        return replace(caps, score_sum=False) if isinstance(caps, ElasticsearchCapabilities) else caps

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        return None

    def body(self, text: dict[str, Any], vector: dict[str, Any], *, depth: int) -> dict[str, Any]:
        w_text, w_dense = self.fusion.effective_weights
        return {
            "query": {"bool": {"should": [text], "boost": w_text, "_name": LEGS[0]}},
            "knn": {**vector, "boost": w_dense, "_name": LEGS[1]},
        }


RENDERERS.register(RRF, RRFRetriever)
RENDERERS.register(ScoreNormalization, LinearRetriever)
RENDERERS.register(ScoreSum, SumRequest)


class InElasticsearchRequest(InRequest):
    """Elasticsearch's placement: the request fuses (a retriever, the summed query), else the client."""

    def notes(self, caps: Capabilities) -> list[str]:
        licence = (caps.license if isinstance(caps, ElasticsearchCapabilities) else None) or "unknown"
        return [
            f"{caps.engine} {caps.version} has no search pipelines: the fusion goes inside each request, as an rrf or "
            f"linear retriever where the licence allows it (this one: {licence}), else the legs are fused in the "
            "client.",
            "Score sum (fusion 'sum') is Elasticsearch's free query + knn request: raw scores times the weights, not "
            "normalised.",
        ]


IN_ELASTICSEARCH_REQUEST = InElasticsearchRequest()


def request_fusion(fusion: Fusion) -> RequestFusion:
    """The request part that runs ``fusion`` (CapabilityError: none does)."""
    found = RENDERERS.get(fusion)
    if found is None:
        raise CapabilityError(f"no Elasticsearch request fuses {fusion.name}; it is fused in the client")
    return found
