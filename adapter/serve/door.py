"""What every ``hybrid serve`` request passes before a route: pure ASGI middleware.

- :class:`Counted` (outermost): every answer counted and timed (``/metrics``), refusals included.
- :class:`TrustedHosts`: a ``Host`` this server does not answer to is refused (400: DNS rebinding:
  a page whose name was rebound to 127.0.0.1 still sends its own name). Starlette's
  TrustedHostMiddleware decides (its parser knows ports and IPv6 literals); this says which names
  are answered and counts the refusal.
- :class:`Door`: security headers on every answer, then, in order, refusals that say why: a missing
  or wrong bearer token where one is set (401; the probes ``/healthz`` and ``/readyz`` and the
  package's static files excepted); a POST whose body is not ``application/json`` (415: a
  cross-site form or ``text/plain`` fetch needs no CORS preflight; JSON does, and this server
  grants none); a body over the cap (413, unread where its Content-Length announces it, else at the
  cap as it arrives); a search while the queue is full (503).

A browser cannot send a bearer token when it opens a page, so ``GET /?token=...`` with the right
token answers with a cookie (HttpOnly, SameSite=Strict: never sent by another site's page) and a
redirect to the address without it; the cookie then stands for the token.
"""

from __future__ import annotations

import hmac
import json
import time
from dataclasses import dataclass
from typing import Callable, Optional
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapter.serve.admission import Refused, arrived
from adapter.serve.metrics import Metrics, route_of

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
OPEN_PATHS = ("/healthz", "/readyz")  # probes: a load balancer or kubelet asks without a token
COOKIE = "hybrid_serve_token"
# Set on a probe's scope where the server has a token: whether this request carries it (the probe
# answers anyone, but names the index and its size only to who has the token).
TOKEN_SHOWN = "hybrid.token_shown"


@dataclass(frozen=True)
class Security:
    """``hosts``: the ``Host`` names answered (None: any; ``*.example.org`` matches its subdomains);
    ``token``: the bearer token every request but the probes must carry (None: none)."""

    hosts: tuple[str, ...] | None = LOOPBACK_HOSTS
    token: str | None = None

    def __repr__(self) -> str:  # never the token
        return f"Security(hosts={self.hosts!r}, token={'set' if self.token else None})"


def json_answer(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[Message, Message]:
    body = json.dumps({"error": message}, ensure_ascii=False).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in {**HEADERS, **(headers or {})}.items()]
    return {"type": "http.response.start", "status": status, "headers": raw}, {
        "type": "http.response.body",
        "body": body,
    }


def starlette_host(name: str) -> str:
    """A name as TrustedHostMiddleware matches it: an IPv6 literal in brackets (``[::1]``)."""
    name = name.strip().lower()
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


class _HttpOnly:
    """A middleware over ``app`` for HTTP requests (:meth:`http`): any other scope (the lifespan) passes to ``app``
    as it came."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class TrustedHosts(_HttpOnly):
    """Starlette's TrustedHostMiddleware with a refusal that names the hosts answered (JSON, like
    every other refusal here) and is counted (``hybrid_serve_errors_total{kind="host"}``)."""

    PASSED = "hybrid.host_passed"

    def __init__(self, app: ASGIApp, *, hosts: tuple[str, ...] | None, metrics: Metrics) -> None:
        super().__init__(app)
        self.hosts = hosts
        self.metrics = metrics
        self.check = TrustedHostMiddleware(
            self._passed, allowed_hosts=[starlette_host(h) for h in hosts or ("*",)], www_redirect=False
        )

    async def _passed(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[self.PASSED] = True
        await self.app(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.hosts is None:
            await self.app(scope, receive, send)
            return

        async def unless_refused(message: Message) -> None:  # the middleware's own plain-text 400 is replaced below
            if scope.get(self.PASSED):
                await send(message)

        await self.check(scope, receive, unless_refused)
        if not scope.get(self.PASSED):
            self.metrics.errors.labels("host").inc()
            host = dict(scope.get("headers") or []).get(b"host", b"(none)").decode("latin-1")
            for part in json_answer(
                400,
                f"this server answers to Host {', '.join(self.hosts)}, not {host!r} (hybrid serve --allowed-host NAME)",
            ):
                await send(part)


SEARCH_ROUTES = ("/search", "/api/compare")
Busy = Callable[[], Optional[Refused]]


class Door(_HttpOnly):
    """``busy()``: why a search would be refused now (a full queue): answered here, before the body
    is read and parsed, so a flood of refused searches costs the server little."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        security: Security,
        metrics: Metrics,
        busy: Busy = lambda: None,
        body_bytes: int | None = None,
    ) -> None:
        super().__init__(app)
        self.security = security
        self.metrics = metrics
        self.busy = busy
        self.body_bytes = body_bytes

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            kind, status, message, extra = refusal
            self.metrics.errors.labels(kind).inc()
            for message_part in json_answer(status, message, extra):
                await send(message_part)
            return
        if self.security.token and scope["path"] in OPEN_PATHS:
            scope[TOKEN_SHOWN] = self._carries_token(scope, headers)
        login = self._login(scope)
        if login is not None:
            for part in login:
                await send(part)
            return
        if self.body_bytes is not None and scope["method"] in ("POST", "PUT", "PATCH"):
            receive = self._capped(receive, self.body_bytes)
        await self.app(scope, receive, self._with_headers(send))

    @staticmethod
    def _capped(receive: Receive, cap: int) -> Receive:
        """``receive`` refusing a body that grows past ``cap`` bytes (one sent without a Content-Length):
        the route's body read raises the 413 its exception handler answers in JSON."""
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise HTTPException(413)
            return message

        return capped

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[str, int, str, dict[str, str]] | None:
        if self.security.token and not self._authorized(scope, headers):
            return (
                "unauthorized",
                401,
                "this server needs its token: send Authorization: Bearer <token>",
                {"WWW-Authenticate": 'Bearer realm="hybrid serve"'},
            )
        if scope["method"] == "POST" and not _is_json(headers.get("content-type", "")):
            return (
                "media_type",
                415,
                "a POST body is JSON: send Content-Type: application/json "
                f"(got {headers.get('content-type', 'none')!r})",
                {},
            )
        length = headers.get("content-length", "")
        if (
            self.body_bytes is not None and length.isdigit() and int(length) > self.body_bytes
        ):  # announced: refused unread
            return ("too_large", 413, f"the request body is over {self.body_bytes} bytes", {})
        refused = self.busy() if scope["path"] in SEARCH_ROUTES else None
        if refused is not None:
            return (refused.kind, 503, str(refused), {"Retry-After": str(refused.retry_after)})
        return None

    def _authorized(self, scope: Scope, headers: dict[str, str]) -> bool:
        path = scope["path"]
        if path in OPEN_PATHS or path.startswith("/static/"):
            return True
        return self._carries_token(scope, headers)

    def _carries_token(self, scope: Scope, headers: dict[str, str]) -> bool:
        token = self.security.token or ""
        given = headers.get("authorization", "")
        if given[:7].lower() == "bearer " and hmac.compare_digest(given[7:].strip().encode(), token.encode()):
            return True
        cookie = _cookies(headers.get("cookie", "")).get(COOKIE)
        if cookie is not None and hmac.compare_digest(cookie.encode(), token.encode()):
            return True
        return self._token_in_query(scope) is not None

    def _token_in_query(self, scope: Scope) -> str | None:
        if scope["method"] != "GET" or not self.security.token:
            return None
        given = HTTPConnection(scope).query_params.get("token")
        return (
            given if given is not None and hmac.compare_digest(given.encode(), self.security.token.encode()) else None
        )

    def _login(self, scope: Scope) -> tuple[Message, Message] | None:
        """``GET <path>?token=...`` (the right one): the cookie, and the address without the token."""
        token = self._token_in_query(scope)
        if token is None:
            return None
        rest = [(k, v) for k, v in HTTPConnection(scope).query_params.multi_items() if k != "token"]
        location = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        start, body = json_answer(
            303,
            "signed in",
            {"Location": location, "Set-Cookie": f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/{secure}"},
        )
        return start, body

    @staticmethod
    def _with_headers(send: Send) -> Send:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {k.lower() for k, _ in headers}
                headers += [
                    (k.lower().encode(), v.encode()) for k, v in HEADERS.items() if k.lower().encode() not in present
                ]
                message = {**message, "headers": headers}
            await send(message)

        return with_headers


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out[name] = value
    return out


class Counted(_HttpOnly):
    """Counts and times every answer by route, method and status (a failure that escapes: 500)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(app)
        self.metrics = metrics
        self.clock = clock

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = self.clock()
        arrived.set(time.monotonic())
        status: list[int] = []

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, noted)
        except BaseException:
            if not status:
                status.append(500)
            raise
        finally:
            route = route_of(scope["path"])
            self.metrics.requests.labels(route, scope["method"], str(status[0] if status else 500)).inc()
            self.metrics.request_seconds.labels(route).observe(self.clock() - started)
