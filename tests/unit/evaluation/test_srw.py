"""Query sets and judgments in the Search Relevance Workbench's formats, both ways, and the command."""

import json

import pytest

from adapter.cli import main
from adapter.errors import InputError
from adapter.evaluation import srw
from adapter.evaluation.metrics import load_beir, load_qrels

pytestmark = pytest.mark.unit

QUERIES = {
    "1": "0-dimensional biomaterials show inductive properties.",
    "13": "5% of perinatal mortality is due to low birth weight.",
    "36": "A deficiency of vitamin B12 increases blood levels of homocysteine.",
}
QRELS = {"1": {"31715818": 1}, "13": {"1606628": 1, "88": 2}, "36": {"5152028": 1}}


def test_the_bodies_are_the_documented_ones():
    body = srw.query_set(QUERIES, name="scifact test", description="three queries")
    assert body == {
        "name": "scifact test",
        "description": "three queries",
        "sampling": "manual",
        "querySetQueries": [{"queryText": t} for t in QUERIES.values()],
    }
    assert (
        srw.query_set_ndjson(body).splitlines()[0]
        == '{"queryText": "0-dimensional biomaterials show inductive properties."}'
    )
    judgments = srw.judgment_list(QUERIES, QRELS, name="scifact test")
    assert judgments["type"] == "IMPORT_JUDGMENT"
    assert judgments["judgmentRatings"][1] == {
        "query": QUERIES["13"],
        "ratings": [{"docId": "1606628", "rating": "1.000"}, {"docId": "88", "rating": "2.000"}],
    }


def test_round_trip_keeps_every_query_and_judgment():
    body = srw.query_set(QUERIES, name="x", with_ids=True)
    judgments = json.loads(json.dumps(srw.judgment_list(QUERIES, QRELS, name="x")))
    back = srw.parse_judgments(judgments, srw.parse_query_set(json.loads(json.dumps(body))))
    assert back.queries == QUERIES and back.qrels == QRELS
    # Without ids (the plain 3.1 format) the texts and grades survive; the ids are q1, q2, ... in order.
    plain = srw.parse_judgments(
        judgments,
        srw.parse_query_set(
            srw.read_document(srw.query_set_ndjson(srw.query_set(QUERIES, name="x")), what="query set")
        ),
    )
    assert list(plain.queries) == ["q1", "q2", "q3"] and {plain.queries[q]: d for q, d in plain.qrels.items()} == {
        QUERIES[q]: d for q, d in QRELS.items()
    }


def test_what_get_answers_is_read_too():
    stored = {
        "id": "b54f",
        "name": "Imported Judgments",
        "status": "COMPLETED",
        "type": "IMPORT_JUDGMENT",
        "judgmentRatings": [{"query": "red dress", "ratings": [{"rating": "3.000", "docId": "B077ZJXCTS"}]}],
    }
    answer = {
        "took": 36,
        "hits": {
            "total": {"value": 1},
            "hits": [{"_index": "search-relevance-judgment", "_id": "b54f", "_source": stored}],
        },
    }
    assert srw.parse_judgments(answer).qrels == {"q1": {"B077ZJXCTS": 3}}
    sets = {
        "hits": {
            "hits": [{"_source": {"name": "TVs", "querySetQueries": [{"queryText": "tv"}, {"queryText": "led tv"}]}}]
        }
    }
    assert srw.parse_query_set(sets) == {"q1": "tv", "q2": "led tv"}
    two = {"hits": {"hits": [{"_source": {"name": n, "querySetQueries": []}} for n in ("a", "b")]}}
    with pytest.raises(InputError, match="GET one by its id"):
        srw.parse_query_set(two)


def test_what_the_workbench_refuses_is_named_before_anything_is_written():
    with pytest.raises(InputError, match=r"1 queries would be refused.*\"artificial"):
        srw.exportable({"1": 'Mouse models can be generated using "artificial spermatids."', "2": "fine"})
    kept, refused = srw.exportable({"1": 'uses "quotes"', "2": "fine"}, drop_refused=True)
    assert kept == {"2": "fine"} and "quotes" in refused["1"]
    with pytest.raises(InputError, match="several queries"):
        srw.exportable({"1": "same", "2": "same"})
    with pytest.raises(InputError, match="longer than 50"):
        srw.query_set({"1": "a"}, name="n" * 51)


def test_fractional_ratings_need_rounding_asked_for():
    body = {"judgmentRatings": [{"query": "tv", "ratings": [{"docId": "d1", "rating": 1.37}]}]}
    with pytest.raises(InputError, match="--round"):
        srw.parse_judgments(body)
    assert srw.parse_judgments(body, round_fractions=True).qrels == {"q1": {"d1": 1}}
    with pytest.raises(InputError, match="not a number"):
        srw.parse_judgments({"judgmentRatings": [{"query": "tv", "ratings": [{"docId": "d1", "rating": "high"}]}]})
    with pytest.raises(InputError, match="not a Search Relevance Workbench judgment list"):
        srw.parse_judgments({"querySetQueries": []})


def test_the_commands_round_trip_a_beir_folder(tmp_path, capsys):
    src = tmp_path / "set"
    (src / "qrels").mkdir(parents=True)
    (src / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (src / "corpus.jsonl").write_text("")
    (src / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, ds in QRELS.items() for d, g in ds.items())
    )
    srw, folder = tmp_path / "srw", tmp_path / "back"
    assert main(["judgments", "export", "--dataset", str(src), "--out", str(srw), "--with-ids"]) == 0
    assert "3 queries and 4 judgments written" in capsys.readouterr().out

    def import_back(*options):
        return main(["judgments", "import", "--judgments", str(srw / "judgments.json"), *options, "--out", str(folder)])

    assert import_back("--query-set", str(srw / "query-set.ndjson")) == 0
    (folder / "corpus.jsonl").write_text("")
    back = load_beir(folder, "test")
    assert back.queries == QUERIES and back.qrels == load_qrels(src / "qrels" / "test.tsv") == QRELS
    # Nothing is overwritten without --force.
    assert import_back() == 2
    assert "already exist; nothing was written" in capsys.readouterr().err
