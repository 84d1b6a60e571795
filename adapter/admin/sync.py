"""The catch-up: writes that reached the source during a migration (new, changed or deleted
entries, from any client) found by comparing both indices entry by entry and copied, a pass at a
time; and the last pass under the write block, with its check that both hold the same entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from adapter.admin.reembed import Counts, target_documents
from adapter.engines import Cluster
from adapter.errors import MigrationError
from adapter.index import scan
from adapter.index.documents import DocumentLayout
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder


@dataclass
class Sync:
    """Copies what changed in ``source`` into ``target`` (one comparison pass at a time)."""

    cluster: Cluster
    source: str
    target: str
    source_vector: str
    layout: DocumentLayout  # the target's
    embedder: Embedder  # the target's model
    cache: EmbeddingCache | None
    reuse: bool
    counts: Counts = field(default_factory=Counts)
    stamp_reused: bool = True  # the source predates embedded_by (see target_documents)
    target_stamps: bool = True  # the target's mapping has embedded_by
    copied: int = 0
    deleted: int = 0
    passes: int = 0

    def once(self, batch: int) -> scan.Comparison:
        """One pass: compare, then copy and delete what differs. Returns the comparison (before the fixes)."""
        cmp = self._compare((self.source, self.target))
        self.passes += 1
        for start in range(0, len(cmp.to_copy), batch):
            docs = target_documents(
                cmp.to_copy[start : start + batch],
                source_vector=self.source_vector,
                layout=self.layout,
                embedder=self.embedder,
                cache=self.cache,
                reuse=self.reuse,
                counts=self.counts,
                stamp_reused=self.stamp_reused,
                target_stamps=self.target_stamps,
            )
            scan.write(self.cluster, self.target, docs)
        scan.write(self.cluster, self.target, [], cmp.to_delete)
        self.copied += len(cmp.to_copy)
        self.deleted += len(cmp.to_delete)
        return cmp

    def _compare(self, refreshed: tuple[str, ...]) -> scan.Comparison:
        """Both indices entry by entry, once ``refreshed`` show every write made to them so far."""
        self.cluster.refresh(refreshed)
        return scan.compare(
            self.cluster,
            self.source,
            self.target,
            source_vector=self.source_vector,
            target_vector=self.layout.vector_field,
        )

    def until_quiet(self, batch: int, max_passes: int, log: Callable[[str], None]) -> None:
        for _ in range(max_passes):
            cmp = self.once(batch)
            log(
                f"catch-up pass {self.passes}: {len(cmp.to_copy)} entries copied, {len(cmp.to_delete)} deleted "
                f"({cmp.source_count} in {self.source})"
            )
            if cmp.same:
                return

    def final(self, batch: int) -> scan.Comparison:
        """Under the write block: a last pass, then a check that both hold the same entries."""
        self.once(batch)
        check = self._compare((self.target,))
        if not check.same or check.source_count != check.target_count or check.source_checksum != check.target_checksum:
            raise MigrationError(
                f"{self.target} does not hold what {self.source} holds after the last catch-up pass "
                f"({check.source_count} vs {check.target_count} entries, {len(check.to_copy)} to copy, "
                f"{len(check.to_delete)} to delete); the alias was not moved and writes to the source are allowed "
                "again. Run the same command again"
            )
        return check
