"""benchmarks/end_to_end.py's runner: every cell answers every query once, cells interleaved per round, N threads really
issuing calls at once, a failed call counted and scored 0 (never dropped), a path failing its warm-up stopping the
run."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from benchmarks.end_to_end import Cell, figures, run_phase
from benchmarks.peers import Corpus
from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit

QIDS = [f"q{i}" for i in range(6)]


def corpus() -> Corpus:
    return Corpus(
        ids=["d0", "d1"],
        texts=["a", "b"],
        vectors=np.zeros((2, 3), dtype=np.float32),
        queries={q: f"text of {q}" for q in QIDS},
        query_vectors={q: np.zeros(3, dtype=np.float32) for q in QIDS},
        qrels={q: {"d0": 1} for q in QIDS},
    )


def test_at_concurrency_1_every_cell_answers_every_query_once_each_query_a_round_of_all_cells():
    log: list[tuple[str, str]] = []

    def answering(name: str):
        return Cell(name, "e2e", 10, lambda qid, text: log.append((qid, name)) or ["d0"])

    cells = [answering(n) for n in ("a", "b", "c")]
    run_phase(cells, corpus(), QIDS, concurrency=1, round_size=1, warmup=0, seed=1)
    for cell in cells:
        assert sorted(cell.rankings) == QIDS and len(cell.times) == len(QIDS) and not cell.errors
        assert cell.wall > 0 and len(cell.loads) == len(QIDS)
    # Round i is query i, run by all three cells before the next query starts.
    assert [qid for qid, _ in log] == [q for q in QIDS for _ in range(3)]
    orders = {tuple(name for qid, name in log if qid == q) for q in QIDS}
    assert all(sorted(o) == ["a", "b", "c"] for o in orders) and len(orders) > 1  # shuffled, not a fixed order


def test_at_concurrency_4_four_threads_are_in_calls_at_once():
    together = threading.Barrier(4, timeout=10)  # breaks (an error in every waiting call) unless 4 calls overlap

    def call(qid: str, text: str) -> list[str]:
        together.wait()
        return ["d0"]

    cell = Cell("a", "e2e", 10, call)
    run_phase([cell], corpus(), QIDS[:4] + QIDS[:4], concurrency=4, round_size=4, warmup=4, seed=1)
    assert not cell.errors and len(cell.times) == 8


@requires_extra("eval")
def test_a_failed_call_is_counted_timed_and_scores_0():
    def flaky(qid: str, text: str) -> list[str]:
        if qid == "q3":
            raise RuntimeError("Already borrowed")
        return ["d0"]

    ok, broken = Cell("ok", "e2e", 10, lambda qid, text: ["d0"]), Cell("broken", "e2e", 10, flaky)
    run_phase([ok, broken], corpus(), QIDS, concurrency=2, round_size=3, warmup=0, seed=1)
    assert broken.errors == ["RuntimeError: Already borrowed"] and len(broken.times) == len(QIDS)
    assert figures(ok, corpus(), QIDS).ndcg10 == pytest.approx(1.0)
    assert figures(broken, corpus(), QIDS).ndcg10 == pytest.approx(5 / 6)
    assert figures(broken, corpus(), QIDS).errors == 1


def test_a_path_that_fails_its_warm_up_stops_the_run_naming_it():
    def down(qid: str, text: str) -> list[str]:
        raise ConnectionError("refused")

    with pytest.raises(RuntimeError, match="Haystack e2e k=100 fails on warm-up: ConnectionError: refused"):
        run_phase([Cell("Haystack", "e2e", 100, down)], corpus(), QIDS, concurrency=1, round_size=1, warmup=1, seed=1)
