"""The engine port: every cluster operation the shell needs, as typed methods.

A :class:`Cluster` is one engine's connection to one cluster, its client inside. Searching,
ingesting, plan and apply, migrations, calibration, evaluation and ``check`` call these methods
and never a client library; each engine package implements them with its own client
(:mod:`adapter.engines.opensearch`, :mod:`adapter.engines.elasticsearch`), translates that
client's exceptions into the adapter's tree, and owns what differs on the wire: search pipelines,
points in time, the bulk helpers, the probe. A third engine is one more package with a
:class:`Cluster` and an :class:`~adapter.engines.engine.Engine` (``tests/support/fake_engine`` is one,
in memory).

:class:`Cluster` is a small core and named facets, each an ABC of its own: :class:`ClusterCore` (14 methods:
the probe, searches, reads, bulk writes, whether an index or alias is there), :class:`PointInTime` (2),
:class:`IndexAdmin` (9), :class:`Templates` (5) and :class:`ClusterAdmin` (5); code that needs less types its
parameter as the part it uses. What only some engines have is a facet the port derives besides :class:`Cluster`
(:class:`SearchPipelines`, 4, found as :attr:`ClusterCore.pipelines`): an engine writes what it has, never refusals.

Every method raises :class:`~adapter.errors.BackendError` (with the server's status and reason)
or one of its subclasses; ``action`` names what the caller was doing, for the message
("searching docs: OpenSearch answered 400: ...").

The search requests a port sends (``search``, ``msearch``, ``mget``) are recorded, as sent, in the
calling context's :func:`recording` (``SearchResult.sent``, ``hybrid search --show-query``).
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from adapter.engines.capabilities import EngineName
from adapter.engines.dsl import SentRequest

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.engine import Engine


Body = Mapping[str, Any]
Json = dict[str, Any]


# -- what a search sent ------------------------------------------------------------------------------
_SENT: contextvars.ContextVar[list[SentRequest] | None] = contextvars.ContextVar("hybrid_sent", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[SentRequest]]:
    """The search requests sent by ports in this block (this thread or task only), in order."""
    sent: list[SentRequest] = []
    token = _SENT.set(sent)
    try:
        yield sent
    finally:
        _SENT.reset(token)


def record(method: str, path: str, params: Mapping[str, Any] | None, body: Any) -> None:
    """Keep one request in the current :func:`recording` (a reference to ``body``: no copy)."""
    sent = _SENT.get()
    if sent is not None:
        sent.append(SentRequest(method, path, dict(params or {}), body))


def forget_last() -> None:
    """Drop the last recorded request (one the server refused and the caller replaced)."""
    sent = _SENT.get()
    if sent:
        sent.pop()


# -- how many requests went out -----------------------------------------------------------------------
_COUNTED: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("hybrid_counted", default=None)


@contextlib.contextmanager
def counting() -> Iterator[list[int]]:
    """How many HTTP requests the adapter's clients sent in this block (this thread or task only; every
    attempt, the transport's retries and refused requests included): ``counted[0]``, counted as the
    connection logs each (:func:`count_request`)."""
    counted = [0]
    token = _COUNTED.set(counted)
    try:
        yield counted
    finally:
        _COUNTED.reset(token)


def count_request() -> None:
    """One HTTP request went out (called by each engine's connection, once per attempt)."""
    counted = _COUNTED.get()
    if counted is not None:
        counted[0] += 1


# -- typed values ------------------------------------------------------------------------------------
@dataclass
class BulkCounts:
    """What the bulk helpers did without saying: items the cluster refused with 429 (a full write
    queue) and the helper sent again after a pause."""

    rejected_429: int = 0


@dataclass(frozen=True)
class BulkOptions:
    """How :meth:`Cluster.bulk` sends: ``batch_size`` actions per request, 429s retried
    ``max_retries`` times with exponential backoff from ``initial_backoff`` up to ``max_backoff``
    seconds (the bulk helpers' defaults); ``raise_on_exception``: a request that got no answer
    raises, else its actions come back failed with the status ``"N/A"``."""

    batch_size: int = 500
    max_retries: int = 5
    initial_backoff: float = 2.0
    max_backoff: float = 600.0
    raise_on_exception: bool = False


@dataclass(frozen=True)
class SettingChange:
    """A cluster setting as it was and as it is (or would be) after a change."""

    name: str
    before: Any
    after: Any

    @property
    def changed(self) -> bool:
        return bool(self.before != self.after)


class _Engined(abc.ABC):
    """What the core and every facet share: the port's engine."""

    engine: Engine

    @property
    def name(self) -> EngineName:
        return EngineName(self.engine.name)


class ClusterCore(_Engined):
    """The core of a port, what every engine implements: what searching and ingesting into an index that
    exists need (the cluster's capabilities, searches, reads, bulk writes, whether an index or alias is there)."""

    @property
    def retried_statuses(self) -> frozenset[int]:
        """The HTTP statuses this port's client asks again by itself (its transport's retry policy):
        a caller does not ask them again on top (one retry policy per request). None by default."""
        return frozenset()

    # -- the optional facet: found here, derived only by an engine that has it -------------------------
    @property
    def pipelines(self) -> SearchPipelines | None:
        """This port's search pipelines (:class:`SearchPipelines`); None where its engine has none."""
        return self if isinstance(self, SearchPipelines) else None

    # -- the cluster ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def describe(self) -> str:
        """The cluster's address without credentials, for messages."""

    @abc.abstractmethod
    def probe(self, *, refresh: bool = False) -> Capabilities:
        """What the cluster can do, cached per cluster (``refresh`` asks again)."""

    def search_capabilities(self) -> Capabilities:
        """What a searcher needs of :meth:`probe`, where the engine can tell it for less (OpenSearch:
        ``GET /`` alone; its switching settings read later by :meth:`with_switches`). Default: the probe."""
        return self.probe()

    def with_switches(self, caps: Capabilities) -> Capabilities:
        """``caps`` with every flag read (``caps.switches_read``); what :meth:`search_capabilities` left out."""
        return caps

    # -- searching ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def search(
        self,
        index: str | None,
        body: Body,
        *,
        pipeline: str | None = None,
        action: str | None = None,
        named_scores: bool = False,
    ) -> Json:
        """One search of ``index`` (None: the point in time in ``body``) through the stored search
        ``pipeline`` (engines with search pipelines only). ``named_scores``: each hit's ``matched_queries``
        with each named query's own score (``include_named_queries_score``; OpenSearch's hybrid sub-queries:
        the legs' raw scores)."""

    @abc.abstractmethod
    def msearch(self, index: str, bodies: Sequence[Body], *, action: str | None = None) -> Json:
        """Several searches of ``index`` in one request: the answer as the server gave it."""

    @abc.abstractmethod
    def mget(
        self, index: str, ids: Sequence[str], *, exclude: Sequence[str] = (), action: str | None = None
    ) -> list[Json]:
        """The documents ``ids`` (``found`` false where missing), sources without the ``exclude`` fields."""

    @abc.abstractmethod
    def count(self, index: str, query: Body | None = None, *, action: str | None = None) -> int:
        """How many documents of ``index`` match ``query`` (all without one)."""

    @abc.abstractmethod
    def termvectors(self, index: str, body: Body, *, action: str | None = None) -> Json:
        """Term statistics of the artificial document in ``body``."""

    # -- writing documents ----------------------------------------------------------------------------
    @abc.abstractmethod
    def bulk(
        self,
        actions: Iterable[Mapping[str, Any]],
        options: BulkOptions = BulkOptions(),
        *,
        counts: BulkCounts | None = None,
        action: str | None = None,
    ) -> Iterator[Json]:
        """Send ``actions`` (``_op_type``, ``_index``, ``_id``, ``_source``) in batches; yields each
        failed item (the server's ``{op: {...}}``; a client-side exception under ``exception``,
        already one of the adapter's). 429s are retried and counted in ``counts``."""

    @abc.abstractmethod
    def delete_by_query(self, index: str, query: Body, *, action: str | None = None) -> Json:
        """``_delete_by_query`` that proceeds past version conflicts (the answer: deleted, failures)."""

    @abc.abstractmethod
    def refresh(self, indices: Sequence[str], *, action: str | None = None) -> None: ...

    # -- the index behind a name ----------------------------------------------------------------------
    @abc.abstractmethod
    def index_exists(self, name: str, *, action: str | None = None) -> bool: ...

    @abc.abstractmethod
    def alias_exists(self, name: str, *, action: str | None = None) -> bool: ...

    @abc.abstractmethod
    def aliased_indices(self, alias: str, *, action: str | None = None) -> list[str]:
        """The indices ``alias`` points to (in no order)."""

    @abc.abstractmethod
    def get_index(
        self, index: str, *, include_defaults: bool = False, filter_path: str | None = None, action: str | None = None
    ) -> Json:
        """``GET <index>``: its ``mappings`` and ``settings`` (and ``defaults`` when asked)."""

    def get_indices(
        self, name: str, *, include_defaults: bool = False, filter_path: str | None = None, action: str | None = None
    ) -> dict[str, Json] | None:
        """``GET <name>``: each concrete index ``name`` stands for (itself, or an alias's indices) by
        its name, with what :meth:`get_index` answers; None where ``name`` is neither. A port whose
        engine answers it in one request says so by overriding this (the default asks three)."""
        if self.alias_exists(name, action=action):
            return {
                index: self.get_index(index, include_defaults=include_defaults, filter_path=filter_path, action=action)
                for index in self.aliased_indices(name, action=action)
            }
        if self.index_exists(name, action=action):
            return {
                name: self.get_index(name, include_defaults=include_defaults, filter_path=filter_path, action=action)
            }
        return None


class PointInTime(_Engined):
    """The facet of points in time: a consistent view of an index across searches (scans, migrations)."""

    @abc.abstractmethod
    def open_point_in_time(self, index: str, *, keep_alive: str) -> str:
        """A point in time on ``index``: its id, for ``search(None, {"pit": {"id": ...}})``."""

    @abc.abstractmethod
    def close_point_in_time(self, pit: str) -> None: ...


class IndexAdmin(_Engined):
    """The facet of index administration: indices and aliases made, changed and found by pattern."""

    @abc.abstractmethod
    def indices_matching(self, pattern: str, *, action: str | None = None) -> list[str]:
        """Indices whose names match ``pattern`` (none: empty)."""

    @abc.abstractmethod
    def aliases_matching(self, pattern: str, *, action: str | None = None) -> set[str]:
        """Aliases whose names match ``pattern`` (none: empty)."""

    @abc.abstractmethod
    def create_index(
        self, index: str, body: Body, *, shard_wait: float | None = None, action: str | None = None
    ) -> None:
        """Create ``index``. The server answers once its primaries started, or after ``shard_wait`` seconds
        (None: its own default, 30 s) with the index made but not yet started."""

    @abc.abstractmethod
    def delete_indices(self, indices: Sequence[str], *, action: str | None = None) -> None:
        """Delete these indices, by name (no wildcards: Elasticsearch refuses them)."""

    @abc.abstractmethod
    def get_mapping(self, index: str, *, action: str | None = None) -> Json:
        """``GET <index>/_mapping``, keyed by the concrete index."""

    @abc.abstractmethod
    def put_mapping(self, index: str, body: Body, *, action: str | None = None) -> None: ...

    @abc.abstractmethod
    def put_index_settings(self, index: str, body: Body, *, action: str | None = None) -> None: ...

    @abc.abstractmethod
    def put_alias(self, index: str, alias: str, *, action: str | None = None) -> None: ...

    @abc.abstractmethod
    def update_aliases(self, actions: Sequence[Body], *, action: str | None = None) -> None:
        """One ``_aliases`` request: every action applies, or none."""


class Templates(_Engined):
    """The facet of component and index templates (``hybrid init`` and plan/apply keep them)."""

    @abc.abstractmethod
    def get_component_template(self, name: str) -> Json | None:
        """The component template's body (None: there is none)."""

    @abc.abstractmethod
    def put_component_template(self, name: str, body: Body, *, action: str | None = None) -> None: ...

    @abc.abstractmethod
    def get_index_template(self, name: str) -> Json | None:
        """The index template's body (None: there is none)."""

    @abc.abstractmethod
    def index_templates_matching(self, pattern: str) -> list[str]:
        """Names of the index templates matching ``pattern``."""

    @abc.abstractmethod
    def put_index_template(self, name: str, body: Body, *, action: str | None = None) -> None: ...


class ClusterAdmin(_Engined):
    """The facet of the cluster as a whole: its identity, health, shard allocation and settings."""

    @abc.abstractmethod
    def cluster_id(self, *, action: str | None = None) -> str:
        """A name that stays the same for this cluster (its uuid where the engine has one)."""

    @abc.abstractmethod
    def health(
        self, index: str | None = None, *, wait_for_status: str | None = None, timeout: str | None = None
    ) -> Json:
        """``_cluster/health`` (of ``index``), waiting up to ``timeout`` (the server's, e.g. ``"30s"``) for
        ``wait_for_status``; a wait that runs out answers the health as it is then (``timed_out``: true)."""

    @abc.abstractmethod
    def allocation_explain(self, index: str, *, shard: int = 0, primary: bool = True) -> Json | None:
        """Why a shard of ``index`` is not assigned (``_cluster/allocation/explain``); None when it is, or the server
        cannot say."""

    @abc.abstractmethod
    def cluster_settings(self, *, filter_path: str, action: str | None = None) -> Json:
        """The cluster settings that ``filter_path`` selects, defaults included."""

    @abc.abstractmethod
    def put_cluster_settings(self, body: Body, *, action: str | None = None) -> None: ...

    def enable_server_mmr(self, *, dry_run: bool = False) -> SettingChange:
        """Turn on the server's MMR for the whole cluster (a persistent setting), keeping what is
        there; ``dry_run``: say what would change. Engines without server MMR refuse."""
        from adapter.errors import CapabilityError

        raise CapabilityError(f"{self.name} has no server-side MMR")


class Cluster(ClusterCore, PointInTime, IndexAdmin, Templates, ClusterAdmin):
    """One engine's connection to one cluster (see the module docstring): the core and the facets the shell
    uses. A function that needs less types its parameter as the part it uses (:class:`ClusterCore`, a facet)."""


class SearchPipelines(abc.ABC):
    """The facet of a port whose engine has search pipelines (OpenSearch): a :class:`Cluster` that
    has them derives this too; :attr:`Cluster.pipelines` finds it. Its engine's placement
    (:mod:`adapter.engines.opensearch.placement`) is what calls these."""

    @abc.abstractmethod
    def get_search_pipeline(self, name: str, *, action: str | None = None) -> Json | None:
        """A search pipeline's body (None: no pipeline of that name)."""

    @abc.abstractmethod
    def search_pipelines(self, *, action: str | None = None) -> dict[str, Json]:
        """Every search pipeline, by name."""

    @abc.abstractmethod
    def put_search_pipeline(self, name: str, body: Body, *, action: str | None = None) -> None: ...

    @abc.abstractmethod
    def delete_search_pipeline(self, name: str, *, action: str | None = None) -> None: ...
