"""The parallel-legs fast path of a hybrid search, and the check that earns it. Pure.

A server hybrid on OpenSearch runs both legs, then reads the source of every candidate of both in
its fetch phase, then fuses in its pipeline. The fast path sends the two legs in one ``_msearch``
(ids and scores only), fuses them here with the server's own formula (:mod:`adapter.fusion`), and
fetches the page's documents: the same page, in fewer bytes where the candidates outnumber the
page. Whether it is faster depends on the index and the node (measured: 0.72x the server hybrid's
client p50 at 1M documents, 0.98x at 100k, slower under load at 100k; docs/BENCHMARKS.md), so
it is never assumed: ``hybrid fast-path`` runs both on a sample of the index's queries, and only a
check that found every page identical and the fast path faster is kept with the index
(``_meta.fast_path``). A search takes it only where the check applies: the same fusion family, the
same candidate depth, the same cluster version, no explanation asked; the result says so.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping

# The fast path is kept only when its client p50 is at most this share of the server hybrid's: a
# margin over the noise of one run on a shared machine (a tie is not "measured faster").
FASTER_THAN = 0.9
MIN_QUERIES = 20  # fewer queries do not show that every page agrees


class FastPath(str, enum.Enum):
    """Whether a hybrid search may take the fast path."""

    AUTO = "auto"  # where the index's kept check applies (the default)
    ON = "on"  # always, for a server-fused hybrid (what the check itself measures)
    OFF = "off"  # never: the server fuses


@dataclass(frozen=True)
class FastPathCheck:
    """One run of both paths on a sample of queries, as kept in the index's ``_meta.fast_path``."""

    fusion: str  # the fusion family both ran (Fusion.name: weights may differ per query)
    depth: int  # candidates per leg
    k: int
    queries: int
    same_pages: int  # queries whose pages ranked identically (up to ties)
    hybrid_p50_ms: float  # client time of the server hybrid
    fast_p50_ms: float  # client time of the fast path
    version: str  # the cluster's version when checked
    checked: str  # when (ISO 8601, UTC)

    @property
    def ratio(self) -> float:
        return self.fast_p50_ms / self.hybrid_p50_ms if self.hybrid_p50_ms > 0 else float("inf")

    @property
    def congruent(self) -> bool:
        return self.queries >= MIN_QUERIES and self.same_pages == self.queries

    @property
    def faster(self) -> bool:
        return self.ratio <= FASTER_THAN

    @property
    def taken(self) -> bool:
        """Whether searches may take the fast path on this evidence."""
        return self.congruent and self.faster

    def why_not(self) -> str | None:
        """Why the check does not earn the fast path (None: it does)."""
        if self.queries < MIN_QUERIES:
            return f"{self.queries} queries checked, {MIN_QUERIES} needed"
        if not self.congruent:
            return f"the pages differed for {self.queries - self.same_pages} of {self.queries} queries"
        if not self.faster:
            return f"not faster: {self.fast_p50_ms:.1f} against {self.hybrid_p50_ms:.1f} ms p50 ({self.ratio:.2f}x, {FASTER_THAN}x needed)"
        return None

    def applies(self, fusion: str, depth: int, version: str) -> bool:
        """Whether a search of ``fusion`` (its name) at ``depth`` on a cluster of ``version`` is what was checked."""
        return self.taken and fusion == self.fusion and depth == self.depth and version == self.version

    def notice(self) -> str:
        return (f"fast path: both legs in one _msearch, fused here by {self.fusion} with the server's formula "
                f"(`hybrid fast-path` on {self.checked[:10]}: the same page for {self.same_pages}/{self.queries} queries, "
                f"client p50 {self.fast_p50_ms:.1f} against {self.hybrid_p50_ms:.1f} ms for the server hybrid)")

    def to_meta(self) -> dict[str, Any]:
        return {"fusion": self.fusion, "depth": self.depth, "k": self.k, "queries": self.queries, "same_pages": self.same_pages,
                "hybrid_p50_ms": self.hybrid_p50_ms, "fast_p50_ms": self.fast_p50_ms,
                "version": self.version, "checked": self.checked}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> FastPathCheck | None:
        """The kept check (None: none, or one this version cannot read, which is not taken)."""
        if not meta:
            return None
        try:
            return cls(str(meta["fusion"]), int(meta["depth"]), int(meta["k"]), int(meta["queries"]), int(meta["same_pages"]),
                       float(meta["hybrid_p50_ms"]), float(meta["fast_p50_ms"]), str(meta["version"]), str(meta["checked"]))
        except (KeyError, TypeError, ValueError):
            return None
