"""`hybrid serve` under load, on loopback and bounded (issue 29 item 4): 32 clients for a few seconds
against the command in a process of its own, then again with the cluster made slow by a fault proxy.

Every answer is a 200 (or, with the cluster slow, a 503 with Retry-After); none outlives its
deadline; ``/healthz`` and ``/api/info`` stay fast meanwhile; ``/metrics`` counts what the clients counted. Kept short
for CI: the long measurement (60 s, QPS and p99 against the raw client) is ``benchmarks/serve.py``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.faults import PASS, Delay, FaultProxy
from tests.support.load import in_a_process, statuses
from tests.support.serving import call, counter, serve_command
from tests.support.indexes import small_index  # noqa: F401  (fixtures)

pytestmark = pytest.mark.min_version("3.0")

CLIENTS = 32
SECONDS = 15.0
QUERIES = (
    "reembolso del pedido",
    "error E-4012",
    "tarjeta y pago",
    "devolución de la factura",
    "cambiar la contraseña",
    "envío",
    "factura en pdf",
    "borrar mis datos",
)
TECHNIQUES = ("hybrid", "bm25", "dense", "client")
OUT = Path(__file__).resolve().parents[2] / "out" / "serve-load"


def bodies():
    return [{"q": q, "technique": t, "k": 10, "explain": False} for q in QUERIES for t in TECHNIQUES]


def probe(base: str, stop: threading.Event, health: list[float], info: list[float]) -> None:
    """/healthz and /api/info (a constant: 6.8 s median under 32 clients when searches ran on the
    event loop) in turn every 50 ms until ``stop``, on a new connection each time (as a load balancer asks)."""
    while not stop.is_set():
        health.append(call(f"{base}/healthz", timeout=30)[3])
        answer = call(f"{base}/api/info", timeout=30)
        assert answer[0] == 200, answer
        info.append(answer[3])
        stop.wait(0.05)


def run_load(base: str, deadline: float) -> dict:
    stop, health, info = threading.Event(), [], []
    prober = threading.Thread(target=probe, args=(base, stop, health, info))
    prober.start()
    started = time.perf_counter()
    answers = in_a_process(base, "/search", bodies(), clients=CLIENTS, seconds=SECONDS)
    elapsed = time.perf_counter() - started
    stop.set()
    prober.join(timeout=30)
    time.sleep(0.3)  # the last answers' counters
    metrics = call(f"{base}/metrics")[2].decode()
    ms = [a.ms for a in answers]
    return {
        "answers": answers,
        "metrics": metrics,
        "health_s": health,
        "figures": {
            "clients": CLIENTS,
            "seconds": round(elapsed, 1),
            "requests": len(answers),
            "statuses": statuses(answers),
            "qps_200": round(sum(a.status == "200" for a in answers) / elapsed, 1),
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p99_ms": round(float(np.percentile(ms, 99)), 1),
            "max_ms": round(max(ms), 1),
            "deadline_s": deadline,
            "healthz_p99_ms": round(float(np.percentile(health, 99)) * 1000, 1),
            "healthz_probes": len(health),
            "info_p50_ms": round(float(np.percentile(info, 50)) * 1000, 1),
            "info_p99_ms": round(float(np.percentile(info, 99)) * 1000, 1),
            "load_average": round(os.getloadavg()[0], 1),
        },
    }


def metrics_equal_the_clients(metrics: str, answers) -> None:
    for status, count in statuses(answers).items():
        assert (
            counter(metrics, "hybrid_serve_requests_total", route="/search", method="POST", status=status) == count
        ), status
    assert counter(metrics, "hybrid_serve_requests_total", route="/search") == len(answers)


def write(name: str, figures: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\n{name}: {json.dumps(figures)}")


def test_32_clients_for_a_bounded_time_then_with_the_cluster_slow(small_index, opensearch_url):
    # Calm: the defaults (deadline 10 s, 16 slots, a queue of 64: room for every client).
    process, base = serve_command(small_index, opensearch_url)
    try:
        calm = run_load(base, 10.0)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert process.returncode == 0
    # Slow: every search answer waits 0.5 s at the proxy. Eight slots serve 16 searches a second;
    # the rest wait in a queue of 16, and whoever finds it full is told to come back.
    deadline = 3.0
    with FaultProxy(opensearch_url) as proxy:
        process, base = serve_command(
            small_index,
            proxy.url,
            "--deadline",
            str(deadline),
            "--concurrency",
            "8",
            "--queue",
            "16",
        )
        proxy.set_policy(lambda n, method, path: Delay(0.5) if "_search" in path or "_msearch" in path else PASS)
        try:
            slow = run_load(base, deadline)
        finally:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)
    write("calm", calm["figures"])
    write("slow-cluster", slow["figures"])
    assert process.returncode == 0
    # Calm: every answer a 200, within the deadline; /metrics counts what the clients counted.
    assert calm["figures"]["statuses"] == {"200": len(calm["answers"])}, calm["figures"]
    assert calm["figures"]["max_ms"] < 10_000
    metrics_equal_the_clients(calm["metrics"], calm["answers"])
    assert calm["figures"]["info_p50_ms"] < 250, calm["figures"]  # never behind the searches (6.8 s before)
    # Slow: 200s and 503s with Retry-After, nothing else; no answer outlives the deadline (plus the
    # time to send it, with room for a loaded machine); the probe never waits behind the searches.
    slow_answers = slow["answers"]
    assert set(statuses(slow_answers)) <= {"200", "503"} and statuses(slow_answers).get("200", 0) > 0, slow["figures"]
    assert statuses(slow_answers).get("503", 0) > 0, "the queue never filled: the slow run proved nothing"
    assert all(a.retry_after for a in slow_answers if a.status == "503")
    assert slow["figures"]["max_ms"] < (deadline + 2.0) * 1000, slow["figures"]
    # Never behind a search (their deadline is 3 s; the target, 50 ms, is measured in docs/BENCHMARKS.md:
    # a loaded shared machine alone took 0.65 s here).
    assert slow["figures"]["healthz_p99_ms"] < 1000 and slow["figures"]["info_p50_ms"] < 250, slow["figures"]
    metrics_equal_the_clients(slow["metrics"], slow_answers)
    assert (
        counter(slow["metrics"], "hybrid_serve_errors_total", kind="overloaded")
        + counter(slow["metrics"], "hybrid_serve_errors_total", kind="deadline")
        == statuses(slow_answers)["503"]
    )
