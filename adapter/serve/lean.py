"""The hot routes answered without FastAPI's per-request machinery (issue 37 item 6).

FastAPI declares every route (its OpenAPI document, its validation), but a request to it passes its
router, its exception and exit-stack middleware, its dependency solver and its body reader: about a
tenth of the serve's CPU per search. :class:`Lean` sits inside the door (the token, the hosts, the
body's cap and the queue's refusals all apply) and answers the routes of its table itself: the body
read as it arrives, parsed by orjson, checked by the same pydantic model FastAPI would use, run by
the same code. A route not in the table goes on to FastAPI. Another hot route joins by adding a
``(method, path)`` and its handler.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Mapping

import orjson
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

Handler = Callable[[Receive], Awaitable[Response]]


class BodyError(Exception):
    """A request body that is not the JSON asked for, in words for the caller."""


class Lean:
    """``routes``: ``(method, path)`` -> a handler that reads the request and returns its answer."""

    def __init__(self, app: ASGIApp, *, routes: Mapping[tuple[str, str], Handler]) -> None:
        self.app = app
        self.routes = dict(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.routes.get((scope.get("method", ""), scope.get("path", ""))) if scope["type"] == "http" else None
        if handler is None:
            await self.app(scope, receive, send)
            return
        response = await handler(receive)
        await response(scope, receive, send)


async def body(receive: Receive) -> bytes:
    """The request's body, whole (the door's cap raises as it grows past it)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BodyError("the client closed the connection before its body arrived")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def json_document(raw: bytes) -> Any:
    """``raw`` parsed as JSON, or a :class:`BodyError` in the words FastAPI's route gave."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if (
            exc.msg == "depth limit exceeded"
        ):  # orjson's 1024 levels (the standard library's answer was a RecursionError)
            raise BodyError("the JSON body is nested too deeply") from None
        raise BodyError(f"the request body is not JSON: {exc.msg} at character {exc.pos}") from None
