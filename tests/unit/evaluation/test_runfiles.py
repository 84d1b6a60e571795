"""TREC run files and qrels: any tool that sorts by score reads the ranking the eval scored."""

import numpy as np
import pytest

from adapter.errors import InputError
from adapter.evaluation.runfiles import decreasing, read_qrels, read_run, run_tag, write_qrels, write_run
from adapter.evaluation.metrics import MEASURES, per_query
from tests.support.extras import requires_extra

pytestmark = pytest.mark.unit

QRELS = {"q1": {"d3": 1, "d2": 2}, "q2": {"b": 1, "z": 1}, "q3": {"x": 1}}
# Ties (q1), the unpicked tail of an MMR list that restarts at higher first-stage scores (q2), ids
# that sort against the ranking (trec_eval breaks ties by id, which would reorder q1 and q2).
RANKINGS = {
    "q1": [("d1", 5.0), ("d2", 5.0), ("d3", 5.0), ("d4", 1.5)],
    "q2": [("a", 0.30), ("z", 0.29), ("b", 0.91), ("c", 0.88)],
    "q3": [],
}


def test_scores_are_lowered_only_where_they_do_not_strictly_decrease():
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    below = lambda v: float(np.nextafter(np.float32(v), np.float32(-np.inf)))  # noqa: E731
    assert decreasing([3.0, 2.0, 1.0]) == [3.0, 2.0, 1.0]
    tied = decreasing([5.0, 5.0, 5.0])
    assert tied == [5.0, below(5.0), below(below(5.0))]
    assert decreasing([0.3, 0.29, 0.91]) == [f32(0.3), f32(0.29), below(0.29)]
    # Distinct as doubles, one float32 (trec_eval's score type): still strictly decreasing.
    assert len(set(decreasing([1.0, 1.0 - 1e-12, 1.0 - 2e-12]))) == 3


@requires_extra("eval")
def test_ir_measures_reading_the_files_gets_the_evals_numbers(tmp_path):
    import ir_measures

    write_run(tmp_path / "t.run", RANKINGS, "hybrid-rrf")
    write_qrels(tmp_path / "qrels.txt", QRELS)
    run = list(ir_measures.read_trec_run(str(tmp_path / "t.run")))
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")))
    for name, measure in MEASURES.items():
        ours = per_query(QRELS, {q: [d for d, _ in r] for q, r in RANKINGS.items()}, name)
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(measure)], qrels, run)}
        assert theirs == pytest.approx(ours, abs=1e-12), name  # q3: nothing returned, 0 for both
    # Read back as written (not re-sorted by id on the tied scores), q1's first relevant document is at rank 2.
    assert per_query(QRELS, {"q1": ["d1", "d2", "d3", "d4"]}, "mrr@10")["q1"] == 0.5


def test_a_run_file_reads_back_in_the_order_it_was_written(tmp_path):
    write_run(tmp_path / "t.run", RANKINGS, "x")
    back = read_run(tmp_path / "t.run")
    assert {q: [d for d, _ in r] for q, r in back.items()} == {q: [d for d, _ in r] for q, r in RANKINGS.items() if r}
    assert back["q1"][0] == ("d1", 5.0) and back["q2"][:2] == [
        ("a", float(np.float32(0.30))),
        ("z", float(np.float32(0.29))),
    ]
    lines = (tmp_path / "t.run").read_text().splitlines()
    assert lines[0].split() == ["q1", "Q0", "d1", "1", "5.0", "x"]


@requires_extra("eval")
def test_qrels_round_trip_and_bad_files_are_named(tmp_path):
    write_qrels(tmp_path / "q.txt", QRELS)
    assert read_qrels(tmp_path / "q.txt") == QRELS
    (tmp_path / "bad.run").write_text("q1 Q0 d1\n")
    with pytest.raises(InputError, match="bad.run"):
        read_run(tmp_path / "bad.run")


def test_ids_a_run_file_cannot_hold_are_refused_and_tags_are_one_token(tmp_path):
    with pytest.raises(InputError, match="whitespace"):
        write_run(tmp_path / "t.run", {"q1": [("a doc", 1.0)]}, "x")
    assert run_tag("hybrid-rrf+mmr") == "hybrid-rrf+mmr" and run_tag("a b/c") == "a_b_c"
