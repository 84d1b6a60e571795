"""The port on Elasticsearch: elasticsearch-py's calls, its point-in-time API (no search pipelines: no facet of
them)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from adapter import aio
from adapter.engines.base_cluster import ClientCluster
from adapter.engines.elasticsearch.client import describe, translate
from adapter.engines.port import Body, Json, record
from adapter.errors import BackendError, CapabilityError, HybridError, PartialResultError

if TYPE_CHECKING:
    from adapter.engines.elasticsearch import ElasticsearchEngine

NO_PIPELINES = "Elasticsearch has no search pipelines: the fusion is part of each search request"
# How Elasticsearch words a search it refused for failed shards where the request allowed no partial results
# (SearchPhaseExecutionException "Partial shards failure"; a compound retriever whose inner searches failed).
PARTIAL_REFUSALS = ("partial shards failure", "nested retrievers returned errors")


def _top_reason(error: object) -> str:
    """The top-level ``error.reason`` of an elasticsearch-py ``ApiError``'s body ("" where none): the adapter's
    reason is the root cause's, which does not say that the request was refused as partial."""
    body = getattr(error, "body", None)
    inner = body.get("error") if isinstance(body, Mapping) else None
    return str(inner.get("reason") or "") if isinstance(inner, Mapping) else ""


class ElasticsearchCluster(ClientCluster):
    """:class:`~adapter.engines.port.Cluster` over an elasticsearch-py client
    (:func:`~adapter.engines.elasticsearch.client.connect_elasticsearch`)."""

    engine: ElasticsearchEngine

    def describe(self) -> str:
        return describe(self.client) or "the cluster"

    def translate(self, exc: BaseException, action: str) -> HybridError | None:
        return translate(exc, action, self.describe())

    def cluster_id(self, *, action: str | None = None) -> str:
        """The cluster's uuid from its state (the integ-test distribution has no ``GET /``)."""
        state = self._call(
            action or "reading the cluster's id",
            lambda: self.client.cluster.state(metric="metadata", filter_path="metadata.cluster_uuid"),
        )
        return str((state.get("metadata") or {}).get("cluster_uuid") or "cluster")

    # -- searching ------------------------------------------------------------------------------------
    def _search_params(self, pipeline: str | None, body: Body) -> dict[str, Any]:
        if pipeline:
            raise CapabilityError(f"{NO_PIPELINES} (asked for {pipeline!r})")
        return {}

    def _msearch_body(self, body: Body) -> Body:
        return body

    def search(
        self,
        index: str | None,
        body: Body,
        *,
        pipeline: str | None = None,
        action: str | None = None,
        named_scores: bool = False,
    ) -> Json:
        """A retriever's request goes with ``allow_partial_search_results=false``: a compound retriever (rrf,
        linear) drops its inner searches' failed shards without a word where partial results are allowed
        (elastic #157810; its ``_shards`` says none failed), so there a failed shard refuses the request,
        which raises :class:`~adapter.errors.PartialResultError` here (the searcher asks again once:
        :mod:`adapter.search.recovery`). ``named_scores`` is not asked here (the searcher reads the legs of
        client-fused pages on this engine)."""
        if named_scores:
            raise CapabilityError("the legs' named scores are asked of OpenSearch's hybrid query only")
        if pipeline or "retriever" not in body:
            return super().search(index, body, pipeline=pipeline, action=action)
        record("POST", f"/{index}/_search" if index else "/_search", {"allow_partial_search_results": "false"}, body)
        target = {"index": index} if index else {}
        try:
            with self.errors(action or f"searching {index or 'a point in time'}"):
                return dict(self.client.search(**target, body=body, allow_partial_search_results=False))
        except BackendError as exc:
            top = _top_reason(exc.__cause__)
            if not any(words in top.lower() for words in PARTIAL_REFUSALS):
                raise
            raise PartialResultError(
                f"{exc} ({top}: a shard failed, and a retriever's request allows no partial results, "
                "which it would drop without a word: elastic #157810)",
                kind="shards",
                status=exc.status,
                reason=f"{top}: {exc.reason}",
            ) from exc.__cause__

    def open_point_in_time(self, index: str, *, keep_alive: str) -> str:
        resp = self._call(
            f"opening a point in time on {index}",
            lambda: self.client.open_point_in_time(index=index, keep_alive=keep_alive),
        )
        return str(resp["id"])

    def close_point_in_time(self, pit: str) -> None:
        self._call("closing a point in time", lambda: self.client.close_point_in_time(body={"id": pit}))

    # -- writing --------------------------------------------------------------------------------------
    def _streaming_bulk(
        self, client: Any, actions: Iterable[Mapping[str, Any]], **options: Any
    ) -> Iterator[tuple[bool, Json]]:
        """elasticsearch-py's ``streaming_bulk``; where the connection fails mid-way (it raises
        transport errors instead of reporting them per item), the actions not yet answered are
        failed with the status ``"N/A"`` (what opensearch-py reports), so nothing is dropped."""
        from elastic_transport import TransportError
        from elasticsearch.helpers import async_streaming_bulk, streaming_bulk

        yield_ok = options.pop("yield_ok", True)
        pending: list[Any] = list(actions)
        answered: Counter[Any] = Counter()
        try:
            for ok, item in aio.streaming(
                streaming_bulk, async_streaming_bulk, client, pending, yield_ok=True, **options
            ):
                op: Any = next(iter(item.values()), {})
                answered[op.get("_id") if isinstance(op, Mapping) else None] += 1
                if yield_ok or not ok:
                    yield ok, item
        except TransportError as exc:
            for action in pending:
                if answered[action.get("_id")] > 0:
                    answered[action.get("_id")] -= 1
                    continue
                op_type = action.get("_op_type", "index")
                yield (
                    False,
                    {
                        op_type: {
                            "_index": action.get("_index"),
                            "_id": action.get("_id"),
                            "status": "N/A",
                            "error": f"{exc.__class__.__name__}: {exc}",
                            "exception": exc,
                        }
                    },
                )
