"""The parallel-legs fast path: what a kept check earns (pure), and a searcher taking it where the
check applies and nowhere else (the client double: the requests each path sends)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adapter.index.catalog import IndexInfo
from adapter.search.fast_path import FASTER_THAN, MIN_QUERIES, FastPath, FastPathCheck, same_order
from adapter.fusion import ScoreNormalization, same_ranking_up_to_ties
from adapter.search import Searcher
from adapter.testing import FakeClient
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique
from tests.support.pages import page_answer
from tests.support.embedders import FP, UnitEmbedder
from tests.unit.search.test_shell import CAPS_2, hits, pipelines

CHECK = FastPathCheck(
    "min_max-arithmetic_mean", 100, 10, 200, 200, 40.0, 30.0, CAPS_2.version, "2026-12-02T18:00:00Z", 200, 1
)


def test_a_check_earns_the_fast_path_only_when_every_page_agreed_and_it_was_faster():
    assert CHECK.taken and CHECK.why_not() is None and CHECK.ratio == pytest.approx(0.75)
    one_differs = replace(CHECK, same_pages=199)
    assert not one_differs.taken and one_differs.why_not() == "the pages differed for 1 of 200 queries"
    tie = replace(CHECK, fast_p50_ms=40.0 * FASTER_THAN + 0.1)
    assert not tie.taken and "not faster" in (tie.why_not() or "")
    reordered = replace(CHECK, same_lists=190)  # the first pages agreed up to ties, later ones would not
    assert not reordered.taken and "another order for 10 of 200 queries" in (reordered.why_not() or "")
    few = replace(CHECK, queries=MIN_QUERIES - 1, same_pages=MIN_QUERIES - 1, same_lists=MIN_QUERIES - 1)
    assert not few.taken and f"{MIN_QUERIES} needed" in (few.why_not() or "")


def test_a_check_applies_to_its_fusion_family_depth_version_and_shards_only():
    assert CHECK.applies("min_max-arithmetic_mean", 100, CAPS_2.version, 1)
    assert not CHECK.applies("rrf", 100, CAPS_2.version, 1)
    assert not CHECK.applies("min_max-arithmetic_mean", 20, CAPS_2.version, 1)
    assert not CHECK.applies("min_max-arithmetic_mean", 100, "3.6.0", 1)  # the node was upgraded: check again
    assert not CHECK.applies("min_max-arithmetic_mean", 100, CAPS_2.version, 3)  # each shard fuses its own candidates
    assert not replace(CHECK, same_pages=1).applies("min_max-arithmetic_mean", 100, CAPS_2.version, 1)


def test_the_kept_check_reads_back_and_an_unreadable_one_is_none():
    assert FastPathCheck.from_meta(CHECK.to_meta()) == CHECK
    assert FastPathCheck.from_meta(None) is None
    assert FastPathCheck.from_meta({"fusion": "rrf"}) is None  # incomplete: not taken
    assert FastPathCheck.from_meta({**CHECK.to_meta(), "depth": "many"}) is None
    first_page_only = {k: v for k, v in CHECK.to_meta().items() if k not in ("same_lists", "shards")}
    assert FastPathCheck.from_meta(first_page_only) is None  # kept before every offset was checked: not taken


def test_same_order_is_order_at_every_offset_not_up_to_ties():
    a, b = [("x", 2.0), ("y", 1.0), ("z", 1.0)], [("x", 2.0), ("z", 1.0), ("y", 1.0)]
    assert same_ranking_up_to_ties(a, b) and not same_order(a, b)  # from=1, k=1 gives y against z
    assert same_order(a, list(a)) and not same_order(a, a[:2]) and not same_order(a, [("x", 2.5), *a[1:]])


def _searcher(client, check: FastPathCheck | None = CHECK) -> Searcher:
    info = IndexInfo("docs", "docs-v1", FP, fast_path=check.to_meta() if check else None)
    return Searcher(client, info, CAPS_2, UnitEmbedder())


def _client() -> FakeClient:
    legs = {"responses": [hits(("a", 2.0), ("b", 1.0)), hits(("b", 0.9), ("a", 0.5))]}
    return FakeClient(
        {
            "* /_search/pipeline/*": pipelines(ScoreNormalization()),
            "POST */_msearch": legs,
            "POST */_search": lambda call: (
                page_answer({"a": {"text": "uno"}, "b": {"text": "dos"}})
                if "ids" in str(call.body.get("query"))
                else hits(("a", 0.9), ("b", 0.4))
            ),
        }
    )


def test_a_hybrid_takes_the_fast_path_where_the_kept_check_applies_and_says_so():
    client = _client()
    result = _searcher(client).search("hola", k=2)
    assert result.technique is Technique.CLIENT and result.fused_by is FusedBy.CLIENT
    assert (
        result.fusion is not None
        and result.fusion.name == "min_max-arithmetic_mean"
        and result.ids == ["a", "b"]
        and [h.text for h in result.hits] == ["uno", "dos"]
    )
    assert any(n.startswith("fast path: both legs in one _msearch") and "200/200 queries" in n for n in result.notices)
    assert len(client.calls_to("POST */_msearch")) == 1 and all(
        "hybrid" not in str(c.body) for c in client.calls_to("POST */_search")
    )


@pytest.mark.parametrize(
    "why, kwargs, check",
    [
        ("asked off", {"fast_path": FastPath.OFF}, CHECK),
        ("another depth", {"depth": 50}, CHECK),
        ("an explanation", {"explain": True}, CHECK),
        ("another fusion family", {"fusion": ScoreNormalization("l2")}, CHECK),
        ("no check kept", {}, None),
        ("a check that did not earn it", {}, replace(CHECK, same_pages=150)),
        ("a check of another shard layout", {}, replace(CHECK, shards=3)),
    ],
)
def test_a_hybrid_is_fused_on_the_server_where_the_check_does_not_apply(why, kwargs, check):
    client = _client()
    result = _searcher(client, check).search("hola", k=2, **kwargs)
    assert result.technique is Technique.HYBRID and result.fused_by.server, why
    assert not any(n.startswith("fast path") for n in result.notices)
    # an explanation asks the legs for their raw scores
    assert why == "an explanation" or not client.calls_to("POST */_msearch")


def test_fast_path_on_takes_it_without_a_check():
    client = _client()
    result = _searcher(client, None).search("hola", k=2, fast_path=FastPath.ON)
    assert result.fused_by is FusedBy.CLIENT and result.ids == ["a", "b"]
    assert any(n.startswith("fast path (asked for)") for n in result.notices)


@pytest.mark.parametrize(
    "options, message",
    [({"depth": 0}, "depth must be at least 1, got 0"), ({"max_queries": 0}, "max_queries must be at least 1, got 0")],
)
def test_the_check_refuses_a_bad_depth_or_sample_size_before_any_request(options, message):
    from adapter.errors import InputError
    from adapter.search.fast_path import check_fast_path

    client = _client()
    with pytest.raises(InputError, match=message):
        check_fast_path(_searcher(client, None), ["hola"] * 30, **options)
    assert client.calls == []
