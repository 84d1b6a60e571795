"""The ``hybrid serve`` ASGI app (Starlette): the compare page, ``/search``, ``/api/compare`` and a
stored evaluation's report.

    GET  /                 the compare page (one query, two to four configurations side by side)
    GET  /search?q=...     one search, the JSON of ``hybrid search --json`` (adapter/schemas/search.schema.json)
    POST /search           the same, parameters as a JSON object
    POST /api/compare      {"q", "columns": [config, ...]} -> {"columns": [{"label", "result" | "error"}]}
    GET  /api/info         which cluster (address without credentials) and index, what this engine differs in, the caps
    GET  /report/          the report of ``--report DIR`` (a stored ``hybrid eval --report``), when given

Nothing a page gets holds the cluster's credentials: the client keeps them, the address is shown
without them, and errors say what failed without the request's headers. Responses carry a
Content-Security-Policy that lets the pages load only this server's own files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from adapter.errors import BackendError, HybridError, InputError
from adapter.serve.params import parse_compare, parse_config, query_text
from adapter.serve.service import SearchService

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


class _Guard:
    """Security headers on every response; request bodies over the cap refused with 413."""

    def __init__(self, app: ASGIApp, *, body_bytes: int) -> None:
        self.app = app
        self.body_bytes = body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.body_bytes:
            await _error(413, f"the request body is over {self.body_bytes} bytes")(scope, receive, send)
            return
        seen = 0

        async def capped() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.body_bytes:
                raise InputError(f"the request body is over {self.body_bytes} bytes")
            return message

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {k.lower() for k, _ in headers}
                headers += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items() if k.lower().encode() not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, capped, with_headers)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=HEADERS)


def _status(exc: HybridError) -> int:
    if isinstance(exc, BackendError):
        return 502  # the cluster failed the request: not the caller's mistake
    return 400


def _json_endpoint(work: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            return JSONResponse(await work(request))
        except HybridError as exc:
            return _error(_status(exc), str(exc))

    return endpoint


async def _body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw or b"{}")
    except ValueError as exc:
        raise InputError(f"the request body is not JSON: {exc}") from exc


def _query_params(request: Request) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in request.query_params:
        values = request.query_params.getlist(key)
        out[key] = values if len(values) > 1 or key == "filter" else values[0]
    return out


def create_app(service: SearchService, *, report_dir: str | Path | None = None) -> Starlette:
    """The app for one warm :class:`SearchService`; ``report_dir`` (a stored evaluation with its
    report) is served under ``/report/``."""
    from adapter.evaluation.html import environment

    limits = service.limits
    page = environment().get_template("compare.html.j2")
    info = service.info.as_json()
    info["report"] = "/report/" if report_dir else None

    async def home(request: Request) -> Response:
        return HTMLResponse(page.render(info=info, info_json=json.dumps(info, ensure_ascii=False).replace("</", "<\\/")))

    async def api_info(request: Request) -> Any:
        return info

    async def search(request: Request) -> Any:
        params = await _body(request) if request.method == "POST" else _query_params(request)
        if not isinstance(params, dict):
            raise InputError("a search request body is a JSON object of parameters")
        query = query_text(params.get("q"), limits)
        config = parse_config(params, limits, reranker=service.reranker is not None)
        # On the event loop's thread: the service runs one search at a time anyway, and the hop to a
        # worker thread cost 3 ms a call at load 30 (benchmarks/pages.py: /search added 5.09 ms p50
        # over the Python API through run_in_threadpool, 2.12 ms without). A compare stays on a worker.
        return service.search(query, config)

    async def compare(request: Request) -> Any:
        query, configs = parse_compare(await _body(request), limits, reranker=service.reranker is not None)
        return {"q": query, "columns": await run_in_threadpool(service.compare, query, configs)}

    routes: list[Any] = [
        Route("/", home),
        Route("/api/info", _json_endpoint(api_info)),
        Route("/search", _json_endpoint(search), methods=["GET", "POST"]),
        Route("/api/compare", _json_endpoint(compare), methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("adapter.web", "static")]), name="static"),
    ]
    if report_dir is not None:
        root = Path(report_dir)
        if not (root / "index.html").is_file():
            raise InputError(f"{root} has no index.html: write the report with `hybrid eval ... --report {root}` or `hybrid report {root}`")
        routes.append(Route("/report", lambda request: RedirectResponse("/report/")))
        routes.append(Mount("/report", StaticFiles(directory=str(root), html=True), name="report"))
    app = Starlette(routes=routes)
    app.add_middleware(_Guard, body_bytes=limits.body_bytes)
    return app
