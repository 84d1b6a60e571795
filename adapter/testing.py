"""Test doubles for the shell: record a real cluster's answers, replay them without one.

They stand in for the *client library*, under the real port (:mod:`adapter.engines.port`), as
httpx's ``MockTransport`` stands in for the network under a real ``httpx.Client``: the port's own
code runs for real over them (the requests it builds, the answers it reads, how it translates
errors), and a test reads what reached the "wire" in :attr:`FakeClient.calls`.

- :class:`RecordingClient` wraps a real client: every call goes through and is kept, request and
  answer, as JSON-safe data (:attr:`RecordingClient.exchanges`).
- :class:`FakeClient` answers from such a recording, or from answers scripted per call (a value,
  a list of values used in turn, a function of the call, or an exception to raise), and keeps
  every call it got (:attr:`FakeClient.calls`) for assertions on request bodies.
  :attr:`FakeClient.port` is the port over it.

Both speak the opensearch-py surface the ports use (``search``, ``msearch``, ``mget``, ``bulk``,
``info``, ``indices.*``, ``cluster.*``, ``nodes.*``, ``transport.perform_request``); ``engine_name``
says which engine's port to put over them. A fake of the port itself, an engine of its own held in
memory, is ``tests/support/fake_engine``. They are for tests and benchmarks of the adapter's own
logic; behaviour of the server is tested against a real one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol


@dataclass(frozen=True)
class Call:
    """One call made on a fake or recording client: ``path`` is e.g. ``"search"`` or ``"indices.get"``."""

    path: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def body(self) -> Any:
        if "body" in self.kwargs:
            return self.kwargs["body"]
        if self.path == "transport.perform_request" and len(self.args) < 3:
            return self.kwargs.get("body")
        return None

    @property
    def params(self) -> Mapping[str, Any]:
        return self.kwargs.get("params") or {}


class _Owner(Protocol):
    """What a :class:`_Path` sends its call to (a fake or recording client)."""

    def _call(self, path: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any: ...


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class _Path:
    """``client.indices.get`` as an object: attribute access goes deeper, calling it sends the call."""

    def __init__(self, owner: _Owner, path: str) -> None:
        self._owner = owner
        self._path = path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Path(self._owner, f"{self._path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._owner._call(self._path, args, kwargs)


class FakeClient:
    """A client that answers from scripted answers or a recording (see the module docstring).

    ``answers`` maps a call path to what it returns. A list is consumed one answer per call
    (the last one repeats); a callable gets the :class:`Call` and returns the answer; an
    exception instance is raised. A call with no answer raises ``AssertionError`` naming it.
    ``recording`` (from :class:`RecordingClient`) answers calls in the recorded order, checking
    each call's path against the recording. ``engine_name``: the engine it stands for
    (``opensearch`` or ``elasticsearch``; :func:`adapter.engines.engine_for` reads it).
    """

    engine_name = "opensearch"

    def __init__(self, answers: Mapping[str, Any] | None = None, *, recording: list[Mapping[str, Any]] | None = None,
                 host: str = "fake-cluster", port: int = 9200, engine_name: str = "opensearch") -> None:
        self.engine_name = engine_name
        self.answers = dict(answers or {})
        self.recording = list(recording or [])
        self._replayed = 0
        self._used: dict[str, int] = {}
        self.calls: list[Call] = []
        self.transport = _Transport(self, [{"host": host, "port": port}])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Path(self, name)

    def calls_to(self, path: str) -> list[Call]:
        return [c for c in self.calls if c.path == path]

    @property
    def port(self) -> Any:
        """The port of the engine this double stands for, over it (:func:`adapter.engines.cluster_for`)."""
        from adapter.engines.registry import engine_named

        return engine_named(self.engine_name).cluster(self)

    def _call(self, path: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        call = Call(path, tuple(args), dict(kwargs))
        self.calls.append(call)
        if path in self.answers:
            answer = self.answers[path]
            if isinstance(answer, list):
                i = self._used.get(path, 0)
                self._used[path] = i + 1
                answer = answer[min(i, len(answer) - 1)]
            if callable(answer) and not isinstance(answer, BaseException):
                answer = answer(call)
            if isinstance(answer, BaseException):
                raise answer
            return _json_safe(answer)
        if self._replayed < len(self.recording):
            exchange = self.recording[self._replayed]
            self._replayed += 1
            if exchange["path"] != path:
                raise AssertionError(f"call {len(self.calls)} is {path}, the recording has {exchange['path']} there")
            return _json_safe(exchange["response"])
        raise AssertionError(f"FakeClient has no answer for {path} (call {len(self.calls)})")


class _Transport:
    def __init__(self, owner: _Owner, hosts: list[dict[str, Any]]) -> None:
        self._owner = owner
        self.hosts = hosts

    @property
    def serializer(self) -> Any:
        from opensearchpy.serializer import JSONSerializer  # what the bulk helpers encode actions with

        return JSONSerializer()

    def perform_request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        return self._owner._call("transport.perform_request", (method, url, *args), kwargs)


class RecordingClient:
    """Passes every call to ``inner`` (a real client) and keeps request and answer."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.exchanges: list[dict[str, Any]] = []
        self.transport = _RecordingTransport(self)

    @property
    def engine_name(self) -> str:
        from adapter.engines import engine_name

        return engine_name(self._inner)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Path(self, name)

    def _call(self, path: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        target = self._inner
        for part in path.split("."):
            target = getattr(target, part)
        request = {"path": path, "args": _json_safe(list(args)), "kwargs": _json_safe(dict(kwargs))}  # before the client edits them
        response = target(*args, **kwargs)
        # elasticsearch-py answers HEAD requests (exists) with a HeadApiResponse: its truth is the answer.
        kept = bool(response) if type(response).__name__ == "HeadApiResponse" else response
        self.exchanges.append({**request, "response": _json_safe(kept)})
        return response


class _RecordingTransport:
    def __init__(self, owner: RecordingClient) -> None:
        self._owner = owner

    @property
    def hosts(self) -> Any:
        return self._owner._inner.transport.hosts

    @property
    def serializer(self) -> Any:
        return self._owner._inner.transport.serializer

    def perform_request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        return self._owner._call("transport.perform_request", (method, url, *args), kwargs)


def bulk_actions(call: Call) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """The ``(action, source)`` pairs of a ``bulk`` call as the bulk helpers encoded them."""
    lines = [json.loads(line) for line in str(call.body).splitlines() if line.strip()]
    out, i = [], 0
    while i < len(lines):
        action = lines[i]
        op = next(iter(action))
        source = lines[i + 1] if op in ("index", "create", "update") else None
        out.append((action, source))
        i += 2 if source is not None else 1
    return out


def bulk_answer(call: Call, status: Callable[[str, str], int | tuple[int, str]] = lambda op, doc_id: 201) -> dict[str, Any]:
    """A ``bulk`` answer for ``call``: ``status(op, id)`` gives each item's status (or status and reason)."""
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

