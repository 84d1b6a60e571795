"""Migrations under faults, as a property (issue 20, Prove).

Random sequences (a fixed seed, a fixed number of sequences, a small corpus) of steps, each the
``hybrid`` command line in a child process as a user runs it, every request through a proxy that
counts the alias swaps:

- ``reindex`` to the other test model, to the end;
- ``reindex`` ended by SIGTERM in one phase: copy (a bulk request), catch-up (its refresh of both
  indices), freeze (the write block's request) or swap (the ``_aliases`` request), each held by the
  proxy after the node did it, so the signal lands while the client waits for the answer;
- ``reindex`` while the node's JVM gets SIGKILL (copy phase), then the node restarts (once: a
  restart costs 20-200 s here);
- ``rollback``;
- ``reindex`` while an ingest writes new and changed documents through the alias; rows refused
  under the write block are written again afterwards, as a user re-runs them.

After every step the alias names exactly one index; after a step the node survived, that index
takes writes. Every sequence ends by re-running an interrupted migration; then the live index
holds exactly the documents written (checksums of their stored fields, and each vector is the
live model's embedding of its text), and no run swapped the alias more than once.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.reliability.conftest import write_figures
from tests.support.faults import PASS, FaultProxy, Hold
from tests.support.migration import NEW, OLD, corpus
from tests.support.nodes import kill_hard, own_node, restart

SEED = 20
DOCS = 120
STEPS = (
    "reindex",
    "term:copy",
    "term:catch-up",
    "term:freeze",
    "term:swap",
    "rollback",
    "ingest-during-reindex",
    "kill-node",
)
MODELS = {OLD.fingerprint.spec: OLD, NEW.fingerprint.spec: NEW}


def _blocks(cluster, index: str) -> list[str]:
    settings = cluster.get_index(index)["settings"]
    blocks = settings.get("index", settings).get("blocks") or {}
    return [b for b in ("write", "read_only", "read_only_allow_delete") if str(blocks.get(b)).lower() == "true"]


@dataclass
class Run:
    """One child process: its exit code, output, and the alias swaps it sent."""

    step: str
    code: int
    out: str
    swaps: int
    seconds: float


@dataclass
class World:
    """The cluster under test and what the live alias must hold."""

    url: str
    client: object
    alias: str
    tmp: Path
    engine: str
    node: object | None = None  # restartable (SIGKILL steps) when given
    expected: dict[str, dict] = field(default_factory=dict)  # id -> stored fields (title, text, metadata)
    runs: list[Run] = field(default_factory=list)
    kills: int = 0
    written: int = 0

    @property
    def cluster(self):
        from adapter.engines import cluster_for

        return cluster_for(self.client)

    @property
    def checkpoint(self) -> Path:
        return self.tmp / "ckpt.json"

    def live(self) -> list[str]:
        from adapter.index.catalog import alias_indices

        return alias_indices(self.cluster, self.alias)

    def live_model(self):
        from adapter.index.catalog import read_index_info

        return MODELS[read_index_info(self.client, self.alias).fingerprint.spec]

    def other_model(self) -> str:
        return "old" if self.live_model() is NEW else "new"


def _hybrid(
    world: World,
    step: str,
    command: str,
    *,
    pause: float = 0.0,
    trigger=None,
    hold: float = 3.0,
    signal_to_send: int = signal.SIGTERM,
    during=None,
) -> Run:
    """Run ``hybrid reindex|rollback`` through a proxy that counts ``_aliases`` requests; when
    ``trigger(method, path)`` matches a request, the proxy holds its answer and the child gets the signal."""
    swaps = []
    fired = threading.Event()

    def policy(n, method, path):
        if method == "POST" and path.startswith("/_aliases"):
            swaps.append(n)
        if trigger is not None and not fired.is_set() and trigger(method, path):
            fired.set()
            return Hold(hold)
        return PASS

    started = time.monotonic()
    with FaultProxy(world.url, policy) as proxy:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.migration",
                "cli",
                command,
                proxy.url,
                world.alias,
                str(world.checkpoint),
                str(world.tmp / "cache.sqlite"),
                str(pause),
                world.other_model(),
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        worker = threading.Thread(target=during, args=(proc,)) if during else None
        if worker:
            worker.start()
        try:
            if trigger is not None:
                deadline = time.monotonic() + 120
                while not fired.wait(0.1) and proc.poll() is None and time.monotonic() < deadline:
                    pass  # until the request is held, or the run ended without one (nothing to interrupt)
                if fired.is_set():
                    time.sleep(0.3)  # the node has done the request; its answer is held
                    proc.send_signal(signal_to_send)
            out, _ = proc.communicate(timeout=300)
        finally:
            proc.kill()
            if worker:
                worker.join()
    run = Run(step, proc.returncode, out, len(swaps), time.monotonic() - started)
    world.runs.append(run)
    assert run.swaps <= 1, f"{step}: {run.swaps} alias swaps in one run\n{out}"
    return run


def _phase_trigger(world: World, phase: str):
    source = world.live()[0]
    seen = {"bulks": 0, "refresh": False}
    copy_at = random.randint(1, 3)

    def trigger(method, path):
        if method in ("POST", "PUT") and path.startswith("/_bulk"):  # elasticsearch-py sends PUT
            seen["bulks"] += 1
            return phase == "copy" and seen["bulks"] == copy_at
        if method == "POST" and path.endswith("/_refresh") and "," in path:
            first = not seen["refresh"]
            seen["refresh"] = True
            return phase == "catch-up" and first
        if method == "PUT" and path.startswith(f"/{source}/_settings") and seen["refresh"]:
            return phase == "freeze"
        return phase == "swap" and method == "POST" and path.startswith("/_aliases")

    return trigger


def _docs(rows):
    from adapter.ingest.sources import SourceDoc

    return [SourceDoc(r["id"], r["text"], r["title"], {"lang": r["lang"]}) for r in rows]


def _expect(world: World, rows) -> None:
    for r in rows:
        world.expected[r["id"]] = {"title": r["title"], "text": r["text"], "metadata": {"lang": r["lang"]}}


def _ingest(world: World, rows) -> list:
    """Rows through the alias with its live model; returns the rows that did not land."""
    from adapter.ingest.ingestor import Ingestor

    report = Ingestor.open(
        world.client,
        world.alias,
        world.live_model(),
        progress=False,
        failures_path=world.tmp / f"failures-{world.written}.jsonl",
    ).ingest(_docs(rows))
    world.written += 1
    failed = {f.id for f in report.failures}
    return [r for r in rows if r["id"] in failed]


def _check_alias(world: World, *, writable: bool) -> None:
    live = world.live()
    assert len(live) == 1, f"the alias names {live}"
    if writable:
        assert not _blocks(world.cluster, live[0]), (
            f"the alias ends on {live[0]}, which refuses writes ({_blocks(world.cluster, live[0])})"
        )


def _step(world: World, step: str) -> None:
    if step == "reindex":
        run = _hybrid(world, step, "reindex", pause=0.0)
        assert run.code == 0, run.out
    elif step.startswith("term:"):
        run = _hybrid(world, step, "reindex", pause=0.05, trigger=_phase_trigger(world, step[5:]))
        assert run.code in (0, 143), run.out
    elif step == "rollback":
        from adapter.index.catalog import index_version
        from adapter.engines import cluster_for
        from adapter.admin.live_state import versions_of

        if not [
            v
            for v in versions_of(cluster_for(world.client), world.alias)
            if index_version(v) < index_version(world.live()[0])
        ]:
            return _step(world, "reindex")  # nothing to go back to yet
        if world.checkpoint.exists():  # an interrupted migration first: rolling back under it is not this property
            return _step(world, "reindex")
        run = _hybrid(world, step, "rollback")
        assert run.code == 0 and run.swaps == 1, run.out
    elif step == "ingest-during-reindex":
        n = world.written
        rows = [dict(r, id=f"w{n}-{r['id']}") for r in corpus(12, prefix="x")]
        changed = [dict(r, text=r["text"] + f" rev{n}") for r in corpus(DOCS)[n % 10 :: 10][:6]]
        refused: list = []

        def write(proc):
            deadline = time.monotonic() + 60
            while not world.checkpoint.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)  # until the copy has begun
            for part in (rows[:6], changed, rows[6:]):
                refused.extend(_ingest(world, part))
                time.sleep(0.3)

        run = _hybrid(world, step, "reindex", pause=0.1, during=write)
        assert run.code == 0, run.out
        _expect(world, rows + changed)
        again = _ingest(world, refused)  # as a user re-runs the rows the failures file lists
        assert again == [], again
    elif step == "kill-node":
        assert world.node is not None
        kill = threading.Event()

        def killer(proc):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    if json.loads(world.checkpoint.read_text())["copied"] >= 32:
                        break
                except (OSError, ValueError, KeyError):
                    pass
                time.sleep(0.05)
            kill_hard(world.node)
            kill.set()

        run = _hybrid(world, step, "reindex", pause=0.15, during=killer)
        assert kill.is_set() and run.code == 2, run.out
        world.kills += 1
        restart(world.node)
        assert world.node.url == world.url, "the restarted node took another port"  # item 18: a saved URL keeps working
        world.client.cluster.health(index=world.alias, wait_for_status="yellow", request_timeout=120)
        _check_alias(world, writable=False)
        return
    _check_alias(world, writable=True)


def _settle(world: World) -> None:
    """The end of a sequence: an interrupted migration is run again (as its user would) until it is done."""
    for _ in range(2):
        if not world.checkpoint.exists():
            break
        run = _hybrid(world, "re-run", "reindex")
        assert run.code == 0, run.out
    assert not world.checkpoint.exists(), "the checkpoint outlived a finished migration"
    _check_alias(world, writable=True)


def _digest(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _check_documents(world: World) -> int:
    """The live index holds exactly the documents written, each with the live model's vector."""
    from adapter.index.catalog import read_index_info
    from adapter.index.documents import embedding_text

    info = read_index_info(world.client, world.alias)
    model = MODELS[info.fingerprint.spec]
    world.cluster.refresh([world.alias])
    hits = world.cluster.search(world.alias, {"size": 1000, "query": {"match_all": {}}})["hits"]["hits"]
    found = {
        h["_id"]: {"title": h["_source"]["title"], "text": h["_source"]["text"], "metadata": h["_source"]["metadata"]}
        for h in hits
    }
    assert {k: _digest(v) for k, v in found.items()} == {k: _digest(v) for k, v in world.expected.items()}
    for h in hits:
        want = model.embed_documents([embedding_text(h["_source"]["title"], h["_source"]["text"])])[0]
        np.testing.assert_allclose(np.asarray(h["_source"][info.vector_field], dtype=np.float32), want, atol=1e-5)
    return len(found)


def _sequences(world: World, n: int, rng: random.Random, steps: tuple[str, ...]) -> dict:
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from tests.conftest import drop_hybrid_index

    figures: dict = {"sequences": []}
    base = world.tmp
    for s in range(n):
        world.alias = f"rel-mig-{world.engine[:2]}-{s}"
        world.tmp = base / world.alias
        world.tmp.mkdir(parents=True, exist_ok=True)
        drop_hybrid_index(world.client, world.alias)
        init_index(world.client, world.alias, IndexSpec(OLD.fingerprint, analyzer="standard"))
        world.expected = {}
        rows = corpus(DOCS)
        assert _ingest(world, rows) == []
        _expect(world, rows)
        chosen = [rng.choice(steps) for _ in range(rng.randint(3, 5))]
        if "kill-node" in chosen and (world.node is None or world.kills >= 1):
            chosen = [c if c != "kill-node" else "term:copy" for c in chosen]
        for step in chosen:
            _step(world, step)
        _settle(world)
        count = _check_documents(world)
        figures["sequences"].append({"steps": chosen, "documents": count, "live": world.live()[0]})
        drop_hybrid_index(world.client, world.alias)
        world.checkpoint.unlink(missing_ok=True)
    by_kind: dict[str, list] = {}
    for run in world.runs:
        by_kind.setdefault(run.step, []).append(run)
    figures["runs"] = {
        k: {
            "runs": len(v),
            "exit codes": sorted({r.code for r in v}),
            "swaps": sum(r.swaps for r in v),
            "max swaps in one run": max(r.swaps for r in v),
            "seconds": round(sum(r.seconds for r in v), 1),
        }
        for k, v in sorted(by_kind.items())
    }
    figures["node kills"] = world.kills
    return figures


@pytest.mark.timeout(1800)  # ~3 minutes on a quiet machine; this one is shared by seven test suites
def test_migrations_under_faults_end_on_one_writable_index_holding_every_document(node, tmp_path):
    """OpenSearch: 6 sequences of 3-5 steps (at most one node kill), seed 20."""
    from adapter.engines import connect

    world = World(node.url, connect(node.url), "", tmp_path, "opensearch", node=node)
    started = time.monotonic()
    figures = _sequences(world, 6, random.Random(SEED), STEPS)
    figures["seconds"] = round(time.monotonic() - started, 1)
    write_figures("migration-faults-opensearch", figures)


@pytest.fixture(scope="module")
def es_node():
    node = own_node("migrations-es", distribution="elasticsearch")
    node.up()
    yield node
    node.down()


@pytest.mark.timeout(1800)
def test_migrations_under_faults_on_elasticsearch(es_node, tmp_path):
    """Elasticsearch (the default 9.x, 9.5.4): 3 sequences of 3-5 steps (no node kills), seed 21."""
    from adapter.engines import connect_cluster

    world = World(es_node.url, connect_cluster(es_node.url), "", tmp_path, "elasticsearch")
    started = time.monotonic()
    figures = _sequences(world, 3, random.Random(SEED + 1), tuple(s for s in STEPS if s != "kill-node"))
    figures["seconds"] = round(time.monotonic() - started, 1)
    write_figures("migration-faults-elasticsearch", figures)
