"""A migration's checkpoint: its progress saved after every batch, so a crashed ``hybrid reindex``
continues where it stopped, and the rules for trusting one that an earlier run left."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from adapter.admin.index_state import block_writes, index_state
from adapter.engines import Cluster
from adapter.errors import ConfigurationError
from adapter.index.plan import Desired, LiveState
from adapter.models.cache import default_cache_path


class Phase(str, Enum):
    """Where a migration is; saved in its checkpoint before each step that changes the cluster."""

    COPY = "copy"
    CATCH_UP = "catch-up"
    FREEZE = "freeze"  # the source carries the migration's write block
    SWAP = "swap"  # the alias swap is being sent: the node may have done it without the client knowing


@dataclass
class Checkpoint:
    """Progress of one migration, saved after every batch (atomically: a crash leaves the last one).

    It describes what the cluster holds: the target by name and uuid (an index deleted and made
    again is another one), the phase, and it is removed as soon as the swap has reached the node.
    The file is private to its user (0600, in a 0700 folder): it names the cluster and its indices.
    """

    path: Path
    alias: str
    source: str
    target: str
    fingerprint: str  # the target's embedder (its key): a different model must not continue
    after: list[Any] | None = None  # the last key written by the copy
    copied: int = 0
    embedded: int = 0
    from_cache: int = 0
    reused: int = 0
    copy_done: bool = False
    started: float = field(default_factory=time.time)
    phase: str = Phase.COPY.value
    target_uuid: str | None = None

    def save(self) -> None:
        private_folder(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        data = {k: v for k, v in asdict(self).items() if k != "path"}
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
            fh.write(json.dumps(data, indent=2))
        os.replace(tmp, self.path)

    def at(self, phase: Phase) -> None:
        self.phase = phase.value
        self.save()

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        try:
            data = json.loads(path.read_text())
            return cls(path=path, **data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigurationError(
                f"the migration checkpoint {path} is unreadable ({exc}); delete it to start the copy over"
            ) from exc

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def private_folder(path: Path) -> None:
    """Create ``path`` (and parents) for this user only (0700); an existing folder is left as it is."""
    if not path.is_dir():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)


def default_checkpoint(cluster: Cluster, alias: str) -> Path:
    """``<embedding cache folder>/migrations/<cluster uuid>-<alias>.json``."""
    uuid = cluster.cluster_id()
    return default_cache_path().parent / "migrations" / f"{uuid}-{alias}.json"


def resume_or_start(
    cluster: Cluster, desired: Desired, live: LiveState, path: str | Path | None, log: Callable[[str], None]
) -> tuple[Checkpoint, bool]:
    """The checkpoint to continue from (``path``, else the default one), when it still describes the
    cluster, else a new one into the next version; True: an earlier run's swap had reached the node,
    nothing is left to do."""
    where = Path(path) if path else default_checkpoint(cluster, desired.alias)
    ckpt, key = Checkpoint.load(where), desired.spec.fingerprint.key
    if ckpt is not None and _finished_earlier(cluster, ckpt, desired.alias, live, key, log):
        return ckpt, True
    kept = _trusted(cluster, ckpt, desired.alias, live, key, log)
    return kept or Checkpoint(where, desired.alias, str(live.current), live.next_index, key), False


def _finished_earlier(
    cluster: Cluster, ckpt: Checkpoint, alias: str, live: LiveState, fingerprint: str, log: Callable[[str], None]
) -> bool:
    """A checkpoint whose swap reached the node although its run never learnt it (killed while the
    request was in flight): the alias names its target. Then the migration is over: the checkpoint
    goes, the source keeps its write block, and nothing is swapped again."""
    if (
        (ckpt.alias, ckpt.fingerprint) != (alias, fingerprint)
        or live.indices != (ckpt.target,)
        or ckpt.source not in live.versions
    ):
        return False
    state = index_state(cluster, ckpt.target)
    if ckpt.target_uuid and state.uuid != ckpt.target_uuid:
        return False
    if not state.writable:
        block_writes(cluster, ckpt.target, False)
    if index_state(cluster, ckpt.source).writable:
        block_writes(cluster, ckpt.source, True)
    ckpt.remove()
    log(
        f"the swap of an earlier run had reached the cluster: {alias} points to {ckpt.target}, which takes writes; "
        f"{ckpt.source} keeps its write block. Nothing left to do (checkpoint {ckpt.path} removed)"
    )
    return True


def _trusted(
    cluster: Cluster, ckpt: Checkpoint | None, alias: str, live: LiveState, fingerprint: str, log: Callable[[str], None]
) -> Checkpoint | None:
    """The checkpoint, if it still describes the cluster: the same migration (alias, live source,
    model), its target still there (the same index, by uuid) and never live since. A target that
    carries a write block was live after this checkpoint was written (a rollback moved the alias
    away from it and blocked it; a migration never blocks its own target): resuming into it would
    trust counts older than the rollback, so the run starts over into a new version."""
    if ckpt is None:
        return None
    source = live.current
    if (ckpt.alias, ckpt.source, ckpt.fingerprint) != (alias, source, fingerprint):
        log(f"ignoring the checkpoint {ckpt.path}: it belongs to another migration ({ckpt.source} -> {ckpt.target})")
        return None
    if ckpt.target not in live.versions:
        log(f"the checkpoint's target {ckpt.target} is gone: starting over")
        return None
    state = index_state(cluster, ckpt.target)
    if ckpt.target_uuid and state.uuid != ckpt.target_uuid:
        log(
            f"the checkpoint's target {ckpt.target} was deleted and made again since: starting over into "
            f"{live.next_index}"
        )
        return None
    if not state.writable:
        log(
            f"the checkpoint's target {ckpt.target} carries a write block: it was live and rolled back (or blocked by "
            f"hand) after the checkpoint was written, so the checkpoint is not trusted; building {live.next_index} "
            "instead"
        )
        return None
    if ckpt.phase in (Phase.FREEZE.value, Phase.SWAP.value) and not index_state(cluster, ckpt.source).writable:
        # the run died under its write block: the live index takes writes meanwhile
        block_writes(cluster, ckpt.source, False)
        log(f"the earlier run stopped under its write block: {source} takes writes again until the swap")
    return ckpt
