"""UBI records: built, validated against adapter/schemas/ubi-*.schema.json, read back; and the report's join."""

import pytest

from adapter.errors import InputError
from adapter.traffic import ubi
from adapter.traffic.interleave import Interleaving, Outcome, Team
from adapter.traffic.report import experiments, impressions_and_clicks, join

pytestmark = pytest.mark.unit
T = "2026-01-02T03:04:05.678Z"


def record(query_id, hits, teams=None, text="Error E-4012", store_text=True):
    hybrid = {"index": "docs", "fusion": "rrf"}
    if teams:
        hybrid["interleaving"] = ubi.interleaving_attributes(
            "rrf", "min_max-arithmetic_mean@0.3,0.7", Interleaving(tuple(hits), tuple(Team(t) for t in teams))
        )
    return ubi.query_record(
        query_id=query_id,
        client_id="browser-1",
        user_query=text,
        hit_ids=hits,
        timestamp=T,
        hybrid=hybrid,
        store_text=store_text,
    )


def click(query_id, doc, position):
    return ubi.click_event(query_id=query_id, client_id="browser-1", object_id=doc, position=position, timestamp=T)


def test_what_the_adapter_writes_is_valid_ubi():
    ubi.validate("query", record("q-1", ["a", "b"], ["baseline", "candidate"]))
    ubi.validate("query", record("q-2", ["a"], store_text=False))
    ubi.validate("event", click("q-1", "a", 0))


def test_a_spec_1_0_event_validates_and_is_stored_with_an_integer_ordinal():
    spec_event = {
        "action_name": "click",
        "timestamp": T,
        "query_id": "q-1",
        "client_id": "c",
        "event_attributes": {
            "object": {"object_id": 123, "object_id_field": "sku"},
            "position": {"ordinal": {"index": 4}},
        },
    }
    ubi.validate("event", spec_event)
    stored = ubi.stored_event(spec_event)
    assert stored["event_attributes"]["position"] == {"ordinal": 4} and spec_event["event_attributes"]["position"][
        "ordinal"
    ] == {"index": 4}
    event = ubi.parse_event(stored)
    assert (event.action, event.query_id, event.object_id, event.position) == ("click", "q-1", "123", 4)


def test_a_click_tagged_with_its_team_is_still_valid_ubi_and_keeps_its_own_attributes():
    event = click("q-1", "a", 2)
    event["event_attributes"]["hybrid"] = {"page": "compare"}  # a client's own attribute under the same key stays
    tagged = ubi.with_team(event, "candidate")
    ubi.validate("event", tagged)
    assert tagged["event_attributes"]["hybrid"] == {"page": "compare", "team": "candidate"}
    assert "team" not in event["event_attributes"]["hybrid"]  # the event given is not changed
    assert ubi.parse_event(tagged) == ubi.parse_event(event)


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"timestamp": T}, "action_name"),
        ({"action_name": "click", "timestamp": T, "event_attributes": {"object": {"object_id": "a"}}}, "position"),
        ({"action_name": "click", "timestamp": T, "event_attributes": {"position": {"ordinal": -1}}}, "ordinal"),
        ({"action_name": "x" * 101, "timestamp": T}, "action_name"),
        ({"action_name": "click", "timestamp": T, "query_id": ""}, "query_id"),
    ],
)
def test_bad_events_are_refused_naming_the_place(bad, where):
    with pytest.raises(InputError, match=where):
        ubi.validate("event", bad)


def test_ids_longer_than_the_spec_allows_are_refused_when_building():
    with pytest.raises(InputError, match="query_id"):
        record("q" * 101, ["a"])
    with pytest.raises(InputError, match="ordinal"):
        ubi.parse_event({"action_name": "click", "event_attributes": {"position": {"ordinal": "3"}}})


def test_no_query_text_keeps_a_key_that_groups_the_searches():
    a, b = (
        record("q-1", ["a"], text="Error  E-4012", store_text=False),
        record("q-2", ["a"], text="error e-4012 ", store_text=False),
    )
    assert a["user_query"] == "" and "4012" not in str(a)
    assert ubi.parse_query(a).key == ubi.parse_query(b).key == ubi.query_key("error e-4012")
    assert ubi.parse_query(record("q-3", ["a"], text=" Error E-4012")).key == "error e-4012"


def test_the_report_joins_clicks_to_pages_and_credits_teams():
    queries = {
        r.query_id: r
        for r in map(
            ubi.parse_query,
            [
                record("q-1", ["a", "b", "c"], ["baseline", "candidate", "candidate"]),
                record("q-2", ["a", "b"], ["candidate", "baseline"]),
                record("q-3", ["a", "b"], ["baseline", "candidate"]),
                record("q-4", ["a", "b"]),  # not interleaved: no outcome
            ],
        )
    }
    events = [
        ubi.parse_event(e)
        for e in (
            click("q-1", "b", 1),
            click("q-1", "c", 2),
            click("q-1", "c", 2),  # candidate 2 (c twice counts once): win
            click("q-2", "b", 0),  # the ordinal contradicts the page (b is at 1): the page decides; baseline 1: loss
            click("q-9", "a", 0),  # no such search: an orphan
            click("q-4", "zz", 0),  # not on its page: an orphan
        )
    ] + [ubi.parse_event({**click("q-3", "a", 0), "action_name": "impression"})]  # not a click
    joined = join(queries, events)
    assert joined.orphans == 2 and joined.clicks["q-1"] == {"b", "c"} and joined.positions["q-2"] == (("b", 1),)
    (experiment,) = experiments(queries, joined)
    assert (experiment.baseline, experiment.candidate) == ("rrf", "min_max-arithmetic_mean@0.3,0.7")
    assert (experiment.tally.wins, experiment.tally.losses, experiment.tally.ties) == (1, 1, 1)
    shown, clicked = impressions_and_clicks(queries, joined)
    assert len(shown) == 3 + 2 + 2 + 2 and {c.position for c in clicked} == {1, 2}
    assert len(impressions_and_clicks(queries, joined, depth=2)[1]) == 2  # the click at position 2 is past the depth
    assert Outcome.WIN.value == "win"


def test_a_malformed_interleaving_record_is_named():
    bad = record("q-1", ["a", "b"], ["baseline", "candidate"])
    bad["query_attributes"]["hybrid"]["interleaving"]["teams"] = ["baseline"]
    with pytest.raises(InputError, match="q-1"):
        ubi.parse_query(bad).interleaving


def test_the_mappings_hold_the_fields_the_reports_read():
    events = ubi.events_mapping()["properties"]
    assert events["event_attributes"]["properties"]["position"]["properties"]["ordinal"]["type"] == "integer"
    assert events["query_id"]["type"] == events["client_id"]["type"] == "keyword"
    assert ubi.queries_mapping()["properties"]["query_response_hit_ids"]["type"] == "keyword"
