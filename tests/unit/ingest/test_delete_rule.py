"""One rule for deletes (issue 38, item 1): LlamaIndex's ``delete_nodes(filters=MetadataFilters(filters=[]))`` took
893 documents to 0 and Haystack's ``delete_by_filter({"operator": "AND", "conditions": []})`` 600 to 0; a ``hybrid
delete --filter`` matching every entry emptied the index, and one on a field not in the mapping said "deleted 0 of
0". Now a filter that is empty, selects everything by its form or matches every entry needs ``all=True``, and a
filter on an unmapped field is an error. The rule is pure (:mod:`adapter.ingest.deletion`); the shell on the
port-level fake; the frameworks and the CLI on a real node in tests/integration/test_safe_defaults.py."""

from __future__ import annotations

import pytest

from adapter.engines.dsl import Clause
from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.by_id import Documents, Selection
from adapter.ingest.deletion import selects_everything, selects_nothing
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.integrations._filters import haystack_clause
from tests.conftest import HashingEmbedder
from tests.support.fake_engine import FakeCluster

pytestmark = pytest.mark.unit
EMBEDDER = HashingEmbedder(8)
EVERYTHING = {"match_all": {}}
TERM = {"term": {"metadata.cat": "a"}}


@pytest.mark.parametrize(
    "query",
    [
        None,
        {},
        EVERYTHING,
        {"match_all": {"boost": 2}},
        {"bool": {}},
        {"bool": {"filter": []}},
        {"bool": {"filter": [EVERYTHING]}},
        {"bool": {"must": EVERYTHING}},
        {"bool": {"should": [], "minimum_should_match": 1}},  # measured on 3.6.0: counts every document
        {"bool": {"filter": [{"bool": {"filter": []}}], "must_not": [{"match_none": {}}]}},
        {"bool": {"should": [EVERYTHING, TERM], "minimum_should_match": 1}},
        {"bool": {"filter": [EVERYTHING], "should": [TERM]}},  # should is optional beside a filter
        {"bool": {"must_not": [{"bool": {"must_not": [EVERYTHING]}}]}},
        haystack_clause({"operator": "AND", "conditions": []}).body,
        haystack_clause({"operator": "NOT", "conditions": [{"operator": "OR", "conditions": []}]}).body,
    ],
    ids=repr,
)
def test_filters_that_select_everything_by_their_form_are_recognised(query):
    assert selects_everything(query)


@pytest.mark.parametrize(
    "query",
    [
        TERM,
        {"bool": {"filter": [TERM]}},
        {"bool": {"must_not": [TERM]}},
        {"bool": {"should": [TERM], "minimum_should_match": 1}},
        {"bool": {"should": [EVERYTHING, TERM], "minimum_should_match": 2}},
        {"exists": {"field": "metadata.cat"}},
        {"bool": {"filter": [EVERYTHING], "should": [TERM], "minimum_should_match": 1}},
        {"match_none": {}},
        haystack_clause({"operator": "OR", "conditions": []}).body,
    ],
    ids=repr,
)
def test_filters_that_select_less_are_not(query):
    assert not selects_everything(query)


def test_haystacks_or_of_no_conditions_selects_nothing_as_haystack_says():
    # Haystack's in-memory store: any([]) is False. The server reads a bool without clauses as match_all.
    assert selects_nothing(haystack_clause({"operator": "OR", "conditions": []}).body)


@pytest.fixture
def documents():
    cluster = FakeCluster()
    init_index(cluster, "docs", IndexSpec(EMBEDDER.fingerprint))
    rows = [SourceDoc(f"d{i}", f"texto {i}", metadata={"cat": "a", "n": i}) for i in range(6)]
    report = Ingestor.open(cluster, "docs", EMBEDDER, progress=False).ingest(rows)
    assert report.complete and report.chunks == 6
    return Documents.open(cluster, "docs")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"filters": {}},
        {"filters": {"haystack": haystack_clause({"operator": "AND", "conditions": []})}},
        {"filters": {"x": Clause(EVERYTHING)}},
        {"clause": EVERYTHING},
        {},
    ],
    ids=["empty", "haystack AND of nothing", "match_all clause", "raw match_all", "nothing at all"],
)
def test_a_delete_that_selects_everything_by_its_form_is_refused_and_deletes_nothing(documents, kwargs):
    with pytest.raises(InputError, match=r"all=True \(hybrid delete --all\)"):
        documents.delete(**kwargs)
    assert documents.count() == 6


def test_a_filter_matching_every_entry_is_refused_until_all_is_said(documents):
    with pytest.raises(
        InputError,
        match=r"matches all 6 entries of docs: deleting them would empty the index, so nothing was "
        r"deleted; to delete every entry, say so: all=True",
    ):
        documents.delete(filters={"cat": "a"})
    assert documents.count() == 6
    dry = documents.delete(filters={"cat": "a"}, dry_run=True)
    assert (dry.matched, dry.deleted, dry.whole_index) == (6, 0, True) and documents.count() == 6
    report = documents.delete(filters={"cat": "a"}, all=True)
    assert (report.matched, report.deleted) == (6, 6) and documents.count() == 0


def test_a_filter_matching_some_entries_deletes_them(documents):
    report = documents.delete(filters={"n": {"lt": 2}})
    assert (report.matched, report.deleted, report.whole_index) == (2, 2, False) and documents.count() == 4


def test_a_filter_on_a_field_the_mapping_lacks_is_an_error_even_with_all(documents):
    for everything in (False, True):
        with pytest.raises(
            InputError,
            match=r"names 'metadata.color', which the mapping of docs-v1 does not have.*"
            r"nothing was deleted \(metadata fields: cat, n\)",
        ):
            documents.delete(filters={"color": "red"}, all=everything)
    clause = haystack_clause({"field": "meta.color", "operator": "!=", "value": "red"})  # would match every entry
    with pytest.raises(InputError, match="'metadata.color'"):
        documents.delete(filters={"haystack": clause})
    assert documents.count() == 6


def test_all_alone_deletes_every_entry_and_ids_and_parents_are_not_checked(documents):
    assert documents.delete([f"d{i}" for i in range(3)]).deleted == 3
    assert documents.delete(parents=["d3", "d4", "d5"]).deleted == 3  # every entry left, named by its document
    assert documents.count() == 0 and documents.delete(all=True).deleted == 0


def test_a_selection_names_the_fields_its_filters_read():
    clause = haystack_clause(
        {
            "operator": "OR",
            "conditions": [
                {"field": "meta.a", "operator": "==", "value": 1},
                {"field": "id", "operator": "==", "value": "x"},
            ],
        }
    )
    assert Selection(filters={"cat": "a", "parent_id": "p", "h": clause}).fields() == [
        "metadata.cat",
        "parent_id",
        "metadata.a",
        "_id",
    ]
