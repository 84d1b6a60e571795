"""`hybrid serve` for ops, on a real node (issue 29 item 4): a slow cluster holds only its own
requests, the door refuses what it must, the probes, metrics and OpenAPI document, slow clients,
and the command itself: SIGTERM mid-request and several workers (the load test is test_serve_load.py).

Engine-neutral: one OpenSearch 3.x target runs it."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time
import urllib.request

import numpy as np
import pytest

from adapter.engines import connect, describe_url
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.search import Searcher
from adapter.serve import Ops, SearchService, Security, create_app
from tests.support.faults import PASS, Delay, FaultProxy, Hold
from tests.support.serving import call, counter, post_json, serve_command, served
from tests.support.indexes import hashing, small_index  # noqa: F401  (fixtures)

pytestmark = pytest.mark.min_version("3.0")


def test_a_cluster_holding_every_answer_holds_only_the_searches(small_index, opensearch_url, hashing):
    """Every answer of the cluster held 40 s by a proxy. Before: one /search took 120 s and
    /api/info, a constant, waited 119 s behind it. Now the searches get a 503 with Retry-After at
    their deadline (or at once when the queue is full) and nothing else waits."""
    with FaultProxy(opensearch_url) as proxy:
        cluster = connect(proxy.url)
        service = SearchService(Searcher.open(cluster, small_index, hashing), cluster=describe_url(cluster))
        app = create_app(service, ops=Ops(deadline=2.0, concurrency=4, queue=2, ready_timeout=1.0))
        with served(app) as url:
            assert call(f"{url}/readyz")[0] == 200
            proxy.set_policy(lambda n, method, path: Hold(40.0))
            answers: list = [None] * 8

            def search(i: int) -> None:
                answers[i] = call(f"{url}/search?q=pedido+{i}&explain=false")

            held = [threading.Thread(target=search, args=(i,)) for i in range(8)]
            for t in held:
                t.start()
                time.sleep(0.05)  # in order: four run, two wait, two find the queue full
            probes = [call(f"{url}/healthz")[3] for _ in range(40)] + [call(f"{url}/api/info")[3] for _ in range(10)]
            for t in held:
                t.join(timeout=30)
            ready = call(f"{url}/readyz")
            metrics = call(f"{url}/metrics")[2].decode()
    statuses = [a[0] for a in answers]
    assert statuses == [503] * 8, [a[2] for a in answers]
    bodies = [json.loads(a[2])["error"] for a in answers]
    assert (
        sum("most this server queues" in b for b in bodies) == 2
        and sum("deadline (2 s) passed" in b for b in bodies) == 6
    ), bodies
    assert all(a[1].get("retry-after") in ("1", "2") for a in answers)
    assert max(a[3] for a in answers) < 2.0 + 1.5  # the deadline, not the cluster's 40 s
    # The process answers at once while every search is stuck (the target: p99 under 50 ms;
    # asserted with room for a loaded shared machine: the figure goes to docs/BENCHMARKS.md).
    assert float(np.percentile(probes, 99)) < 0.5, probes
    assert ready[0] == 503 and "no answer within 1 s" in json.loads(ready[2])["cluster"]
    assert counter(metrics, "hybrid_serve_errors_total", kind="overloaded") == 2
    assert counter(metrics, "hybrid_serve_errors_total", kind="deadline") == 6
    assert counter(metrics, "hybrid_serve_requests_total", route="/search", status="503") == 8
    assert counter(metrics, "hybrid_serve_in_flight") == 0  # their tries ended with their deadline (issue 38 item 4)


def test_a_compare_holds_no_lock_a_search_beside_it_answers_first(small_index, opensearch_url, hashing):
    """Every cluster answer delayed 1 s. Before: a compare held the service's lock for all its columns,
    and a /search sent 0.5 s into it ended when the compare did (both at 12.3 s). Now each takes its
    own slot (here the search ended at 2.8 s, the compare at 10.1 s)."""
    with FaultProxy(opensearch_url) as proxy:
        cluster = connect(proxy.url)
        service = SearchService(Searcher.open(cluster, small_index, hashing), cluster=describe_url(cluster))
        with served(create_app(service, ops=Ops(deadline=20.0))) as url:
            assert call(f"{url}/search?q=pedido&technique=bm25&explain=false")[0] == 200  # warm
            proxy.set_policy(lambda n, method, path: Delay(1.0) if "_search" in path else PASS)
            columns = [{"technique": t, "explain": False} for t in ("bm25", "dense", "hybrid", "client")]
            ended: dict[str, float] = {}
            compared: list = []

            def compare() -> None:
                compared.append(post_json(f"{url}/api/compare", {"q": "pedido", "columns": columns}, timeout=60))
                ended["compare"] = time.monotonic()

            started = time.monotonic()
            side = threading.Thread(target=compare)
            side.start()
            time.sleep(0.5)  # the compare is on its first column
            searched = call(f"{url}/search?q=factura&technique=bm25&explain=false", timeout=60)
            ended["search"] = time.monotonic()
            side.join(timeout=60)
    assert searched[0] == 200 and json.loads(searched[2])["hits"], searched
    assert compared and compared[0][0] == 200 and all("result" in c for c in json.loads(compared[0][2])["columns"]), (
        compared
    )
    assert ended["compare"] - started >= 3.5  # four columns, each at least one delayed request
    assert ended["search"] < ended["compare"] - 1.0, (searched[3], ended)


def test_the_door_refuses_rebinding_text_posts_coercion_and_deep_json(small_index, opensearch_url, hashing):
    service = SearchService(Searcher.open(connect(opensearch_url), small_index, hashing), cluster="test")
    with served(create_app(service)) as url:
        port = url.rsplit(":", 1)[1]
        # DNS rebinding: the attacker's page, its name now resolving to 127.0.0.1, sends its own Host.
        rebound = call(f"{url}/api/info", headers={"Host": f"rebind.attacker.example:{port}"})
        assert rebound[0] == 400 and "answers to Host 127.0.0.1, localhost, ::1" in json.loads(rebound[2])["error"]
        assert call(f"{url}/api/info", headers={"Host": f"localhost:{port}"})[0] == 200
        assert call(f"{url}/api/info", headers={"Host": f"[::1]:{port}"})[0] == 200
        # A text/plain or form POST needs no CORS preflight: another site's page could send it.
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            sent = call(
                f"{url}/search",
                method="POST",
                body=b'{"q": "pedido"}',
                headers={"Content-Type": content_type} if content_type else {},
            )
            assert sent[0] == 415 and "Content-Type: application/json" in json.loads(sent[2])["error"], sent
        coerced = post_json(f"{url}/search", {"q": 1})
        assert coerced[0] == 400 and json.loads(coerced[2])["error"] == "q: Input should be a valid string, got 1"
        assert post_json(f"{url}/search", {"q": "pedido", "k": "5"})[0] == 400  # JSON numbers are numbers
        assert call(f"{url}/search?q=pedido&k=5&explain=false")[0] == 200  # a query string's are text
        unknown = post_json(f"{url}/search", {"q": "pedido", "size": 5})
        assert unknown[0] == 400 and "unknown parameter size" in json.loads(unknown[2])["error"]
        deep = call(
            f"{url}/search",
            method="POST",
            body=b'{"q": ' + b"[" * 30_000 + b"]" * 30_000 + b"}",
            headers={"Content-Type": "application/json"},
        )
        assert deep[0] == 400 and json.loads(deep[2])["error"] == "the JSON body is nested too deeply"
        broken = call(
            f"{url}/search", method="POST", body=b'{"q": "pedido"', headers={"Content-Type": "application/json"}
        )
        assert broken[0] == 400 and "not JSON" in json.loads(broken[2])["error"]
        # its Content-Length says so: refused unread
        large = post_json(f"{url}/search", {"q": "pedido", "fusion": "x" * 70_000})
        assert large[0] == 413 and json.loads(large[2])["error"] == "the request body is over 65536 bytes", large
        # No Content-Length: FastAPI's max_body_size answers at the cap while urllib still sends (the server lingers:
        # before, its reset reached the client before the 413 once in ~8 runs).
        chunked = call(
            f"{url}/search",
            method="POST",
            body=iter([b'{"q": "', b"x" * 70_000, b'"}']),
            headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        )
        assert chunked[0] == 413 and json.loads(chunked[2])["error"] == "the request body is over 65536 bytes", chunked
        ok = post_json(f"{url}/search", {"q": "pedido", "explain": False, "k": 3})
        assert ok[0] == 200 and len(json.loads(ok[2])["hits"]) == 3
        metrics = call(f"{url}/metrics")[2].decode()
    assert counter(metrics, "hybrid_serve_errors_total", kind="host") == 1
    assert counter(metrics, "hybrid_serve_errors_total", kind="media_type") == 3
    assert counter(metrics, "hybrid_serve_errors_total", kind="input") == 5
    assert counter(metrics, "hybrid_serve_errors_total", kind="too_large") == 2
    assert counter(metrics, "hybrid_serve_search_seconds_count", technique="hybrid") == 2


def test_probes_metrics_and_the_openapi_document(small_index, opensearch_url, hashing):
    service = SearchService(Searcher.open(connect(opensearch_url), small_index, hashing), cluster="test")
    with served(create_app(service)) as url:
        assert call(f"{url}/healthz")[:3:2] == (200, b'{"status":"ok"}')
        ready = call(f"{url}/readyz")
        assert ready[0] == 200 and json.loads(ready[2]) == {
            "ready": True,
            "model": "loaded",
            "cluster": "answering",
            "index": small_index,
            "documents": 12,
        }
        for technique in ("bm25", "dense", "hybrid", "client"):
            assert post_json(f"{url}/search", {"q": "pedido", "technique": technique, "explain": False})[0] == 200
        compare = post_json(
            f"{url}/api/compare",
            {"q": "pedido", "columns": [{"technique": "bm25"}, {"technique": "hybrid", "fusion": "rrf"}]},
        )
        assert compare[0] == 200 and [c["label"] for c in json.loads(compare[2])["columns"]] == ["bm25", "hybrid · rrf"]
        metrics = call(f"{url}/metrics")
        document = json.loads(call(f"{url}/openapi.json")[2])
    text = metrics[2].decode()
    assert metrics[1]["content-type"].startswith("text/plain; version=")
    # the /search and the compare column
    assert counter(text, "hybrid_serve_search_seconds_count", technique="hybrid") == 2
    assert counter(text, "hybrid_serve_search_seconds_count", technique="bm25") == 2
    assert counter(text, "hybrid_serve_requests_total", route="/search", method="POST", status="200") == 4
    assert counter(text, "hybrid_serve_query_vectors_total") >= 3  # bm25 alone needs none
    assert counter(text, "hybrid_serve_fallbacks_total") == 0  # 3.x fuses every one of these on the server
    paths = document["paths"]
    assert {"/search", "/api/compare", "/healthz", "/readyz", "/metrics", "/api/info"} <= set(paths)
    body = paths["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/SearchBody"
    schemas = document["components"]["schemas"]
    assert schemas["SearchBody"]["required"] == ["q"] and schemas["SearchBody"]["additionalProperties"] is False
    assert (
        paths["/search"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        == "#/components/schemas/SearchResult"
    )
    # the contract's refs point inside the document
    assert "SearchResult_hit" in schemas and "$defs" not in json.dumps(document)


def test_a_token_guards_all_but_the_probes_and_a_browser_signs_in_once(small_index, opensearch_url, hashing):
    service = SearchService(Searcher.open(connect(opensearch_url), small_index, hashing), cluster="test")
    with served(create_app(service, security=Security(hosts=None, token="t0ken-for-tests"))) as url:
        refused = call(f"{url}/search?q=pedido")
        assert refused[0] == 401 and refused[1]["www-authenticate"].startswith("Bearer")
        assert call(f"{url}/metrics")[0] == 401 and call(f"{url}/")[0] == 401
        assert call(f"{url}/search?q=pedido", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert (
            call(f"{url}/search?q=pedido&explain=false", headers={"Authorization": "Bearer t0ken-for-tests"})[0] == 200
        )
        assert (
            call(f"{url}/healthz")[0] == 200
            and call(f"{url}/readyz")[0] == 200
            and call(f"{url}/static/compare.js")[0] == 200
        )
        # A browser: /?token=... once, then the cookie (HttpOnly, SameSite=Strict) stands for it.
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(f"{url}/?token=t0ken-for-tests", timeout=30) as page:
            assert page.status == 200 and page.url == f"{url}/" and "server-info" in page.read().decode()
        with opener.open(f"{url}/api/info", timeout=30) as info:
            assert info.status == 200
        plain = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=30)
        plain.request("GET", "/search?q=pedido&token=t0ken-for-tests")
        signed = plain.getresponse()
        assert signed.status == 303 and signed.getheader("Location") == "/search?q=pedido"
        assert signed.getheader("Set-Cookie") == "hybrid_serve_token=t0ken-for-tests; HttpOnly; SameSite=Strict; Path=/"


def test_connections_that_never_finish_their_headers_are_closed(small_index, opensearch_url, hashing):
    service = SearchService(Searcher.open(connect(opensearch_url), small_index, hashing), cluster="test")
    with served(create_app(service), header_timeout=1.0, keep_alive=1.0) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = []
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            slow.append(s)
        assert call(f"{url}/healthz")[0] == 200  # served meanwhile
        idle = socket.create_connection(("127.0.0.1", port), timeout=10)  # connects, says nothing
        started = time.monotonic()
        closed = [s.recv(1) == b"" for s in [*slow, idle]]  # EOF: the server closed it
        waited = time.monotonic() - started
        for s in [*slow, idle]:
            s.close()
        assert all(closed) and waited < 1.0 + 5.0
        # An answered keep-alive connection that goes quiet is closed too.
        kept = socket.create_connection(("127.0.0.1", port), timeout=10)
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = b""
        while not answer.endswith(b'{"status":"ok"}'):  # the head and the body can come in two segments
            chunk = kept.recv(4096)
            assert chunk, answer
            answer += chunk
        assert b"200 OK" in answer
        assert kept.recv(1) == b""
        kept.close()


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(p) for p in fh.read().split()]


@pytest.fixture
def e5_index(client, index_name, support_docs_path, e5):
    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    return index_name


def test_sigterm_answers_the_request_in_flight_then_exits_0(small_index, opensearch_url):
    with FaultProxy(opensearch_url) as proxy:
        process, base = serve_command(small_index, proxy.url)
        proxy.set_policy(lambda n, method, path: Delay(3.0) if "_search" in path else PASS)
        answer: list = []
        flying = threading.Thread(
            target=lambda: answer.append(post_json(f"{base}/search", {"q": "pedido", "technique": "bm25"}))
        )
        flying.start()
        time.sleep(1.0)  # the search waits on the cluster
        process.send_signal(signal.SIGTERM)
        flying.join(timeout=30)
        out, err = process.communicate(timeout=30)
    assert answer and answer[0][0] == 200 and json.loads(answer[0][2])["hits"], answer
    assert process.returncode == 0, err
    assert "error" not in err.lower(), err
    assert f"serving {small_index}" in out


def per_worker(folder, name: str, **labels) -> dict[str, float]:
    """Each worker's own value of a counter, from the files of prometheus-client's multiprocess mode."""
    from prometheus_client.mmap_dict import MmapedDict

    out: dict[str, float] = {}
    for path in folder.glob("counter_*.db"):
        pid = path.stem.split("_")[1]
        for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            metric, sample, sample_labels, _ = json.loads(key)
            if sample == name and all(sample_labels.get(k) == v for k, v in labels.items()):
                out[pid] = out.get(pid, 0.0) + value
    return out


def test_two_workers_answer_on_one_port_and_metrics_add_them_up(e5_index, opensearch_url, tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))  # the workers' files, read below one by one
    process, base = serve_command(e5_index, opensearch_url, "--workers", "2", embedder=None)
    try:
        statuses = []
        lock = threading.Lock()

        def client() -> None:
            for i in range(10):
                status = post_json(f"{base}/search", {"q": f"pedido {i % 3}", "explain": False})[0]
                with lock:
                    statuses.append(status)

        clients = [threading.Thread(target=client) for _ in range(8)]
        for t in clients:
            t.start()
        for t in clients:
            t.join(timeout=120)
        metrics = call(f"{base}/metrics")[2].decode()
        workers = [
            pid for pid in children(process.pid) if b"resource_tracker" not in open(f"/proc/{pid}/cmdline", "rb").read()
        ]
        each = per_worker(tmp_path, "hybrid_serve_requests_total", route="/search", status="200")
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert statuses == [200] * 80 and len(workers) == 2
    # Whichever worker answered /metrics, it counted both workers' requests.
    assert counter(metrics, "hybrid_serve_requests_total", route="/search", status="200") == 80
    # The requests were spread over both workers (8 connections), and /metrics is their sum.
    assert (
        sorted(each) == sorted(str(pid) for pid in workers)
        and all(v > 0 for v in each.values())
        and sum(each.values()) == 80
    ), each
    assert process.returncode == 0 and "2 workers" in out, err
