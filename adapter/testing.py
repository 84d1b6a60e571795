"""Test doubles for the shell at the HTTP layer: record a real cluster's requests, replay them without one.

As httpx's ``MockTransport`` stands in for the network under a real ``httpx.Client``, these stand in
for the *node* under the real client library: :func:`FakeClient` is a real ``opensearchpy.OpenSearch``
(or the adapter's ``elasticsearch.Elasticsearch``) whose connection (opensearch-py's
``connection_class``; elastic-transport's ``node_class``) answers each HTTP request from a script
instead of a socket. The client's own code runs for real over it (paths, query strings, bodies,
NDJSON, retries of 502/503/504, HEAD's 404 as ``False``, status codes raised as its own exceptions),
and so does the port's (:mod:`adapter.engines.port`) above it.

- :class:`Request`: one HTTP request as the node got it: ``method``, ``path``, ``params`` (the query
  string) and ``body`` (parsed JSON; a list of objects for NDJSON: ``_bulk``, ``_msearch``).
- :class:`FakeServer`: the answers, scripted per request as ``"METHOD /path"`` (exact, else the first
  glob pattern in the order given that matches, e.g. ``"POST */_search"``; ``*`` crosses ``/``): a value
  (a JSON answer with status 200; for ``HEAD``, ``True``/``False`` is 200/404), a :class:`Reply` (any
  status, which the client raises as the real one would; a JSON array answer goes in one too), a list
  used in turn (the last one repeats), a function
  of the :class:`Request`, or an exception to raise (a connection error). Or a recording, answered
  in order. Every request is kept in :attr:`FakeServer.calls`.
- :func:`FakeClient`: the client over a :class:`FakeServer`; ``.calls``, ``.calls_to(pattern)``,
  ``.server`` and ``.port`` (the engine's port over it).
- :func:`RecordingClient`: a copy of a real client whose connections keep every request and its
  answer, in the same shape (``.exchanges``), for :func:`FakeClient` ``(recording=...)``.

A fake of the port itself, an engine of its own held in memory, is ``tests/support/fake_engine``.
These are for tests and benchmarks of the adapter's own logic; the server's behaviour is tested
against a real one.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar, cast
from urllib.parse import parse_qsl, urlencode, urlsplit

if TYPE_CHECKING:
    from adapter.engines import RawClient
    from adapter.engines.port import Cluster

RawClientT = TypeVar("RawClientT", bound="RawClient")  # opensearch-py's client or elasticsearch-py's

NDJSON_ENDPOINTS = ("_bulk", "_msearch", "_msearch/template")


@dataclass(frozen=True)
class Request:
    """One HTTP request as the node got it (``params``: the query string, as strings)."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None

    @property
    def key(self) -> str:
        """``"METHOD /path"``, what answers are scripted by."""
        return f"{self.method} {self.path}"

    def matches(self, pattern: str) -> bool:
        """Whether ``pattern`` (``"METHOD /path"``, glob) names this request."""
        return self.key == pattern or fnmatchcase(self.key, pattern)

    @property
    def index(self) -> str | None:
        """The index (or comma-separated indices, or alias) the path starts with; None: none (``/_msearch``)."""
        first = self.path.lstrip("/").split("/", 1)[0]
        return first if first and not first.startswith("_") else None


@dataclass(frozen=True)
class Reply:
    """An answer with its status: 2xx is returned, 4xx/5xx raised by the client as its own exception.
    ``body`` is sent as JSON unless ``headers`` give another content type (then a string goes as it is)."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


def parse_body(path: str, raw: str | bytes | None) -> Any:
    """A request body as data: NDJSON (``_bulk``, ``_msearch``) as a list of objects, JSON parsed, else the text."""
    if raw is None or raw == b"" or raw == "":
        return None
    if isinstance(raw, bytes):
        raw = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    if path.rstrip("/").endswith(NDJSON_ENDPOINTS):
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def query_params(params: Mapping[str, Any] | None) -> dict[str, str]:
    """``params`` as the query string carries them (``True`` is ``"True"`` there unless the client escaped it)."""
    return dict(parse_qsl(urlencode(dict(params or {})), keep_blank_values=True))


def _sent(method: str, path: str, params: Mapping[str, Any] | None, body: str | bytes | None) -> Request:
    """What opensearch-py's connection sends (the query string as ``params``), as the node gets it."""
    return Request(method, path, query_params(params), parse_body(path, body))


def _sent_to(method: str, prefix: str, target: str, body: bytes | None) -> Request:
    """What an elastic-transport node sends (the query string in ``target``), as the node gets it."""
    split = urlsplit(target)
    path = prefix + split.path
    return Request(method, path, dict(parse_qsl(split.query, keep_blank_values=True)), parse_body(path, body))


class FakeServer:
    """Scripted answers (or a recording) per HTTP request; keeps every request (see the module docstring).

    A request with no answer raises ``AssertionError`` naming it. ``recording`` (from
    :func:`RecordingClient`) answers the requests that no script answers, in the recorded order,
    checking each one's method and path against it.
    """

    def __init__(
        self, answers: Mapping[str, Any] | None = None, *, recording: list[Mapping[str, Any]] | None = None
    ) -> None:
        self.answers = dict(answers or {})
        self.recording = list(recording or [])
        self.calls: list[Request] = []
        self._replayed = 0
        self._used: dict[str, int] = {}

    def calls_to(self, pattern: str) -> list[Request]:
        """The requests ``pattern`` (``"METHOD /path"``, glob) names, in order."""
        return [c for c in self.calls if c.matches(pattern)]

    def answer(self, request: Request) -> Reply:
        """The reply to ``request`` (kept in :attr:`calls`); raises a scripted exception."""
        self.calls.append(request)
        key = (
            request.key if request.key in self.answers else next((k for k in self.answers if request.matches(k)), None)
        )
        if key is not None:
            return self._scripted(key, request)
        if self._replayed < len(self.recording):
            exchange = self.recording[self._replayed]
            self._replayed += 1
            if (exchange["method"], exchange["path"]) != (request.method, request.path):
                raise AssertionError(
                    f"request {len(self.calls)} is {request.key}, the recording has "
                    f"{exchange['method']} {exchange['path']} there"
                )
            return Reply(int(exchange["status"]), exchange.get("response"))
        raise AssertionError(f"FakeServer has no answer for {request.key} (request {len(self.calls)})")

    def _scripted(self, key: str, request: Request) -> Reply:
        answer = self.answers[key]
        if isinstance(answer, list):
            i = self._used.get(key, 0)
            self._used[key] = i + 1
            answer = answer[min(i, len(answer) - 1)]
        if callable(answer) and not isinstance(answer, BaseException):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, bool) and request.method == "HEAD":
            return Reply(200 if answer else 404)
        return Reply(200, answer)


def _encoded(reply: Reply) -> str:
    """The answer's bytes as text: JSON, unless the reply says it is something else (``text/plain``: the text as
    it is)."""
    if reply.body is None:
        return ""
    content_type = {k.lower(): v for k, v in reply.headers.items()}.get("content-type", "application/json")
    return reply.body if isinstance(reply.body, str) and "json" not in content_type else json.dumps(reply.body)


class _Scripted:
    """What a fake client adds to the real one: its server, the requests it got, its port."""

    server: FakeServer
    engine_name: str

    @property
    def calls(self) -> list[Request]:
        return self.server.calls

    def calls_to(self, pattern: str) -> list[Request]:
        return self.server.calls_to(pattern)

    @property
    def port(self) -> Cluster:
        """The port of the engine this client stands for, over it."""
        from adapter.engines.registry import engine_named

        return engine_named(self.engine_name).cluster(self)


def _fake_opensearch(server: FakeServer, host: str, port: int) -> Any:
    from opensearchpy import Connection, OpenSearch

    from adapter.engines.connection import MAX_RETRIES, RETRY_ON_STATUS

    class FakeConnection(Connection):
        """opensearch-py's connection, answered by the server instead of a socket."""

        def perform_request(
            self,
            method: str,
            url: str,
            params: Mapping[str, Any] | None = None,
            body: Any = None,
            timeout: Any = None,
            ignore: Any = (),
            headers: Any = None,
        ) -> tuple[int, dict[str, str], str]:
            reply = server.answer(_sent(method, self.url_prefix + url, params, body))
            data = _encoded(reply)
            answer_headers = {"content-type": "application/json", **{k.lower(): v for k, v in reply.headers.items()}}
            ignored = (ignore,) if isinstance(ignore, int) else tuple(ignore or ())
            if not 200 <= reply.status < 300 and reply.status not in ignored:  # as opensearch-py's urllib3 connection
                self._raise_error(reply.status, data, answer_headers["content-type"])
            return reply.status, answer_headers, data

    class FakeOpenSearch(_Scripted, OpenSearch):
        engine_name = "opensearch"

    client = FakeOpenSearch(
        hosts=[{"host": host, "port": port}],
        connection_class=FakeConnection,
        max_retries=MAX_RETRIES,
        retry_on_timeout=True,
        retry_on_status=RETRY_ON_STATUS,
    )
    client.server = server
    return client


def _fake_elasticsearch(server: FakeServer, host: str, port: int) -> Any:
    from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders
    from elastic_transport._node import NodeApiResponse

    from adapter.engines.connection import MAX_RETRIES, RETRY_ON_STATUS
    from adapter.engines.elasticsearch.client import _dict_answers_class

    class FakeNode(BaseNode):
        """elastic-transport's node, answered by the server instead of a socket."""

        _CLIENT_META_HTTP_CLIENT = ("fake", "1")

        def perform_request(
            self,
            method: str,
            target: str,
            body: bytes | None = None,
            headers: HttpHeaders | None = None,
            request_timeout: Any = None,
        ) -> NodeApiResponse:
            reply = server.answer(_sent_to(method, self.path_prefix, target, body))
            answer_headers = HttpHeaders(
                {
                    "content-type": "application/json",
                    "x-elastic-product": "Elasticsearch",
                    **{k.lower(): v for k, v in reply.headers.items()},
                }
            )  # the product check reads it
            meta = ApiResponseMeta(
                status=reply.status, http_version="1.1", headers=answer_headers, duration=0.0, node=self.config
            )
            return NodeApiResponse(meta, _encoded(reply).encode("utf-8"))

    class FakeElasticsearch(_Scripted, _dict_answers_class()):  # type: ignore[misc]
        engine_name = "elasticsearch"

    client = FakeElasticsearch(
        hosts=[f"http://{host}:{port}"],
        node_class=FakeNode,
        max_retries=MAX_RETRIES,
        retry_on_timeout=True,
        retry_on_status=RETRY_ON_STATUS,
    )
    client.server = server
    return client


def FakeClient(
    answers: Mapping[str, Any] | None = None,
    *,
    recording: list[Mapping[str, Any]] | None = None,  # noqa: N802
    host: str = "fake-cluster",
    port: int = 9200,
    engine_name: str = "opensearch",
) -> Any:
    """A real client of ``engine_name`` (``opensearch`` or ``elasticsearch``) over a :class:`FakeServer`
    answering from ``answers`` and ``recording`` (see the module docstring)."""
    server = FakeServer(answers, recording=recording)
    if engine_name == "elasticsearch":
        return _fake_elasticsearch(server, host, port)
    if engine_name != "opensearch":
        raise ValueError(f"FakeClient stands for opensearch or elasticsearch, not {engine_name!r}")
    return _fake_opensearch(server, host, port)


# -- recording ---------------------------------------------------------------------------------------


class _Recorder:
    """Keeps one exchange per HTTP request: the request as :class:`Request` fields, the status and the answer."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    def keep(self, request: Request, status: int | None, answer: str | bytes | None) -> None:
        text = answer.decode("utf-8") if isinstance(answer, bytes) else answer
        try:
            response = json.loads(text) if text else None
        except ValueError:
            response = text
        self.exchanges.append(
            {
                "method": request.method,
                "path": request.path,
                "params": dict(request.params),
                "body": request.body,
                "status": status,
                "response": response,
            }
        )


class _Recording:
    """A connection, node or node pool standing in for ``inner``: everything it does not define is ``inner``'s."""

    def __init__(self, inner: Any, recorder: _Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _RecordingConnection(_Recording):
    """An opensearch-py connection that keeps each request it sends and the answer."""

    def perform_request(
        self, method: str, url: str, params: Mapping[str, Any] | None = None, body: Any = None, **options: Any
    ) -> Any:
        from opensearchpy import TransportError

        request = _sent(method, self._inner.url_prefix + url, params, body)
        try:  # options: the transport's timeout, ignore and headers, for the real connection alone
            status, answer_headers, data = self._inner.perform_request(method, url, params, body, **options)
        except TransportError as e:
            if isinstance(e.status_code, int):  # an HTTP answer; a connection error ("N/A") is not kept
                self._recorder.keep(
                    request, e.status_code, json.dumps(e.info) if isinstance(e.info, (dict, list)) else None
                )
            raise
        self._recorder.keep(request, status, data)
        return status, answer_headers, data


class _RecordingNode(_Recording):
    """An elastic-transport node that keeps each request it sends and the answer."""

    def perform_request(
        self, method: str, target: str, body: bytes | None = None, headers: Any = None, request_timeout: Any = None
    ) -> Any:
        request = _sent_to(method, self._inner.path_prefix, target, body)
        resp = self._inner.perform_request(method, target, body, headers, request_timeout)
        self._recorder.keep(request, resp.meta.status, resp.body)
        return resp


class _RecordingPool(_Recording):
    """elastic-transport's node pool, handing out recording nodes."""

    def get(self) -> _RecordingNode:
        return _RecordingNode(self._inner.get(), self._recorder)

    def mark_dead(self, node: Any) -> None:
        self._inner.mark_dead(getattr(node, "_inner", node))

    def mark_live(self, node: Any) -> None:
        self._inner.mark_live(getattr(node, "_inner", node))


def RecordingClient(client: RawClientT) -> RawClientT:  # noqa: N802
    """A copy of ``client`` (opensearch-py's or elasticsearch-py's) sharing its connections, whose
    requests are kept with their answers in ``.exchanges`` (``client`` itself records nothing)."""
    recorder = _Recorder()
    raw: Any = client  # either library's client: the two transports differ, and the copy gains .exchanges
    transport = copy.copy(raw.transport)
    if hasattr(transport, "node_pool"):  # elastic-transport
        transport.node_pool = _RecordingPool(raw.transport.node_pool, recorder)
        copied = type(raw)(_transport=transport)
    else:  # opensearch-py: the same Transport (its retries, serializer), its connections recording
        inner_get = raw.transport.get_connection
        transport.get_connection = lambda: _RecordingConnection(inner_get(), recorder)
        copied = type(raw)(transport_class=lambda *args, **kwargs: transport)
        for name in ("_hybrid_auth",):
            if hasattr(raw, name):
                setattr(copied, name, getattr(raw, name))
    copied.exchanges = recorder.exchanges
    return cast("RawClientT", copied)


# -- bulk --------------------------------------------------------------------------------------------


def bulk_actions(call: Request) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """The ``(action, source)`` pairs of a ``_bulk`` request."""
    lines: list[dict[str, Any]] = list(call.body or [])
    out, i = [], 0
    while i < len(lines):
        action = lines[i]
        op = next(iter(action))
        source = lines[i + 1] if op in ("index", "create", "update") else None
        out.append((action, source))
        i += 2 if source is not None else 1
    return out


def bulk_answer(
    call: Request, status: Callable[[str, str], int | tuple[int, str]] = lambda op, doc_id: 201
) -> dict[str, Any]:
    """A ``_bulk`` answer for ``call``: ``status(op, id)`` gives each item's status (or status and reason)."""
    items = []
    for action, _ in bulk_actions(call):
        op = next(iter(action))
        doc_id = action[op].get("_id")
        got = status(op, doc_id)
        code, reason = got if isinstance(got, tuple) else (got, "")
        item: dict[str, Any] = {"_index": action[op].get("_index"), "_id": doc_id, "status": code}
        if code >= 300:
            item["error"] = {"type": "fake_error", "reason": reason or f"status {code}"}
        items.append({op: item})
    return {"took": 1, "errors": any(next(iter(i.values()))["status"] >= 300 for i in items), "items": items}


@contextlib.contextmanager
def wire_log() -> Iterator[list[str]]:
    """The requests opensearch-py sends in this block, as its request log writes them (``GET http://host/path``,
    one line a request answered or failed, the transport's own retries included): a count taken on the wire, not
    by the adapter's own counter. The logger's level and handlers are put back after."""
    import logging

    class Wire(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "[status:" in message:
                lines.append(message.split(" [status:")[0])

    lines: list[str] = []
    logger, handler = logging.getLogger("opensearch"), Wire()
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
