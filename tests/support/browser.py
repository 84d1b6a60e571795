"""A real headless Chromium (Debian's package) driven by Playwright, for the page tests.

Playwright's own browser downloads are never used: the browser is /usr/bin/chromium (``apt-get
install chromium``; `make test` installs it when absent), started with flags that keep it off the
network. Each page collects its console errors and failed requests, so a test can assert there
were none.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

CHROMIUM = os.environ.get("HYBRID_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"


def available() -> str | None:
    """Why no browser test can run here (None: it can)."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


@dataclass
class Watched:
    page: object
    errors: list[str] = field(default_factory=list)

    def screenshot(self, name: str, *, full_page: bool = True) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


@contextlib.contextmanager
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield b
        finally:
            b.close()


def watched_page(b, *, width: int = 1440, height: int = 1000) -> Watched:
    page = b.new_page(viewport={"width": width, "height": height})
    watched = Watched(page)
    page.on("console", lambda m: watched.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: watched.errors.append(f"request failed: {r.url} ({r.failure})"))
    return watched


def wait_until(page, expression: str, *, timeout_s: float = 60.0) -> None:
    """Poll ``expression`` in the page until it is true. Unlike Playwright's wait_for_function (which
    evaluates a string, refused by a Content-Security-Policy without 'unsafe-eval'), this works on
    pages served with a strict CSP."""
    import time

    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression} still false after {timeout_s:.0f} s")
        time.sleep(0.05)
