"""A search's deadline bounds everything it starts (issue 38 item 4): the command (``hybrid serve``
in a process of its own) behind a fault proxy whose cluster is slow, then recovers.

Before: the serve's client waited ``--deadline`` seconds per try and retried a timeout 3 times, so a
search whose caller got its 503 at the deadline kept its slot for up to 4 x the deadline, and the
server went on refusing for that long after the cluster recovered (15-20 s at the 10 s default).
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from tests.support.faults import PASS, Delay, FaultProxy
from tests.support.serving import call, counter, post_json, serve_command
from tests.support.indexes import small_index  # noqa: F401  (fixtures)

pytestmark = pytest.mark.min_version("3.0")

DEADLINE = 2.0


def in_flight(base: str) -> float:
    return counter(call(f"{base}/metrics")[2].decode(), "hybrid_serve_in_flight")


def test_a_slot_is_free_when_its_caller_is_answered_and_a_recovered_cluster_is_searched_at_once(
    small_index, opensearch_url
):
    with FaultProxy(opensearch_url) as proxy:
        process, base = serve_command(
            small_index,
            proxy.url,
            "--deadline",
            str(DEADLINE),
            "--concurrency",
            "2",
            "--queue",
            "4",
        )
        try:
            assert post_json(f"{base}/search", {"q": "pedido", "explain": False})[0] == 200  # warm
            # The cluster slow: every search answer 5 s late (longer than the deadline; each retry as late).
            proxy.set_policy(lambda n, method, path: Delay(5.0) if "_search" in path else PASS)
            held: list = [None, None]

            def search(i: int) -> None:
                held[i] = post_json(f"{base}/search", {"q": f"factura {i}", "explain": False}, timeout=60)

            threads = [threading.Thread(target=search, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            answered = time.monotonic()
            # Both callers have their 503 at the deadline; their slots are free within moments of it.
            assert [h[0] for h in held] == [503, 503], held
            assert all("deadline" in json.loads(h[2])["error"] for h in held), held
            assert all(h[3] < DEADLINE + 1.0 for h in held), [h[3] for h in held]
            while in_flight(base) > 0 and time.monotonic() - answered < 10:
                time.sleep(0.05)
            freed = time.monotonic() - answered
            # The cluster recovers: the next search is answered at once, not after the old ones' retries.
            proxy.set_policy(lambda n, method, path: PASS)
            recovered = time.monotonic()
            first_ok = None
            while time.monotonic() - recovered < 15:
                status = post_json(f"{base}/search", {"q": "pedido", "explain": False}, timeout=60)[0]
                if status == 200:
                    first_ok = time.monotonic() - recovered
                    break
                time.sleep(0.1)
            retried = [entry for entry in proxy.log if "_search" in entry[2] and isinstance(entry[3], Delay)]
        finally:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)
    assert freed < 1.0, f"the slots were held {freed:.1f} s after their callers' 503"
    assert first_ok is not None and first_ok < 1.0, f"the first search after the recovery answered at {first_ok} s"
    assert len(retried) == 2, (
        f"{len(retried)} tries of the two held searches reached the cluster: none after the deadline"
    )
