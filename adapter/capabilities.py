"""What a cluster can do for hybrid search, probed once per cluster and cached.

The version comes from ``_nodes`` (the real one) rather than ``GET /``, which reports 7.10.2 when
``compatibility.override_main_response_version`` is on. Feature availability follows the
neural-search releases: ``hybrid`` query and ``normalization-processor`` 2.10, RRF
(``score-ranker-processor``), ``hybrid_score_explanation`` and ``pagination_depth`` 2.19,
``z_score`` 3.0, RRF weights 3.1. Native k-NN engines (faiss, nmslib) are assumed present unless
a node says otherwise with the ``knn_native: false`` attribute (``hybrid local up`` sets it: the
Maven k-NN zip carries no native libraries).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Mapping

from .client import translate_errors
from .types import Combination, Fusion, Normalization


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("-")[0].split(".")[:3]:
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

    def normalizations(self) -> tuple[Normalization, ...]:
        norms = [Normalization.MIN_MAX, Normalization.L2]
        if self.z_score:
            norms.append(Normalization.Z_SCORE)
        return tuple(norms)

    def fusions(self, weights: tuple[float, ...] | None = None) -> list[Fusion]:
        """Every server-side fusion this cluster supports (z_score only with arithmetic mean)."""
        if not self.normalization:
            return []
        out = []
        for norm in self.normalizations():
            for comb in Combination:
                if norm is Normalization.Z_SCORE and comb is not Combination.ARITHMETIC_MEAN:
                    continue
                out.append(Fusion(normalization=norm, combination=comb, weights=weights))
        if self.rrf:
            out.append(Fusion.rrf())
        return out

    def supports(self, fusion: Fusion) -> tuple[bool, str]:
        """Whether the server can run ``fusion``, and if not, why."""
        if not self.hybrid:
            return False, f"the cluster (OpenSearch {self.version}) has no neural-search plugin with the hybrid query"
        if fusion.kind == "rrf":
            if not self.rrf:
                return False, f"RRF (score-ranker-processor) needs OpenSearch 2.19+, the cluster runs {self.version}"
            if fusion.weights is not None and not self.rrf_weights:
                return False, f"RRF weights need OpenSearch 3.1+, the cluster runs {self.version}"
            return True, ""
        if fusion.normalization is Normalization.Z_SCORE and not self.z_score:
            return False, f"z_score normalisation needs OpenSearch 3.0+, the cluster runs {self.version}"
        return True, ""


def capabilities_from(root: Mapping[str, Any], nodes: Mapping[str, Any] | None) -> Capabilities:
    """Derive capabilities from ``GET /`` and ``GET _nodes/plugins`` (None on Serverless)."""
    distribution = root.get("version", {}).get("distribution", "opensearch")
    if nodes is None:
        # Serverless hides nodes and plugins; AWS documents hybrid search and normalisation there.
        return Capabilities("serverless", distribution, (), True, True, False, False, False, False, False, True, True)
    node_list = list(nodes.get("nodes", {}).values())
    versions = sorted({n.get("version", "0") for n in node_list}, key=_version_tuple)
    version = versions[0] if versions else root.get("version", {}).get("number", "0")
    plugin_sets = [{p.get("name") for p in n.get("plugins", [])} for n in node_list]
    plugins = set.intersection(*plugin_sets) if plugin_sets else set()
    v = _version_tuple(version)
    neural = "opensearch-neural-search" in plugins and "opensearch-knn" in plugins
    native = not any(n.get("attributes", {}).get("knn_native") == "false" for n in node_list)
    return Capabilities(
        version=version,
        distribution=distribution,
        plugins=tuple(sorted(p for p in plugins if p)),
        hybrid=neural and v >= (2, 10, 0),
        normalization=neural and v >= (2, 10, 0),
        rrf=neural and v >= (2, 19, 0),
        rrf_weights=neural and v >= (3, 1, 0),
        z_score=neural and v >= (3, 0, 0),
        explanation=neural and v >= (2, 19, 0),
        pagination_depth=neural and v >= (2, 19, 0),
        native_engines=native and "opensearch-knn" in plugins,
    )


_cache: dict[str, Capabilities] = {}
_lock = threading.Lock()


def probe(client, *, refresh: bool = False) -> Capabilities:
    """Capabilities of the cluster behind ``client``, cached per cluster UUID."""
    from opensearchpy.exceptions import AuthorizationException, NotFoundError

    with translate_errors("probing the cluster", client):
        root = client.info()
    key = root.get("cluster_uuid") or root.get("cluster_name") or "?"
    with _lock:
        if not refresh and key in _cache:
            return _cache[key]
    try:
        with translate_errors("listing plugins", client):
            nodes = client.nodes.info(metric="plugins")
    except Exception as exc:  # Serverless: _nodes is not exposed (404/403)
        if isinstance(exc.__cause__, (NotFoundError, AuthorizationException)):
            nodes = None
        else:
            raise
    caps = capabilities_from(root, nodes)
    with _lock:
        _cache[key] = caps
    return caps
