"""`make test`: the type check, the unit and packaging tiers once, then the integration tier once per target.

    python scripts/test_targets.py                       # every pinned local release
    HYBRID_TEST_TARGETS=opensearch-3.6.0 python scripts/test_targets.py
    OPENSEARCH_URL=http://localhost:9200 python scripts/test_targets.py   # that cluster only

Each integration run is its own pytest process with HYBRID_TEST_TARGET set; it starts the
target's local node and stops it again if it started it. The exit status is non-zero when any
run failed, and a run that collected no test (pytest's exit 5) counts as a failure.
Extra arguments go to every pytest run.

The type check comes first: ``mypy`` with pyproject's ``[tool.mypy]`` (``--strict`` on
``adapter/``), its report printed as it comes; any error fails the run as a failed test does
(the tiers still run, so one CI run shows both). Beside it the layer check: ``lint-imports`` with
pyproject's ``[tool.importlinter]`` contracts (the package layers, the pure core); a broken contract
fails the run in the same way; and the lint: ``ruff check`` and ``ruff format --check`` with pyproject's
``[tool.ruff]`` (line length 120, complexity bound 15).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from adapter.local.targets import DEFAULT_TARGETS

ROOT = Path(__file__).resolve().parent.parent


def _pytest(args: list[str], env: dict[str, str], label: str) -> tuple[str, int, float]:
    print(f"\n=== {label} ===", flush=True)
    started = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "pytest", *args], env=env)
    return label, rc, time.monotonic() - started


def type_check(paths: list[str] | None = None, options: tuple[str, ...] = ()) -> tuple[str, int, float]:
    """mypy with the project's configuration (and ``options``), on ``paths`` (default: pyproject's ``files``,
    adapter/)."""
    print("\n=== type check (mypy --strict) ===", flush=True)
    started = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "mypy", *options, *(paths or [])], cwd=ROOT)
    return "type check", rc, time.monotonic() - started


def layer_check() -> tuple[str, int, float]:
    """import-linter with pyproject's ``[tool.importlinter]`` contracts (docs/ARCHITECTURE.md, Layers)."""
    print("\n=== layer check (lint-imports) ===", flush=True)
    started = time.monotonic()
    # the test extra's console script
    rc = subprocess.call([str(Path(sys.executable).with_name("lint-imports"))], cwd=ROOT)
    return "layer check", rc, time.monotonic() - started


def lint_check() -> tuple[str, int, float]:
    """ruff with pyproject's ``[tool.ruff]``: the linter (line length, complexity bound, pyflakes) and the
    formatter's check."""
    print("\n=== lint (ruff check, ruff format --check) ===", flush=True)
    started = time.monotonic()
    ruff = str(Path(sys.executable).with_name("ruff"))  # the test extra's, pinned: another release formats differently
    rc = subprocess.call([ruff, "check", "."], cwd=ROOT) or subprocess.call([ruff, "format", "--check", "."], cwd=ROOT)
    return "lint", rc, time.monotonic() - started


def main(extra: list[str]) -> int:
    # Every extra is installed here (`make test`): a test that needs one runs, and fails if it is missing, never
    # skipped.
    env = {**os.environ, "HYBRID_TEST_ALL_EXTRAS": "1"}
    if env.get("OPENSEARCH_URL"):
        targets = [None]  # the given cluster, whatever it runs
    else:
        targets = [t.strip() for t in env.get("HYBRID_TEST_TARGETS", ",".join(DEFAULT_TARGETS)).split(",") if t.strip()]
    results = [
        type_check(),
        layer_check(),
        lint_check(),
        _pytest(["-m", "unit or packaging", *extra], env, "unit and packaging tiers"),
    ]
    for target in targets:
        run_env = dict(env)
        if target:
            run_env["HYBRID_TEST_TARGET"] = target
        results.append(
            _pytest(["-m", "integration", *extra], run_env, f"integration tier on {target or env['OPENSEARCH_URL']}")
        )
    print("\n=== summary ===")
    failed = False
    for label, rc, seconds in results:
        verdict = {0: "passed", 5: "FAILED (no tests ran)"}.get(rc, f"FAILED (exit {rc})")
        failed |= rc != 0
        print(f"{label}: {verdict} in {seconds:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
