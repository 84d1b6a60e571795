"""The port over the client API that opensearch-py and elasticsearch-py share.

Both clients take ``body=`` and query parameters as keywords and answer dicts (the Elasticsearch
client is adapted to: :mod:`adapter.engines.elasticsearch.client`), so most cluster operations are
the same calls on either. :class:`ClientCluster` makes them; each engine's subclass translates its
client's exceptions and supplies what differs: search pipelines, points in time, the bulk helper,
the probe, how a search names (or leaves out) a pipeline.
"""

from __future__ import annotations

import abc
import contextlib
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence, TypeVar

from adapter.observability import telemetry
from adapter.engines import responses
from adapter.engines.port import Body, BulkCounts, BulkOptions, Cluster, Json, record
from adapter.errors import BackendError, HybridError, WriteBlockedError

if TYPE_CHECKING:
    from adapter.engines import Engine
    from adapter.engines.capabilities import Capabilities


class ProbingEngine(Protocol):
    """An engine that probes a client's cluster (and caches what it found, per cluster)."""

    def probe(self, client: Any, *, refresh: bool = False) -> Capabilities: ...


T = TypeVar("T")


class ClientCluster(Cluster):
    """A :class:`~adapter.engines.port.Cluster` over an opensearch-py or elasticsearch-py ``client``."""

    engine: Any  # an Engine that also probes (ProbingEngine)

    def __init__(self, client: Any, engine: Engine) -> None:
        self.client = client
        self.engine = engine

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    # -- what each engine supplies ----------------------------------------------------------------
    @abc.abstractmethod
    def translate(self, exc: BaseException, action: str) -> HybridError | None:
        """The client's exception ``exc`` as the adapter's (None: not one of the client's)."""

    @abc.abstractmethod
    def _search_params(self, pipeline: str | None, body: Body) -> dict[str, Any]:
        """The query parameters of a search through ``pipeline`` (None: none)."""

    @abc.abstractmethod
    def _msearch_body(self, body: Body) -> Body:
        """One search of an ``_msearch`` as sent (where it names its pipeline)."""

    @abc.abstractmethod
    def _streaming_bulk(
        self, client: Any, actions: Iterable[Mapping[str, Any]], **options: Any
    ) -> Iterator[tuple[bool, Json]]:
        """The client's ``helpers.streaming_bulk`` (``raise_on_error=False``): ``(ok, item)`` per action."""

    @property
    def retried_statuses(self) -> frozenset[int]:
        """What the client's transport asks again: elasticsearch-py's per-client setting where it has
        one, else the transport's (both clients keep ``retry_on_status`` and ``max_retries`` there)."""

        def setting(name: str) -> Any:
            own = getattr(self.client, f"_{name}", None)  # elasticsearch-py; a DEFAULT sentinel when not set
            return (
                own
                if isinstance(own, (int, tuple, list, frozenset, set))
                else getattr(getattr(self.client, "transport", None), name, None)
            )

        statuses, times = setting("retry_on_status"), setting("max_retries")
        if not isinstance(statuses, (tuple, list, frozenset, set)) or not isinstance(times, int) or times < 1:
            return frozenset()
        return frozenset(int(s) for s in statuses)

    # -- errors -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Re-raise the client's exceptions in this block as the adapter's, chained."""
        try:
            yield
        except HybridError:
            raise
        except Exception as exc:
            translated = self.translate(exc, action)
            if translated is None:
                raise
            raise translated from exc

    def _call(self, action: str, call: Callable[[], T]) -> T:
        with self.errors(action):
            return call()

    def _or_none(self, action: str, call: Callable[[], T]) -> T | None:
        """``call()``'s answer, None for a 404 (in the call both clients take: no ``ignore=``)."""
        try:
            return self._call(action, call)
        except BackendError as exc:
            if exc.status == 404:
                return None
            raise

    # -- the cluster ----------------------------------------------------------------------------------
    def probe(self, *, refresh: bool = False) -> Capabilities:
        caps: Capabilities = self.engine.probe(self.client, refresh=refresh)  # the engine caches it, per cluster
        return caps

    def cluster_id(self, *, action: str | None = None) -> str:
        answer = self._call(action or "reading the cluster's id", self.client.info)
        return str(answer.get("cluster_uuid") or "cluster")

    def health(
        self, index: str | None = None, *, wait_for_status: str | None = None, timeout: str | None = None
    ) -> Json:
        options = {
            k: v
            for k, v in (("index", index), ("wait_for_status", wait_for_status), ("timeout", timeout))
            if v is not None
        }
        if timeout is not None:
            options.update(self._server_timeout(timeout))
        try:
            return dict(self._call("reading the cluster's health", lambda: self.client.cluster.health(**options)))
        except BackendError as exc:
            if exc.status != 408 or wait_for_status is None:
                raise
        # 408: the wait ran out; the health as it is now says what is missing.
        now = {k: v for k, v in options.items() if k == "index"}
        return {
            **self._call("reading the cluster's health", lambda: self.client.cluster.health(**now)),
            "timed_out": True,
        }

    def _server_timeout(self, timeout: str) -> dict[str, Any]:
        """What else a call with the server-side ``timeout`` parameter needs (opensearch-py takes it for its own)."""
        return {}

    def allocation_explain(self, index: str, *, shard: int = 0, primary: bool = True) -> Json | None:
        try:
            return dict(
                self._call(
                    f"asking why {index} is not assigned",
                    lambda: self.client.cluster.allocation_explain(
                        body={"index": index, "shard": shard, "primary": primary}
                    ),
                )
            )
        except BackendError:  # 400: every shard is assigned; nothing to explain
            return None

    def cluster_settings(self, *, filter_path: str, action: str | None = None) -> Json:
        return dict(
            self._call(
                action or "reading cluster settings",
                lambda: self.client.cluster.get_settings(include_defaults=True, filter_path=filter_path),
            )
            or {}
        )

    def put_cluster_settings(self, body: Body, *, action: str | None = None) -> None:
        self._call(action or "setting cluster settings", lambda: self.client.cluster.put_settings(body=dict(body)))

    # -- searching ------------------------------------------------------------------------------------
    def search(
        self,
        index: str | None,
        body: Body,
        *,
        pipeline: str | None = None,
        action: str | None = None,
        named_scores: bool = False,
    ) -> Json:
        params = self._search_params(pipeline, body)
        if named_scores:
            params = {**params, "include_named_queries_score": "true"}
        record("POST", f"/{index}/_search" if index else "/_search", params, body)
        target = {"index": index} if index else {}
        with self.errors(action or f"searching {index or 'a point in time'}"):
            if params:
                return dict(self.client.search(**target, body=body, params=params))
            # the call both clients take (elasticsearch-py has no params=)
            return dict(self.client.search(**target, body=body))

    def msearch(self, index: str, bodies: Sequence[Body], *, action: str | None = None) -> Json:
        from adapter.engines.dsl import msearch_lines

        lines = msearch_lines(index, [dict(self._msearch_body(b)) for b in bodies])
        record("POST", "/_msearch", None, lines)
        return dict(self._call(action or f"searching {index}", lambda: self.client.msearch(body=lines)))

    def mget(
        self, index: str, ids: Sequence[str], *, exclude: Sequence[str] = (), action: str | None = None
    ) -> list[Json]:
        params = {"_source_excludes": ",".join(exclude)} if exclude else {}
        record("POST", f"/{index}/_mget", params, {"ids": list(ids)})
        answer = self._call(
            action or f"fetching documents from {index}",
            lambda: self.client.mget(index=index, body={"ids": list(ids)}, **params),
        )
        return list(answer["docs"])

    def count(self, index: str, query: Body | None = None, *, action: str | None = None) -> int:
        body = {"query": dict(query)} if query is not None else None
        answer = self._call(
            action or f"counting {index}",
            lambda: self.client.count(index=index, body=body) if body else self.client.count(index=index),
        )
        return int(answer["count"])

    def termvectors(self, index: str, body: Body, *, action: str | None = None) -> Json:
        return dict(
            self._call(
                action or f"reading term statistics of {index}",
                lambda: self.client.termvectors(index=index, body=dict(body)),
            )
        )

    # -- writing documents ----------------------------------------------------------------------------
    def bulk(
        self,
        actions: Iterable[Mapping[str, Any]],
        options: BulkOptions = BulkOptions(),
        *,
        counts: BulkCounts | None = None,
        action: str | None = None,
    ) -> Iterator[Json]:
        what = action or "bulk indexing"
        client = _Counting(self.client, counts if counts is not None else BulkCounts())
        with self.errors(what):
            for ok, item in self._streaming_bulk(
                client,
                actions,
                chunk_size=options.batch_size,
                max_retries=options.max_retries,
                initial_backoff=options.initial_backoff,
                max_backoff=options.max_backoff,
                raise_on_error=False,
                raise_on_exception=options.raise_on_exception,
                yield_ok=False,
            ):
                if not ok:
                    yield self._translated_item(item, what)

    def _translated_item(self, item: Json, action: str) -> Json:
        """A failed item whose request raised (no answer, a refused request): its exception as the adapter's."""
        op, body = next(iter(item.items()), (None, None))
        exc = body.get("exception") if isinstance(body, Mapping) else None
        if (
            op is None
            or not isinstance(body, Mapping)
            or not isinstance(exc, BaseException)
            or isinstance(exc, BackendError)
        ):
            return item
        translated = self.translate(exc, action)
        if translated is None:
            return item
        translated.__cause__ = exc
        refused = getattr(exc, "info", None)  # opensearch-py: the server's answer, read by responses.bulk_item
        return {op: {**body, "exception": translated, **({"refused": refused} if isinstance(refused, Mapping) else {})}}

    def delete_by_query(self, index: str, query: Body, *, action: str | None = None) -> Json:
        return dict(
            self._call(
                action or f"deleting from {index}",
                lambda: self.client.delete_by_query(
                    index=index, body={"query": dict(query)}, **self._proceed_on_conflicts()
                ),
            )
        )

    def _proceed_on_conflicts(self) -> dict[str, Any]:
        return {"conflicts": "proceed"}

    def refresh(self, indices: Sequence[str], *, action: str | None = None) -> None:
        self._call(
            action or f"refreshing {', '.join(indices)}", lambda: self.client.indices.refresh(index=",".join(indices))
        )

    # -- indices and aliases --------------------------------------------------------------------------
    def index_exists(self, name: str, *, action: str | None = None) -> bool:
        return bool(self._call(action or f"reading index {name}", lambda: self.client.indices.exists(index=name)))

    def alias_exists(self, name: str, *, action: str | None = None) -> bool:
        return bool(self._call(action or f"reading alias {name}", lambda: self.client.indices.exists_alias(name=name)))

    def aliased_indices(self, alias: str, *, action: str | None = None) -> list[str]:
        return list(
            self._call(action or f"reading alias {alias}", lambda: self.client.indices.get_alias(name=alias)).keys()
        )

    def indices_matching(self, pattern: str, *, action: str | None = None) -> list[str]:
        found = self._call(
            action or f"listing the indices {pattern}",
            lambda: self.client.indices.get_alias(index=pattern, allow_no_indices=True, ignore_unavailable=True),
        )
        return list(found)

    def aliases_matching(self, pattern: str, *, action: str | None = None) -> set[str]:
        found = (
            self._or_none(
                action or "reading aliases",
                lambda: self.client.indices.get_alias(name=pattern, allow_no_indices=True, ignore_unavailable=True),
            )
            or {}
        )
        names: set[str] = set()
        for body in found.values():
            if isinstance(body, Mapping):
                names.update(body.get("aliases", {}))
        return names

    def get_index(
        self, index: str, *, include_defaults: bool = False, filter_path: str | None = None, action: str | None = None
    ) -> Json:
        options: dict[str, Any] = {"include_defaults": True} if include_defaults else {}
        if filter_path is not None:
            options["filter_path"] = filter_path
        answer = self._call(action or f"reading {index}", lambda: self.client.indices.get(index=index, **options))
        return dict(answer[index])

    def get_indices(
        self, name: str, *, include_defaults: bool = False, filter_path: str | None = None, action: str | None = None
    ) -> dict[str, Json] | None:
        """One ``GET <name>``: the server resolves an alias to its indices and answers each by name."""
        options: dict[str, Any] = {"include_defaults": True} if include_defaults else {}
        if filter_path is not None:
            options["filter_path"] = filter_path
        answer = self._or_none(action or f"reading {name}", lambda: self.client.indices.get(index=name, **options))
        return None if answer is None else {index: dict(body) for index, body in answer.items()}

    def create_index(
        self, index: str, body: Body, *, shard_wait: float | None = None, action: str | None = None
    ) -> None:
        # The request's timeout bounds the server's wait for the primaries (its active-shards wait runs up to it).
        wait: dict[str, Any] = {}
        if shard_wait is not None and not self.probe().serverless:
            wait = {"timeout": f"{max(round(shard_wait), 1)}s"}
            wait.update(self._server_timeout(wait["timeout"]))
        self._call(
            action or f"creating {index}", lambda: self.client.indices.create(index=index, body=dict(body), **wait)
        )

    def delete_indices(self, indices: Sequence[str], *, action: str | None = None) -> None:
        self._call(
            action or f"deleting {', '.join(indices)}", lambda: self.client.indices.delete(index=",".join(indices))
        )

    def get_mapping(self, index: str, *, action: str | None = None) -> Json:
        return dict(
            self._call(
                action or f"reading the mapping of {index}", lambda: self.client.indices.get_mapping(index=index)
            )
        )

    def put_mapping(self, index: str, body: Body, *, action: str | None = None) -> None:
        self._call(
            action or f"updating the mapping of {index}",
            lambda: self.client.indices.put_mapping(index=index, body=dict(body)),
        )

    def put_index_settings(self, index: str, body: Body, *, action: str | None = None) -> None:
        self._call(
            action or f"updating the settings of {index}",
            lambda: self.client.indices.put_settings(index=index, body=dict(body)),
        )

    def put_alias(self, index: str, alias: str, *, action: str | None = None) -> None:
        self._call(
            action or f"pointing {alias} at {index}", lambda: self.client.indices.put_alias(index=index, name=alias)
        )

    def update_aliases(self, actions: Sequence[Body], *, action: str | None = None) -> None:
        body = {"actions": [dict(a) for a in actions]}
        self._call(action or "moving aliases", lambda: self.client.indices.update_aliases(body=body))

    # -- templates ------------------------------------------------------------------------------------
    def get_component_template(self, name: str) -> Json | None:
        resp = self._or_none(
            f"reading component template {name}", lambda: self.client.cluster.get_component_template(name=name)
        )
        return (
            resp["component_templates"][0]["component_template"] if resp and resp.get("component_templates") else None
        )

    def put_component_template(self, name: str, body: Body, *, action: str | None = None) -> None:
        self._call(
            action or f"putting component template {name}",
            lambda: self.client.cluster.put_component_template(name=name, body=dict(body)),
        )

    def get_index_template(self, name: str) -> Json | None:
        resp = self._or_none(
            f"reading index template {name}", lambda: self.client.indices.get_index_template(name=name)
        )
        return resp["index_templates"][0]["index_template"] if resp and resp.get("index_templates") else None

    def index_templates_matching(self, pattern: str) -> list[str]:
        resp = (
            self._or_none("reading index templates", lambda: self.client.indices.get_index_template(name=pattern)) or {}
        )
        return [str(t.get("name", "")) for t in resp.get("index_templates", [])]

    def put_index_template(self, name: str, body: Body, *, action: str | None = None) -> None:
        self._call(
            action or f"putting index template {name}",
            lambda: self.client.indices.put_index_template(name=name, body=dict(body)),
        )


class _Counting:
    """The client as ``streaming_bulk`` sees it, counting the items the server refused with 429
    (a full write queue): the helper retries those with backoff and says nothing, the report does."""

    def __init__(self, client: Any, counts: BulkCounts) -> None:
        self._client = client
        self._counts = counts  # shared with the copies options() makes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def options(self, **kwargs: Any) -> _Counting:
        """elasticsearch-py's helpers work on ``client.options()``: a copy that counts into the same total."""
        return _Counting(self._client.options(**kwargs), self._counts)

    def bulk(self, *args: Any, **kwargs: Any) -> Any:
        try:
            resp = self._client.bulk(*args, **kwargs)
        except Exception as exc:  # opensearch-py's TransportError, elasticsearch-py's ApiError: both have status_code
            if getattr(exc, "status_code", None) == 429:  # the whole request: every action in it is retried
                refused = _actions_in(kwargs.get("body", kwargs.get("operations", "")))
                self._counts.rejected_429 += refused
                telemetry.INGEST.warning(
                    "bulk: the cluster refused a request of %d actions with 429 (its write queue is full); "
                    "the bulk helper sends it again after a pause",
                    refused,
                )
            raise
        blocked = next((r for r in map(responses.bulk_disk_block, resp.get("items", ())) if r), None)
        if blocked:  # a flood-stage block, not a full write queue: the helper's retries would wait minutes for nothing
            first: Mapping[str, Any] = next(iter(resp["items"][0].values()), {})
            index = first.get("_index")
            raise WriteBlockedError(
                f"the cluster refused writes to {index}: {blocked}. The index is read-only "
                "(index.blocks.read_only_allow_delete), which the server sets when a node's disk usage passes the "
                "flood-stage watermark (cluster.routing.allocation.disk.watermark.flood_stage)",
                index=index,
                reason=blocked,
            )
        refused = sum(1 for item in resp.get("items", ()) if responses.bulk_status(item) == 429)
        if refused:
            self._counts.rejected_429 += refused
            telemetry.INGEST.warning(
                "bulk: the cluster refused %d of %d actions with 429 (its write queue is full); the bulk "
                "helper sends them again after a pause",
                refused,
                len(resp.get("items", ())),
            )
        return resp


def _actions_in(payload: Any) -> int:
    """Actions in a bulk body: NDJSON text (opensearch-py) or a list of lines (elasticsearch-py), two lines an
    action."""
    if isinstance(payload, (list, tuple)):
        return len(payload) // 2
    return str(payload).count("\n") // 2
