"""Issue 20, "Found": the defects whose logic is pure, reproduced without a cluster.

Each test here failed before its fix. The behaviours that are the server's (a closed index, a
flood-stage block, 413, init on a red cluster, migrations under faults) are proven against real
nodes in tests/integration/ and tests/reliability/.
"""

from __future__ import annotations

import json

import pytest

from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_jsonl, read_source


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows_of(path, fields=FieldMap()):
    rows = list(read_source(path, fields))
    return [r for r in rows if isinstance(r, SourceDoc)], {r.line: r.reason for r in rows if isinstance(r, RowError)}


# -- 8. non-scalar ids and titles became Python reprs --------------------------------------------------
def test_ids_and_titles_that_are_not_scalars_are_refused_naming_the_type(tmp_path):
    path = write(tmp_path / "d.jsonl", [
        json.dumps({"id": {"x": 1}, "text": "an object as id"}),
        json.dumps({"id": True, "text": "a boolean as id"}),
        json.dumps({"id": [1, 2], "text": "a list as id"}),
        json.dumps({"id": 7, "text": "a number as id is fine"}),
        json.dumps({"id": "t1", "title": ["not", "text"], "text": "a list as title"}),
        json.dumps({"id": "t2", "title": 12, "text": "a number as title"}),
        json.dumps({"id": "t3", "title": "fine", "text": "ok"}),
    ])
    good, bad = rows_of(path)
    assert [(d.id, d.title) for d in good] == [("7", ""), ("t3", "fine")]
    assert "id field 'id' holds an object" in bad[1] and "{'x': 1}" not in bad[1]
    assert "id field 'id' holds a boolean" in bad[2]
    assert "id field 'id' holds a list" in bad[3]
    assert "title field 'title' holds a list, not text" in bad[5]
    assert "title field 'title' holds a number, not text" in bad[6]


# -- 9. invisible text was indexed ---------------------------------------------------------------------
@pytest.mark.parametrize("text", ["\u200b\u200b\u200b", "\x00\x00", "\u00a0\u200b", "\ufeff \u2060\u200d", "\u3000\u00ad"])
def test_text_with_no_visible_character_is_empty(tmp_path, text):
    path = write(tmp_path / "d.jsonl", [json.dumps({"id": "a", "text": text}), json.dumps({"id": "b", "text": "visible\u200b"})])
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["b"]
    assert "no visible text in field 'text'" in bad[1]


def test_an_id_of_only_invisible_characters_is_no_id(tmp_path):
    path = write(tmp_path / "d.jsonl", [json.dumps({"id": "\u200b", "text": "some text"}), json.dumps({"id": "\u00a0", "text": "x"})])
    good, bad = rows_of(path)
    assert good == [] and "no value in id field 'id'" in bad[1] and "no value in id field 'id'" in bad[2]


def test_an_invisible_title_is_no_title(tmp_path):
    path = write(tmp_path / "d.jsonl", [json.dumps({"id": "a", "title": "\u200b\u200b", "text": "body"})])
    good, _ = rows_of(path)
    assert good[0].title == ""


# -- 13. a pretty-printed JSON array gave 22 "invalid JSON" lines and 0 rows ------------------------------
def test_a_json_array_file_is_read_as_rows_with_their_lines(tmp_path):
    docs = [{"id": "a", "title": "A", "text": "first"}, {"id": "b", "text": "second\nwith a newline"}, "not an object",
            {"id": "c", "text": ""}, {"id": "d", "text": "fourth"}]
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(docs, indent=2), encoding="utf-8")
    good, bad = rows_of(path)
    assert [(d.id, d.text) for d in good] == [("a", "first"), ("b", "second\nwith a newline"), ("d", "fourth")]
    text = path.read_text().splitlines()
    assert good[0].line == 2 and all(text[d.line - 1].strip() == "{" for d in good)  # the line each object starts on
    assert len(bad) == 2 and any("expected a JSON object, got str" in r for r in bad.values())
    assert any("no text" in r for r in bad.values())


def test_a_broken_json_array_is_one_clear_error_for_the_rest_of_the_file(tmp_path):
    path = tmp_path / "docs.json"
    path.write_text('[\n  {"id": "a", "text": "one"},\n  {"id": "b", "text": "two"\n  {"id": "c", "text": "three"}\n]\n', encoding="utf-8")
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["a"]
    assert len(bad) == 1 and "invalid JSON" in next(iter(bad.values())) and "the rest of the file" in next(iter(bad.values()))


def test_jsonl_named_json_still_reads_as_lines(tmp_path):
    path = write(tmp_path / "docs.json", [json.dumps({"id": "a", "text": "one"}), json.dumps({"id": "b", "text": "two"})])
    good, bad = rows_of(path)
    assert [d.id for d in good] == ["a", "b"] and bad == {}


# -- 19. missing ids printed as None ----------------------------------------------------------------------
def test_a_failure_without_an_id_is_printed_without_none():
    from adapter.cli.ingest import failure_line
    from adapter.ingest.report import ItemFailure

    assert failure_line(ItemFailure(None, "no value in id field 'id'", line=4)) == "line 4: no value in id field 'id'"
    assert failure_line(ItemFailure("d7", "refused", line=9)) == "line 9: d7: refused"
    assert failure_line(ItemFailure("d7", "refused")) == "d7: refused"


# -- the ingest side: a fake cluster, a counting model -------------------------------------------------
import hashlib  # noqa: E402
import os  # noqa: E402
import stat  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from adapter.index.catalog import IndexInfo  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.testing import FakeClient, bulk_actions, bulk_answer  # noqa: E402
from adapter.models.fingerprint import EmbeddingFingerprint  # noqa: E402

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
INFO = IndexInfo("docs", "docs-v1", FP)


class CountingEmbedder:
    fingerprint = FP
    dimension = 4
    normalized = True

    def __init__(self):
        self.longest = 0
        self.texts = 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        self.longest = max([self.longest, *map(len, texts)])
        vectors = np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:4], np.uint8).astype(np.float32) + 1 for t in texts])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def fake_cluster():
    return FakeClient({"bulk": lambda call: bulk_answer(call), "indices.refresh": {}})


# -- 2, 3. a 105 MB document reached the model; no size policy ----------------------------------------------
def test_a_document_over_the_size_limit_is_refused_before_it_reaches_the_model(tmp_path):
    from adapter.ingest.sources import DEFAULT_MAX_CHARS

    model = CountingEmbedder()
    rows = [SourceDoc("small", "fine text", line=1), SourceDoc("huge", "word " * (DEFAULT_MAX_CHARS // 5 + 1), line=2),
            SourceDoc("titled", "short body", title="t" * DEFAULT_MAX_CHARS, line=3)]
    report = Ingestor(fake_cluster(), INFO, model, progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    assert model.longest < 100 and model.texts == 1  # neither big one was embedded
    assert [(f.id, f.line, f.source) for f in report.failures] == [("huge", 2, "input"), ("titled", 3, "input")]
    reason = report.failures[0].reason
    assert f"{DEFAULT_MAX_CHARS + 5:,} characters" in reason and f"limit of {DEFAULT_MAX_CHARS:,}" in reason
    assert "--max-chars" in reason and "--chunk-size" in reason


def test_the_size_limit_is_configurable_and_can_be_lifted(tmp_path):
    model = CountingEmbedder()
    rows = [SourceDoc("a", "x" * 50, line=1), SourceDoc("b", "y" * 5000, line=2)]
    report = Ingestor(fake_cluster(), INFO, model, progress=False, max_chars=100, failures_path=tmp_path / "f.jsonl").ingest(rows)
    assert [f.id for f in report.failures] == ["b"] and "limit of 100" in report.failures[0].reason
    report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, max_chars=None).ingest(rows)
    assert report.complete


def test_a_row_over_the_limit_is_refused_by_the_reader_without_holding_it(tmp_path):
    """The reader skips a 30 MB line in pieces: it never holds the row, let alone parses it."""
    path = tmp_path / "d.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a", "text": "before"}) + "\n")
        fh.write('{"id": "big", "text": "' + "z" * (30 << 20) + '"}\n')
        fh.write(json.dumps({"id": "c", "text": "after"}) + "\n")
    tracemalloc.start()
    try:
        rows = list(read_jsonl(path, FieldMap()))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["a", "c"]
    bad = [r for r in rows if isinstance(r, RowError)]
    assert len(bad) == 1 and bad[0].line == 2 and "30.0 MiB" in bad[0].reason and "--max-chars" in bad[0].reason
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB while reading"


# -- 4. two concurrent ingests wrote the same failures file -------------------------------------------------
def test_two_ingests_in_the_same_second_write_failures_files_of_their_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import adapter.ingest.ingestor as ingest_module

    monkeypatch.setattr(ingest_module.time, "strftime", lambda *a: "20261201-120000")  # the same second for both
    first = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False).ingest([RowError(1, "bad one", "x1")])
    second = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False).ingest([RowError(1, "bad two", "x2")])
    assert first.failures_file != second.failures_file
    assert "bad one" in open(first.failures_file).read() and "bad two" in open(second.failures_file).read()


# -- 15. failures files were created 0644 ----------------------------------------------------------------------
def test_a_failures_file_is_private_to_its_user(tmp_path):
    path = tmp_path / "f.jsonl"
    report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=path).ingest([RowError(1, "bad")])
    assert report.failures_file == str(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600


# -- 7. memory grew with the number of bad rows -------------------------------------------------------------------
def test_failures_stream_to_the_file_and_memory_holds_counts(tmp_path):
    """50,000 bad rows grew the heap by 15 MiB before (a list of every failure); now by what one row takes."""
    n = 50_000
    rows = (RowError(i, f"invalid JSON: Expecting value at column {i % 80}", f"id-{i}") for i in range(1, n + 1))
    Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "warm.jsonl").ingest([])  # lazy imports
    tracemalloc.start()
    try:
        report = Ingestor(fake_cluster(), INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.failed == n and not report.complete and len(report.failures) <= 1000
    with open(tmp_path / "f.jsonl") as fh:
        assert sum(1 for _ in fh) == n
    assert peak < 4 << 20, f"peak {peak / 2**20:.1f} MiB for {n:,} bad rows"


# -- 15. the cache digest had no key; cache files were created 0644 in a 0755 folder ------------------------------
def _plant(path, fp, text, vector):
    """What anyone who can write the cache file can do: add a row whose unkeyed digest is right."""
    import sqlite3

    from adapter.models.cache import entry_digest, text_key

    blob = np.asarray(vector, dtype=np.float32).tobytes()
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO vectors (fp, h, v, dim, dtype, digest) VALUES (?, ?, ?, ?, ?, ?)",
                   (fp, text_key(text), blob, len(vector), "float32", entry_digest(fp, text_key(text), blob, len(vector))))


def test_the_embedding_cache_its_folder_and_its_key_are_private_to_their_user(tmp_path):
    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "fresh" / "embeddings.sqlite"
    embed_documents(CountingEmbedder(), ["some text"], EmbeddingCache(path))
    modes = {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in (path.parent, path, path.parent / "cache.key")}
    assert modes == {"fresh": 0o700, "embeddings.sqlite": 0o600, "cache.key": 0o600}


def test_a_vector_planted_without_the_key_is_rejected_and_embedded_again(tmp_path):
    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "c.sqlite"
    model = CountingEmbedder()
    embed_documents(model, ["honest text"], EmbeddingCache(path))
    _plant(path, FP.key, "the planted text", [1.0, 0.0, 0.0, 0.0])
    got = embed_documents(model, ["honest text", "the planted text"], EmbeddingCache(path))
    assert got.from_cache == 1 and got.rejected == 1 and model.texts == 2  # the planted one went to the model
    assert not np.allclose(got.vectors[1], [1.0, 0.0, 0.0, 0.0])


def test_a_cache_from_before_the_key_stays_usable_when_only_its_user_can_write_it(tmp_path):
    """The shared embedding cache of this round must keep its entries: those a private file held when
    the key was made are signed once (trust on first use); a row added later without the key is not trusted."""
    import sqlite3

    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the schema before the key
        db.execute("CREATE TABLE vectors (fp TEXT, h TEXT, v BLOB, dim INTEGER, dtype TEXT, digest TEXT, PRIMARY KEY (fp, h))")
    os.chmod(path, 0o600)
    model = CountingEmbedder()
    old = model.embed_documents(["kept text"])[0]
    _plant(path, FP.key, "kept text", old)
    got = embed_documents(model, ["kept text"], EmbeddingCache(path))
    assert (got.from_cache, got.rejected, model.texts) == (1, 0, 1)  # the one call was ours, above
    _plant(path, FP.key, "added later", [0.0, 1.0, 0.0, 0.0])
    later = embed_documents(model, ["kept text", "added later"], EmbeddingCache(path))
    assert (later.from_cache, later.rejected) == (1, 1)


def test_a_cache_others_could_write_is_not_trusted_on_first_use(tmp_path):
    import sqlite3

    from adapter.models.cache import EmbeddingCache, embed_documents

    path = tmp_path / "shared.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE vectors (fp TEXT, h TEXT, v BLOB, dim INTEGER, dtype TEXT, digest TEXT, PRIMARY KEY (fp, h))")
    _plant(path, FP.key, "who wrote this", [0.0, 0.0, 1.0, 0.0])
    os.chmod(path, 0o666)
    got = embed_documents(CountingEmbedder(), ["who wrote this"], EmbeddingCache(path))
    assert (got.from_cache, got.rejected) == (0, 1)


# -- 14. a document over http.max_content_length was reported as TransportError(413, '') -----------------------------
def test_a_row_refused_as_too_large_names_the_limit_and_its_size():
    from opensearchpy.exceptions import TransportError

    from adapter.engines import responses

    item = {"index": {"_id": "big", "status": 413, "error": "TransportError(413, '')", "exception": TransportError(413, ""),
                      "data": {"text": "x" * (3 << 20)}}}
    doc_id, status, reason = responses.bulk_item(item)
    assert (doc_id, status) == ("big", 413)
    assert "http.max_content_length" in reason and "3.0 MB" in reason and "TransportError" not in reason


# -- 2. search results carried whole texts (a 1,000,000-character one tripped the breaker) ------------------------------
def test_text_fields_come_back_as_bounded_excerpts_unless_the_full_text_is_asked_for():
    from adapter.search.page import Excerpts, SearchOptions, excerpt_highlight, hit_ids, merge_highlight, plan_excerpts, with_excerpts, with_texts
    from adapter.engines.responses import RawHit

    fields = ("title", "text")
    plain = plan_excerpts(SearchOptions(), fields, highlighted=False, request_highlights=True)
    assert plain == Excerpts(("title", "text"), ("title", "text"), (), 10_000)
    assert not plan_excerpts(SearchOptions(full_text=True), fields, highlighted=True, request_highlights=True)
    # A field the page highlights is highlighted once per request: its excerpt comes from a search for the page's ids.
    shown = plan_excerpts(SearchOptions(highlight=True, highlight_fields=("text",)), fields, highlighted=True, request_highlights=True)
    assert (shown.bounded, shown.in_request, shown.after) == (fields, ("title",), ("text",))
    # A request that carries no highlight (Elasticsearch's retrievers): every excerpt comes after.
    apart = plan_excerpts(SearchOptions(), fields, highlighted=False, request_highlights=False)
    assert (apart.in_request, apart.after) == ((), fields)

    clause = excerpt_highlight(("text",), SearchOptions(max_text_chars=500), offset_option="max_analyzer_offset")
    # The text's start, one character past the bound when longer (issue 32: excerpt() cuts it, with "…").
    assert clause["fields"]["text"] == {"type": "unified", "fragment_size": 501, "number_of_fragments": 1, "no_match_size": 501,
                                        "pre_tags": [""], "post_tags": [""], "highlight_query": {"match_none": {}}}
    assert clause["max_analyzer_offset"] == 5_000
    snippets = {"fields": {"title": {}}, "fragment_size": 150}
    assert set((merge_highlight(snippets, clause) or {})["fields"]) == {"title", "text"}

    chunk = RawHit("a#1", 0.5, {}, highlight={"text": ("its chunk",)})
    raw = RawHit("a", 1.0, {"title": "T", "lang": "es"}, highlight={"text": ("an excerpt",), "title": ("<em>T</em>",)},
                 inner_hits={"chunks": (chunk,)})
    filled = with_excerpts(raw, ("text",), 100)
    assert filled.source == {"title": "T", "lang": "es", "text": "an excerpt"} and filled.highlight == {"title": ("<em>T</em>",)}
    assert filled.inner_hits["chunks"][0].source == {"text": "its chunk"}
    assert hit_ids([raw, RawHit("b", 0.2)]) == ["a", "a#1", "b"]
    fetched = with_texts(raw, {"a": {"title": "T2"}, "a#1": {"title": "C"}})
    assert fetched.source["title"] == "T2" and fetched.inner_hits["chunks"][0].source == {"title": "C"}
    with pytest.raises(Exception, match="max_text_chars"):
        SearchOptions(max_text_chars=10)


def test_the_command_line_bounds_texts_unless_asked_for_the_full_text():
    from adapter.cli import build_parser
    from adapter.cli.search import search_options

    parse = build_parser().parse_args
    assert search_options(parse(["search", "q", "--index", "docs"])).full_text is False
    assert search_options(parse(["search", "q", "--index", "docs"])).max_text_chars == 10_000
    assert search_options(parse(["search", "q", "--index", "docs", "--full-text"])).full_text is True
    assert search_options(parse(["search", "q", "--index", "docs", "--max-text-chars", "500"])).max_text_chars == 500
