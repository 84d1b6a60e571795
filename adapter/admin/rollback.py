"""``hybrid rollback`` and ``hybrid prune``: the alias back on the previous version (after copying
into it what was written since the swap), and the versions an alias has moved away from deleted."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

from adapter.admin.checkpoint import Checkpoint, default_checkpoint
from adapter.admin.index_state import WRITE_BLOCK, block_writes, index_info, index_state
from adapter.admin.live_state import versions_of
from adapter.admin.migrate import MigrationReport, load_source_embedder
from adapter.admin.switch import freeze_and_swap
from adapter.admin.sync import Sync
from adapter.engines import Cluster, ClusterLike, cluster_for
from adapter.errors import ConfigurationError
from adapter.index import metadata as metadata_mapping
from adapter.index.catalog import IndexInfo, alias_indices, index_version
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder, check_fingerprint


def rollback(
    client: ClusterLike,
    alias: str,
    *,
    embedder: Embedder | None = None,
    allowed: Sequence[str] | None = None,
    cache: EmbeddingCache | None = None,
    batch: int = 64,
    max_passes: int = 5,
    log: Callable[[str], None] = print,
) -> MigrationReport:
    """Point ``alias`` back at the previous version, after copying into it what was written since the
    swap (embedded with its own model: ``embedder``, or the one its fingerprint names, if allowed)."""
    t0 = time.perf_counter()
    cluster = cluster_for(client)  # the public edge: a user's raw client gets its port here
    current, previous = _current_and_previous(cluster, alias)
    prev_info, cur_info = index_info(cluster, alias, previous), index_info(cluster, alias, current)
    embedder = embedder or load_source_embedder(prev_info, allowed)
    check_fingerprint(previous, prev_info.fingerprint, embedder)
    sync = _caught_up(cluster, cur_info, prev_info, embedder, cache, batch, max_passes, log)
    check, blocked = freeze_and_swap(cluster, sync, alias, batch, log=log)
    _forget_checkpoint(cluster, alias, current, log)
    log(f"alias {alias}: {current} -> {previous} ({check.source_count} entries); {current} is kept, write-blocked")
    return MigrationReport(
        alias,
        current,
        previous,
        check.source_count,
        embedded=sync.counts.embedded,
        from_cache=sync.counts.from_cache,
        reused=sync.counts.reused,
        caught_up=sync.copied,
        deleted=sync.deleted,
        passes=sync.passes,
        checksum=check.source_checksum,
        swapped=True,
        seconds={"write_block": blocked, "total": time.perf_counter() - t0},
    )


def _current_and_previous(cluster: Cluster, alias: str) -> tuple[str, str]:
    """The version ``alias`` is on and the newest older one, or the ConfigurationError that says why there is none."""
    current_list = alias_indices(cluster, alias)
    if not current_list:
        raise ConfigurationError(f"no alias {alias!r} on the cluster")
    current = current_list[-1]
    older = [
        v for v in sorted(versions_of(cluster, alias), key=index_version) if index_version(v) < index_version(current)
    ]
    if not older:
        raise ConfigurationError(_nothing_to_roll_back(cluster, alias, current))
    return current, older[-1]


def _caught_up(
    cluster: Cluster,
    cur_info: IndexInfo,
    prev_info: IndexInfo,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    batch: int,
    max_passes: int,
    log: Callable[[str], None],
) -> Sync:
    """The previous version with what was written since the swap (metadata keys declared since, then the entries,
    embedded with its own model); write-blocked again if that fails, as it is not live."""
    current, previous = cur_info.index, prev_info.index
    reuse = not cur_info.fingerprint.differences(prev_info.fingerprint)
    if prev_info.metadata_strict and cur_info.metadata_fields:  # keys declared since the swap
        cluster.put_mapping(
            previous,
            metadata_mapping.put_body(cur_info.metadata_fields),
            action=f"declaring the metadata of {current} in {previous}",
        )
    sync = Sync(
        cluster,
        current,
        previous,
        cur_info.vector_field,
        prev_info.layout,
        embedder,
        cache,
        reuse,
        stamp_reused=not cur_info.stamps_entries,
        target_stamps=prev_info.stamps_entries,
    )
    try:
        block_writes(cluster, previous, False)  # the catch-up writes into it
        sync.until_quiet(batch, max_passes, log)
    except BaseException:
        block_writes(cluster, previous, True)  # not live: a writer aimed at it is refused again
        raise
    return sync


def _nothing_to_roll_back(cluster: Cluster, alias: str, current: str) -> str:
    """Why ``alias`` has no version to go back to, and the ways out. A reindex killed before its swap (in its
    copy or its freeze: SIGKILL runs no cleanup) leaves the alias on ``current``, a newer unswapped version and,
    from the freeze, a write block on ``current``: that is no rollback's to undo, but the reindex's to finish or
    drop."""
    newer = sorted(
        (v for v in versions_of(cluster, alias) if index_version(v) > index_version(current)), key=index_version
    )
    blocked = "write" in index_state(cluster, current).blocks
    if not newer and not blocked:
        return (
            f"{alias} points to {current} and no older version exists to go back to (`hybrid prune` deletes them; "
            "`prune --keep N` keeps some)"
        )
    said = [f"nothing to roll back: {alias} still points to {current}, its only version; no reindex swapped it"]
    if newer:
        said.append(
            f"{', '.join(newer)} {'is' if len(newer) == 1 else 'are'} an interrupted reindex's unfinished target"
        )
    if blocked:
        said.append(
            f"{current} is write-blocked ({WRITE_BLOCK}): that reindex was stopped in its freeze, before the swap, "
            "so every write to the alias is refused"
        )
    return (
        "; ".join(said) + ". Ways out: run the same `hybrid reindex` again (it resumes from its checkpoint and swaps), "
        f"or `hybrid prune {alias} --unfinished` to abandon it (deletes {', '.join(newer) or 'nothing newer'} and "
        f"lifts the write block on {current})"
    )


def _forget_checkpoint(cluster: Cluster, alias: str, rolled_back: str, log: Callable[[str], None]) -> None:
    """The default checkpoint of a migration into ``rolled_back`` (left by a run killed after its swap)
    no longer describes the cluster: remove it. One elsewhere (``--checkpoint``) is caught when read."""
    path = default_checkpoint(cluster, alias)
    try:
        ckpt = Checkpoint.load(path)
    except ConfigurationError:  # unreadable: not ours to judge here
        return
    if ckpt is not None and ckpt.target == rolled_back:
        ckpt.remove()
        log(f"removed the checkpoint {path}: its migration into {rolled_back} is rolled back")


@dataclass(frozen=True)
class PruneReport:
    alias: str
    current: str
    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    unfinished: tuple[str, ...]  # newer than the current one: a migration not swapped (kept unless asked)


def prune(
    client: ClusterLike, alias: str, *, keep: int = 0, unfinished: bool = False, dry_run: bool = False
) -> PruneReport:
    """Delete the versions of ``alias`` older than the one it points to, but the newest ``keep``
    (to roll back to); ``unfinished`` also deletes newer ones a migration left unswapped, and lifts
    the write block a migration that died during its swap left on the live index."""
    if keep < 0:
        raise ConfigurationError(f"keep must be 0 or more, got {keep}")
    cluster = cluster_for(client)  # the public edge
    current_list = alias_indices(cluster, alias)
    if not current_list:
        raise ConfigurationError(
            f"no alias {alias!r} on the cluster: prune deletes only versions an alias has moved away from"
        )
    current = current_list[-1]
    versions = sorted(versions_of(cluster, alias), key=index_version)
    older = [v for v in versions if index_version(v) < index_version(current) and v not in current_list]
    newer = [v for v in versions if index_version(v) > index_version(current)]
    kept = older[len(older) - keep :] if keep else []
    doomed = [v for v in older if v not in kept] + (newer if unfinished else [])
    if doomed and not dry_run:
        cluster.delete_indices(doomed)
    if unfinished and not dry_run and (newer or "write" in index_state(cluster, current).blocks):
        # a migration that died under its write block leaves it: abandoning it lifts it
        block_writes(cluster, current, False)
    return PruneReport(alias, current, tuple(doomed), tuple(kept), tuple(newer))
