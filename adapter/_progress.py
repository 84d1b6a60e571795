"""Progress bars for ingest and evaluation (rich, on stderr so stdout stays clean for pipes).

On a terminal a bar redraws itself; piped or redirected (CI logs, ``2> file``) there is nothing to
redraw: a bar then prints one line when it ends (``ingest docs: 12/12 in 3.1 s``) and a transient
one prints nothing, instead of the blank lines rich leaves where it would have drawn."""

from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


class Bar:
    """A progress bar: ``update(n)``, then ``close()``. Does nothing when ``enabled`` is false."""

    def __init__(
        self, description: str, *, total: int | None = None, enabled: bool = True, transient: bool = False
    ) -> None:
        self._progress = None
        self._line: tuple[str, int | None, float] | None = None  # piped: what the closing line says
        self._done = 0
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        if not console.is_terminal:
            if not transient:
                self._line = (description, total, time.perf_counter())
            return
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=transient,
        )
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()

    def update(self, advance: int = 1) -> None:
        self._done += advance
        if self._progress is not None:
            self._progress.update(self._task, advance=advance)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if self._line is not None:
            description, total, started = self._line
            print(
                f"{description}: {self._done}{'' if total is None else f'/{total}'} "
                f"in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
            self._line = None


def track(items: Iterable[T], description: str, *, total: int | None = None, enabled: bool = True) -> Iterator[T]:
    """``items``, advancing a transient bar as they are consumed."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    bar = Bar(description, total=total, enabled=enabled, transient=True)
    try:
        for item in items:
            yield item
            bar.update()
    finally:
        bar.close()
