"""The async side of :class:`~adapter.serve.service.SearchService`: what a request awaits.

A search's query vector comes from the cache or the batched model (:mod:`adapter.serve.vectors`);
the search itself runs on a worker thread behind :class:`~adapter.serve.admission.Admission` (a
slot, a bounded queue), and the whole request within its deadline. The event loop only awaits.
Every search is observed: its seconds by technique, a hybrid the server could not fuse (fused
here instead: a fallback), the cluster's errors.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import orjson

from adapter.engines import deadlines
from adapter.errors import BackendError, ClusterUnavailableError, HybridError
from adapter.fusion.base import FusedBy
from adapter.search.result_json import search_result_json
from adapter.search.results import SearchResult, Technique
from adapter.serve.admission import Admission, DaemonPool, Deadline, Refused
from adapter.serve.metrics import Metrics
from adapter.serve.params import Config
from adapter.serve.service import SearchService
from adapter.serve.traffic import Traffic
from adapter.serve.vectors import QueryVectors, batch_embedder


@dataclass(frozen=True)
class Ops:
    """How ``hybrid serve`` runs its searches."""

    deadline: float = 10.0  # seconds a request may take, queue wait included
    concurrency: int = 16  # searches at once (worker threads; the cluster client's connections)
    queue: int = 64  # searches that may wait for a slot
    query_cache: int = 10_000  # query vectors kept (0: none)
    max_batch: int = 8  # queries per model call (adapter.serve.vectors: more pads more and saves nothing on a CPU)
    ready_timeout: float = 2.0  # seconds /readyz waits for the cluster

    def __post_init__(self) -> None:
        if not (
            self.deadline > 0
            and self.concurrency >= 1
            and self.queue >= 0
            and self.query_cache >= 0
            and self.max_batch >= 1
            and self.ready_timeout > 0
        ):
            raise ValueError(f"invalid serve settings: {self}")


# What json.dumps took that orjson refuses by default: numpy scalars (np.float64 is a float to json), non-str keys.
_AS_JSON_WOULD = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def render(document: Any) -> bytes:
    """Compact UTF-8 JSON, through orjson: a 10-hit answer in a tenth of ``json.dumps``'s time (0.4 ms of
    the serve's 4 ms of CPU a search went to the standard library's encoder). A value that is not finite
    (none is expected: scores are) is written as null, as orjson does, where ``json`` refused it."""
    return orjson.dumps(document, option=_AS_JSON_WOULD)


class Runner:
    """Searches for one app: started in its lifespan, on its event loop."""

    def __init__(self, service: SearchService, ops: Ops, metrics: Metrics, traffic: Traffic | None = None) -> None:
        self.service = service
        self.traffic = traffic
        self.ops = ops
        self.metrics = metrics
        self.admission = Admission(concurrency=ops.concurrency, queue=ops.queue, on_change=self._slots_changed)
        self.vectors = QueryVectors(
            batch_embedder(service.embedder),
            cache_size=ops.query_cache,
            max_batch=ops.max_batch,
            on_batch=lambda n: metrics.embed_batch.observe(n),
            on_vector=lambda source: metrics.query_vectors.labels(source).inc(),
        )
        deadlines.install(getattr(service.searcher.cluster, "client", None))  # a search's tries end by its deadline
        self._checks = DaemonPool(1, "hybrid-serve-ready")
        self._check: asyncio.Future[dict[str, Any] | None] | None = None
        self.model_loaded = False

    async def warm(self) -> float:
        """The model loaded, before the first request (seconds)."""
        seconds = await self._checks.submit(self.service.warm)
        self.model_loaded = True
        return seconds

    async def _vector(self, query: str, configs: Sequence[Config], deadline: Deadline) -> np.ndarray | None:
        if not self.service.needs_vector(configs):
            return None
        try:
            return await asyncio.wait_for(
                self.vectors.get(self.service.embedding_text(query)), timeout=max(deadline.left(), 0.0)
            )
        except asyncio.TimeoutError:
            raise deadline.exceeded("embedding the query") from None

    async def search(self, query: str, config: Config, client_id: str | None = None) -> bytes:
        """The search's JSON (``hybrid search --json``), encoded on the worker thread. With UBI on
        (``traffic``) its record is queued and its ``query_id`` added; the running fusion's search is
        interleaved with the candidate's when there is one (:mod:`adapter.serve.traffic`)."""
        deadline = Deadline(self.ops.deadline)
        vector = await self._vector(query, [config], deadline)
        traffic = self.traffic

        def work() -> bytes:
            started = time.perf_counter()
            added: dict[str, Any] = {}
            try:
                with deadlines.within(deadline.left()):
                    if traffic is not None and traffic.interleaves(config):
                        result, added = traffic.interleaved(query, config, vector, client_id)
                    else:
                        result = self.service.result(query, config, vector)
            except HybridError as exc:
                heard = self._failed(exc, deadline)
                if heard is exc:
                    raise
                raise heard from exc
            self._observe(config, result, time.perf_counter() - started)
            document = search_result_json(result)
            if traffic is not None:
                document.update(added or {"query_id": traffic.log(result, client_id)})
                self.metrics.sync_traffic()
            return render(document)

        return await self.admission.run(work, deadline)

    async def compare(self, query: str, configs: Sequence[Config], client_id: str | None = None) -> bytes:
        """``{"q", "columns"}``: every column in one slot, one after the other (a compare is one
        person's request); a column's failure is its ``error``. With UBI on, each column's search is
        logged and its result carries its ``query_id`` (never interleaved: a column is the configuration asked)."""
        deadline = Deadline(self.ops.deadline)
        vector = await self._vector(query, configs, deadline)
        traffic = self.traffic
        query_ids: list[str | None] = []

        def each(config: Config, result: SearchResult | None, seconds: float) -> None:
            if result is not None:
                self._observe(config, result, seconds)
            if traffic is not None:
                query_ids.append(None if result is None else traffic.log(result, client_id))

        def work() -> bytes:
            try:
                with deadlines.within(deadline.left()):
                    columns = self.service.compare(query, configs, vector, each)
            except HybridError as exc:
                heard = self._failed(exc, deadline)
                if heard is exc:
                    raise
                raise heard from exc
            for column, query_id in zip(columns, query_ids):
                if query_id is not None and "result" in column:
                    column["result"]["query_id"] = query_id
            return render({"q": query, "columns": columns})

        return await self.admission.run(work, deadline)

    def refusal(self) -> Refused | None:
        """Why a search arriving now would be refused at once (None: it is let in)."""
        return self.admission.refusal(Deadline(self.ops.deadline))

    def _observe(self, config: Config, result: SearchResult, seconds: float) -> None:
        self.metrics.search_seconds.labels(config.technique.value).observe(seconds)
        if result.technique is Technique.HYBRID and result.fused_by is FusedBy.CLIENT:
            self.metrics.fallbacks.labels(config.technique.value).inc()

    def _failed(self, exc: HybridError, deadline: Deadline) -> Exception:
        """What the caller hears of ``exc``: the deadline's 503 where the deadline cut the search's tries
        (not the cluster's fault, and the same answer as the caller's own timer gives), else ``exc``, counted."""
        if isinstance(exc, ClusterUnavailableError) and deadline.left() <= 0:
            return deadline.exceeded("the cluster answered")
        if isinstance(exc, ClusterUnavailableError):
            self.metrics.cluster_errors.labels("unreachable").inc()
        elif isinstance(exc, BackendError):
            self.metrics.cluster_errors.labels(str(exc.status or "unknown")).inc()
        return exc

    def _slots_changed(self, running: int, waiting: int) -> None:
        self.metrics.in_flight.set(running)
        self.metrics.queued.set(waiting)

    async def ready(self) -> tuple[bool, dict[str, Any]]:
        """Whether this server can search now: the model loaded, the cluster answering for the index
        within ``ops.ready_timeout`` (one check at a time; a probe arriving meanwhile shares it)."""
        checks: dict[str, Any] = {"model": "loaded" if self.model_loaded else "not loaded"}
        if self._check is None or self._check.done():
            self._check = self._checks.submit(self._ready_within)
            self._check.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            found = await asyncio.wait_for(asyncio.shield(self._check), timeout=self.ops.ready_timeout)
            if found is None:
                raise asyncio.TimeoutError
            checks.update(cluster="answering", index=self.service.info.index, documents=found["documents"])
        except asyncio.TimeoutError:
            checks["cluster"] = f"no answer within {self.ops.ready_timeout:g} s"
        except HybridError as exc:
            checks["cluster"] = str(exc)
        return self.model_loaded and checks.get("cluster") == "answering", checks

    def _ready_within(self) -> dict[str, Any] | None:
        """The readiness check, its tries bounded by ``ops.ready_timeout`` (a slow cluster's retries do not hold
        the next probe's check); None: no answer within it (the same as the probe's own timer)."""
        with deadlines.within(self.ops.ready_timeout):
            try:
                return self.service.ready()
            except ClusterUnavailableError:
                left = deadlines.left()
                if left is not None and left <= 0:
                    return None
                raise

    def close(self) -> None:
        if self.traffic is not None:
            self.traffic.close()
        self.admission.close()
        self.vectors.close()
        self._checks.close()
