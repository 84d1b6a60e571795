"""What a migration asks of one index as it goes: its facts, its uuid and blocks, and the write
block it sets and lifts (``index.blocks.write``)."""

from __future__ import annotations

from dataclasses import dataclass

from adapter.engines import Cluster
from adapter.index.catalog import IndexInfo

WRITE_BLOCK = "index.blocks.write"


def index_info(cluster: Cluster, alias: str, index: str) -> IndexInfo:
    return IndexInfo.from_index(alias, index, cluster.get_index(index))


def block_writes(cluster: Cluster, index: str, blocked: bool) -> None:
    cluster.put_index_settings(
        index, {WRITE_BLOCK: blocked}, action=f"{'blocking' if blocked else 'allowing'} writes to {index}"
    )


@dataclass(frozen=True)
class IndexState:
    uuid: str | None
    blocks: tuple[str, ...]  # the blocks set on it: write, read_only, read_only_allow_delete

    @property
    def writable(self) -> bool:
        return not self.blocks


def index_state(cluster: Cluster, index: str) -> IndexState:
    settings = cluster.get_index(index, action=f"reading the settings of {index}")["settings"]
    settings = settings.get("index", settings)
    blocks = settings.get("blocks") or {}
    return IndexState(
        settings.get("uuid"),
        tuple(b for b in ("write", "read_only", "read_only_allow_delete") if str(blocks.get(b)).lower() == "true"),
    )
