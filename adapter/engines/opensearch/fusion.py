"""OpenSearch's fusion renderers: a fusion as the search-pipeline processor that runs it. Pure.

neural-search fuses in a search pipeline's ``phase_results_processors`` (or, where the cluster has
in-query fusion, in ``hybrid.fusion`` with the processor's own body): ``normalization-processor``
for :class:`~adapter.fusion.normalization.ScoreNormalization` (2.10+; z_score 3.0+) and
``score-ranker-processor`` for :class:`~adapter.fusion.rrf.RRF` (2.19+; weights 3.1+). The
processor templates are the assets ``pipelines/normalization.json`` and ``pipelines/rrf.json``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Protocol, Sequence

from adapter.engines.capabilities import Capabilities, version_tuple
from adapter.engines.opensearch.capabilities import OpenSearchCapabilities
from adapter.engines.render import Renderers, ServerFusion
from adapter.errors import CapabilityError, InputError
from adapter.fusion.base import FusedBy, Fusion
from adapter.fusion.normalization import Combination, Normalization, ScoreNormalization
from adapter.fusion.rrf import DEFAULT_RANK_CONSTANT, RRF

# neural-search 3.1 reads rank_constant from combination, no longer from its parameters
RRF_PARAMETERS_MOVED = (3, 1, 0)


class PipelineStep(ServerFusion, Protocol):
    """A fusion as a ``phase_results_processors`` entry."""

    @property
    def asset(self) -> str:
        """The pipeline asset (``pipelines/<asset>.json``) whose processor this fills."""
        ...

    def processor(self, template: Mapping[str, Any] | None, caps: Capabilities | None) -> dict[str, Any]:
        """The processor entry, filled into ``template`` (the asset's) if given, for the cluster
        ``caps`` describes (None: the current release)."""
        ...


RENDERERS: Renderers[PipelineStep] = Renderers("opensearch")


def _no_hybrid(caps: Capabilities) -> str | None:
    if not caps.hybrid:
        return f"the cluster ({caps.engine} {caps.version}) has no neural-search plugin with the hybrid query"
    return None


@dataclass(frozen=True)
class NormalizationStep:
    """``normalization-processor``: a normalisation technique, a combination, weights."""

    fusion: ScoreNormalization
    asset: str = "normalization"
    fused_by: FusedBy = FusedBy.SERVER_PIPELINE

    def supports(self, caps: Capabilities) -> str | None:
        if not caps.normalization:
            return _no_hybrid(caps) or f"the cluster ({caps.version}) has no normalization-processor"
        if self.fusion.technique is Normalization.Z_SCORE and not caps.z_score:
            return f"z_score normalisation needs OpenSearch 3.0+, the cluster runs {caps.version}"
        return None

    def without(self, caps: Capabilities) -> Capabilities:
        return replace(caps, normalization=False)

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        return None

    def processor(self, template: Mapping[str, Any] | None, caps: Capabilities | None) -> dict[str, Any]:
        proc = copy.deepcopy(dict(template or {"normalization-processor": {}}))
        body = proc.setdefault("normalization-processor", {})
        body.setdefault("normalization", {})["technique"] = self.fusion.technique.value
        combination = body.setdefault("combination", {})
        combination["technique"] = self.fusion.combination.value
        combination["parameters"] = {
            **combination.get("parameters", {}),
            "weights": list(self.fusion.effective_weights),
        }
        return proc


@dataclass(frozen=True)
class RRFStep:
    """``score-ranker-processor``: RRF with a rank constant and, from 3.1, weights."""

    fusion: RRF
    asset: str = "rrf"
    fused_by: FusedBy = FusedBy.SERVER_PIPELINE

    def supports(self, caps: Capabilities) -> str | None:
        if not caps.rrf:
            return (
                _no_hybrid(caps)
                or f"RRF (score-ranker-processor) needs OpenSearch 2.19+, the cluster runs {caps.version}"
            )
        if self.fusion.weights is not None and not caps.rrf_weights:
            return f"RRF weights need OpenSearch 3.1+, the cluster runs {caps.version}"
        return None

    def without(self, caps: Capabilities) -> Capabilities:
        return replace(caps, rrf=False, rrf_weights=False)

    def caveat(self, caps: Capabilities, shards: int) -> str | None:
        if (isinstance(caps, OpenSearchCapabilities) and caps.rrf_global_ranks) or shards <= 1:
            return None
        return (
            f"RRF on {caps.engine} {caps.version} ranks each leg's hits within each of this index's {shards} shards, "
            "not across them (fixed in 3.5): on SciFact with 3 shards that cost 0.045 nDCG@10 (docs/BENCHMARKS.md); "
            "client-side RRF or a score normalisation ranks across shards"
        )

    def processor(self, template: Mapping[str, Any] | None, caps: Capabilities | None) -> dict[str, Any]:
        """Before 3.1 neural-search reads the rank constant from ``combination.parameters.rank_constant``
        and silently ignores ``combination.rank_constant`` (3.1 moved it, and accepts only weights under
        ``parameters``)."""
        legacy = caps is not None and version_tuple(caps.version) < RRF_PARAMETERS_MOVED
        proc = copy.deepcopy(dict(template or {"score-ranker-processor": {}}))
        combination = proc.setdefault("score-ranker-processor", {}).setdefault("combination", {})
        combination["technique"] = "rrf"
        combination.pop("rank_constant", None)
        combination.pop("parameters", None)
        if legacy:
            if self.fusion.weights is not None:
                raise InputError("RRF weights need OpenSearch 3.1+")
            combination["parameters"] = {"rank_constant": self.fusion.rank_constant}
        else:
            combination["rank_constant"] = self.fusion.rank_constant
            if self.fusion.weights is not None:
                combination["parameters"] = {"weights": list(self.fusion.weights)}
        return proc


RENDERERS.register(ScoreNormalization, NormalizationStep)
RENDERERS.register(RRF, RRFStep)


def _weights(params: Mapping[str, Any]) -> tuple[float, ...] | None:
    weights = params.get("weights")
    return tuple(weights) if weights else None


def _read_normalization(proc: Mapping[str, Any]) -> Fusion | None:
    p = proc.get("normalization-processor")
    if p is None:
        return None
    combination = p.get("combination") or {}
    return ScoreNormalization(
        (p.get("normalization") or {}).get("technique", Normalization.MIN_MAX),
        combination.get("technique", Combination.ARITHMETIC_MEAN),
        _weights(combination.get("parameters") or {}),
    )


def _read_rrf(proc: Mapping[str, Any]) -> Fusion | None:
    if "score-ranker-processor" not in proc:
        return None
    c = proc["score-ranker-processor"].get("combination", {})
    params = c.get("parameters") or {}
    constant = params.get("rank_constant", c.get("rank_constant", DEFAULT_RANK_CONSTANT))  # before / from 3.1
    return RRF(int(constant), _weights(params))


READERS: tuple[Callable[[Mapping[str, Any]], Fusion | None], ...] = (_read_normalization, _read_rrf)


def fusion_from_processors(processors: Sequence[Mapping[str, Any]]) -> Fusion | None:
    """The fusion a pipeline's ``phase_results_processors`` perform (None: not a hybrid fusion)."""
    for proc in processors or []:
        for read in READERS:
            fusion = read(proc)
            if fusion is not None:
                return fusion
    return None


def step(fusion: Fusion) -> PipelineStep:
    """The processor that runs ``fusion`` (CapabilityError: none does)."""
    found = RENDERERS.get(fusion)
    if found is None:
        raise CapabilityError(f"{fusion.name} has no OpenSearch search-pipeline processor; it is fused in the client")
    return found
