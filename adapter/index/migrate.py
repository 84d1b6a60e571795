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
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.errors import ConfigurationError, MigrationError
from adapter.index import metadata as metadata_mapping
from adapter.index import scan
from adapter.index.catalog import IndexInfo, alias_indices, index_version
from adapter.index.documents import EMBEDDED_BY_FIELD, DocumentLayout, embedding_text, hit_text, hit_title
from adapter.index.plan import (
    Action,
    ChangeKind,
    Desired,
    LiveState,
    Plan,
    apply_plan,
    desired_pipelines,
    incompatibilities,
    plan,
    read_live,
    versions_of,
)
from adapter.models.cache import EmbeddingCache, default_cache_path, embed_documents
from adapter.models.embedders import Embedder, check_fingerprint, check_vectors

WRITE_BLOCK = "index.blocks.write"


# -- the checkpoint -----------------------------------------------------------------------------------
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
            raise ConfigurationError(f"the migration checkpoint {path} is unreadable ({exc}); delete it to start the copy over") from exc

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


# -- the gate -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gate:
    """Refuse the swap when nDCG@10 on ``dataset`` (a labelled set of this index's documents)
    drops by more than ``max_drop`` (absolute) from the live index to the new one."""

    dataset: Any  # adapter.evaluation.metrics.Dataset
    max_drop: float = 0.02


@dataclass(frozen=True)
class GateResult:
    old: float
    new: float
    queries: int
    max_drop: float

    @property
    def passed(self) -> bool:
        return self.new >= self.old - self.max_drop - 1e-12


def _ndcg(cluster: Cluster, index: str, embedder: Embedder, dataset: Any, caps: Capabilities, engine: Engine,
          vectors: dict[str, Any]) -> float:
    from adapter.evaluation.metrics import evaluate
    from adapter.evaluation.report import TechniqueSpec
    from adapter.evaluation.run import run_technique
    from adapter.search import Searcher
    from adapter.search.results import Technique

    searcher = Searcher(cluster, _info(cluster, index, index), caps, embedder, engine=engine)
    ranked, *_ = run_technique(searcher, dataset.queries, vectors, TechniqueSpec("hybrid", Technique.HYBRID), k=10, depth=100,
                               progress=False)
    return evaluate(dataset.qrels, {q: [d for d, _ in hits] for q, hits in ranked.items()})["ndcg@10"]


def run_gate(cluster: Cluster, gate: Gate, *, old: tuple[str, Embedder], new: tuple[str, Embedder], engine: Engine) -> GateResult:
    """nDCG@10 of the default hybrid search on both indices (query vectors computed once per model)."""
    caps = cluster.probe()
    vectors: dict[str, dict[str, Any]] = {}
    scores = []
    for index, embedder in (old, new):
        key = embedder.fingerprint.key
        if key not in vectors:
            vectors[key] = {qid: embedder.embed_query(text) for qid, text in gate.dataset.queries.items()}
        scores.append(_ndcg(cluster, index, embedder, gate.dataset, caps, engine, vectors[key]))
    return GateResult(scores[0], scores[1], len(gate.dataset.queries), gate.max_drop)


# -- reports ---------------------------------------------------------------------------------------------
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


# -- building blocks -------------------------------------------------------------------------------------
def _info(cluster: Cluster, alias: str, index: str) -> IndexInfo:
    return IndexInfo.from_index(alias, index, cluster.get_index(index))


@dataclass
class _Counts:
    embedded: int = 0
    from_cache: int = 0
    reused: int = 0


def _documents(entries: Sequence[scan.Entry], *, source_vector: str, layout: DocumentLayout, embedder: Embedder,
               cache: EmbeddingCache | None, reuse: bool, counts: _Counts, stamp_reused: bool = True,
               target_stamps: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The target's version of ``entries``: their stored fields, the vector under the target's
    field, computed by ``embedder`` (or, with ``reuse``, the source's where it has one), and
    ``embedded_by``: the model's key on a vector computed now; a reused vector keeps the source's
    stamp (or its absence: `hybrid check` reports it), unless ``stamp_reused`` (the source index
    predates stamps, and its vectors are taken as its model's, as before). A target without the
    field (a rollback to a version that predates it) gets none."""
    vectors: list[Any] = [None] * len(entries)
    if reuse:
        for i, e in enumerate(entries):
            v = e.source.get(source_vector)
            if isinstance(v, list) and len(v) == embedder.dimension:
                vectors[i] = v
                counts.reused += 1
    todo = [i for i, v in enumerate(vectors) if v is None]
    if todo:
        texts = [embedding_text(hit_title(layout, entries[i].source), hit_text(layout, entries[i].source)) for i in todo]
        got = embed_documents(embedder, texts, cache)
        check_vectors(got.vectors, embedder.fingerprint, what=f"vectors from {embedder.fingerprint.model}")
        counts.embedded += got.embedded
        counts.from_cache += got.from_cache
        for i, v in zip(todo, got.vectors):
            vectors[i] = v
    out = []
    computed = set(todo)
    for i, (e, v) in enumerate(zip(entries, vectors)):
        doc = {k: val for k, val in e.source.items() if k != source_vector}
        if not target_stamps:
            doc.pop(EMBEDDED_BY_FIELD, None)
        elif i in computed or stamp_reused:
            doc[EMBEDDED_BY_FIELD] = embedder.fingerprint.key
        doc[layout.vector_field] = [float(x) for x in np.asarray(v, dtype=np.float32)]
        out.append((e.id, doc))
    return out


def _refresh(cluster: Cluster, *indices: str) -> None:
    cluster.refresh(indices)


def _block_writes(cluster: Cluster, index: str, blocked: bool) -> None:
    cluster.put_index_settings(index, {WRITE_BLOCK: blocked},
                                           action=f"{'blocking' if blocked else 'allowing'} writes to {index}")


@dataclass(frozen=True)
class _IndexState:
    uuid: str | None
    blocks: tuple[str, ...]  # the blocks set on it: write, read_only, read_only_allow_delete

    @property
    def writable(self) -> bool:
        return not self.blocks


def _index_state(cluster: Cluster, index: str) -> _IndexState:
    settings = cluster.get_index(index, action=f"reading the settings of {index}")["settings"]
    settings = settings.get("index", settings)
    blocks = settings.get("blocks") or {}
    return _IndexState(settings.get("uuid"), tuple(b for b in ("write", "read_only", "read_only_allow_delete")
                                                   if str(blocks.get(b)).lower() == "true"))


def _alias_targets(cluster: Cluster, alias: str) -> list[str]:
    return alias_indices(cluster, alias)


def _require_writable_alias(cluster: Cluster, alias: str, expected: str) -> None:
    """After a swap: the alias names exactly ``expected``, and it takes writes."""
    now = _alias_targets(cluster, alias)
    if now != [expected]:
        raise MigrationError(f"after the swap {alias} points to {', '.join(now) or 'nothing'}, not {expected} alone; "
                             f"check it with `hybrid plan` before writing")
    state = _index_state(cluster, expected)
    if not state.writable:
        raise MigrationError(f"after the swap {alias} points to {expected}, which refuses writes (index.blocks."
                             f"{', index.blocks.'.join(state.blocks)}); lift the block on {expected} before writing")


@dataclass
class _Sync:
    """Copies what changed in ``source`` into ``target`` (one comparison pass at a time)."""

    cluster: Cluster
    source: str
    target: str
    source_vector: str
    layout: DocumentLayout  # the target's
    embedder: Embedder  # the target's model
    cache: EmbeddingCache | None
    reuse: bool
    counts: _Counts = field(default_factory=_Counts)
    stamp_reused: bool = True  # the source predates embedded_by (see _documents)
    target_stamps: bool = True  # the target's mapping has embedded_by
    copied: int = 0
    deleted: int = 0
    passes: int = 0

    def once(self, batch: int) -> scan.Comparison:
        """One pass: compare, then copy and delete what differs. Returns the comparison (before the fixes)."""
        _refresh(self.cluster, self.source, self.target)
        cmp = scan.compare(self.cluster, self.source, self.target, source_vector=self.source_vector,
                           target_vector=self.layout.vector_field)
        self.passes += 1
        for start in range(0, len(cmp.to_copy), batch):
            docs = _documents(cmp.to_copy[start:start + batch], source_vector=self.source_vector, layout=self.layout,
                              embedder=self.embedder, cache=self.cache, reuse=self.reuse, counts=self.counts,
                              stamp_reused=self.stamp_reused, target_stamps=self.target_stamps)
            scan.write(self.cluster, self.target, docs)
        scan.write(self.cluster, self.target, [], cmp.to_delete)
        self.copied += len(cmp.to_copy)
        self.deleted += len(cmp.to_delete)
        return cmp

    def until_quiet(self, batch: int, max_passes: int, log: Callable[[str], None]) -> None:
        for _ in range(max_passes):
            cmp = self.once(batch)
            log(f"catch-up pass {self.passes}: {len(cmp.to_copy)} entries copied, {len(cmp.to_delete)} deleted "
                f"({cmp.source_count} in {self.source})")
            if cmp.same:
                return

    def final(self, batch: int) -> scan.Comparison:
        """Under the write block: a last pass, then a check that both hold the same entries."""
        self.once(batch)
        _refresh(self.cluster, self.target)
        check = scan.compare(self.cluster, self.source, self.target, source_vector=self.source_vector,
                             target_vector=self.layout.vector_field)
        if not check.same or check.source_count != check.target_count or check.source_checksum != check.target_checksum:
            raise MigrationError(
                f"{self.target} does not hold what {self.source} holds after the last catch-up pass ({check.source_count} vs "
                f"{check.target_count} entries, {len(check.to_copy)} to copy, {len(check.to_delete)} to delete); the alias "
                "was not moved and writes to the source are allowed again. Run the same command again"
            )
        return check


def _swap(cluster: Cluster, alias: str, old: str, new: str) -> None:
    """One ``_aliases`` call: searches see either the old index or the new one, never neither or both."""
    actions = [{"remove": {"index": old, "alias": alias}}, {"add": {"index": new, "alias": alias}}]
    cluster.update_aliases(actions, action=f"moving the alias {alias} from {old} to {new}")


def _freeze_and_swap(cluster: Cluster, sync: _Sync, alias: str, batch: int, ckpt: Checkpoint | None = None,
                     log: Callable[[str], None] = print) -> tuple[scan.Comparison, float]:
    """Write-block the source, catch up once more, check, make sure the target takes writes, swap,
    and check that the alias ends on one writable index. Whatever interrupts it (an error, SIGTERM
    turned into an exception by the CLI) is met by asking the node where the alias is: if the swap
    reached it, the migration is over (the checkpoint goes, the source keeps its block); if not, the
    source takes writes again."""
    started = time.perf_counter()
    if ckpt is not None:
        ckpt.at(Phase.FREEZE)
    try:
        _block_writes(cluster, sync.source, True)
        check = sync.final(batch)
        if not _index_state(cluster, sync.target).writable:  # a rollback left its block, or someone set one
            _block_writes(cluster, sync.target, False)
        if ckpt is not None:
            ckpt.at(Phase.SWAP)
        _swap(cluster, alias, sync.source, sync.target)
    except BaseException:
        if _swap_reached(cluster, alias, sync.target):
            if ckpt is not None:
                ckpt.remove()
            log(f"interrupted, but the swap had reached the cluster: {alias} points to {sync.target}, which takes writes; "
                f"{sync.source} keeps its write block. The migration is complete")
        else:
            _block_writes(cluster, sync.source, False)
            if ckpt is not None:
                ckpt.at(Phase.CATCH_UP)
            log(f"interrupted before the swap: {alias} still points to {sync.source}, which takes writes again"
                + (f"; run the same command again to continue (checkpoint {ckpt.path})" if ckpt is not None else ""))
        raise
    if ckpt is not None:
        ckpt.remove()
    _require_writable_alias(cluster, alias, sync.target)
    return check, time.perf_counter() - started


def _swap_reached(cluster: Cluster, alias: str, target: str) -> bool:
    """Whether the alias names ``target`` now (False when the node cannot say)."""
    try:
        return _alias_targets(cluster, alias) == [target]
    except Exception:  # noqa: BLE001 (an unreachable node: the caller reports the original error)
        return False


# -- reindex ------------------------------------------------------------------------------------------------
def _templates_and_pipelines(plan_: Plan) -> Plan:
    kinds = (ChangeKind.COMPONENT_TEMPLATE, ChangeKind.INDEX_TEMPLATE, ChangeKind.PIPELINE)
    keep = tuple(c for c in plan_.changes if c.kind in kinds and c.action is not Action.DELETE)
    return replace(plan_, changes=keep, rebuild=())


def reindex(client: ClusterLike, desired: Desired, embedder: Embedder, *, cache: EmbeddingCache | None = None,
            checkpoint: str | Path | None = None, gate: Gate | None = None, source_embedder: Embedder | None = None,
            allowed: Sequence[str] | None = None, swap: bool = True, force: bool = False, batch: int = 64, max_passes: int = 5,
            engine: Engine | None = None, progress: bool = True, log: Callable[[str], None] = print) -> MigrationReport:
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
    caps, live = _read_source(cluster, desired)
    ckpt, finished = _checkpoint(cluster, desired, live, checkpoint, log)
    if finished:
        return MigrationReport(desired.alias, ckpt.source, ckpt.target, sync_count(cluster, ckpt.target), swapped=False,
                               seconds={"total": time.perf_counter() - t0})
    run = _prepare_target(cluster, desired, caps, live, ckpt, force=force, log=log)
    resumed_after, counts, seconds = ckpt.copied, _Counts(), {}

    t = time.perf_counter()  # 2. copy
    copied = _copy(run, ckpt, embedder, cache, counts, batch=batch, progress=progress, log=log)
    seconds["copy"] = time.perf_counter() - t

    t = time.perf_counter()  # 3. catch up
    ckpt.at(Phase.CATCH_UP)
    sync = _Sync(cluster, run.source, run.target, run.source_info.vector_field, run.layout, embedder, cache, run.reuse,
                 counts=counts, stamp_reused=not run.source_info.stamps_entries)
    sync.until_quiet(batch, max_passes, log)
    seconds["catch_up"] = time.perf_counter() - t

    result = None  # 4. gate
    if gate is not None:
        t = time.perf_counter()
        old_embedder = embedder if run.reuse else source_embedder or _source_embedder(run.source_info, allowed)
        result = _passed_gate(run, gate, old_embedder, embedder, log)
        seconds["gate"] = time.perf_counter() - t

    check = None  # 5. swap
    if swap:
        check, seconds["write_block"] = _freeze_and_swap(cluster, sync, desired.alias, batch, ckpt, log)
        log(f"alias {desired.alias}: {run.source} -> {run.target} ({check.source_count} entries, checksum "
            f"{check.source_checksum[:16]}); {run.source} is kept, write-blocked, until `hybrid prune {desired.alias}`")
    seconds["total"] = time.perf_counter() - t0
    return MigrationReport(
        desired.alias, run.source, run.target, check.source_count if check else sync_count(cluster, run.target), copied=copied,
        resumed_after=resumed_after, embedded=counts.embedded, from_cache=counts.from_cache, reused=counts.reused,
        caught_up=sync.copied, deleted=sync.deleted, passes=sync.passes, checksum=check.source_checksum if check else "",
        swapped=swap, gate=result, seconds=seconds,
    )


@dataclass(frozen=True)
class _Run:
    """One migration's fixed facts, read before its copy starts."""

    cluster: Cluster
    alias: str
    source: str  # the index the alias names
    target: str  # the index being built
    source_info: IndexInfo
    reuse: bool  # the model did not change: the source's vectors are copied, not computed
    layout: DocumentLayout  # the target's
    checkpoint: Path


def _read_source(cluster: Cluster, desired: Desired) -> tuple[Capabilities, LiveState]:
    """The cluster's capabilities and what it holds for the alias (refused: no index to migrate)."""
    caps = cluster.probe()
    wanted = list(desired_pipelines(desired, caps, cluster.engine)) if caps.hybrid else []
    live = read_live(cluster, desired.alias, cluster.engine, pipelines=wanted, caps=caps)
    if not live.indices or live.current is None:
        raise ConfigurationError(f"no hybrid index {desired.alias!r} to migrate (create it with `hybrid apply` or `hybrid init`)")
    return caps, live


def _checkpoint(cluster: Cluster, desired: Desired, live: LiveState, path: str | Path | None,
                log: Callable[[str], None]) -> tuple[Checkpoint, bool]:
    """The checkpoint to continue from (``path``, else the default one), when it still describes the
    cluster, else a new one into the next version; True: an earlier run's swap had reached the node,
    nothing is left to do."""
    where = Path(path) if path else default_checkpoint(cluster, desired.alias)
    ckpt, key = Checkpoint.load(where), desired.spec.fingerprint.key
    if ckpt is not None and _finished_earlier(cluster, ckpt, desired.alias, live, key, log):
        return ckpt, True
    kept = _trusted(cluster, ckpt, desired.alias, live, key, log)
    return kept or Checkpoint(where, desired.alias, str(live.current), live.next_index, key), False


def _prepare_target(cluster: Cluster, desired: Desired, caps: Capabilities, live: LiveState, ckpt: Checkpoint, *, force: bool,
                    log: Callable[[str], None]) -> _Run:
    """1. The spec's templates and pipelines applied and the checkpoint's target created from them (or
    found, and checked against the spec); the source's entries keyed and its metadata keys declared
    on the target."""
    alias, source, target, engine = desired.alias, ckpt.source, ckpt.target, cluster.engine
    planned = plan(desired, live, engine, reattach=False)
    if not planned.rebuild and not force and ckpt.copied == 0 and target not in live.versions:
        raise ConfigurationError(f"{source} can take this spec in place: `hybrid apply` is enough (--force builds {target} anyway)")
    apply_plan(cluster, _templates_and_pipelines(planned))
    if target not in live.versions:
        cluster.create_index(target, {})
        log(f"created {target} from the templates of {alias}")
    ckpt.target_uuid = _index_state(cluster, target).uuid
    body = cluster.get_index(target)
    problems = incompatibilities(body["mappings"], body["settings"], desired.names, desired.spec, engine, caps)
    if problems:
        raise ConfigurationError(f"{target} exists but does not match the spec ({'; '.join(problems)}); it is left from another "
                                 f"attempt: remove it with `hybrid prune {alias} --unfinished` and run again")
    scan.require_keys(cluster, source)
    source_info = _info(cluster, alias, source)
    if source_info.metadata_fields:  # the metadata keys declared (or mapped) on the source: the target's mapping is strict
        cluster.put_mapping(target, metadata_mapping.put_body(source_info.metadata_fields),
                            action=f"declaring the metadata of {source} in {target}")
    reuse = not source_info.fingerprint.differences(desired.spec.fingerprint)
    return _Run(cluster, alias, source, target, source_info, reuse, desired.spec.layout, ckpt.path)


def _copy(run: _Run, ckpt: Checkpoint, embedder: Embedder, cache: EmbeddingCache | None, counts: _Counts, *, batch: int,
          progress: bool, log: Callable[[str], None]) -> int:
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
        for page in scan.pages(run.cluster, run.source, after=ckpt.after, vector_field=run.source_info.vector_field,
                               with_vectors=run.reuse):
            for start in range(0, len(page), batch):
                part = page[start:start + batch]
                docs = _documents(part, source_vector=run.source_info.vector_field, layout=run.layout,
                                  embedder=embedder, cache=cache, reuse=run.reuse, counts=counts,
                                  stamp_reused=not run.source_info.stamps_entries)
                scan.write(run.cluster, run.target, docs)
                copied += len(part)
                ckpt.after, ckpt.copied = list(part[-1].key), ckpt.copied + len(part)
                ckpt.embedded, ckpt.from_cache, ckpt.reused = (base[0] + counts.embedded, base[1] + counts.from_cache,
                                                               base[2] + counts.reused)
                ckpt.save()
                bar.update(len(part))
    finally:
        bar.close()
    ckpt.copy_done = True
    ckpt.save()
    return copied


def _passed_gate(run: _Run, gate: Gate, old: Embedder, new: Embedder, log: Callable[[str], None]) -> GateResult:
    """4. The gate's verdict, said; MigrationError when it refuses the swap (the alias stays)."""
    result = run_gate(run.cluster, gate, old=(run.source, old), new=(run.target, new), engine=run.cluster.engine)
    log(f"gate: nDCG@10 {result.old:.4f} on {run.source}, {result.new:.4f} on {run.target} ({result.queries} queries, "
        f"allowed drop {result.max_drop})")
    if not result.passed:
        raise MigrationError(
            f"the gate refused the swap: nDCG@10 drops from {result.old:.4f} ({run.source}) to {result.new:.4f} ({run.target}), more "
            f"than {result.max_drop}. The alias still points to {run.source}; {run.target} stays for inspection "
            f"(`hybrid prune {run.alias} --unfinished` removes it)"
        )
    return result


def _finished_earlier(cluster: Cluster, ckpt: Checkpoint, alias: str, live: LiveState, fingerprint: str, log: Callable[[str], None]) -> bool:
    """A checkpoint whose swap reached the node although its run never learnt it (killed while the
    request was in flight): the alias names its target. Then the migration is over: the checkpoint
    goes, the source keeps its write block, and nothing is swapped again."""
    if (ckpt.alias, ckpt.fingerprint) != (alias, fingerprint) or live.indices != (ckpt.target,) or ckpt.source not in live.versions:
        return False
    state = _index_state(cluster, ckpt.target)
    if ckpt.target_uuid and state.uuid != ckpt.target_uuid:
        return False
    if not state.writable:
        _block_writes(cluster, ckpt.target, False)
    if _index_state(cluster, ckpt.source).writable:
        _block_writes(cluster, ckpt.source, True)
    ckpt.remove()
    log(f"the swap of an earlier run had reached the cluster: {alias} points to {ckpt.target}, which takes writes; "
        f"{ckpt.source} keeps its write block. Nothing left to do (checkpoint {ckpt.path} removed)")
    return True


def _trusted(cluster: Cluster, ckpt: Checkpoint | None, alias: str, live: LiveState, fingerprint: str,
             log: Callable[[str], None]) -> Checkpoint | None:
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
    state = _index_state(cluster, ckpt.target)
    if ckpt.target_uuid and state.uuid != ckpt.target_uuid:
        log(f"the checkpoint's target {ckpt.target} was deleted and made again since: starting over into {live.next_index}")
        return None
    if not state.writable:
        log(f"the checkpoint's target {ckpt.target} carries a write block: it was live and rolled back (or blocked by hand) "
            f"after the checkpoint was written, so the checkpoint is not trusted; building {live.next_index} instead")
        return None
    if ckpt.phase in (Phase.FREEZE.value, Phase.SWAP.value) and not _index_state(cluster, ckpt.source).writable:
        _block_writes(cluster, ckpt.source, False)  # the run died under its write block: the live index takes writes meanwhile
        log(f"the earlier run stopped under its write block: {source} takes writes again until the swap")
    return ckpt


def sync_count(cluster: Cluster, index: str) -> int:
    return cluster.count(index)


def _source_embedder(info: IndexInfo, allowed: Sequence[str] | None = None) -> Embedder:
    from adapter.models.embedders import load_index_embedder

    embedder = load_index_embedder(info.fingerprint.spec, allowed=allowed, index=info.index)
    check_fingerprint(info.index, info.fingerprint, embedder)
    return embedder


# -- rollback and prune -----------------------------------------------------------------------------------------
def rollback(client: ClusterLike, alias: str, *, embedder: Embedder | None = None, allowed: Sequence[str] | None = None,
             cache: EmbeddingCache | None = None, batch: int = 64, max_passes: int = 5, log: Callable[[str], None] = print
             ) -> MigrationReport:
    """Point ``alias`` back at the previous version, after copying into it what was written since the
    swap (embedded with its own model: ``embedder``, or the one its fingerprint names, if allowed)."""
    t0 = time.perf_counter()
    cluster = cluster_for(client)  # the public edge: a user's raw client gets its port here
    current_list = alias_indices(cluster, alias)
    if not current_list:
        raise ConfigurationError(f"no alias {alias!r} on the cluster")
    current = current_list[-1]
    older = [v for v in sorted(versions_of(cluster, alias), key=index_version) if index_version(v) < index_version(current)]
    if not older:
        raise ConfigurationError(_nothing_to_roll_back(cluster, alias, current))
    previous = older[-1]
    prev_info, cur_info = _info(cluster, alias, previous), _info(cluster, alias, current)
    embedder = embedder or _source_embedder(prev_info, allowed)
    check_fingerprint(previous, prev_info.fingerprint, embedder)
    reuse = not cur_info.fingerprint.differences(prev_info.fingerprint)
    if prev_info.metadata_strict and cur_info.metadata_fields:  # keys declared since the swap
        cluster.put_mapping(previous, metadata_mapping.put_body(cur_info.metadata_fields),
                            action=f"declaring the metadata of {current} in {previous}")
    sync = _Sync(cluster, current, previous, cur_info.vector_field, prev_info.layout, embedder, cache, reuse,
                 stamp_reused=not cur_info.stamps_entries, target_stamps=prev_info.stamps_entries)
    try:
        _block_writes(cluster, previous, False)  # the catch-up writes into it
        sync.until_quiet(batch, max_passes, log)
    except BaseException:
        _block_writes(cluster, previous, True)  # not live: a writer aimed at it is refused again
        raise
    check, blocked = _freeze_and_swap(cluster, sync, alias, batch, log=log)
    _forget_checkpoint(cluster, alias, current, log)
    log(f"alias {alias}: {current} -> {previous} ({check.source_count} entries); {current} is kept, write-blocked")
    return MigrationReport(alias, current, previous, check.source_count, embedded=sync.counts.embedded,
                           from_cache=sync.counts.from_cache, reused=sync.counts.reused, caught_up=sync.copied,
                           deleted=sync.deleted, passes=sync.passes, checksum=check.source_checksum, swapped=True,
                           seconds={"write_block": blocked, "total": time.perf_counter() - t0})


def _nothing_to_roll_back(cluster: Cluster, alias: str, current: str) -> str:
    """Why ``alias`` has no version to go back to, and the ways out. A reindex killed before its swap (in its
    copy or its freeze: SIGKILL runs no cleanup) leaves the alias on ``current``, a newer unswapped version and,
    from the freeze, a write block on ``current``: that is no rollback's to undo, but the reindex's to finish or drop."""
    newer = sorted((v for v in versions_of(cluster, alias) if index_version(v) > index_version(current)), key=index_version)
    blocked = "write" in _index_state(cluster, current).blocks
    if not newer and not blocked:
        return (f"{alias} points to {current} and no older version exists to go back to (`hybrid prune` deletes them; "
                "`prune --keep N` keeps some)")
    said = [f"nothing to roll back: {alias} still points to {current}, its only version; no reindex swapped it"]
    if newer:
        said.append(f"{', '.join(newer)} {'is' if len(newer) == 1 else 'are'} an interrupted reindex's unfinished target")
    if blocked:
        said.append(f"{current} is write-blocked ({WRITE_BLOCK}): that reindex was stopped in its freeze, before the swap, "
                    "so every write to the alias is refused")
    return ("; ".join(said) + ". Ways out: run the same `hybrid reindex` again (it resumes from its checkpoint and swaps), "
            f"or `hybrid prune {alias} --unfinished` to abandon it (deletes {', '.join(newer) or 'nothing newer'} and lifts the "
            f"write block on {current})")


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


def prune(client: ClusterLike, alias: str, *, keep: int = 0, unfinished: bool = False, dry_run: bool = False) -> PruneReport:
    """Delete the versions of ``alias`` older than the one it points to, but the newest ``keep``
    (to roll back to); ``unfinished`` also deletes newer ones a migration left unswapped, and lifts
    the write block a migration that died during its swap left on the live index."""
    if keep < 0:
        raise ConfigurationError(f"keep must be 0 or more, got {keep}")
    cluster = cluster_for(client)  # the public edge
    current_list = alias_indices(cluster, alias)
    if not current_list:
        raise ConfigurationError(f"no alias {alias!r} on the cluster: prune deletes only versions an alias has moved away from")
    current = current_list[-1]
    versions = sorted(versions_of(cluster, alias), key=index_version)
    older = [v for v in versions if index_version(v) < index_version(current) and v not in current_list]
    newer = [v for v in versions if index_version(v) > index_version(current)]
    kept = older[len(older) - keep:] if keep else []
    doomed = [v for v in older if v not in kept] + (newer if unfinished else [])
    if doomed and not dry_run:
        cluster.delete_indices(doomed)
    if unfinished and not dry_run and (newer or "write" in _index_state(cluster, current).blocks):
        _block_writes(cluster, current, False)  # a migration that died under its write block leaves it: abandoning it lifts it
    return PruneReport(alias, current, tuple(doomed), tuple(kept), tuple(newer))

