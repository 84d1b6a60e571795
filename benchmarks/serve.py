"""`hybrid serve` under load (issue 30 item 5, issue 37 item 6): QPS and latency at 1, 8 and 32 clients, side by side.

    .venv/bin/python -m benchmarks.serve [--url URL] [--seconds 20] [--clients 1,8,32] \\
        [--systems raw,serve,serve-model,baseline,baseline-model,serve-slow] [--slow 0.5] [--warm 1] \\
        [--baseline-ref REF] [--index NAME] [--out out/bench-serve.json]

Issue 37's two ratios in one run, interleaved: ``--clients 32 --systems raw,serve,baseline,serve-model,baseline-model``
gives serve's QPS over the raw client's (vectors given) and this checkout's model-in-the-loop QPS over the
baseline's.

One SciFact index (MiniLM, ``bench-scifact``, built as ``make bench`` builds it; ``--index`` names an
existing one instead, used as it is), one node, the same queries. Every system runs N client threads for T seconds, each
client one request at a time on its
own keep-alive connection; the systems take turns at each client count, so they share the noise.

- ``raw``: opensearch-py (one client, a connection per thread) sending, for each query, the hybrid
  request the server's own searcher sends (``SearchResult.sent[0]``, vectors precomputed): the
  cluster's own limit.
- ``serve``: ``hybrid serve`` of this checkout, ``POST /search`` with the same parameters, every
  query seen once before the clock starts (its vector comes from the query-vector cache: the model
  out of the loop, as the raw client's vectors are given).
- ``serve-model``: the same with ``--query-cache 0``: every query embedded, the model in the loop.
- ``serve-2w``: ``serve`` with ``--workers 2`` (each worker's cache warmed over fresh connections).
- ``baseline``: ``hybrid serve`` of ``--baseline-ref`` (default: main when issue 37 was filed) run from
  a copy of that tree, vectors cached as ``serve``'s are.
- ``baseline-model``: the same tree with ``--query-cache 0``, the model in the loop (a tree from before
  the cache, such as 9af3d68, is run without the option).

- ``serve-slow``: this checkout's serve (its defaults) behind a fault proxy (tests/support/faults.py)
  that delays every search answer of the cluster by ``--slow`` seconds (0.5).

While a serve system runs, one more thread asks ``/api/info`` (a constant) and ``/healthz`` in turn
every 100 ms: they say whether anything but the searches waits (``/api/info``: 6.8 s median under 32
clients when searches ran on the event loop; issue 29's target: ``/healthz`` p99 under 50 ms with every
search held, ``--slow 40``). Before the load, ``--warm`` rounds of the test queries, one at a time, measure a warm
``/search`` against the server's own ``took`` in its answer (and the raw client's request against
its ``took``): what serving adds.

Each serve runs as its own process (``hybrid serve``), started and stopped here with SIGTERM. The
load average is read before and after each run; the serve's CPU seconds per request come from
/proc. Not a timed test: the figures go to docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.load import drive, json_poster, statuses  # noqa: E402  (the load test's clients)

SCIFACT = Path(os.environ.get("HYBRID_SHARED_DATA", ROOT.parent / "shared" / "data")) / "scifact"
# main when issue 37 was filed (its serve: 88.8 against the raw client's 230.4 queries/s at 32 clients)
BASELINE_REF = "d04eec1"
PARAMS = {"technique": "hybrid", "k": 10, "explain": False, "highlight": False}


@dataclass
class Run:
    system: str
    clients: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    load_before: float = 0.0
    load_after: float = 0.0
    server_cpu_s: float | None = None
    info_ms: list[float] = field(default_factory=list)
    health_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        ok = self.statuses.get("200", 0)
        lat = self.latencies_ms
        return {
            "system": self.system,
            "clients": self.clients,
            "seconds": round(self.seconds, 1),
            "requests": len(lat),
            "ok": ok,
            "errors": len(lat) - ok,
            "statuses": self.statuses,
            "qps": round(ok / self.seconds, 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 1) if lat else None,
            "p99_ms": round(float(np.percentile(lat, 99)), 1) if lat else None,
            "server_cpu_ms_per_request": round(1000 * self.server_cpu_s / len(lat), 2)
            if self.server_cpu_s and lat
            else None,
            "info_p50_ms": pct(self.info_ms, 50),
            "info_p99_ms": pct(self.info_ms, 99),
            "info_probes": len(self.info_ms),
            "healthz_p50_ms": pct(self.health_ms, 50),
            "healthz_p99_ms": pct(self.health_ms, 99),
            "healthz_probes": len(self.health_ms),
            "load_before": self.load_before,
            "load_after": self.load_after,
        }


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


class InfoProbe:
    """``GET /api/info`` (a constant) and ``GET /healthz`` (the process) in turn, every 100 ms, each on a new
    connection, until stopped: milliseconds each, per path."""

    PATHS = ("/api/info", "/healthz")

    def __init__(self, base: str) -> None:
        import threading

        self.base, self._stop = base, threading.Event()
        self.ms: dict[str, list[float]] = {p: [] for p in self.PATHS}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for path in itertools.cycle(self.PATHS):
            if self._stop.is_set():
                return
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.base}{path}", timeout=60) as r:
                    r.read()
            except OSError:  # no answer within 60 s (the baseline under 32 clients): counted as 60 s, the probe goes on
                pass
            self.ms[path].append((time.perf_counter() - started) * 1000)
            self._stop.wait(0.1)

    def stop(self) -> dict[str, list[float]]:
        self._stop.set()
        self._thread.join(timeout=70)
        return self.ms


def latencies(client: list[float], took: list[float], **more: list[float]) -> dict[str, Any]:
    """The request count, then p50 and p95 (``<name>_p50_ms``, ``<name>_p95_ms``) of the client's milliseconds, the
    server's took, each of ``more`` and the client's time over the took, in that order."""
    over = [c - t for c, t in zip(client, took)]
    series = {"client": client, "took": took, **more, "client_minus_took": over}
    return {"requests": len(client), **{f"{name}_p{q}_ms": pct(v, q) for name, v in series.items() for q in (50, 95)}}


def warm_latency(base: str, queries: list[str], rounds: int) -> dict[str, Any]:
    """One client, one request at a time, every query ``rounds`` times (vectors cached): the client's
    milliseconds for ``POST /search`` against the answer's ``took_ms`` (the server's took, summed over
    its requests) and ``total_ms`` (the searcher's own time)."""
    import http.client

    host, port = base.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    client, took, total = [], [], []
    for q in queries * rounds:
        started = time.perf_counter()
        conn.request(
            "POST", "/search", body=json.dumps({"q": q, **PARAMS}), headers={"Content-Type": "application/json"}
        )
        answer = json.loads(conn.getresponse().read())
        client.append((time.perf_counter() - started) * 1000)
        took.append(float(answer["took_ms"]))
        total.append(float(answer["total_ms"]))
    conn.close()
    return latencies(client, took, searcher_total=total)


def raw_latency(url: str, sent: list[Any], rounds: int) -> dict[str, Any]:
    """The raw client's request for each query (opensearch-py, one at a time) against its ``took``."""
    from adapter.engines import connect

    client = connect(url)
    ms, took = [], []
    for request in sent * rounds:
        started = time.perf_counter()
        answer = client.transport.perform_request(
            request.method, request.path, params=dict(request.params), body=request.body
        )
        ms.append((time.perf_counter() - started) * 1000)
        took.append(float(answer["took"]))
    return latencies(ms, took)


# -- the systems -------------------------------------------------------------------------------------
def raw_caller(url: str, sent: list[Any], clients: int) -> Callable[[int], Callable[[], tuple[str, str | None]]]:
    from adapter.engines import connect

    client = connect(url, pool_maxsize=max(clients, 1))
    counter = itertools.count()

    def call(i: int) -> Callable[[], tuple[str, str | None]]:
        def once() -> tuple[str, str | None]:
            request = sent[next(counter) % len(sent)]
            client.transport.perform_request(
                request.method, request.path, params=dict(request.params), body=request.body
            )
            return "200", None

        return once

    return call


class Served:
    """``hybrid serve`` as a process: ``tree`` (a checkout) on PYTHONPATH, stopped with SIGTERM."""

    def __init__(self, tree: Path, url: str, index: str, port: int, extra: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree), "OPENSEARCH_URL": url}
        code = "import sys; from adapter.cli import main; sys.exit(main())"
        self.base = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix="bench-serve-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--index", index, "--port", str(port), *extra],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=str(tree),
        )
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}/api/info", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"hybrid serve did not start: {Path(self.log.name).read_text()[-2000:]}")
            time.sleep(0.5)

    def cpu_seconds(self) -> float:
        """User + system CPU of the serve and its children (workers)."""
        total = 0.0
        for pid in [self.process.pid, *self._children()]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def _children(self) -> list[int]:
        try:
            return [
                int(p) for p in Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
            ]
        except OSError:
            return []

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def baseline_tree(ref: str) -> Path:
    """The tree of ``ref`` (git archive), in a temporary folder kept for the run."""
    out = Path(tempfile.mkdtemp(prefix=f"serve-baseline-{ref[:10]}-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the run ------------------------------------------------------------------------------------------
def queries_and_bodies(
    url: str, count: int, index: str | None = None
) -> tuple[str, list[str], list[str], list[Any], int]:
    """The index, the test queries (for raw and the cached serve), every query (for the model in the
    loop), the raw client's requests (what the searcher sends for each test query) and the searcher's
    requests per search."""
    sys.path.insert(0, str(ROOT))
    from adapter.engines import connect_cluster
    from adapter.evaluation.metrics import load_beir
    from adapter.models.embedders import load_embedder
    from adapter.search import Searcher
    from adapter.search.page import SearchOptions
    from benchmarks.run import ensure_scifact_index

    client = connect_cluster(url)
    embedder = load_embedder("minilm")
    index = index or ensure_scifact_index(client, embedder, progress=False)
    test = list(load_beir(SCIFACT, "test").queries.values())[:count]
    every = list(dict.fromkeys([*test, *load_beir(SCIFACT, "train").queries.values()]))
    searcher = Searcher.open(client, index, embedder)
    sent, requests = [], 0
    for q in test:
        result = searcher.search(
            q,
            technique="hybrid",
            k=10,
            explain=False,
            options=SearchOptions(highlight=False),
            query_vector=embedder.embed_query(q),
        )
        sent.append(result.sent[0])
        requests = max(requests, result.requests)
    return index, test, every, sent, requests


def bodies(queries: list[str]) -> list[dict[str, Any]]:
    return [{"q": q, **PARAMS} for q in queries]


def systems_iter(names: list[str], clients: list[int]) -> Iterator[tuple[int, str]]:
    for n in clients:
        for name in names:
            yield n, name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--url", default=os.environ.get("OPENSEARCH_URL"), help="the cluster (default: the running local node)"
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--systems", default="raw,serve,baseline,serve-model,baseline-model")
    parser.add_argument(
        "--index", help="an existing SciFact index (MiniLM) to use as it is (default: bench-scifact, built if missing)"
    )
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--queries", type=int, default=300, help="test queries for raw and the cached serve")
    parser.add_argument(
        "--serve-args", default="", help="more arguments for this checkout's serve (e.g. '--workers 2')"
    )
    parser.add_argument(
        "--slow", type=float, default=0.5, help="serve-slow: seconds the proxy delays each search answer"
    )
    parser.add_argument(
        "--warm", type=int, default=1, help="rounds of the test queries for warm /search vs took (0: none)"
    )
    parser.add_argument("--out", default="out/bench-serve.json")
    args = parser.parse_args(argv)
    if not args.url:
        from adapter.local import LocalNode

        args.url = LocalNode().url
        if not args.url:
            parser.error("no --url and no local node running (hybrid local up)")
    names = args.systems.split(",")
    clients = [int(c) for c in args.clients.split(",")]
    index, test, every, sent, requests = queries_and_bodies(args.url, args.queries, args.index)
    print(
        f"index {index}: {len(test)} test queries, {len(every)} in all; the searcher sends {requests} request(s) per "
        "search"
    )

    servers, proxy = start_servers(args, names, index)
    warm_figures: dict[str, Any] = {}
    try:
        warm_caches(servers, test)
        if args.warm and "serve" in servers:
            warm_figures = {
                "serve": warm_latency(servers["serve"].base, test, args.warm),
                "raw": raw_latency(args.url, sent, args.warm),
                "load_after": load1(),
            }
            print(json.dumps({"warm": warm_figures}))
        runs = []
        for n, name in systems_iter(names, clients):
            runs.append(measure(args, servers, name, n, sent, test, every))
            print(json.dumps(runs[-1]))
    finally:
        codes = {name: s.stop() for name, s in servers.items()}
        if proxy is not None:
            proxy.__exit__(None, None, None)
    out = {
        "index": index,
        "url": args.url,
        "seconds": args.seconds,
        "searcher_requests_per_search": requests,
        "params": PARAMS,
        "baseline_ref": args.baseline_ref,
        "slow_s": args.slow,
        "exit_codes": codes,
        "warm": warm_figures,
        "runs": runs,
        "cpus": os.cpu_count(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(table(runs))
    return 0


def start_servers(args: argparse.Namespace, names: list[str], index: str) -> tuple[dict[str, Served], Any]:
    """The services the systems named ask for, and the fault proxy serve-slow searches through (or None)."""
    servers: dict[str, Served] = {}
    extra = args.serve_args.split()
    if "serve" in names:
        servers["serve"] = Served(ROOT, args.url, index, free_port(), extra)
    if "serve-2w" in names:
        servers["serve-2w"] = Served(ROOT, args.url, index, free_port(), ["--workers", "2", *extra])
    if "serve-model" in names:
        servers["serve-model"] = Served(ROOT, args.url, index, free_port(), ["--query-cache", "0", *extra])
    tree = baseline_tree(args.baseline_ref) if {"baseline", "baseline-model"} & set(names) else None
    if "baseline" in names:
        servers["baseline"] = Served(tree, args.url, index, free_port(), [])
    if "baseline-model" in names:
        cacheless = (
            ["--query-cache", "0"] if "--query-cache" in (tree / "adapter" / "cli" / "serve.py").read_text() else []
        )
        servers["baseline-model"] = Served(tree, args.url, index, free_port(), cacheless)
    proxy = None
    if "serve-slow" in names:
        from tests.support.faults import PASS, Delay, FaultProxy

        proxy = FaultProxy(args.url).__enter__()
        servers["serve-slow"] = Served(ROOT, proxy.url, index, free_port(), extra)
        proxy.set_policy(lambda n, method, path: Delay(args.slow) if "_search" in path else PASS)
    return servers, proxy


def warm_caches(servers: dict[str, Served], test: list[str]) -> None:
    """Every test query seen once: its vector is cached (serve-slow's first ones embed: a few ms beside the proxy's
    delay; a worker takes a connection: six rounds leave each worker ~2 % of the queries to embed)."""
    for name in ("serve", "baseline", "serve-2w"):
        for connection in range(6 if name == "serve-2w" else 1):
            if name in servers:
                warm = json_poster(servers[name].base, "/search", bodies(test))(connection)
                for _ in test:
                    warm()


def measure(
    args: argparse.Namespace,
    servers: dict[str, Served],
    name: str,
    n: int,
    sent: list[Any],
    test: list[str],
    every: list[str],
) -> dict[str, Any]:
    """One system driven by n clients for --seconds: its run's summary."""
    caller = (
        raw_caller(args.url, sent, n)
        if name == "raw"
        else json_poster(
            servers[name].base,
            "/search",
            bodies(test if name in ("serve", "serve-slow", "baseline", "serve-2w") else every),
        )
    )
    server = servers.get(name)
    run = Run(name, n, args.seconds, load_before=load1())
    cpu = server.cpu_seconds() if server else 0.0
    probe = InfoProbe(server.base) if server else None
    started = time.perf_counter()
    answers = drive(n, args.seconds, caller)
    run.latencies_ms, run.statuses = [a.ms for a in answers], statuses(answers)
    run.seconds = time.perf_counter() - started
    probed = probe.stop() if probe else {}
    run.info_ms, run.health_ms = probed.get("/api/info", []), probed.get("/healthz", [])
    run.server_cpu_s = server.cpu_seconds() - cpu if server else None
    run.load_after = load1()
    return run.summary()


def table(runs: list[dict[str, Any]]) -> str:
    """``x raw``: QPS over the raw client's at the same clients; ``x baseline``: serve's over baseline's (vectors
    cached), serve-model's over baseline-model's (the model in the loop)."""
    qps = {(r["system"], r["clients"]): r["qps"] for r in runs}
    against = {"serve": "baseline", "serve-model": "baseline-model"}
    lines = [
        "| clients | system | QPS | p50 ms | p99 ms | errors | /api/info p50 ms | /healthz p99 ms | serve CPU "
        "ms/request | x raw | x baseline | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        raw, base = qps.get(("raw", r["clients"])), qps.get((against.get(r["system"], ""), r["clients"]))
        x_raw = f"{r['qps'] / raw:.2f}" if raw else "-"
        x_base = f"{r['qps'] / base:.2f}" if base else "-"
        lines.append(
            f"| {r['clients']} | {r['system']} | {r['qps']} | {r['p50_ms']} | {r['p99_ms']} | {r['errors']} | "
            f"{r['info_p50_ms'] or '-'} | {r.get('healthz_p99_ms') or '-'} | {r['server_cpu_ms_per_request'] or '-'} | "
            f"{x_raw} | {x_base} | {r['load_before']}-{r['load_after']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
