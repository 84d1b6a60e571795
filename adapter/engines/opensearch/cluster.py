"""The port on OpenSearch: opensearch-py's calls, search pipelines, OpenSearch's point-in-time API.

Every search names its search pipeline: the one asked for, else ``_none``. An index's default
pipeline (``index.search.default_pipeline``: the fusion ``hybrid init`` sets for other clients'
hybrid queries) would otherwise run on every request that names none: a single leg, a count, a
scan. On two shards a normalization pipeline fails such a request of no hits now and then (3.6.0:
500 "topDocs already consumed", bm25 4 in 20, client-rrf legs 12 in 20, ``_count`` 8 in 20;
tests/integration/test_two_shards_no_default_pipeline.py). Only a request that defines its
pipeline in the body names none (the server refuses both, 400).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from adapter import aio
from adapter.engines import responses
from adapter.engines.base_cluster import ClientCluster
from adapter.engines.opensearch.capabilities import MMR_FACTORIES, MMR_SETTING
from adapter.engines.opensearch.client import describe, translate
from adapter.engines.port import Body, Json, SearchPipelines, SettingChange
from adapter.errors import HybridError

if TYPE_CHECKING:
    from adapter.engines.capabilities import Capabilities
    from adapter.engines.opensearch import OpenSearchEngine

NO_PIPELINE = "_none"  # OpenSearch's name for "no search pipeline, not even the index's default"


class OpenSearchCluster(ClientCluster, SearchPipelines):
    """:class:`~adapter.engines.port.Cluster` over an opensearch-py client, with the search-pipelines facet."""

    engine: OpenSearchEngine
    _root: Mapping[str, Any] | None = None  # the GET / answer the engine's detection got, for the next probe

    def seen_root(self, answer: Mapping[str, Any]) -> None:
        """Keep the ``GET /`` answer that told which engine runs here: the next probe reads it, not the cluster."""
        self._root = answer

    def _taken_root(self) -> Mapping[str, Any] | None:
        root, self._root = self._root, None  # once: a later probe (a rolling upgrade) asks again
        return root

    def probe(self, *, refresh: bool = False) -> Capabilities:
        return self.engine.probe(self.client, refresh=refresh, root=self._taken_root())

    def search_capabilities(self) -> Capabilities:
        return self.engine.search_probe(self.client, root=self._taken_root())

    def with_switches(self, caps: Capabilities) -> Capabilities:
        return self.engine.with_switches(self.client, caps)

    def describe(self) -> str:
        return describe(self.client) or "the cluster"

    def translate(self, exc: BaseException, action: str) -> HybridError | None:
        return translate(exc, action, self.client)

    def enable_server_mmr(self, *, dry_run: bool = False) -> SettingChange:
        """The k-NN plugin's MMR processors (3.3+), added to those the setting already lists."""
        settings = self.cluster_settings(filter_path=f"*.{MMR_SETTING}")
        value = responses.cluster_setting(settings or {}, MMR_SETTING) or []
        value = [value] if isinstance(value, str) else list(value)
        if "*" in value or all(f in value for f in MMR_FACTORIES):
            return SettingChange(MMR_SETTING, value, value)
        wanted = value + [f for f in MMR_FACTORIES if f not in value]
        if not dry_run:
            self.put_cluster_settings({"persistent": {MMR_SETTING: wanted}}, action=f"setting {MMR_SETTING}")
        return SettingChange(MMR_SETTING, value, wanted)

    def _server_timeout(self, timeout: str) -> dict[str, Any]:
        # opensearch-py reads a ``timeout`` keyword as its own socket timeout unless ``request_timeout`` is given.
        seconds = float(timeout.rstrip("s")) if timeout.rstrip("s").replace(".", "", 1).isdigit() else 30.0
        return {"request_timeout": seconds + 30}

    # -- searching ------------------------------------------------------------------------------------
    def _search_params(self, pipeline: str | None, body: Body) -> dict[str, Any]:
        if pipeline:
            return {"search_pipeline": pipeline}
        return {} if "search_pipeline" in body else {"search_pipeline": NO_PIPELINE}

    def _msearch_body(self, body: Body) -> Body:
        """``_msearch`` takes no ``search_pipeline`` parameter (400): each search names it in its body."""
        return body if "search_pipeline" in body else {**body, "search_pipeline": NO_PIPELINE}

    def count(self, index: str, query: Body | None = None, *, action: str | None = None) -> int:
        """A search of no hits that counts them all: ``_count`` takes no ``search_pipeline`` (400)
        and runs the index's default pipeline."""
        body: dict[str, Any] = {"size": 0, "track_total_hits": True}
        if query is not None:
            body["query"] = dict(query)
        answer = self._call(
            action or f"counting {index}",
            lambda: self.client.search(index=index, body=body, params={"search_pipeline": NO_PIPELINE}),
        )
        return int(answer["hits"]["total"]["value"])

    def open_point_in_time(self, index: str, *, keep_alive: str) -> str:
        resp = self._call(
            f"opening a point in time on {index}",
            lambda: self.client.transport.perform_request(
                "POST", f"/{index}/_search/point_in_time", params={"keep_alive": keep_alive}
            ),
        )
        return str(resp["pit_id"])

    def close_point_in_time(self, pit: str) -> None:
        self._call(
            "closing a point in time",
            lambda: self.client.transport.perform_request("DELETE", "/_search/point_in_time", body={"pit_id": [pit]}),
        )

    def _proceed_on_conflicts(self) -> dict[str, Any]:
        return {"params": {"conflicts": "proceed"}}

    # -- writing --------------------------------------------------------------------------------------
    def _streaming_bulk(
        self, client: Any, actions: Iterable[Mapping[str, Any]], **options: Any
    ) -> Iterator[tuple[bool, Json]]:
        from opensearchpy.helpers import async_streaming_bulk, streaming_bulk

        # the async one on an asyncio client
        return aio.streaming(streaming_bulk, async_streaming_bulk, client, actions, **options)

    # -- search pipelines -----------------------------------------------------------------------------
    def get_search_pipeline(self, name: str, *, action: str | None = None) -> Json | None:
        resp = self._call(
            action or f"reading search pipeline {name}",
            lambda: self.client.transport.perform_request("GET", f"/_search/pipeline/{name}", params={"ignore": 404}),
        )
        if not isinstance(resp, Mapping) or (resp.get("status") == 404 and "error" in resp):
            return None
        found = resp.get(name)
        return dict(found) if isinstance(found, Mapping) else None

    def search_pipelines(self, *, action: str | None = None) -> dict[str, Json]:
        resp = self._call(
            action or "reading search pipelines",
            lambda: self.client.transport.perform_request("GET", "/_search/pipeline", params={"ignore": 404}),
        )
        if not isinstance(resp, Mapping) or (resp.get("status") == 404 and "error" in resp):
            return {}
        return {k: dict(v) for k, v in resp.items() if isinstance(v, Mapping)}

    def put_search_pipeline(self, name: str, body: Body, *, action: str | None = None) -> None:
        self._call(
            action or f"putting search pipeline {name}",
            lambda: self.client.transport.perform_request("PUT", f"/_search/pipeline/{name}", body=dict(body)),
        )

    def delete_search_pipeline(self, name: str, *, action: str | None = None) -> None:
        self._call(
            action or f"deleting search pipeline {name}",
            lambda: self.client.transport.perform_request("DELETE", f"/_search/pipeline/{name}"),
        )
