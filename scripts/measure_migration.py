"""Measure a zero-downtime migration of SciFact (5,183 documents) with queries and writes throughout.

    make migration                                  # MiniLM -> multilingual-e5-small, every document (the local node)
    python scripts/measure_migration.py --change hnsw             # same model, HNSW m 16 -> 32: vectors reused
    python scripts/measure_migration.py --docs 400                # the last 400 documents only (by id)

1. ``migration-scifact-<change>`` v1: the documents embedded by MiniLM (the shared embedding cache
   makes a second run cheap).
2. While it serves, a query loop runs SciFact test queries through one Searcher opened on the alias
   before the migration (``--per-second``, hybrid, k=10), counting failures and which index
   answered; a writer adds 30 documents, deletes 10 of them and updates 20 documents' metadata.
3. ``reindex`` runs in a child process (as ``hybrid reindex`` would), with the nDCG@10 gate on
   SciFact test (full corpus only); the child is killed with SIGKILL when the copy is
   ``--crash-at`` done, and run again: it resumes from the checkpoint.
4. Checked and written to ``--out``: failed queries, documents lost (the new index holds exactly the
   expected ids), the indices the query loop saw (one swap), what the resumed run read and embedded.

Numbers go to docs/OPERATIONS.md. Not a test: e5 embeds about 3 SciFact abstracts a second on 2
idle cores (about 30 minutes for the corpus); `make test` runs the same machinery on small corpora.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.models.cache import EmbeddingCache  # noqa: E402
from adapter.index.catalog import alias_indices  # noqa: E402
from adapter.engines import connect  # noqa: E402
from adapter.engines import engine_for  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.evaluation.metrics import load_beir  # noqa: E402
from adapter.admin.planning import apply_plan, plan_spec  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl  # noqa: E402
from adapter.index.spec import Spec, dump_spec  # noqa: E402
from adapter.engines import cluster_for  # noqa: E402

# The shared data folder next to the checkout (or next to its worktree folder).
SCIFACT = next(
    (p / "shared" / "data" / "scifact" for p in ROOT.parents if (p / "shared" / "data" / "scifact").is_dir()),
    ROOT.parent / "shared" / "data" / "scifact",
)
ALIAS = "migration-scifact"  # + the change: one alias per kind of run


def _url() -> str:
    url = os.environ.get("OPENSEARCH_URL")
    if url:
        return url
    from adapter.local import LocalNode

    return LocalNode(log=lambda m: None).up().url


class QueryLoop(threading.Thread):
    def __init__(self, client, alias: str, queries: list[str], per_second: float) -> None:
        super().__init__(daemon=True)
        self.searcher = Searcher.open(client, alias)  # the model comes from the index, as an application's would
        self.queries, self.pause = queries, 1.0 / per_second
        self.stop = threading.Event()
        self.ok, self.failures, self.latencies, self.served, self.empty = 0, [], [], [], 0

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                result = self.searcher.search(self.queries[i % len(self.queries)], k=10)
                self.ok += 1
                self.empty += not result.hits
                self.latencies.append((time.perf_counter() - started) * 1000)
                if not self.served or self.served[-1][1] != self.searcher.info.index:
                    self.served.append((time.time(), self.searcher.info.index))
            except Exception as exc:  # noqa: BLE001 (counted and reported: the target is zero)
                self.failures.append(f"{time.time():.0f} {exc!r}"[:300])
            i += 1
            self.stop.wait(max(0.0, self.pause - (time.perf_counter() - started)))


def _percentile(values, q):
    import numpy as np

    return float(np.percentile(values, q)) if values else None


def worker(spec_file: str, checkpoint: str, gate_queries: int, out: str) -> None:
    """The reindex as a child process runs it (killed midway by the parent)."""
    from adapter.models.embedders import load_embedder
    from adapter.admin.gate import Gate
    from adapter.admin.migrate import reindex
    from adapter.index.plan import desired_from_spec
    from adapter.index.spec import load_spec

    spec = load_spec(spec_file)
    embedder = load_embedder(spec.embedder)
    spec = spec.resolved(lambda name: embedder.fingerprint)
    gate = Gate(load_beir(SCIFACT, "test").limited(gate_queries), max_drop=0.02) if gate_queries else None
    report = reindex(
        connect(_url()),
        desired_from_spec(spec),
        embedder,
        cache=EmbeddingCache(),
        checkpoint=checkpoint,
        gate=gate,
        progress=False,
        log=lambda m: print(f"[reindex] {m}", flush=True),
    )
    data = {k: v for k, v in report.__dict__.items() if k != "gate"}
    data["gate"] = report.gate.__dict__ if report.gate else None
    Path(out).write_text(json.dumps(data, indent=2, default=str))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crash-at", type=float, default=0.4, help="kill the reindex when this share of the copy is done")
    ap.add_argument("--per-second", type=float, default=2.0, help="queries per second during the migration")
    ap.add_argument(
        "--gate-queries", type=int, default=300, help="judged queries for the gate (0: no gate; always 0 with --docs)"
    )
    ap.add_argument(
        "--change",
        choices=["model", "hnsw"],
        default="model",
        help="model: MiniLM -> multilingual-e5-small (re-embedding); hnsw: same model, m 16 -> 32 (vectors reused)",
    )
    ap.add_argument("--docs", type=int, help="only the last N documents by id (a subset, for a loaded machine)")
    ap.add_argument("--out", default=str(ROOT / "out" / "migration-scifact.json"))
    ap.add_argument("--worker", nargs=4, metavar=("SPEC", "CHECKPOINT", "GATE_QUERIES", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]), args.worker[3])
        return 0

    work = Path(args.out).parent
    work.mkdir(parents=True, exist_ok=True)
    client = connect(_url(), pool_maxsize=4)
    from adapter.models.embedders import load_embedder

    minilm = load_embedder("minilm")
    alias = f"{ALIAS}-{args.change}"
    v1 = Spec(alias, "minilm", minilm.fingerprint, analyzer="english", title_boost=0.5)
    if args.change == "model":
        v2 = Spec(alias, "multilingual-e5-small", analyzer="english", title_boost=0.5)
    else:
        v2 = Spec(alias, "minilm", minilm.fingerprint, analyzer="english", title_boost=0.5, m=32)
    spec_file = work / f"migration-{args.change}.yaml"
    dump_spec(v2, spec_file, pin=False)
    gate_queries = 0 if args.docs else args.gate_queries
    timings = {}

    # 1. the live index (fresh), MiniLM
    t = time.perf_counter()
    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    planned, _ = plan_spec(client, v1, engine_for(client))
    apply_plan(client, planned)
    rows = list(read_jsonl(SCIFACT / "corpus.jsonl", FieldMap(title="title", metadata=())))
    docs = sorted((r for r in rows if isinstance(r, SourceDoc)), key=lambda d: d.id)
    if args.docs:
        docs = docs[-args.docs :]
    built = Ingestor.open(client, alias, minilm, cache=EmbeddingCache(), progress=True).ingest(docs, total=len(docs))
    timings["build_v1_s"] = time.perf_counter() - t
    print(
        f"v1: {built.documents} documents ({built.embedded} embedded, {built.cache_hits} from cache) in "
        f"{timings['build_v1_s']:.0f}s"
    )

    # 2. queries and writes throughout
    queries = list(load_beir(SCIFACT, "test").queries.values())
    loop = QueryLoop(client, alias, queries, args.per_second)
    loop.start()
    checkpoint = work / f"migration-{args.change}-checkpoint.json"
    checkpoint.unlink(missing_ok=True)
    late = [
        SourceDoc(f"late-{i}", f"Late document {i} about protein folding and immune response.", f"Late {i}")
        for i in range(30)
    ]
    revised = [SourceDoc(d.id, d.text, d.title, {"revised": "yes"}) for d in docs[:20]]

    def writes():
        while not (
            checkpoint.exists()
            and json.loads(checkpoint.read_text() or "{}").get("copied", 0) > min(500, len(docs) // 5)
        ):
            time.sleep(1)
        writer = Ingestor.open(client, alias, minilm, cache=EmbeddingCache(), progress=False)
        assert writer.ingest(late).complete and writer.ingest(revised).complete
        for d in late[:10]:
            client.delete(index=writer.info.index, id=d.id, refresh=True)

    writer = threading.Thread(target=writes, daemon=True)
    writer.start()

    # 3. reindex in a child process, killed midway, then run again
    result = work / f"migration-{args.change}-report.json"
    result.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        str(spec_file),
        str(checkpoint),
        str(gate_queries),
        str(result),
    ]
    t = time.perf_counter()
    first = subprocess.Popen(cmd, cwd=ROOT)
    crash_at = int(args.crash_at * len(docs))
    while first.poll() is None:
        try:
            state = json.loads(checkpoint.read_text())
        except (OSError, ValueError):
            state = {}
        if state.get("copied", 0) >= crash_at:
            first.send_signal(signal.SIGKILL)
            break
        time.sleep(0.5)
    first.wait()
    timings["first_run_s"] = time.perf_counter() - t
    killed_at = json.loads(checkpoint.read_text())
    print(
        f"killed the reindex (exit {first.returncode}) after {timings['first_run_s']:.0f}s: {killed_at['copied']} "
        f"entries copied, {killed_at['embedded']} embedded"
    )
    t = time.perf_counter()
    second = subprocess.run(cmd, cwd=ROOT)
    timings["resumed_run_s"] = time.perf_counter() - t
    time.sleep(5)  # queries after the swap
    loop.stop.set()
    loop.join()
    writer.join(timeout=5)
    if second.returncode != 0:
        print(f"the resumed reindex failed (exit {second.returncode})")
        return 1
    report = json.loads(result.read_text())

    # 4. checks
    expected = {d.id for d in docs} | {d.id for d in late[10:]}
    new_index = report["target"]
    ids = set()
    body = {"query": {"match_all": {}}, "_source": False, "size": 10_000}
    ids = {h["_id"] for h in client.search(index=new_index, body=body)["hits"]["hits"]}
    revised_ok = sum(
        client.get(index=new_index, id=d.id)["_source"]["metadata"].get("revised") == "yes" for d in revised
    )
    swaps = [index for _, index in loop.served]
    out = {
        "change": args.change,
        "documents": len(docs),
        "killed_after_copied": killed_at["copied"],
        "killed_after_embedded": killed_at["embedded"],
        "resumed_run": report,
        "documents_lost": len(expected - ids),
        "unexpected_documents": len(ids - expected),
        "writes_during_migration": {
            "added": len(late),
            "deleted": 10,
            "metadata_updated": len(revised),
            "updates_in_new_index": revised_ok,
        },
        "queries": {
            "ok": loop.ok,
            "failed": len(loop.failures),
            "empty": loop.empty,
            "failures": loop.failures[:10],
            "p50_ms": _percentile(loop.latencies, 50),
            "p95_ms": _percentile(loop.latencies, 95),
            "p99_ms": _percentile(loop.latencies, 99),
            "served_by": swaps,
        },
        "alias_now": alias_indices(cluster_for(client), alias),
        "timings_s": timings,
    }
    Path(args.out).write_text(json.dumps(out, indent=2, default=str))
    print(json.dumps({k: v for k, v in out.items() if k != "resumed_run"}, indent=2, default=str))
    print(f"written to {args.out}")
    return 0 if not out["documents_lost"] and not loop.failures and swaps == [f"{alias}-v1", f"{alias}-v2"] else 1


if __name__ == "__main__":
    sys.exit(main())
