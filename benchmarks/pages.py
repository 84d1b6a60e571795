"""The pages' targets (issue 21), measured side by side in one run; not timed tests.

    .venv/bin/python -m benchmarks.pages --eval-dir out/eval-scifact-report [--url URL] [--out out/bench-pages.json]

- report: ``hybrid report`` rebuilt from a stored evaluation (SciFact's 300 test queries x its
  techniques): seconds (median of 3), the page's size (index.html + assets/) beside the run files',
  and Chromium's console errors when it opens it from the file system.
  Targets: <= 10 s, <= 5 MB, no console errors.
- serve: ``/search`` over HTTP against the Python API (``Searcher.search``) on the same query with the
  model warm, interleaved call by call on the demo index (built here when absent, as ``hybrid demo``
  builds it); p50 of each and of the paired differences. Target: p50 added <= 5 ms.
- compare: the compare page in Chromium, four columns, from Enter to the columns drawn (the page's own
  clock), median of 10. Target: <= 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from adapter.engines import cluster_for
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO_INDEX = "demo-support"
QUERIES = (
    "¿cómo devuelvo un pedido?",
    "error E-4012",
    "cambiar mi contraseña",
    "envíos a las islas",
    "descargar la factura en pdf",
    "borrar mis datos",
    "tarjeta caducada",
    "seguimiento del envío",
)


def _size(paths: list[Path]) -> int:
    return sum(
        p.stat().st_size for root in paths for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file()
    )


def report(eval_dir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from adapter.evaluation import stored
    from adapter.evaluation.html import write_report
    from tests.support.browser import browser, watched_page

    eval_dir = eval_dir.resolve()
    seconds, cpu = [], []
    for _ in range(3):
        started, started_cpu = time.perf_counter(), time.process_time()
        page = write_report(stored.load(eval_dir))
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    data = stored.load(eval_dir)
    size = _size([page, page.parent / "assets"])
    with browser() as b:
        watched = watched_page(b, width=1600, height=1000)
        started = time.perf_counter()
        watched.page.goto(page.as_uri())
        watched.page.wait_for_function("window.REPORT && window.REPORT.ready", timeout=60_000)
        opened = time.perf_counter() - started
        watched.screenshot("bench-report", full_page=False)
        errors = list(watched.errors)
    return {
        "queries": len(data.queries),
        "techniques": len(data.runs),
        "seconds_median": round(statistics.median(seconds), 2),
        "seconds": [round(s, 2) for s in seconds],
        "cpu_seconds_median": round(statistics.median(cpu), 2),
        "page_bytes": size,
        "page_mb": round(size / 2**20, 2),
        "run_files_bytes": _size([eval_dir / "runs"]),
        "open_seconds": round(opened, 2),
        "console_errors": errors,
        "targets": {
            "seconds<=10": statistics.median(seconds) <= 10,
            "mb<=5": size <= 5 * 2**20,
            "no_console_errors": not errors,
        },
    }


def demo_index(url: str | None) -> tuple[Any, str]:
    from adapter.index.catalog import alias_indices
    from adapter.cli.demo import run_demo
    from adapter.engines import connect_cluster

    client = connect_cluster(url)
    if not alias_indices(cluster_for(client), DEMO_INDEX):
        with contextlib.redirect_stdout(io.StringIO()):
            run_demo(url=url, index=DEMO_INDEX)
    return client, DEMO_INDEX


def serve_and_compare(url: str | None, rounds: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    import httpx

    from adapter.search.result_json import search_result_json
    from adapter.engines import describe_url
    from adapter.search.page import SearchOptions
    from adapter.search import Searcher
    from adapter.serve import SearchService, create_app
    from tests.support.browser import browser, watched_page
    from tests.support.serving import served

    client, index = demo_index(url)
    searcher = Searcher.open(client, index)
    service = SearchService(searcher, cluster=describe_url(client))
    service.warm()
    api, http, diffs = [], [], []
    with served(create_app(service)) as base, httpx.Client(base_url=base, timeout=60) as web:
        for i in range(rounds):
            query = QUERIES[i % len(QUERIES)]
            order = (0, 1) if i % 2 == 0 else (1, 0)  # alternate who goes first: neither gets the warmer cache
            took: dict[int, float] = {}
            for who in order:
                started = time.perf_counter()
                if who == 0:
                    # What /search does for these parameters, through the Python API, to the same JSON.
                    json.dumps(
                        search_result_json(
                            searcher.search(query, k=10, explain=True, options=SearchOptions(highlight=True))
                        )
                    )
                else:
                    answer = web.get("/search", params={"q": query, "k": 10})
                    answer.raise_for_status()
                took[who] = (time.perf_counter() - started) * 1000
            api.append(took[0])
            http.append(took[1])
            diffs.append(took[1] - took[0])
        with browser() as b:
            watched = watched_page(b, width=1600, height=1100)
            watched.page.goto(base)
            renders = []
            for i in range(10):
                watched.page.fill("#q", QUERIES[i % len(QUERIES)])
                watched.page.evaluate("document.body.dataset.state = ''")
                watched.page.keyboard.press("Enter")
                deadline = time.monotonic() + 60
                while watched.page.evaluate("document.body.dataset.state") != "done":
                    if time.monotonic() > deadline:
                        raise TimeoutError("the compare page did not finish")
                    time.sleep(0.01)
                renders.append(watched.page.evaluate("window.COMPARE.state.lastMs"))
                columns = watched.page.locator("#columns .column").count()
            watched.screenshot("bench-compare", full_page=False)
            errors = list(watched.errors)
    p50_added = statistics.median(diffs)
    return {
        "serve": {
            "index": index,
            "engine": service.info.engine,
            "version": service.info.version,
            "rounds": rounds,
            "api_ms_p50": round(statistics.median(api), 2),
            "http_ms_p50": round(statistics.median(http), 2),
            "added_ms_p50": round(p50_added, 2),
            "targets": {"added_p50<=5ms": p50_added <= 5},
        },
        "compare": {
            "columns": columns,
            "render_ms": [round(r) for r in renders],
            "render_ms_median": round(statistics.median(renders)),
            "console_errors": errors,
            "targets": {"four_columns<=1s": statistics.median(renders) <= 1000, "no_console_errors": not errors},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--eval-dir", help="a stored evaluation (hybrid eval --report DIR); without it the report section is skipped"
    )
    parser.add_argument("--url", help="the cluster for the serve sections (default: the running local node)")
    parser.add_argument(
        "--rounds", type=int, default=200, help="interleaved /search vs API calls (default %(default)s)"
    )
    parser.add_argument("--only", default="report,serve", help="report, serve (serve includes the compare page)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args(argv)
    sections = {s.strip() for s in args.only.split(",")}
    results: dict[str, Any] = {"machine": {"load_average_1m": _load()}}
    if "report" in sections and args.eval_dir:
        results["report"] = report(Path(args.eval_dir))
        print("report:", json.dumps(results["report"]))
    if "serve" in sections:
        url = args.url
        if url is None:
            from adapter.local import LocalNode

            url = LocalNode(log=lambda m: None).url
        results.update(serve_and_compare(url, args.rounds))
        print("serve:", json.dumps(results["serve"]))
        print("compare:", json.dumps(results["compare"]))
    results["machine"]["load_average_1m_after"] = _load()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


def _load() -> float | None:
    try:
        return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
