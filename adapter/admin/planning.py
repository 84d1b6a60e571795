"""Plan and apply against a live cluster: ``hybrid plan | apply | diff`` and what ``init`` and
``reindex`` build on.

The state is read once (:func:`read_desired_live`), the desired state rendered for the cluster
(:mod:`adapter.admin.desired`), the pure diff (:func:`adapter.index.plan.plan`) makes the
:class:`~adapter.index.plan.Plan`, and :func:`apply_plan` sends its changes in order.
"""

from __future__ import annotations

from dataclasses import replace

from adapter.admin.desired import pipelines_to_read, render
from adapter.admin.live_state import read_live
from adapter.engines import Cluster, ClusterLike, Engine, cluster_for
from adapter.engines.capabilities import Capabilities
from adapter.index.plan import (
    DELETE,
    UNCHANGED,
    Change,
    ChangeKind,
    Desired,
    LiveState,
    Plan,
    Rendered,
    desired_from_spec,
    plan,
    rebuild_error,
)
from adapter.index.spec import Spec


def read_desired_live(
    cluster: Cluster, desired: Desired, caps: Capabilities, *, own_pipelines: bool = False
) -> LiveState:
    """What the cluster holds for ``desired.alias``: the objects the desired state names (its stored
    fusions; with ``own_pipelines`` every fusion named as the alias's)."""
    engine = cluster.engine
    return read_live(
        cluster, desired.alias, engine, pipelines=pipelines_to_read(desired, caps, engine), own_pipelines=own_pipelines
    )


def plan_live(
    desired: Desired,
    live: LiveState,
    caps: Capabilities,
    engine: Engine,
    *,
    reattach: bool = False,
    prune_pipelines: bool = False,
) -> tuple[Plan, Rendered]:
    """The plan that makes ``live`` into ``desired``, and the desired state as rendered for the cluster
    (what a new index built from it must match). ConfigurationError for what the cluster cannot run
    or holds in the way."""
    rendered = render(desired, caps, engine, live_meta=live.meta)
    return plan(desired, rendered, live, reattach=reattach, prune_pipelines=prune_pipelines), rendered


def plan_spec(client: ClusterLike, spec: Spec, engine: Engine | None = None) -> tuple[Plan, LiveState]:
    """Read the cluster and plan ``spec`` against it (pipelines named as the alias's but not in the
    spec are deleted; an alias deleted by hand is put back)."""
    cluster = cluster_for(client, engine)
    caps = cluster.probe()
    desired = desired_from_spec(spec)
    desired = replace(desired, spec=desired.spec.for_cluster(caps))
    # Pipelines named as the alias's but not in the spec are pruned; an engine that stores no
    # fusions (Elasticsearch) has none to read.
    live = read_desired_live(cluster, desired, caps, own_pipelines=True)
    planned, _ = plan_live(desired, live, caps, cluster.engine, reattach=True, prune_pipelines=True)
    return planned, live


def apply_plan(
    client: ClusterLike, plan_: Plan, *, dry_run: bool = False, rebuild_hint: str = "", shard_wait: float | None = None
) -> tuple[Change, ...]:
    """Send every change of ``plan_`` in order; returns them with what was done (``created``, ...).
    ``shard_wait``: how long a new index's creation waits for its primaries (None: the server's 30 s).

    A plan that needs a new index is refused (IndexMismatchError) before anything is sent.
    """
    if plan_.rebuild:
        raise rebuild_error(plan_, rebuild_hint)
    cluster = cluster_for(client)
    done: list[Change] = []
    for change in plan_.changes:
        if change.action == UNCHANGED:
            done.append(change)
            continue
        action = change.action.applied(dry_run=dry_run)
        if not dry_run:
            _send(cluster, change, f"{change.action} {change.kind} {change.name}", shard_wait)
        done.append(Change(change.kind, change.name, action, change.diff, change.reason, change.body))
    return tuple(done)


def _send(cluster: Cluster, change: Change, action: str, shard_wait: float | None = None) -> None:
    kind, name, body = change.kind, change.name, change.body
    if kind is ChangeKind.ALIAS:
        cluster.put_alias(body, name, action=action)
    elif kind is ChangeKind.COMPONENT_TEMPLATE:
        cluster.put_component_template(name, body, action=action)
    elif kind is ChangeKind.INDEX_TEMPLATE:
        cluster.put_index_template(name, body, action=action)
    elif kind is ChangeKind.PIPELINE and change.action is DELETE:
        cluster.engine.placement.delete(cluster, name, action=action)
    elif kind is ChangeKind.PIPELINE:
        cluster.engine.placement.put(cluster, name, body, action=action)
    elif kind in (ChangeKind.MAPPING, ChangeKind.MAPPING_META):
        cluster.put_mapping(name, body, action=action)
    elif kind is ChangeKind.SETTINGS:
        cluster.put_index_settings(name, body, action=action)
    elif kind is ChangeKind.INDEX:
        cluster.create_index(name, body, shard_wait=shard_wait, action=action)
    else:
        raise AssertionError(f"no sender for {kind}")
