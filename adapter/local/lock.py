"""The cache folder's lock: one ``up``/``down`` at a time per folder, and a waiting process told who
holds it (the holder writes its pid, start and command into the lock file)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Callable, Iterator

from adapter.errors import LocalNodeError
from adapter.local import procs

LOCK_REPORT_EVERY = 10.0  # seconds between "still waiting" lines


@contextlib.contextmanager
def held(path: Path, timeout: float, log: Callable[[str], None]) -> Iterator[None]:
    """``path`` locked (flock) for the block. Waiting for another process says who it is (the holder
    writes its pid, start and command into the file), how long it has waited and for how long it will."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        started = time.monotonic()
        reported = None
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= timeout:
                    raise LocalNodeError(
                        f"gave up after {timeout:g} s waiting for {path}, {holder(path)}; stop that process "
                        "or wait until it is done, then run the command again"
                    ) from None
                if reported is None or waited - reported >= LOCK_REPORT_EVERY:
                    log(f"waiting for {path}, {holder(path)} ({waited:.0f} s so far, up to {timeout:g} s)")
                    reported = waited
                time.sleep(0.2)
        if reported is not None:
            log(f"got the lock after {time.monotonic() - started:.1f} s")
        try:
            fh.truncate(0)
            fh.write(
                json.dumps({"pid": os.getpid(), "since": time.time(), "command": procs.cmdline(os.getpid())}) + "\n"
            )
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def holder(path: Path) -> str:
    """Who holds ``path``, as its holder wrote it (checked against the process still running)."""
    try:
        info = json.loads(path.read_text())
        pid, since, command = int(info["pid"]), float(info["since"]), [str(a) for a in info["command"] if a]
    except (OSError, ValueError, KeyError, TypeError):
        return "held by a process that did not say which"
    if not procs.pid_alive(pid):
        return "held by a process that did not say which"
    shown = " ".join(command)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return f"held by pid {pid} ({shown}) for {time.time() - since:.0f} s"
