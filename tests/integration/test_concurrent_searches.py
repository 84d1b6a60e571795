"""One searcher shared by 16 threads while the alias moves to an index of another model: no search
fails, and no result mixes the two (its hits all come from one index, and its query vector is that
index's model's). Each search reads one immutable state of the searcher (adapter.search.state)."""

from __future__ import annotations

import threading
import time

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.index.catalog import alias_indices
from adapter.ingest.ingestor import Ingestor
from adapter.search import Searcher
from adapter.ingest.sources import SourceDoc
from adapter.engines import cluster_for
from tests.conftest import drop_hybrid_index
from tests.support.migration import NEW, OLD, by_spec, corpus

pytestmark = pytest.mark.integration
THREADS = 16
TECHNIQUES = ("hybrid", "client", "dense", "bm25")


def _docs(version: str, n: int = 60) -> list[SourceDoc]:
    return [SourceDoc(r["id"], r["text"], r["title"], {"version": version}) for r in corpus(n)]


def vectors(value, out):
    """Every query vector in a request body (the knn leg's), by its length."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("vector", "query_vector") and isinstance(inner, list):
                out.add(len(inner))
            else:
                vectors(inner, out)
    elif isinstance(value, list):
        for inner in value:
            vectors(inner, out)
    return out


@pytest.fixture
def two_models(client, index_name):
    """``index_name`` on an index of the old test model; a second index, of the new model, to move it to."""
    other = f"{index_name}-next"
    init_index(client, index_name, IndexSpec(OLD.fingerprint, analyzer="english"))
    assert Ingestor.open(client, index_name, OLD, progress=False).ingest(_docs("old")).complete
    init_index(client, other, IndexSpec(NEW.fingerprint, analyzer="english"))
    assert Ingestor.open(client, other, NEW, progress=False).ingest(_docs("new")).complete
    yield index_name, other
    drop_hybrid_index(client, other)


def test_sixteen_threads_see_no_mixed_state_while_the_alias_moves(client, two_models, monkeypatch):
    import adapter.search.state

    monkeypatch.setattr(adapter.search.state, "load_index_embedder", by_spec)
    alias, other = two_models
    (old_index,), (new_index,) = alias_indices(cluster_for(client), alias), alias_indices(cluster_for(client), other)
    searcher = Searcher.open(client, alias, depth=20)  # its embedder comes from the index, as an application's would
    dimension = {"old": OLD.dimension, "new": NEW.dimension}
    stop, moved, results, failures, lock = threading.Event(), threading.Event(), [], [], threading.Lock()
    # searches each worker finished, per side
    rounds = {(w, after): 0 for w in range(THREADS) for after in (False, True)}

    def search_loop(worker: int) -> None:
        i = 0
        while not stop.is_set():
            technique, after = TECHNIQUES[(worker + i) % len(TECHNIQUES)], moved.is_set()
            try:
                result = searcher.search(f"tok{(worker * 7 + i) % 60}x protein", technique=technique, k=5)
                with lock:
                    results.append((technique, after, result))
                    rounds[worker, after] += 1
            except Exception as exc:  # noqa: BLE001 (counted: the target is zero)
                failures.append(f"{technique}: {exc!r}")
            i += 1

    def every_worker_searched(after: bool, times: int = len(TECHNIQUES), timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not failures:
            with lock:
                if all(rounds[w, after] >= times for w in range(THREADS)):
                    return
            time.sleep(0.05)
        raise AssertionError(
            f"not every worker searched {times} times ({'after' if after else 'before'} the move): {rounds}, "
            f"{failures[:3]}"
        )

    threads = [threading.Thread(target=search_loop, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    try:
        every_worker_searched(after=False)  # every technique, on the old index
        client.indices.update_aliases(
            body={
                "actions": [
                    {"remove": {"index": old_index, "alias": alias}},
                    {"add": {"index": new_index, "alias": alias}},
                ]
            }
        )
        moved.set()
        every_worker_searched(after=True)  # every technique again, each search started after the move
    finally:
        stop.set()
        for t in threads:
            t.join()

    assert failures == []
    for technique, after, result in results:
        versions = {h.source["metadata"]["version"] for h in result.hits}
        assert len(versions) == 1, (technique, result.ids, versions)  # one index per result
        (version,) = versions
        sent = set().union(*(vectors(r.body, set()) for r in result.sent))
        if technique != "bm25":
            assert sent == {dimension[version]}, (technique, version, sent)  # that index's model, never the other's
        if after:
            # a search that started after the move never sees the old index
            assert version == "new", (technique, result.ids)
    state = searcher.state  # one consistent value: the new index, its model, its fields and pipeline
    assert state.info.index == new_index and state.info.fingerprint == NEW.fingerprint and state.embedder() is NEW
