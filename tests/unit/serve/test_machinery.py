"""hybrid serve's machinery, without a cluster: query vectors batched and cached, the bounded queue
and the deadline, the door's checks, the request models' refusals, the command's settings."""

from __future__ import annotations

from tests.support.extras import skip_module_without

skip_module_without("serve")  # before the imports that need FastAPI and pydantic

import argparse  # noqa: E402
import asyncio  # noqa: E402
import functools  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from adapter.errors import ConfigurationError  # noqa: E402
from adapter.serve.admission import Admission, Deadline, DeadlineExceeded, Overloaded  # noqa: E402
from adapter.serve.door import LOOPBACK_HOSTS, TrustedHosts  # noqa: E402
from adapter.serve.metrics import Metrics, route_of  # noqa: E402
from adapter.serve.schema import CompareBody, SearchBody, SearchQuery, refusal  # noqa: E402
from adapter.serve.vectors import QueryVectors  # noqa: E402

pytestmark = pytest.mark.unit


def on_a_loop(test):
    """An async test run on a fresh event loop (the project has no async test plugin)."""

    @functools.wraps(test)
    def run():
        return asyncio.run(test())

    return run


class CountingModel:
    """Embeds a batch slowly enough that requests pile up behind it; records each batch."""

    def __init__(self, seconds: float = 0.05) -> None:
        self.batches: list[list[str]] = []
        self.seconds = seconds
        self.threads: set[str] = set()

    def __call__(self, texts):
        self.batches.append(list(texts))
        self.threads.add(threading.current_thread().name)
        time.sleep(self.seconds)
        return np.stack([np.full(4, len(t), dtype=np.float32) for t in texts])


@on_a_loop
async def test_concurrent_queries_share_model_calls_and_a_repeated_one_is_not_embedded_again():
    model = CountingModel()
    vectors = QueryVectors(model, cache_size=100, max_batch=8)
    texts = [f"query {i}" for i in range(20)]
    got = await asyncio.gather(*(vectors.get(t) for t in texts), vectors.get("query 3"))
    assert [float(v[0]) for v in got] == [float(len(t)) for t in [*texts, "query 3"]]
    # The 20 that arrived together, 8 at a time: "query 3", asked twice at once, embedded once.
    assert [len(b) for b in model.batches] == [8, 8, 4]
    first = asyncio.create_task(vectors.get("alone"))  # a query alone waits for nothing
    await asyncio.sleep(0.01)
    later = [asyncio.create_task(vectors.get(f"later {i}")) for i in range(3)]  # these arrive while it is embedded
    await asyncio.gather(first, *later)
    assert [len(b) for b in model.batches[3:]] == [1, 3]
    assert model.threads == {"hybrid-serve-embed-0"}  # one thread calls the model
    await vectors.get("query 5")
    assert len(model.batches) == 5  # from the cache
    vectors.close()


@on_a_loop
async def test_a_round_goes_shortest_first_so_a_model_call_pads_little_and_newcomers_wait_their_round():
    model = CountingModel(0.05)
    vectors = QueryVectors(model, cache_size=0, max_batch=3)
    first = asyncio.create_task(vectors.get("alone"))
    await asyncio.sleep(0.01)  # embedded alone; these six queue behind it, in no order of length
    texts = [
        "a much longer query than most",
        "short",
        "a middling query",
        "tiny",
        "a rather long one here",
        "mid query",
    ]
    queued = [asyncio.create_task(vectors.get(t)) for t in texts]
    await asyncio.sleep(0.07)  # the round has begun; a newcomer, shorter than all, waits for the next round
    newcomer = asyncio.create_task(vectors.get("x"))
    got = await asyncio.gather(first, *queued, newcomer)
    assert [float(v[0]) for v in got] == [float(len(t)) for t in ["alone", *texts, "x"]]  # each its own vector
    assert model.batches == [
        ["alone"],
        ["tiny", "short", "mid query"],
        ["a middling query", "a rather long one here", "a much longer query than most"],
        ["x"],
    ]
    vectors.close()


@on_a_loop
async def test_the_cache_keeps_the_most_recent_and_size_zero_keeps_none():
    model = CountingModel(0.0)
    vectors = QueryVectors(model, cache_size=2)
    for text in ("a", "b", "a", "c"):  # a is used again, so b is the oldest when c arrives
        await vectors.get(text)
    assert len(vectors) == 2
    await vectors.get("a")
    await vectors.get("b")
    assert [b for batch in model.batches for b in batch] == ["a", "b", "c", "b"]
    none = QueryVectors(model, cache_size=0)
    await none.get("a")
    await none.get("a")
    assert len(none) == 0 and model.batches[-2:] == [["a"], ["a"]]


@on_a_loop
async def test_a_model_failure_reaches_every_waiter_and_a_waiter_giving_up_leaves_the_others():
    def broken(texts):
        time.sleep(0.05)
        raise RuntimeError("model crashed")

    vectors = QueryVectors(broken, cache_size=10)
    results = await asyncio.gather(vectors.get("x"), vectors.get("y"), return_exceptions=True)
    assert [str(r) for r in results] == ["model crashed", "model crashed"]
    model = CountingModel(0.2)
    vectors = QueryVectors(model, cache_size=10)
    impatient = asyncio.create_task(asyncio.wait_for(vectors.get("z"), 0.05))
    patient = asyncio.create_task(vectors.get("z"))
    with pytest.raises(asyncio.TimeoutError):
        await impatient
    assert float((await patient)[0]) == 1.0 and len(vectors) == 1


@on_a_loop
async def test_a_full_queue_is_refused_at_once_and_a_deadline_ends_the_wait():
    admission = Admission(concurrency=2, queue=1)
    release = threading.Event()
    running = [asyncio.create_task(admission.run(release.wait, Deadline(5))) for _ in range(2)]
    await asyncio.sleep(0.05)
    queued = asyncio.create_task(admission.run(lambda: "ran", Deadline(0.3)))
    await asyncio.sleep(0.05)
    assert (admission.running, admission.waiting) == (2, 1)
    started = time.monotonic()
    with pytest.raises(Overloaded) as full:
        await admission.run(lambda: "never", Deadline(5))
    assert time.monotonic() - started < 0.1 and full.value.retry_after == 1
    with pytest.raises(DeadlineExceeded, match="waiting for a free search slot") as late:
        await queued
    assert late.value.retry_after == 1  # ceil(0.3 s)
    release.set()
    assert await asyncio.gather(*running) == [True, True]
    assert await admission.run(lambda: "ran", Deadline(1)) == "ran"
    admission.close()


@on_a_loop
async def test_a_search_past_its_deadline_keeps_its_slot_until_its_thread_ends():
    admission = Admission(concurrency=1, queue=0)
    release = threading.Event()
    with pytest.raises(DeadlineExceeded, match="while the cluster answered"):
        await admission.run(release.wait, Deadline(0.1))
    assert admission.running == 1  # the thread still waits on the "cluster"
    with pytest.raises(Overloaded):
        await admission.run(lambda: "x", Deadline(1))
    release.set()
    await asyncio.sleep(0.05)
    assert admission.running == 0 and await admission.run(lambda: "x", Deadline(1)) == "x"
    with pytest.raises(ZeroDivisionError):  # the work's own error reaches its caller
        await admission.run(lambda: 1 / 0, Deadline(1))
    admission.close()


@on_a_loop
async def test_a_request_that_could_not_end_in_time_is_refused_before_it_takes_a_slot():
    admission = Admission(concurrency=1, queue=10)
    for _ in range(3):
        await admission.run(lambda: time.sleep(0.2), Deadline(5))
    assert admission.typical == pytest.approx(0.2, abs=0.1)
    blocker = asyncio.create_task(admission.run(lambda: time.sleep(0.3), Deadline(5)))
    await asyncio.sleep(0.02)
    ran = []
    started = time.monotonic()
    with pytest.raises(Overloaded, match="would not end within its deadline"):  # waits ~0.3 s, then 0.2 s: past 0.25
        await admission.run(lambda: ran.append(1), Deadline(0.25))
    assert time.monotonic() - started < 0.05 and ran == []  # at once, and never run
    await blocker
    # A slot free: the request runs whatever the average says (a recovered cluster is noticed).
    admission.typical = 10.0
    assert await admission.run(lambda: "ran", Deadline(1)) == "ran" and admission.typical < 10.0
    admission.close()


def answered(hosts, host: str | None) -> tuple[int, bytes, float]:
    """(status, body, host refusals counted) of one GET / through TrustedHosts, the app behind it answering 204."""
    metrics = Metrics()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "headers": [(b"host", host.encode())] if host is not None else [],
    }
    asyncio.run(TrustedHosts(app, hosts=hosts, metrics=metrics)(scope, receive, send))
    refused = metrics.errors.labels("host")._value.get()
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), refused


def test_hosts_are_starlettes_check_with_ports_and_ipv6_and_the_loopback_default():
    for host in ("127.0.0.1:1", "localhost:8765", "LocalHost", "[::1]:80", "[::1]", "127.0.0.1"):
        assert answered(LOOPBACK_HOSTS, host) == (204, b"", 0), host
    # DNS rebinding: the attacker's name, resolved to 127.0.0.1, is still the name the browser sends.
    for host in ("rebind.attacker.example:8765", "127.0.0.1.attacker.example", "::1", None):
        status, body, refused = answered(LOOPBACK_HOSTS, host)
        assert status == 400 and refused == 1 and b"answers to Host 127.0.0.1, localhost, ::1" in body, host
    assert (
        answered(("*.example.org",), "search.example.org")[0] == 204
        and answered(("*.example.org",), "example.org.evil")[0] == 400
    )
    assert answered(None, "anything.example")[0] == 204  # off loopback with no --allowed-host: the token guards it


def test_json_bodies_are_strict_and_query_strings_are_read_as_their_types():
    with pytest.raises(ValidationError) as wrong:
        SearchBody.model_validate_json('{"q": 1}')
    assert refusal(wrong.value.errors()) == "q: Input should be a valid string, got 1"
    with pytest.raises(ValidationError) as unknown:
        SearchBody.model_validate_json('{"q": "x", "size": 5, "k": "5"}')
    said = refusal(unknown.value.errors())
    assert "unknown parameter size" in said and "k: Input should be a valid integer, got '5'" in said
    body = SearchBody.model_validate_json('{"q": "x", "from": 10, "weights": [0.3, 0.7], "rerank": true}')
    assert body.params() == {"q": "x", "from": 10, "weights": [0.3, 0.7], "rerank": True}
    assert SearchQuery.model_validate({"q": "x", "k": "5", "explain": "false"}).params() == {
        "q": "x",
        "k": 5,
        "explain": False,
    }
    with pytest.raises(ValidationError):
        CompareBody.model_validate_json('{"q": "x", "columns": [{"technique": 3}]}')
    with pytest.raises(ValidationError) as missing:
        SearchBody.model_validate_json("{}")
    assert refusal(missing.value.errors()) == "q is missing"


def test_metrics_routes_never_grow_with_what_clients_send():
    assert [
        route_of(p) for p in ("/search", "/static/compare.js", "/report/assets/x", "/../etc/passwd", "/search/x")
    ] == ["/search", "/static", "/report", "other", "other"]
    metrics = Metrics()
    metrics.requests.labels("/search", "GET", "200").inc()
    text, content_type = metrics.exposition()
    assert (
        b'hybrid_serve_requests_total{method="GET",route="/search",status="200"} 1.0' in text
        and content_type.startswith("text/plain")
    )


def _args(**given):
    base = dict(
        host="127.0.0.1",
        port=8765,
        workers=1,
        deadline=10.0,
        concurrency=16,
        queue=64,
        query_cache=10_000,
        header_timeout=10.0,
        keep_alive=5.0,
        allowed_host=None,
        token_file=None,
    )
    return argparse.Namespace(**{**base, **given})


def test_off_loopback_needs_a_token_and_the_token_never_shows(monkeypatch, tmp_path):
    from adapter.cli.serve import TOKEN_ENV, settings

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(
        ConfigurationError, match="--host 0.0.0.0 serves the index to anyone .* HYBRID_SERVE_TOKEN or --token-file"
    ):
        settings(_args(host="0.0.0.0"))
    listen, ops, security = settings(_args())
    assert security.hosts == ("127.0.0.1", "localhost", "::1") and security.token is None and listen.workers == 1
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    _, _, security = settings(_args(host="0.0.0.0", token_file=str(token)))
    assert security.hosts is None and security.token == "s3cret-token" and "s3cret" not in repr(security)
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    _, _, security = settings(_args(host="10.0.0.5", allowed_host=["search.example.org"]))
    assert security.token == "from-env" and security.hosts == ("search.example.org",)
    with pytest.raises(Exception, match="--workers, --concurrency >= 1"):
        settings(_args(concurrency=0))
