"""Where one local cluster lives: its name (the release, ``-Nnodes`` beside one node), its folder
under ``<cache>/nodes/``, each node's folder and log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapter.local.config import NodeConfig
from adapter.local.releases import Distribution, Release


@dataclass(frozen=True)
class Layout:
    release: Release
    config: NodeConfig
    node_dir: Path  # the cluster's folder: <cache>/nodes/<name>

    @classmethod
    def of(cls, release: Release, config: NodeConfig) -> Layout:
        suffix = f"-{config.nodes}nodes" if config.nodes > 1 else ""
        return cls(release, config, Path(config.cache_dir) / "nodes" / (release.name + suffix))

    @property
    def name(self) -> str:
        return self.node_dir.name

    @property
    def distribution(self) -> Distribution:
        return self.release.distribution

    @property
    def state_file(self) -> Path:
        return self.node_dir / "state.json"

    def node(self, index: int) -> Path:
        """Node ``index``'s folder (0-based; named from 1)."""
        return self.node_dir / f"node-{index + 1}"

    def log_file(self, index: int = 0) -> Path:
        return self.node(index) / "logs" / f"hybrid-{self.name}.log"

    def log_tail(self, lines: int = 40, index: int = 0) -> str:
        path = self.log_file(index)
        if not path.exists():
            return "(no log written)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
