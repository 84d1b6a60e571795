"""Issue 10, "Found": each defect found by trying to break the adapter, reproduced without a cluster.

The same defects are proven against a real node in tests/integration/test_bad_input.py and
tests/reliability/.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pytest

from adapter.models.cache import EmbeddingCache, embed_documents, text_key
from adapter.index.catalog import IndexInfo
from adapter.engines import connect
from adapter.errors import ConfigurationError, InputError
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import FieldMap, RowError, SourceDoc, read_csv, read_jsonl
from adapter.testing import FakeClient, bulk_actions, bulk_answer
from adapter.models.fingerprint import EmbeddingFingerprint
from adapter.engines.opensearch.capabilities import opensearch_capabilities

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)
INFO = IndexInfo("docs", "docs-v1", FP)


class CountingEmbedder:
    """A unit vector per text (from its hash), counting model calls."""

    fingerprint = FP
    dimension = 4
    normalized = True

    def __init__(self):
        self.calls = 0

    def _one(self, text):
        v = np.frombuffer(hashlib.sha256(text.encode()).digest()[:4], dtype=np.uint8).astype(np.float32) + 1.0
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        self.calls += len(texts)
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, 4), np.float32)

    def embed_query(self, text):
        return self._one(text)


def no_pause(monkeypatch):
    import adapter.ingest.ingestor as ingest_module

    monkeypatch.setattr(ingest_module.time, "sleep", lambda s: None)


# -- 1. one bad id drops a whole bulk request ------------------------------------------------------
def server_error(kind, reason):
    """An error body as the server sends it."""
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}, "status": 400}


def rejects_long_ids(call):
    """Like the server: a bulk request holding an id over 512 bytes is refused as a whole (400)."""
    from opensearchpy.exceptions import RequestError

    ids = [a[next(iter(a))]["_id"] for a, _ in bulk_actions(call)]
    long = [i for i in ids if len(i.encode()) > 512]
    if long:
        raise RequestError(400, "action_request_validation_exception", server_error(
            "action_request_validation_exception", f"Validation Failed: 1: id [{long[0]}] is too long, must be no longer than 512 bytes"))
    return bulk_answer(call)


def test_an_id_over_512_utf8_bytes_is_reported_alone_and_the_rest_land(tmp_path):
    client = FakeClient({"bulk": rejects_long_ids, "indices.refresh": {}})
    rows = [SourceDoc(f"d{i}", f"text {i}", line=i + 1) for i in range(1001)]
    rows[500] = SourceDoc("é" * 257, "too long an id: 514 bytes, 257 characters", line=501)  # over in bytes, not characters
    report = Ingestor(client, INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    sent = {a["index"]["_id"] for call in client.calls_to("bulk") for a, _ in bulk_actions(call)}
    assert len(sent) == 1000 and "é" * 257 not in sent
    assert [(f.line, f.source) for f in report.failures] == [(501, "input")]
    assert "514 bytes" in report.failures[0].reason and "512" in report.failures[0].reason
    assert report.chunks == 1000


def test_a_request_rejected_as_a_whole_is_split_until_each_good_row_lands(tmp_path, monkeypatch):
    from opensearchpy.exceptions import RequestError

    no_pause(monkeypatch)

    def bulk(call):  # the server refuses any request that holds the poisoned row
        ids = [a["index"]["_id"] for a, _ in bulk_actions(call)]
        if "poison" in ids:
            raise RequestError(400, "illegal_argument_exception", server_error("illegal_argument_exception", "something about one row"))
        return bulk_answer(call)

    client = FakeClient({"bulk": bulk, "indices.refresh": {}})
    rows = [SourceDoc(f"d{i}", f"text {i}", line=i + 1) for i in range(300)]
    rows[123] = SourceDoc("poison", "looks fine here", line=124)
    report = Ingestor(client, INFO, CountingEmbedder(), progress=False, failures_path=tmp_path / "f.jsonl").ingest(rows)
    landed = {a["index"]["_id"] for call in client.calls_to("bulk") for a, _ in bulk_actions(call) if call.kwargs}
    assert [(f.id, f.line, f.status) for f in report.failures] == [("poison", 124, 400)]
    assert "something about one row" in report.failures[0].reason
    assert report.chunks == 299 and len(landed) == 300
    assert len(client.calls_to("bulk")) <= 2 * 9 + 1  # halving 300 rows down to one: a few requests per level


# -- 3. a non-UTF-8 byte loses the whole file --------------------------------------------------------
@pytest.mark.parametrize("name, content, read, line", [
    ("d.jsonl", b'{"_id":"u1","text":"ok"}\n{"_id":"u2","text":"\xe9\xff"}\n{"_id":"u3","text":"also ok"}\n', read_jsonl, 2),
    ("d.csv", b"_id,text\nu1,fine\nu2,caf\xe9\nu3,also fine\n", read_csv, 3),
], ids=["jsonl", "csv"])
def test_a_non_utf8_row_is_reported_with_its_line_and_the_good_rows_are_read(tmp_path, name, content, read, line):
    path = tmp_path / name
    path.write_bytes(content)
    rows = list(read(path, FieldMap()))
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["u1", "u3"]
    (bad,) = [r for r in rows if isinstance(r, RowError)]
    assert bad.line == line and "not UTF-8" in bad.reason and "0xe9" in bad.reason


def test_lone_surrogates_from_json_escapes_are_a_bad_row_not_a_crash_in_the_client(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id":"s1","text":"\\ud800 half a pair"}\n{"id":"s2","text":"fine"}\n')
    rows = list(read_jsonl(path, FieldMap()))
    assert [r.id for r in rows if isinstance(r, SourceDoc)] == ["s2"]
    assert "not valid Unicode" in next(r for r in rows if isinstance(r, RowError)).reason


def test_the_json_error_names_the_column_once(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "text": "unterminated')
    (row,) = list(read_jsonl(path, FieldMap()))
    assert row.reason == "invalid JSON: Unterminated string starting at column 21"


# -- 4. the embedding cache is trusted blindly -------------------------------------------------------
def test_swapped_cache_entries_are_caught_re_embedded_and_counted(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = ["alpha", "beta", "gamma!"]
    first = embed_documents(embedder, texts, cache)
    db = sqlite3.connect(tmp_path / "c.sqlite")
    keys = [text_key(t) for t in texts]
    blobs = {h: v for h, v in db.execute("SELECT h, v FROM vectors")}
    with db:  # rotate the vectors between the keys, as a bad copy or a bug would
        for h, other in zip(keys, keys[1:] + keys[:1]):
            db.execute("UPDATE vectors SET v = ? WHERE h = ?", (blobs[other], h))
    calls = embedder.calls
    again = embed_documents(embedder, texts, EmbeddingCache(tmp_path / "c.sqlite"))
    assert np.array_equal(again.vectors, first.vectors)
    assert (again.from_cache, again.embedded, again.rejected) == (0, 3, 3) and embedder.calls == calls + 3
    healed = embed_documents(embedder, texts, EmbeddingCache(tmp_path / "c.sqlite"))
    assert (healed.from_cache, healed.rejected) == (3, 0)


def test_a_truncated_cache_entry_is_re_embedded_not_a_broadcast_error(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first = embed_documents(embedder, ["alpha"], cache)
    db = sqlite3.connect(tmp_path / "c.sqlite")
    with db:
        db.execute("UPDATE vectors SET v = substr(v, 1, 7)")
    again = embed_documents(embedder, ["alpha"], EmbeddingCache(tmp_path / "c.sqlite"))
    assert np.array_equal(again.vectors, first.vectors) and again.rejected == 1


def test_a_cache_path_that_is_not_sqlite_is_named_with_what_to_do(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(ConfigurationError, match=r"c\.sqlite is not a readable SQLite database.*--no-cache"):
        EmbeddingCache(path)


def test_the_ingest_report_counts_rejected_cache_entries(tmp_path):
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    embed_documents(embedder, ["T\nx"], cache)
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        db.execute("UPDATE vectors SET v = zeroblob(16)")
    client = FakeClient({"bulk": lambda call: bulk_answer(call), "indices.refresh": {}})
    report = Ingestor(client, INFO, embedder, cache=cache, progress=False).ingest([SourceDoc("a", "x", "T")])
    assert (report.cache_hits, report.cache_rejected, report.embedded) == (0, 1, 1)


# -- 7. smaller clear-error gaps ------------------------------------------------------------------
def test_a_password_in_a_bad_url_is_not_printed():
    with pytest.raises(ConfigurationError) as err:
        connect("ftp://admin:s3cret@example.com:9200")
    assert "s3cret" not in str(err.value) and "ftp://admin:***@example.com:9200" in str(err.value)


# -- 6. the index decides which model the client loads ----------------------------------------------
def planted(spec):
    """An index whose _meta names ``spec``, as anyone with mapping rights can write it."""
    return IndexInfo("docs", "docs-v1", EmbeddingFingerprint("planted", spec, "abc", 4, True))


def test_the_searcher_refuses_a_model_the_index_names_but_nobody_allowed(monkeypatch):
    import adapter.models.embedders as embedders
    from adapter.engines.capabilities import Capabilities
    from adapter.search import Searcher

    monkeypatch.delenv("HYBRID_ALLOWED_MODELS", raising=False)
    loaded = []
    monkeypatch.setattr(embedders, "SentenceTransformerEmbedder", lambda *a, **k: loaded.append(a))
    searcher = Searcher(FakeClient(), planted("st:/tmp/evil-model"), opensearch_capabilities("2.19.1"))
    with pytest.raises(ConfigurationError, match=r"'st:/tmp/evil-model'.*not on the allow-list.*--allow-model st:/tmp/evil-model.*HYBRID_ALLOWED_MODELS"):
        searcher.search("hello", technique="dense")
    assert loaded == []


def test_allowed_models_come_from_the_built_ins_the_environment_and_the_caller(monkeypatch):
    from adapter.models.embedders import allowed_models, load_index_embedder

    monkeypatch.setenv("HYBRID_ALLOWED_MODELS", "st:org/model-a, st:/models/b")
    assert {"minilm", "multilingual-e5-small", "st:org/model-a", "st:/models/b", "st:c"} <= set(allowed_models(["st:c"]))
    with pytest.raises(ConfigurationError, match="'st:org/other', which is not on the allow-list"):
        load_index_embedder("st:org/other")
    assert load_index_embedder("all-MiniLM-L6-v2").spec == "minilm"  # another name of a built-in
    with pytest.raises(ConfigurationError, match="variant 'nope'.*original"):
        load_index_embedder("multilingual-e5-small:nope")


# -- 7. search: past the last page, a filter on a field the index lacks, a query over the clause limit --
def paged_searcher(answers):
    from adapter.engines.capabilities import Capabilities
    from adapter.search import Searcher

    from tests.unit.search.test_shell import UnitEmbedder, pipelines
    from adapter.fusion import ScoreNormalization

    client = FakeClient({"transport.perform_request": pipelines(ScoreNormalization()), **answers})
    return client, Searcher(client, INFO, opensearch_capabilities("2.19.1"), UnitEmbedder())


def test_a_hybrid_page_past_the_end_agrees_with_client_rrf_and_says_why():
    from opensearchpy.exceptions import RequestError

    reason = "Reached end of search result, increase pagination_depth value to see more results"
    past_end = RequestError(400, "search_phase_execution_exception", {"error": {
        "root_cause": [], "type": "search_phase_execution_exception", "reason": "The phase has failed",
        "caused_by": {"type": "illegal_argument_exception", "reason": reason}}, "status": 400})
    legs = {"responses": [{"hits": {"hits": [{"_id": f"d{i}", "_score": 1.0 / (i + 1)} for i in range(5)]}}] * 2}
    empty_shard = {"took": 0, "hits": {"hits": []}}  # the empty shard's check, then every hybrid past the end
    _, s = paged_searcher({"search": [empty_shard, past_end], "msearch": legs, "mget": {"docs": []}})
    hybrid = s.search("hola", k=10, from_=50, depth=20)
    client_rrf = s.search("hola", technique="client-rrf", k=10, from_=50, depth=20)
    assert hybrid.hits == () and client_rrf.hits == ()
    for result in (hybrid, client_rrf):
        (notice,) = result.notices
        assert "page starting at 50 is past the end of the fused results" in notice and "depth" in notice


def test_a_filter_on_a_field_the_index_lacks_is_named_when_nothing_matches():
    mapping = {"docs-v1": {"mappings": {"properties": {"text": {"type": "text"}, "parent_id": {"type": "keyword"},
                                                      "metadata": {"properties": {"lang": {"type": "keyword"}}}}}}}
    _, s = paged_searcher({"search": {"hits": {"hits": []}}, "indices.get_mapping": mapping})
    result = s.search("hola", technique="bm25", filters={"lnag": "es", "lang": "es"})
    (notice,) = result.notices
    assert "'lnag'" in notice and "metadata.lnag" in notice and "not in the mapping" in notice and "lang" in notice
    assert s.search("hola", technique="bm25", filters={"lang": "es"}).notices == ()


def test_a_query_over_the_servers_clause_limit_is_refused_before_sending():
    settings = {"defaults": {"indices": {"query": {"bool": {"max_clause_count": "1024"}}}}}
    client, s = paged_searcher({"cluster.get_settings": settings, "search": {"hits": {"hits": []}}})
    fits = " ".join(f"w{i}" for i in range(512))  # 512 words x 2 fields = 1024 clauses: the server takes it
    s.search(fits, technique="bm25")
    with pytest.raises(InputError, match=r"513 distinct words.*2 text fields.*1026 clauses.*max_clause_count.*1024"):
        s.search(fits + " w512", technique="bm25")
    assert len(client.calls_to("search")) == 1 and len(client.calls_to("cluster.get_settings")) == 1


# -- 7. init after the alias was deleted by hand -----------------------------------------------------
def orphaned_init_client():
    from tests.unit.search.test_shell import _init_client

    client = _init_client((0.5, 0.5))
    client.answers.update({
        "indices.exists_alias": False,
        "indices.exists": False,  # no plain index named "docs"
        "indices.get_alias": lambda call: {"docs-v1": {"aliases": {}}, "docs-v1-copy": {"aliases": {}}}
        if call.kwargs.get("index") == "docs-v*" else {},
        "indices.put_alias": {"acknowledged": True},
        "indices.create": {"acknowledged": True},  # the empty shard, not there yet either
    })
    return client


def test_init_detects_an_index_whose_alias_was_deleted_and_offers_to_reattach_it():
    from adapter.index.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.engines.opensearch import OPENSEARCH

    SPEC = IndexSpec(FP, default_fusion="min_max-arithmetic_mean")  # the index _init_client models

    for dry_run in (True, False):
        with pytest.raises(ConfigurationError, match=r"docs-v1 exists but no alias 'docs' points to it.*--reattach-alias"):
            init_index(orphaned_init_client(), "docs", SPEC, engine=OPENSEARCH, dry_run=dry_run)
    client = orphaned_init_client()
    planned = init_index(client, "docs", SPEC, engine=OPENSEARCH, dry_run=True, reattach=True)
    assert ("alias", "docs", "would create") in [(c.kind, c.name, c.action) for c in planned.changes]
    assert not [c for c in planned.changes if c.kind == "index" and "create" in c.action and c.name != "hybrid-empty-shard"]
    assert not client.calls_to("indices.put_alias")
    done = init_index(client, "docs", SPEC, engine=OPENSEARCH, reattach=True)
    assert done.index == "docs-v1" and [c.kwargs for c in client.calls_to("indices.put_alias")] == [{"index": "docs-v1", "name": "docs"}]
    assert [c.kwargs["index"] for c in client.calls_to("indices.create")] == ["hybrid-empty-shard"]  # no new docs version
