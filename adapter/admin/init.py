"""``hybrid init``: apply templates, create the versioned index behind its alias, put pipelines
(where the engine has them: Elasticsearch fuses inside each request, so there it puts none).

Idempotent: each object is compared with what the cluster holds and only changed objects are sent;
the report says what was created, updated (with a diff) or left unchanged. A change the live index
cannot take (vector dimension, space type, engine, analyzers, the embedding fingerprint, shards)
is refused before anything is written: it needs a new index and re-embedding (``hybrid reindex``).

``init`` is a plan applied (:mod:`adapter.admin.planning`) for the desired state its options describe; it
never deletes a pipeline (``hybrid apply`` with a spec file does, for pipelines the spec drops).
:func:`settle_pending` is init's last step put off to the first ingest, where ``init`` left the analyzer to the
documents (:mod:`adapter.index.choose`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from adapter.admin.planning import apply_plan, plan_live, read_desired_live
from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.errors import BackendError, ConfigurationError, IndexHealthError
from adapter.fusion import DEFAULT_WEIGHTS
from adapter.index.assets import IndexNames, IndexSpec
from adapter.index.catalog import index_meta, read_index_info
from adapter.index.choose import choose_analysis, record_choice
from adapter.index.language import AnalysisChoice, recorded_choice
from adapter.index.plan import Action, Change, ChangeKind, Desired, json_diff

INIT_REBUILD_HINT = (
    "`hybrid init` does not do that: `hybrid reindex` builds it and swaps the alias (docs/OPERATIONS.md)"
)


# The empty shard: hidden (no wildcard finds it), write-blocked (it stays empty), one shard, no replica.
EMPTY_SHARD_BODY = {
    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0, "hidden": True, "blocks.write": True}}
}


@dataclass(frozen=True)
class InitReport:
    alias: str
    index: str
    changes: tuple[Change, ...]
    default_pipeline: str | None = None  # what a hybrid query without a pipeline is fused by
    default_fusion: str | None = None  # without search pipelines (Elasticsearch): what the adapter fuses by, from _meta
    # what differs from what was asked (an analyzer rebuilt, a fusion that will fall back)
    notices: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return any(c.action is not Action.UNCHANGED for c in self.changes)


def wait_for_yellow(cluster: Cluster, index: str, seconds: float, *, left: float | None = None) -> None:
    """Until ``index`` is yellow or green, at most ``seconds`` (``left`` of them, when some were spent already);
    else IndexHealthError with the server's explanation."""
    health = cluster.health(
        index, wait_for_status="yellow", timeout=f"{max(round(seconds if left is None else left), 1)}s"
    )
    if health.get("status") in ("yellow", "green") and not health.get("timed_out"):
        return
    explain = cluster.allocation_explain(index)
    raise IndexHealthError(
        f"{index} is {health.get('status')} after {seconds:g} s: {health.get('unassigned_shards', '?')} shards "
        f"unassigned, {health.get('active_primary_shards', '?')} primaries active ({_why_unassigned(explain)}). The "
        "index and its alias exist but cannot take writes; fix the cause (GET _cluster/allocation/explain says more), "
        "then run `hybrid init` again: it waits for yellow",
        reason=str(health.get("status")),
    )


def _why_unassigned(explain: Mapping[str, Any] | None) -> str:
    if not explain:
        return "the server did not say why"
    reason = (
        explain.get("allocate_explanation") or (explain.get("unassigned_info") or {}).get("reason") or "no explanation"
    )
    deciders = [
        d.get("explanation") for n in explain.get("node_allocation_decisions") or [] for d in n.get("deciders") or []
    ]
    return f"{reason}; {deciders[0]}" if deciders and deciders[0] else str(reason)


def _enable_server_mmr(cluster: Cluster, *, dry_run: bool) -> Change:
    """Turn on the server's MMR processors (a persistent cluster setting), keeping what is there."""
    change = cluster.enable_server_mmr(dry_run=dry_run)
    if not change.changed:
        return Change(ChangeKind.CLUSTER_SETTING, change.name, Action.UNCHANGED)
    return Change(
        ChangeKind.CLUSTER_SETTING,
        change.name,
        Action.UPDATE.applied(dry_run=dry_run),
        json_diff({change.name: change.before}, {change.name: change.after}, change.name),
    )


def _empty_shard(
    cluster: Cluster, engine: Engine, *, serverless: bool, dry_run: bool
) -> tuple[tuple[Change, ...], tuple[str, ...]]:
    """The engine's empty shard (:attr:`~adapter.engines.Engine.empty_shard_index`), created once per
    cluster where the engine needs one; a cluster that refuses it only makes its hybrid searches fetch
    their excerpts in a second request (the notice says so)."""
    name = engine.empty_shard_index
    if name is None or serverless:  # Serverless: no shards to add
        return (), ()
    if cluster.index_exists(name, action=f"checking for {name}"):
        return (), ()  # the cluster's, not this index's: listed only when this init creates it
    body = EMPTY_SHARD_BODY
    if not dry_run:
        try:
            cluster.create_index(name, body, action=f"creating {name}")
        except BackendError as exc:
            if exc.status == 400 and "already_exists" in (exc.reason or ""):  # another init created it meanwhile
                return (), ()
            if exc.status != 403:
                raise
            return (), (
                f"could not create {name} (403: {exc.reason}): hybrid searches of a one-shard index fetch their "
                "excerpts in a second request (an admin can run `hybrid init` once to create it)",
            )
    return (
        Change(
            ChangeKind.INDEX,
            name,
            Action.CREATE.applied(dry_run=dry_run),
            reason="an empty shard searched beside one-shard indices: the server fuses, then fetches the page alone",
            body=body,
        ),
    ), ()


def init_index(
    client: ClusterLike,
    alias: str,
    spec: IndexSpec,
    *,
    weights: tuple[float, float] = DEFAULT_WEIGHTS,
    extra_pipelines: Mapping[str, Mapping[str, Any]] | None = None,
    dry_run: bool = False,
    engine: Engine | None = None,
    reattach: bool = False,
    server_mmr: bool = False,
    wait_timeout: float = 30.0,
) -> InitReport:
    """Make the cluster match the assets for index ``alias``; see the module docstring.

    An index ``<alias>-vN`` whose alias was deleted by hand is refused with a clear error unless
    ``reattach`` is set: then the alias is put back on the newest one (and the rest proceeds).
    ``server_mmr`` turns on the k-NN plugin's MMR processors for the whole cluster (a persistent
    cluster setting; 3.3+), so that dense searches with MMR run it on the server. The index must
    reach yellow (every primary assigned) within ``wait_timeout`` seconds (0: no wait), else
    :class:`IndexHealthError` says which shards are unassigned and why.
    """
    cluster = cluster_for(client, engine)
    engine, caps = cluster.engine, cluster.probe()
    if server_mmr and not caps.server_mmr:
        raise ConfigurationError(
            f"server-side MMR needs the k-NN plugin 3.3+; the cluster runs {caps.engine} {caps.version}"
        )
    w_text, w_dense = weights
    desired = Desired(IndexNames(alias).alias, spec.for_cluster(caps), (w_text, w_dense), dict(extra_pipelines or {}))
    live = read_desired_live(cluster, desired, caps)
    planned, _ = plan_live(desired, live, caps, engine, reattach=reattach)
    deadline = time.monotonic() + wait_timeout  # one wait in all: the creation's for the primaries, then yellow
    changes = apply_plan(
        cluster, planned, dry_run=dry_run, rebuild_hint=INIT_REBUILD_HINT, shard_wait=wait_timeout or None
    )
    # Serverless has no shards to wait for (and no _cluster/health)
    if not dry_run and wait_timeout and not caps.serverless:
        wait_for_yellow(cluster, planned.index, wait_timeout, left=max(deadline - time.monotonic(), 1.0))
    if server_mmr:
        changes += (_enable_server_mmr(cluster, dry_run=dry_run),)
        if not dry_run:
            cluster.probe(refresh=True)
    shard, notices = (
        _empty_shard(cluster, engine, serverless=caps.serverless, dry_run=dry_run) if caps.hybrid else ((), ())
    )
    return InitReport(
        alias,
        planned.index,
        changes + shard,
        planned.default_pipeline,
        planned.default_fusion,
        planned.notices + notices,
    )


def settle_pending(cluster: Cluster, alias: str, texts: Iterable[str], *, source: str) -> AnalysisChoice | None:
    """At an ingest into ``alias``: when ``hybrid init`` left the analyzer to the first documents and the
    index is still empty, choose it from ``texts`` and rebuild the empty index with it if it differs
    (the embedder stays the index's). Returns the choice made, else None (nothing was pending)."""
    from adapter.index.live import live_spec

    info = read_index_info(cluster, alias)
    meta = index_meta(cluster, info.index)
    recorded = recorded_choice(meta)
    if not recorded or not recorded.get("pending"):
        return None
    live = live_spec(cluster, alias)
    if live is None:
        return None
    if cluster.count(info.index, action=f"counting {info.index}") > 0:
        kept = AnalysisChoice(live.analyzer, live.embedder, "documents were written before the first ingest chose")
        record_choice(cluster, info.index, kept)
        return kept
    choice = replace(choose_analysis(cluster, texts, source=source), embedder=live.embedder)
    index = info.index
    if choice.analyzer != live.analyzer:
        kept_meta = {k: v for k, v in meta.items() if k not in live.index_spec().meta and k != "analysis"}
        cluster.delete_indices(
            [index], action=f"deleting the empty {index} to rebuild it with analyzer {choice.analyzer}"
        )
        report = init_index(
            cluster,
            alias,
            replace(live, analyzer=choice.analyzer).index_spec(),
            weights=live.weights,
            extra_pipelines=live.pipelines,
        )
        index = report.index
        if kept_meta:  # what calibrate or others kept beside the assets' keys
            cluster.put_mapping(
                index, {"_meta": {**index_meta(cluster, index), **kept_meta}}, action=f"restoring _meta of {index}"
            )
    record_choice(cluster, index, choice)
    return choice
