"""Progress bars for ingest and evaluation (rich, on stderr so stdout stays clean for pipes)."""

from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


class Bar:
    """A progress bar: ``update(n)``, then ``close()``. Does nothing when ``enabled`` is false."""

    def __init__(self, description: str, *, total: int | None = None, enabled: bool = True, transient: bool = False) -> None:
        self._progress = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                  TimeRemainingColumn(), console=Console(stderr=True), transient=transient)
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()

    def update(self, advance: int = 1) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=advance)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


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
