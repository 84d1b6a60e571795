"""The ``hybrid serve`` app (FastAPI on Starlette): the compare page, search, health, metrics and a
stored evaluation's report.

    GET  /                 the compare page (one query, two to four configurations side by side)
    GET  /search?q=...     one search, the JSON of ``hybrid search --json`` (adapter/schemas/search.schema.json)
    POST /search           the same, parameters as a JSON object (strict types: ``{"q": 1}`` is refused)
    POST /api/compare      {"q", "columns": [config, ...]} -> {"columns": [{"label", "result" | "error"}]}
    POST /events           one UBI event of the page (a click), 202 when queued (--ubi; 404 without)
    GET  /api/info         which cluster (address without credentials) and index, what this engine differs in, the caps
    GET  /healthz          the process answers (nothing else is asked: a liveness probe)
    GET  /readyz           the model loaded and the cluster answering for the index (200), else 503: a readiness probe
    GET  /metrics          Prometheus text (adapter.serve.metrics)
    GET  /openapi.json     the OpenAPI document: the request models of adapter.serve.schema, the search contract
    GET  /report/          the report of ``--report DIR`` (a stored ``hybrid eval --report``), when given

FastAPI because the request models are pydantic classes and it makes both the validation and the
OpenAPI document from them (query-string models included); it is Starlette underneath, so the
middleware, static files and uvicorn are the same as before. Searches never run on the event loop
(adapter.serve.runner): a slow cluster holds its own requests and nothing else.

Nothing a page gets holds the cluster's credentials: the client keeps them, the address is shown
without them, and errors say what failed without the request's headers. Responses carry a
Content-Security-Policy that lets the pages load only this server's own files.
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Awaitable, Callable

from fastapi import FastAPI, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.staticfiles import StaticFiles
from starlette.types import Receive

from adapter import __version__
from adapter.errors import BackendError, ClusterUnavailableError, HybridError, InputError
from adapter.index.contracts import schema
from adapter.serve import lean
from adapter.serve.admission import Refused
from adapter.serve.door import HEADERS, TOKEN_SHOWN, Counted, Door, Security, TrustedHosts
from adapter.serve.metrics import Metrics
from adapter.serve.params import Limits, parse_compare, parse_config, query_text
from adapter.serve.runner import Ops, Runner
from adapter.serve.schema import CompareBody, SearchBody, SearchQuery, refusal
from adapter.serve.service import SearchService
from adapter.serve.traffic import Traffic

log = logging.getLogger("adapter.serve")
JSON = "application/json"


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps({"error": message}, ensure_ascii=False),
        status_code=status,
        media_type=JSON,
        headers={**HEADERS, **(headers or {})},
    )


def _responses(ok: str) -> dict[int | str, dict[str, Any]]:
    error = {"content": {JSON: {"schema": {"type": "object", "properties": {"error": {"type": "string"}}}}}}
    return {
        200: {"description": ok, "content": {JSON: {"schema": {"$ref": "#/components/schemas/SearchResult"}}}}
        if ok == "search"
        else {"description": ok},
        400: {"description": "a parameter refused, saying why", **error},
        401: {"description": "the token is missing or wrong (when the server has one)", **error},
        415: {"description": "a POST body that is not application/json", **error},
        502: {"description": "the cluster failed the search", **error},
        503: {"description": "the queue is full or the deadline passed: see Retry-After", **error},
    }


class _Answers:
    """Turns what a route raised into its answer, and counts it by kind."""

    def __init__(self, metrics: Metrics, body_bytes: int) -> None:
        self.metrics = metrics
        self.body_bytes = body_bytes

    async def __call__(self, work: Awaitable[bytes]) -> Response:
        try:
            return Response(await work, media_type=JSON)
        except Refused as exc:
            return self.refused(exc.kind, 503, str(exc), {"Retry-After": str(exc.retry_after)})
        except ClusterUnavailableError as exc:
            return self.refused("unavailable", 502, str(exc))
        except BackendError as exc:
            return self.refused("cluster", 502, str(exc))
        except HybridError as exc:
            return self.refused("input", 400, str(exc))
        except Exception:
            log.exception("hybrid serve: a request failed")
            return self.refused("internal", 500, "the server failed this request (its log says why)")

    def refused(self, kind: str, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        self.metrics.errors.labels(kind).inc()
        return _error(status, message, headers)

    async def invalid(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = list(exc.errors())
        if errors and errors[0].get("type") == "json_invalid":
            message = (
                f"the request body is not JSON: {errors[0].get('ctx', {}).get('error', 'invalid')} "
                f"at character {errors[0]['loc'][-1]}"
            )
        else:
            message = refusal(errors)
        return self.refused("input", 400, message)

    async def http(self, request: Request | None, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        cause = exc.__cause__
        if isinstance(cause, RecursionError):
            return self.refused("input", 400, "the JSON body is nested too deeply")
        if exc.status_code == 413:  # a body past the cap as it arrived (the Door's; one announced is refused before)
            return self.refused("too_large", 413, f"the request body is over {self.body_bytes} bytes")
        kind = "input" if exc.status_code == 400 else "not_found" if exc.status_code in (404, 405) else "http"
        return self.refused(kind, exc.status_code, str(exc.detail), dict(exc.headers or {}))


def create_app(
    service: SearchService,
    *,
    report_dir: str | Path | None = None,
    ops: Ops = Ops(),
    security: Security = Security(),
    traffic: Traffic | None = None,
) -> FastAPI:
    """The app for one warm :class:`SearchService`; ``report_dir`` (a stored evaluation with its
    report) is served under ``/report/``; ``ops``: deadline, slots, queue, cache; ``security``: the
    hosts answered and the bearer token; ``traffic``: UBI logging and interleaving (``--ubi``, its
    writer stopped with the app)."""
    limits = service.limits
    metrics = Metrics()
    if traffic is not None:
        metrics.watch_traffic(lambda: traffic.stats, traffic.tally.tally)
    runner = Runner(service, ops, metrics, traffic)
    answers = _Answers(metrics, limits.body_bytes)
    reranker = service.reranker is not None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runner.warm()
        yield
        runner.close()
        Metrics.process_ended()

    app = FastAPI(
        title="hybrid serve",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Hybrid BM25 + vector search over one index, read-only (opensearch-hybrid-adapter).",
    )
    app.state.runner = runner
    app.add_exception_handler(RequestValidationError, answers.invalid)
    app.add_exception_handler(HTTPException, answers.http)

    _page_routes(app, _info(service, report_dir, traffic))
    hot = _search_routes(app, runner, answers, limits, reranker=reranker)
    hot.update(_event_routes(app, traffic, answers))
    _ops_routes(app, runner, metrics)
    app.mount("/static", StaticFiles(packages=[("adapter.web", "static")]), name="static")
    if report_dir is not None:
        _mount_report(app, Path(report_dir))
    app.openapi = _with_search_contract(app)  # type: ignore[method-assign]
    app.add_middleware(lean.Lean, routes=hot)  # innermost of these: the door's checks apply to it
    # The body's cap is the Door's, not FastAPI's max_body_size: Starlette answered an announced one in plain text.
    app.add_middleware(Door, security=security, metrics=metrics, busy=runner.refusal, body_bytes=limits.body_bytes)
    app.add_middleware(TrustedHosts, hosts=security.hosts, metrics=metrics)
    app.add_middleware(Counted, metrics=metrics)
    return app


def _info(service: SearchService, report_dir: str | Path | None, traffic: Traffic | None) -> dict[str, Any]:
    """What the page and /api/info show: the service's info, where the report is, and whether clicks are logged and
    which fusions are interleaved."""
    info = service.info.as_json()
    info["report"] = "/report/" if report_dir else None
    info["ubi"] = traffic is not None  # the page sends its clicks to /events
    info["interleaving"] = (
        dict(zip(("baseline", "candidate"), traffic.names.values())) if traffic is not None and traffic.names else None
    )
    return info


def _page_routes(app: FastAPI, info: dict[str, Any]) -> None:
    """/ (the comparison page) and /api/info, both rendered once from ``info``."""
    from adapter.evaluation.html import environment

    page = (
        environment()
        .get_template("compare.html.j2")
        .render(info=info, info_json=json.dumps(info, ensure_ascii=False).replace("</", "<\\/"))
    )
    info_bytes = json.dumps(info, ensure_ascii=False).encode()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def home() -> Response:
        return HTMLResponse(page)

    @app.get("/api/info", summary="the cluster, index, engine notes and caps of this server")
    async def api_info() -> Response:
        return Response(info_bytes, media_type=JSON)


def _search_routes(
    app: FastAPI, runner: Runner, answers: _Answers, limits: Limits, *, reranker: bool
) -> dict[tuple[str, str], lean.Handler]:
    """/search (GET and POST) and /api/compare: parsed and capped at the boundary, run by the runner.
    Returns the routes :class:`adapter.serve.lean.Lean` answers ahead of FastAPI."""

    async def search(params: dict[str, Any], client_id: str | None = None) -> bytes:
        query = query_text(params.get("q"), limits)
        return await runner.search(query, parse_config(params, limits, reranker=reranker), client_id)

    @app.get("/search", summary="one search (parameters in the query string)", responses=_responses("search"))
    async def search_get(params: Annotated[SearchQuery, Query()]) -> Response:
        return await answers(search(params.params(), params.client_id))

    @app.post("/search", summary="one search (parameters as a JSON object)", responses=_responses("search"))
    async def search_post(body: SearchBody) -> Response:  # the OpenAPI document's; requests are answered by search_lean
        return await answers(search(body.params(), body.client_id))

    async def search_lean(receive: Receive) -> Response:
        """``POST /search`` as :class:`adapter.serve.lean.Lean` answers it: the same model, the same refusals."""
        try:
            body = SearchBody.model_validate(lean.json_document(await lean.body(receive)))
        except lean.BodyError as exc:
            return answers.refused("input", 400, str(exc))
        except ValidationError as exc:
            return answers.refused("input", 400, refusal([dict(e) for e in exc.errors()]))
        except HTTPException as exc:  # the door's cap, reached as the body arrived
            return await answers.http(None, exc)
        return await answers(search(body.params(), body.client_id))

    @app.post(
        "/api/compare", summary="one query, several configurations side by side", responses=_responses("the columns")
    )
    async def compare(body: CompareBody) -> Response:
        async def run() -> bytes:
            query, configs = parse_compare(
                {"q": body.q, "columns": [c.params() for c in body.columns]}, limits, reranker=reranker
            )
            return await runner.compare(query, configs, body.client_id)

        return await answers(run())

    return {("POST", "/search"): search_lean}


def _event_routes(app: FastAPI, traffic: Traffic | None, answers: _Answers) -> dict[tuple[str, str], lean.Handler]:
    """``POST /events``: one UBI event, checked against ubi-event.schema.json and queued for the
    writer (202); a bad one is a 400 saying what is wrong; a full queue drops it (503, counted)."""
    off = "UBI logging is off on this server: start hybrid serve with --ubi to take events"

    def take(document: Any) -> Response:
        if traffic is None:
            return answers.refused("not_found", 404, off)
        try:
            queued = traffic.event(document)
        except HybridError as exc:
            return answers.refused("input", 400, str(exc))
        if not queued:
            return answers.refused(
                "overloaded",
                503,
                "the UBI queue is full: the event was dropped; try again in 1 s",
                {"Retry-After": "1"},
            )
        return Response(b'{"queued":true}', status_code=202, media_type=JSON)

    @app.post(
        "/events",
        status_code=202,
        summary="one UBI event of a page (a click on a hit), queued for the UBI store (--ubi)",
        responses={
            202: {"description": "queued"},
            400: _responses("")[400],
            404: {"description": off},
            503: {"description": "the UBI queue is full: the event was dropped"},
        },
    )
    async def events(body: dict[str, Any]) -> Response:  # the OpenAPI document's; requests are answered by events_lean
        return take(body)

    async def events_lean(receive: Receive) -> Response:
        try:
            document = lean.json_document(await lean.body(receive))
        except lean.BodyError as exc:
            return answers.refused("input", 400, str(exc))
        except HTTPException as exc:
            return await answers.http(None, exc)
        return take(document)

    return {("POST", "/events"): events_lean}


def _ops_routes(app: FastAPI, runner: Runner, metrics: Metrics) -> None:
    """What ops probe: liveness, readiness and the Prometheus text."""

    @app.get("/healthz", summary="liveness: the process answers")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', media_type=JSON)

    @app.get("/readyz", summary="readiness: the model loaded, the cluster answering for the index")
    async def readyz(request: Request) -> Response:
        ready, checks = await runner.ready()
        # Open to probes, but the index, its size and the cluster's errors only to who has the token (where one is set).
        shown = {"ready": ready, **checks} if request.scope.get(TOKEN_SHOWN, True) else {"ready": ready}
        return Response(json.dumps(shown, ensure_ascii=False), status_code=200 if ready else 503, media_type=JSON)

    @app.get("/metrics", summary="Prometheus text: requests, latency per technique, fallbacks, errors")
    async def prometheus() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)


def _mount_report(app: FastAPI, root: Path) -> None:
    if not (root / "index.html").is_file():
        raise InputError(
            f"{root} has no index.html: "
            f"write the report with `hybrid eval ... --report {root}` or `hybrid report {root}`"
        )

    @app.get("/report", include_in_schema=False)
    async def report() -> Response:
        return RedirectResponse("/report/")

    app.mount("/report", StaticFiles(directory=str(root), html=True), name="report")


def _with_search_contract(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """FastAPI's OpenAPI document with the search contract (adapter/schemas/search.schema.json) as
    the ``SearchResult`` component: its ``$defs`` become ``SearchResult_<name>`` components."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            contract = schema("search")
            defs = contract.pop("$defs", {})
            for key in ("$schema", "$id"):
                contract.pop(key, None)
            components = document.setdefault("components", {}).setdefault("schemas", {})
            components["SearchResult"] = _refs(contract)
            components.update({f"SearchResult_{name}": _refs(value) for name, value in defs.items()})
            app.openapi_schema = document
        return app.openapi_schema

    return openapi


def _refs(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (v.replace("#/$defs/", "#/components/schemas/SearchResult_") if k == "$ref" else _refs(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_refs(v) for v in value]
    return value
