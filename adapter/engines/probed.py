"""The capabilities each engine has probed, per cluster: probing asks the cluster several calls,
and every search, ingest and plan needs the answer."""

from __future__ import annotations

import threading

from adapter.engines.capabilities import Capabilities


class ProbedClusters:
    """Capabilities by cluster key (what the engine reads to tell clusters apart), shared by threads.

    The lock guards the map only: two threads that probe one new cluster at once both ask it, and
    the later answer stays."""

    def __init__(self) -> None:
        self._caps: dict[str, Capabilities] = {}
        self._lock = threading.Lock()

    def get(self, key: str, *, refresh: bool = False) -> Capabilities | None:
        """The cluster's capabilities as last probed; None: not yet, or ``refresh`` asks again."""
        if refresh:
            return None
        with self._lock:
            return self._caps.get(key)

    def put(self, key: str, caps: Capabilities) -> Capabilities:
        with self._lock:
            self._caps[key] = caps
        return caps
