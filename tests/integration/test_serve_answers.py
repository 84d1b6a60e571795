"""``hybrid serve``'s answers to odd requests (issue 38 item 7), on a real node: a query of only
invisible characters, the readiness probe without the token, the 503s' words, a body over the cap
announced by its Content-Length, a request line or header over the HTTP parser's limit."""

from __future__ import annotations

import json
import socket

import pytest

from adapter.engines import connect
from adapter.search import Searcher
from adapter.serve import SearchService, Security, create_app
from adapter.serve.admission import Deadline, DeadlineExceeded, Overloaded
from tests.support.serving import call, counter, post_json, served
from tests.support.indexes import hashing, small_index  # noqa: F401  (fixtures)

pytestmark = pytest.mark.min_version("3.0")


@pytest.fixture
def service(small_index, opensearch_url, hashing):
    return SearchService(Searcher.open(connect(opensearch_url), small_index, hashing), cluster="test")


def test_a_query_of_only_invisible_characters_is_refused_saying_why(service):
    with served(create_app(service)) as url:
        answers = [call(f"{url}/search?q={q}") for q in ("%00%00", "%E2%80%8B%20", "%C2%A0%E2%80%8B")]
        posted = post_json(f"{url}/search", {"q": "\u200b\ufeff "})
        compared = post_json(f"{url}/api/compare", {"q": "\x00", "columns": [{"technique": "bm25"}]})
        assert call(f"{url}/search?q=pedido%00&explain=false")[0] == 200  # something visible: searched
    for status, _, body, _ in [*answers, posted, compared]:
        assert status == 400 and "no visible character" in json.loads(body)["error"], body


def test_readyz_names_the_index_only_to_who_has_the_token(service, small_index):
    with served(create_app(service, security=Security(hosts=None, token="t0ken-for-tests"))) as url:
        anonymous = call(f"{url}/readyz")
        signed = call(f"{url}/readyz", headers={"Authorization": "Bearer t0ken-for-tests"})
    assert anonymous[0] == 200 and json.loads(anonymous[2]) == {"ready": True}
    assert (
        signed[0] == 200 and json.loads(signed[2])["index"] == small_index and json.loads(signed[2])["documents"] == 12
    )


def test_every_503_says_when_to_come_back_in_the_words_of_its_retry_after():
    deadline = Deadline(10.0)
    refusals = [
        deadline.exceeded("waiting for a free search slot"),
        deadline.exceeded("the cluster answered"),
        Overloaded.full(running=16, waiting=64),
        Overloaded.too_slow(running=16, waiting=3, typical=2.5, deadline=deadline, wait=4.0),
    ]
    for refused in refusals:
        assert str(refused).endswith(f"; try again in {refused.retry_after} s"), str(refused)
    assert isinstance(refusals[0], DeadlineExceeded)


def test_a_body_over_the_cap_is_refused_in_json_whether_or_not_its_length_is_announced(service):
    with served(create_app(service)) as url:
        announced = post_json(f"{url}/search", {"q": "pedido", "fusion": "x" * 70_000})
        chunked = call(
            f"{url}/search",
            method="POST",
            body=iter([b'{"q": "', b"x" * 70_000, b'"}']),
            headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        )
        metrics = call(f"{url}/metrics")[2].decode()
    for status, headers, body, _ in (announced, chunked):
        assert status == 413 and headers["content-type"] == "application/json", (status, headers, body)
        assert json.loads(body)["error"] == "the request body is over 65536 bytes"
    assert counter(metrics, "hybrid_serve_errors_total", kind="too_large") == 2
    assert counter(metrics, "hybrid_serve_requests_total", route="/search", status="413") == 2


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send ``request`` whole (as a client that writes before it reads), then read the answer to its end."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("where, status", [("query", 414), ("header", 431)])
def test_a_request_head_over_the_limit_is_answered_not_reset(service, where, status):
    big = "x" * (160_000 if where == "query" else 200_000)
    head = (
        f"GET /search?q={big} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        if where == "query"
        else f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {big}\r\n\r\n"
    )
    with served(create_app(service)) as url:
        answer = raw_exchange(url, head.encode())
        assert call(f"{url}/healthz")[0] == 200  # the server goes on
    start, _, body = answer.partition(b"\r\n\r\n")
    assert start.startswith(f"HTTP/1.1 {status} ".encode()), answer[:200]
    assert b"content-type: application/json" in start.lower()
    assert "limit" in json.loads(body)["error"]
