"""The switch: the source write-blocked, a last catch-up and its check, the alias moved in one
``_aliases`` call, and the alias checked to end on one writable index; an interruption is met by
asking the node where the alias is."""

from __future__ import annotations

import time
from typing import Callable

from adapter.admin.checkpoint import Checkpoint, Phase
from adapter.admin.index_state import block_writes, index_state
from adapter.admin.sync import Sync
from adapter.engines import Cluster
from adapter.errors import MigrationError
from adapter.index import scan
from adapter.index.catalog import alias_indices


def _require_writable_alias(cluster: Cluster, alias: str, expected: str) -> None:
    """After a swap: the alias names exactly ``expected``, and it takes writes."""
    now = alias_indices(cluster, alias)
    if now != [expected]:
        raise MigrationError(
            f"after the swap {alias} points to {', '.join(now) or 'nothing'}, not {expected} alone; "
            f"check it with `hybrid plan` before writing"
        )
    state = index_state(cluster, expected)
    if not state.writable:
        raise MigrationError(
            f"after the swap {alias} points to {expected}, which refuses writes (index.blocks."
            f"{', index.blocks.'.join(state.blocks)}); lift the block on {expected} before writing"
        )


def _swap(cluster: Cluster, alias: str, old: str, new: str) -> None:
    """One ``_aliases`` call: searches see either the old index or the new one, never neither or both."""
    actions = [{"remove": {"index": old, "alias": alias}}, {"add": {"index": new, "alias": alias}}]
    cluster.update_aliases(actions, action=f"moving the alias {alias} from {old} to {new}")


def freeze_and_swap(
    cluster: Cluster,
    sync: Sync,
    alias: str,
    batch: int,
    ckpt: Checkpoint | None = None,
    log: Callable[[str], None] = print,
) -> tuple[scan.Comparison, float]:
    """Write-block the source, catch up once more, check, make sure the target takes writes, swap,
    and check that the alias ends on one writable index. Whatever interrupts it (an error, SIGTERM
    turned into an exception by the CLI) is met by asking the node where the alias is: if the swap
    reached it, the migration is over (the checkpoint goes, the source keeps its block); if not, the
    source takes writes again."""
    started = time.perf_counter()
    if ckpt is not None:
        ckpt.at(Phase.FREEZE)
    try:
        block_writes(cluster, sync.source, True)
        check = sync.final(batch)
        if not index_state(cluster, sync.target).writable:  # a rollback left its block, or someone set one
            block_writes(cluster, sync.target, False)
        if ckpt is not None:
            ckpt.at(Phase.SWAP)
        _swap(cluster, alias, sync.source, sync.target)
    except BaseException:
        if _swap_reached(cluster, alias, sync.target):
            if ckpt is not None:
                ckpt.remove()
            log(
                f"interrupted, but the swap had reached the cluster: {alias} points to {sync.target}, which takes "
                f"writes; {sync.source} keeps its write block. The migration is complete"
            )
        else:
            block_writes(cluster, sync.source, False)
            if ckpt is not None:
                ckpt.at(Phase.CATCH_UP)
            log(
                f"interrupted before the swap: {alias} still points to {sync.source}, which takes writes again"
                + (f"; run the same command again to continue (checkpoint {ckpt.path})" if ckpt is not None else "")
            )
        raise
    if ckpt is not None:
        ckpt.remove()
    _require_writable_alias(cluster, alias, sync.target)
    return check, time.perf_counter() - started


def _swap_reached(cluster: Cluster, alias: str, target: str) -> bool:
    """Whether the alias names ``target`` now (False when the node cannot say)."""
    try:
        return alias_indices(cluster, alias) == [target]
    except Exception:  # noqa: BLE001 (an unreachable node: the caller reports the original error)
        return False
