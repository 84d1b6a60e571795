"""Elasticsearch's capabilities: the retrievers, the licences, the ``query`` + ``knn`` sum, read from a probe. Pure.

Elasticsearch has no search pipelines: fusion is part of the request. The ``rrf`` (8.14+) and
``linear`` (8.18+; min_max, and l2 from 8.19/9.1) retrievers need the ``rank-rrf`` module *and* an
Enterprise or trial licence; every 8.4+ cluster runs the free-tier ``query`` + ``knn`` request
whose scores are summed with boosts (not normalised). Which fusions run, and why not: the renderers in
:mod:`adapter.engines.elasticsearch.fusion`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from adapter.engines.capabilities import Capabilities, EngineName, version_tuple

# Elasticsearch licences under which rank-rrf's retrievers run (RRF was Platinum before 8.17).
RETRIEVER_LICENSES = ("enterprise", "trial")
ANALYSIS_MODULE = "analysis-common"
RANK_MODULE = "rank-rrf"


@dataclass(frozen=True)
class ElasticsearchCapabilities(Capabilities):
    """What only Elasticsearch's own code reads, beside the shared flags."""

    score_sum: bool = False  # query + knn in one request, raw scores summed with boosts (8.4+)
    license: str | None = None  # the licence type (basic, trial, enterprise...); None: unknown


def elasticsearch_capabilities(
    version: str, *, modules: Iterable[str] | None = None, license: str | None = None, hunspell: Iterable[str] = ()
) -> ElasticsearchCapabilities:
    """An Elasticsearch ``version`` with these ``modules`` and plugins (None: unknown, a standard
    distribution is assumed) under ``license`` (None: unknown; retrievers are tried, and a
    refusal is turned into the fallback by the searcher)."""
    v = version_tuple(version)
    names = set(modules) if modules is not None else {RANK_MODULE, ANALYSIS_MODULE}
    retrievers = RANK_MODULE in names and (license is None or license in RETRIEVER_LICENSES)
    return ElasticsearchCapabilities(
        version=version,
        distribution="elasticsearch",
        plugins=tuple(sorted(p for p in names if p)),
        hybrid=True,
        normalization=retrievers and v >= (8, 18, 0),  # the linear retriever
        rrf=retrievers and v >= (8, 14, 0),
        rrf_weights=retrievers and v >= (9, 3, 0),
        engine=EngineName.ELASTICSEARCH,
        score_sum=v >= (8, 4, 0),
        license=license,
        analysis_common=ANALYSIS_MODULE in names,
        hunspell=tuple(sorted(set(hunspell))),
    )


def capabilities_from(
    nodes: Mapping[str, Any] | None, license: Mapping[str, Any] | None, version: str | None = None
) -> ElasticsearchCapabilities:
    """Capabilities from ``GET _nodes/plugins`` and ``GET _license`` (None where the cluster hides them:
    then ``version`` comes from elsewhere and a standard distribution is assumed)."""
    lic = (license or {}).get("license") or {}
    kind = lic.get("type") if lic.get("status", "active") == "active" else "expired"
    if nodes is None:
        return elasticsearch_capabilities(version or "0", license=kind if license is not None else None)
    node_list = list((nodes.get("nodes") or {}).values())
    versions = sorted({n.get("version", "0") for n in node_list}, key=version_tuple)
    modules = [{m.get("name") for m in n.get("modules", []) + n.get("plugins", [])} for n in node_list]
    hunspell = [set(filter(None, str((n.get("attributes") or {}).get("hunspell", "")).split(","))) for n in node_list]
    return elasticsearch_capabilities(
        versions[0] if versions else (version or "0"),
        modules=set.intersection(*modules) if modules else set(),
        license=kind if license is not None else None,
        hunspell=set.intersection(*hunspell) if hunspell else set(),
    )
