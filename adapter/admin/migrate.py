"""Zero-downtime migrations: ``hybrid reindex`` (build ``<alias>-v(N+1)``, swap), ``rollback``, ``prune``.

Reindex, while the alias keeps serving ``<alias>-vN``:

1. apply the spec's templates and pipelines (as ``apply`` would) and create ``v(N+1)`` from them;
2. **copy**: read ``vN`` in key order inside a point in time (:mod:`adapter.index.scan`), take each
   entry's stored fields, embed its text with the new model (through the embedding cache; an
   unchanged model's vectors are copied, not recomputed), bulk-write into ``v(N+1)``. A checkpoint
   file records the last key written and the counts after every batch, so a crashed run resumes
   there without reading, embedding or writing the done part again;
3. **catch up**: writes that reached ``vN`` during the copy (new, changed or deleted entries,
   from any client) are found by comparing both indices entry by entry (content hashes in key
   order) and applied, until a pass finds nothing (or ``max_passes``);
4. optional **gate**: nDCG@10 of both on a labelled set; the swap is refused when the new one
   drops by more than the margin;
5. **swap**: ``vN`` gets a write block, a last catch-up pass runs, counts and checksums of both
   must agree, and one ``_aliases`` call removes ``vN`` and adds ``v(N+1)``. ``vN`` keeps its write
   block: a writer still aimed at it is refused (403) instead of writing where nobody reads.

Why catch-up by comparison rather than dual-write or an update timestamp: a writer has vectors
of the old model only (dual-write would need both models in every writer, and covers only the
adapter's writers), and a server-stamped timestamp needs an ingest pipeline (``set``), which the
2.19 Maven node lacks; deletes leave no timestamp at all. Comparing the indices covers every
writer, deletes included, on any cluster. Its cost is a read of both indices per pass without
vectors (seconds for 5k entries); the write block lasts one such pass.

Rollback is the same in reverse (catch up ``v(N+1)`` -> ``vN`` with ``vN``'s model, so writes after
the swap survive, then swap back). Old versions stay until ``prune``.

The steps live beside this module: the checkpoint (:mod:`adapter.admin.checkpoint`), the build and
copy (:mod:`adapter.admin.build`), the catch-up (:mod:`adapter.admin.sync`), the gate
(:mod:`adapter.admin.gate`) and the switch (:mod:`adapter.admin.switch`); :func:`reindex` composes
them over one read of the cluster and one plan. Rollback and prune: :mod:`adapter.admin.rollback`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from adapter.admin.build import Run, copy_entries, prepare_target, read_source
from adapter.admin.checkpoint import Checkpoint, Phase, resume_or_start
from adapter.admin.gate import Gate, GateResult, passed_gate
from adapter.admin.planning import plan_live
from adapter.admin.reembed import Counts
from adapter.admin.switch import freeze_and_swap
from adapter.admin.sync import Sync
from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.index import scan
from adapter.index.catalog import IndexInfo
from adapter.index.plan import Desired
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder, check_fingerprint


@dataclass(frozen=True)
class MigrationReport:
    alias: str
    source: str  # the index the alias pointed to
    target: str  # the index it points to now (when swapped)
    entries: int  # entries in both at the final check
    copied: int = 0  # entries written by the copy pass of this run
    resumed_after: int = 0  # entries a crashed run had copied (not read, embedded or written again)
    embedded: int = 0  # texts sent to the model in this run
    from_cache: int = 0  # texts whose vectors came from the embedding cache
    reused: int = 0  # vectors copied from the source (the model did not change)
    caught_up: int = 0  # entries written or changed in the source during the migration, copied again
    deleted: int = 0  # entries deleted from the target because the source no longer had them
    passes: int = 0  # catch-up passes (the one under the write block included)
    checksum: str = ""  # of both indices' entries at the swap (they agree)
    swapped: bool = False
    gate: GateResult | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)  # copy, catch_up, gate, write_block, total


def reindex(
    client: ClusterLike,
    desired: Desired,
    embedder: Embedder,
    *,
    cache: EmbeddingCache | None = None,
    checkpoint: str | Path | None = None,
    gate: Gate | None = None,
    source_embedder: Embedder | None = None,
    allowed: Sequence[str] | None = None,
    swap: bool = True,
    force: bool = False,
    batch: int = 64,
    max_passes: int = 5,
    engine: Engine | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> MigrationReport:
    """Build the next version of ``desired.alias`` from the live one and swap (see the module docstring).

    ``embedder`` must have the fingerprint of ``desired.spec``. Run it again after a crash: the
    checkpoint makes it continue. ``swap=False`` stops after the catch-up (and the gate). A spec
    the live index can take in place is refused (``hybrid apply`` is enough) unless ``force``. The gate
    searches the live index with ``source_embedder`` (default: the model its fingerprint names,
    when on the allow-list, ``allowed``).
    Raises MigrationError when the gate fails or the indices disagree at the swap (the alias stays).
    """
    t0 = time.perf_counter()
    cluster = cluster_for(client, engine)  # the public edge: a user's raw client gets its port here
    check_fingerprint(f"{desired.alias} (the spec)", desired.spec.fingerprint, embedder)
    caps, live = read_source(cluster, desired)  # the cluster read once: the checkpoint and the plan use it
    ckpt, finished = resume_or_start(cluster, desired, live, checkpoint, log)
    if finished:
        return _finished(cluster, desired, ckpt, t0)
    planned, rendered = plan_live(desired, live, caps, cluster.engine)
    run = prepare_target(cluster, desired, live, planned, rendered, ckpt, force=force, log=log)
    resumed_after, counts = ckpt.copied, Counts()
    seconds: dict[str, float] = {}

    with _timed(seconds, "copy"):  # 2. copy
        copied = copy_entries(run, ckpt, embedder, cache, counts, batch=batch, progress=progress, log=log)
    with _timed(seconds, "catch_up"):  # 3. catch up
        ckpt.at(Phase.CATCH_UP)
        sync = _catch_up(cluster, run, embedder, cache, counts)
        sync.until_quiet(batch, max_passes, log)
    result = None  # 4. gate
    if gate is not None:
        with _timed(seconds, "gate"):
            old_embedder = embedder if run.reuse else source_embedder or load_source_embedder(run.source_info, allowed)
            result = passed_gate(
                cluster, gate, desired.alias, old=(run.source, old_embedder), new=(run.target, embedder), log=log
            )

    check = None  # 5. swap
    if swap:
        check, seconds["write_block"] = _swap(cluster, sync, desired.alias, run, batch, ckpt, log)
    seconds["total"] = time.perf_counter() - t0
    steps = _Steps(copied, resumed_after, counts, sync, result, seconds)
    return _report(cluster, desired.alias, run, check, steps, swapped=swap)


def _swap(
    cluster: Cluster, sync: Sync, alias: str, run: Run, batch: int, ckpt: Checkpoint, log: Callable[[str], None]
) -> tuple[scan.Comparison, float]:
    """The alias moved to the new version under a write block (:func:`freeze_and_swap`), said in one line."""
    check, write_block = freeze_and_swap(cluster, sync, alias, batch, ckpt, log)
    log(
        f"alias {alias}: {run.source} -> {run.target} ({check.source_count} entries, checksum "
        f"{check.source_checksum[:16]}); {run.source} is kept, write-blocked, until `hybrid prune {alias}`"
    )
    return check, write_block


@dataclass(frozen=True)
class _Steps:
    """What each step of a run did, for its report."""

    copied: int
    resumed_after: int
    counts: Counts
    sync: Sync
    gate: GateResult | None
    seconds: dict[str, float]


def _report(
    cluster: Cluster, alias: str, run: Run, check: scan.Comparison | None, steps: _Steps, *, swapped: bool
) -> MigrationReport:
    """The run's report: the entries and checksum of the check at the swap (without a swap, the target counted)."""
    return MigrationReport(
        alias,
        run.source,
        run.target,
        check.source_count if check else sync_count(cluster, run.target),
        copied=steps.copied,
        resumed_after=steps.resumed_after,
        embedded=steps.counts.embedded,
        from_cache=steps.counts.from_cache,
        reused=steps.counts.reused,
        caught_up=steps.sync.copied,
        deleted=steps.sync.deleted,
        passes=steps.sync.passes,
        checksum=check.source_checksum if check else "",
        swapped=swapped,
        gate=steps.gate,
        seconds=steps.seconds,
    )


@contextmanager
def _timed(seconds: dict[str, float], step: str) -> Iterator[None]:
    """``seconds[step]``: how long the block took (left out when it raised: the run stops there)."""
    t = time.perf_counter()
    yield
    seconds[step] = time.perf_counter() - t


def _finished(cluster: Cluster, desired: Desired, ckpt: Checkpoint, t0: float) -> MigrationReport:
    """The report of a migration its checkpoint says is done (a run again after the swap): nothing more to do."""
    return MigrationReport(
        desired.alias,
        ckpt.source,
        ckpt.target,
        sync_count(cluster, ckpt.target),
        swapped=False,
        seconds={"total": time.perf_counter() - t0},
    )


def _catch_up(cluster: Cluster, run: Run, embedder: Embedder, cache: EmbeddingCache | None, counts: Counts) -> Sync:
    """The catch-up from the live index to the new one: the new model, the copy's layout and its reuse of vectors."""
    return Sync(
        cluster,
        run.source,
        run.target,
        run.source_info.vector_field,
        run.layout,
        embedder,
        cache,
        run.reuse,
        counts=counts,
        stamp_reused=not run.source_info.stamps_entries,
    )


def sync_count(cluster: Cluster, index: str) -> int:
    return cluster.count(index)


def load_source_embedder(info: IndexInfo, allowed: Sequence[str] | None = None) -> Embedder:
    """The model the index's fingerprint names (when on the allow-list ``allowed``), checked against it."""
    from adapter.models.embedders import load_index_embedder

    embedder = load_index_embedder(info.fingerprint.spec, allowed=allowed, index=info.index)
    check_fingerprint(info.index, info.fingerprint, embedder)
    return embedder
