"""``hybrid search``'s run, its searcher faked: the fusion flags it refuses, in order, and what it searches with."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from adapter.cli import build_parser
from adapter.cli import search as cli_search
from adapter.cli.search import QueryTiming
from adapter.errors import InputError
from adapter.fusion.base import FusedBy
from adapter.search.results import SearchResult, Technique

pytestmark = pytest.mark.unit


def _run(monkeypatch, *argv: str) -> tuple[int, list[dict], list[tuple]]:
    calls: list[dict] = []
    printed: list[tuple] = []
    searcher = SimpleNamespace(
        policy="the-index-policy",
        search=lambda query, **kw: calls.append(kw) or SearchResult(query, Technique.HYBRID, (), FusedBy.CLIENT),
    )
    monkeypatch.setattr(cli_search, "open_searcher", lambda args, reranker, **kw: searcher)
    monkeypatch.setattr(cli_search, "embed_timed", lambda s, q: ("embedded", QueryTiming(load_s=1.0)))
    monkeypatch.setattr(cli_search, "with_match_notes", lambda s, q, result, page_from: result)
    monkeypatch.setattr(cli_search, "print_result", lambda result, **kw: printed.append((result, kw)))
    monkeypatch.setattr(cli_search, "load_model", lambda path: f"model from {path}")
    code = cli_search.run(build_parser().parse_args(["search", "--index", "docs", *argv]))
    return code, calls, printed


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["q", "--fusion", "rrf", "--policy", "p.json"], "cannot read policy file p.json"),
        (["q", "--fusion", "learned", "--weights", "0.5,0.5"], "learned fusion needs its model: give --fusion learned"),
        (["q", "--model", "m.json"], "learned fusion needs its model: give --fusion learned --model FILE"),
        (["q", "--fusion", "learned", "--model", "m.json", "--rank-constant", "20"], "learned fusion weighs the legs"),
        (["q", "--fusion", "adaptive", "--weights", "0.5,0.5"], "adaptive fusion chooses the weights itself; drop"),
    ],
)
def test_the_fusion_flags_that_do_not_go_together_are_refused(monkeypatch, argv, says):
    with pytest.raises(InputError, match=says):
        _run(monkeypatch, *argv)


def test_a_policy_file_is_for_adaptive_fusion_only(monkeypatch, tmp_path):
    from adapter.fusion.choice.policy import AdaptivePolicy

    path = tmp_path / "p.json"
    path.write_text(AdaptivePolicy().dumps(), encoding="utf-8")
    with pytest.raises(InputError, match="^--policy is for --fusion adaptive, not rrf$"):
        _run(monkeypatch, "q", "--fusion", "rrf", "--policy", str(path))


def test_what_it_searches_with(monkeypatch, capsys):
    code, calls, printed = _run(monkeypatch, "q", "--fusion", "adaptive")
    assert code == 0 and calls[0]["fusion"] == "the-index-policy" and calls[0]["query_vector"] == "embedded"
    assert calls[0]["technique"] == "hybrid" and printed[0][1]["timing"] == QueryTiming(load_s=1.0)
    _, calls, printed = _run(monkeypatch, "q", "--fusion", "learned", "--model", "m.json")
    assert calls[0]["technique"] == "client" and calls[0]["fusion"] == "model from m.json"
    _, calls, printed = _run(monkeypatch, "q", "--technique", "bm25", "--json")
    assert calls[0]["query_vector"] is None and calls[0]["options"].text_matches and not printed
    assert json.loads(capsys.readouterr().out)["query"] == "q"
