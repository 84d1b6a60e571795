"""The migration's build: the target ``<alias>-v(N+1)`` created from the spec's templates (the plan's,
applied as ``apply`` would) and checked against the rendered spec, then every entry of the source
copied into it in key order, a batch at a time, its checkpoint saved after each."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from adapter.admin.checkpoint import Checkpoint
from adapter.admin.index_state import index_info, index_state
from adapter.admin.planning import apply_plan, read_desired_live
from adapter.admin.reembed import Counts, target_documents
from adapter.engines import Cluster
from adapter.engines.capabilities import Capabilities
from adapter.errors import ConfigurationError
from adapter.index import metadata as metadata_mapping
from adapter.index import scan
from adapter.index.catalog import IndexInfo
from adapter.index.documents import DocumentLayout
from adapter.index.plan import Action, ChangeKind, Desired, LiveState, Plan, Rendered, incompatibilities
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder


@dataclass(frozen=True)
class Run:
    """One migration's fixed facts, read before its copy starts."""

    cluster: Cluster
    alias: str
    source: str  # the index the alias names
    target: str  # the index being built
    source_info: IndexInfo
    reuse: bool  # the model did not change: the source's vectors are copied, not computed
    layout: DocumentLayout  # the target's
    checkpoint: Path


def read_source(cluster: Cluster, desired: Desired) -> tuple[Capabilities, LiveState]:
    """The cluster's capabilities and what it holds for the alias (refused: no index to migrate)."""
    caps = cluster.probe()
    live = read_desired_live(cluster, desired, caps)
    if not live.indices or live.current is None:
        raise ConfigurationError(
            f"no hybrid index {desired.alias!r} to migrate (create it with `hybrid apply` or `hybrid init`)"
        )
    return caps, live


def _templates_and_pipelines(plan_: Plan) -> Plan:
    kinds = (ChangeKind.COMPONENT_TEMPLATE, ChangeKind.INDEX_TEMPLATE, ChangeKind.PIPELINE)
    keep = tuple(c for c in plan_.changes if c.kind in kinds and c.action is not Action.DELETE)
    return replace(plan_, changes=keep, rebuild=())


def prepare_target(
    cluster: Cluster,
    desired: Desired,
    live: LiveState,
    planned: Plan,
    rendered: Rendered,
    ckpt: Checkpoint,
    *,
    force: bool,
    log: Callable[[str], None],
) -> Run:
    """1. The spec's templates and pipelines applied (``planned``, against ``live``) and the checkpoint's
    target created from them (or found, and checked against the spec as ``rendered``); the source's
    entries keyed and its metadata keys declared on the target."""
    alias, source, target = desired.alias, ckpt.source, ckpt.target
    if not planned.rebuild and not force and ckpt.copied == 0 and target not in live.versions:
        raise ConfigurationError(
            f"{source} can take this spec in place: `hybrid apply` is enough (--force builds {target} anyway)"
        )
    apply_plan(cluster, _templates_and_pipelines(planned))
    if target not in live.versions:
        cluster.create_index(target, {})
        log(f"created {target} from the templates of {alias}")
    ckpt.target_uuid = index_state(cluster, target).uuid
    body = cluster.get_index(target)
    problems = incompatibilities(body["mappings"], body["settings"], rendered, desired.spec)
    if problems:
        raise ConfigurationError(
            f"{target} exists but does not match the spec ({'; '.join(problems)}); it is left from another "
            f"attempt: remove it with `hybrid prune {alias} --unfinished` and run again"
        )
    scan.require_keys(cluster, source)
    source_info = index_info(cluster, alias, source)
    # the metadata keys declared (or mapped) on the source: the target's mapping is strict
    if source_info.metadata_fields:
        cluster.put_mapping(
            target,
            metadata_mapping.put_body(source_info.metadata_fields),
            action=f"declaring the metadata of {source} in {target}",
        )
    reuse = not source_info.fingerprint.differences(desired.spec.fingerprint)
    return Run(cluster, alias, source, target, source_info, reuse, desired.spec.layout, ckpt.path)


def copy_entries(
    run: Run,
    ckpt: Checkpoint,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    counts: Counts,
    *,
    batch: int,
    progress: bool,
    log: Callable[[str], None],
) -> int:
    """2. Every entry of the source after the checkpoint's key into the target, a batch at a time, the
    checkpoint saved after each; returns the entries this run copied (0: an earlier run finished the copy)."""
    from adapter._progress import Bar

    ckpt.save()  # from here on the checkpoint names the target the cluster has
    if ckpt.copy_done:
        return 0
    if ckpt.copied:
        log(f"resuming the copy {run.source} -> {run.target} after {ckpt.copied} entries (checkpoint {run.checkpoint})")
    copied, base = 0, (ckpt.embedded, ckpt.from_cache, ckpt.reused)
    bar = Bar(f"copy {run.source} -> {run.target}", total=run.cluster.count(run.source), enabled=progress)
    bar.update(ckpt.copied)
    try:
        for page in scan.pages(
            run.cluster, run.source, after=ckpt.after, vector_field=run.source_info.vector_field, with_vectors=run.reuse
        ):
            for start in range(0, len(page), batch):
                part = page[start : start + batch]
                docs = target_documents(
                    part,
                    source_vector=run.source_info.vector_field,
                    layout=run.layout,
                    embedder=embedder,
                    cache=cache,
                    reuse=run.reuse,
                    counts=counts,
                    stamp_reused=not run.source_info.stamps_entries,
                )
                scan.write(run.cluster, run.target, docs)
                copied += len(part)
                ckpt.after, ckpt.copied = list(part[-1].key), ckpt.copied + len(part)
                ckpt.embedded, ckpt.from_cache, ckpt.reused = (
                    base[0] + counts.embedded,
                    base[1] + counts.from_cache,
                    base[2] + counts.reused,
                )
                ckpt.save()
                bar.update(len(part))
    finally:
        bar.close()
    ckpt.copy_done = True
    ckpt.save()
    return copied
