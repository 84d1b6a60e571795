"""``hybrid init``: apply templates, create the versioned index behind its alias, put pipelines.

Idempotent: each object is compared with what the cluster holds and only changed objects are sent;
the report says what was created, updated (with a diff) or left unchanged. A change the live index
cannot take (vector dimension, space type, engine, analyzers, the embedding fingerprint, shards)
is refused before anything is written: it needs a new index and re-embedding (``hybrid reindex``).

``init`` is a plan applied (:mod:`adapter.plan`) for the desired state its options describe; it
never deletes a pipeline (``hybrid apply`` with a spec file does, for pipelines the spec drops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .assets import IndexNames, IndexSpec
from .engines import Engine, engine_for
from .fusions import DEFAULT_WEIGHTS
from .plan import (  # noqa: F401  (re-exported: what init's callers and tests used from here)
    DEFAULT_PIPELINE_SETTING,
    Change,
    Desired,
    apply_plan,
    canonical_settings,
    desired_pipelines,
    incompatibilities,
    json_diff,
    plan,
    read_live,
)

INIT_REBUILD_HINT = "`hybrid init` does not do that: `hybrid reindex` builds it and swaps the alias (docs/OPERATIONS.md)"


@dataclass(frozen=True)
class InitReport:
    alias: str
    index: str
    changes: tuple[Change, ...]
    default_pipeline: str | None = None  # what a hybrid query without a pipeline is fused by

    @property
    def changed(self) -> bool:
        return any(c.action != "unchanged" for c in self.changes)


def init_index(
    client,
    alias: str,
    spec: IndexSpec,
    *,
    weights: tuple[float, float] = DEFAULT_WEIGHTS,
    extra_pipelines: Mapping[str, Mapping[str, Any]] | None = None,
    dry_run: bool = False,
    engine: Engine | None = None,
    reattach: bool = False,
) -> InitReport:
    """Make the cluster match the assets for index ``alias``; see the module docstring.

    An index ``<alias>-vN`` whose alias was deleted by hand is refused with a clear error unless
    ``reattach`` is set: then the alias is put back on the newest one (and the rest proceeds).
    """
    engine = engine or engine_for(client)
    desired = Desired(IndexNames(alias).alias, spec, tuple(weights), dict(extra_pipelines or {}))
    caps = engine.probe(client)
    wanted = list(desired_pipelines(desired, caps, engine)) if caps.hybrid else []
    live = read_live(client, alias, engine, pipelines=wanted, caps=caps)
    planned = plan(desired, live, engine, reattach=reattach)
    changes = apply_plan(client, planned, dry_run=dry_run, rebuild_hint=INIT_REBUILD_HINT)
    return InitReport(alias, planned.index, changes, planned.default_pipeline)
