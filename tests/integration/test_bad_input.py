"""The bad-input corpus (issue 10): each bad input, through the CLI or the API against the real
node, ends in a clear error (exit 2), or in its own row being reported (exit 3) while the good
rows land. No traceback, nothing lost silently."""

from __future__ import annotations

import json
import sqlite3

import pytest

from adapter.admin.init import init_index
from adapter.index.assets import IndexSpec
from adapter.models.cache import EmbeddingCache
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import read_source
from adapter.engines import cluster_for
from tests.support.cli import TEST_EMBEDDER, cli, ingest_args  # noqa: F401 (cli: the fixture)

GOOD = [
    {"id": "g1", "title": "Primero", "text": "reembolso del pedido"},
    {"id": "g2", "title": "Segundo", "text": "error E-4012 en el pago"},
]


@pytest.fixture
def index(client, index_name):
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint, analyzer="spanish"))
    return index_name


def ids(client, alias):
    client.indices.refresh(index=alias)
    return {h["_id"] for h in client.search(index=alias, body={"size": 100, "_source": False})["hits"]["hits"]}


def jsonl(path, *rows):
    """Rows are dicts (written as JSON) or raw bytes (written as they are)."""
    path.write_bytes(
        b"".join((r if isinstance(r, bytes) else json.dumps(r, ensure_ascii=False).encode()) + b"\n" for r in rows)
    )
    return path


def ingest(cli, path, index, url, tmp_path, *extra):
    return cli(*ingest_args(path, index, url, "--failures", tmp_path / "failures.jsonl", *extra))


# -- rows: each bad row is reported alone (exit 3), the good rows land ------------------------------
BAD_ROWS = {
    "id over 512 UTF-8 bytes": ({"id": "ñ" * 257, "text": "id de 514 bytes"}, "514 bytes in UTF-8"),
    "non-UTF-8 bytes": (b'{"id": "u2", "text": "caf\xe9 \xff"}', "not UTF-8: byte 0xe9 at column 26"),
    "lone surrogate escape": (b'{"id": "s1", "text": "\\ud800"}', "not valid Unicode"),
    "unterminated JSON": (b'{"id": "j1", "text": "sin cerrar', "invalid JSON: Invalid control character at column 33"),
    "JSON that is not an object": (b'["a", "list"]', "expected a JSON object, got list"),
    "empty text": ({"id": "e1", "text": "   "}, "no text in field 'text'"),
    "no id": ({"text": "sin id", "id": None}, "no value in id field 'id'"),
    "duplicate id": ({"id": "g1", "text": "otra vez"}, "duplicate id 'g1'"),
    "metadata of the wrong type": ({"id": "m1", "text": "año", "year": "dos mil"}, "mapper_parsing_exception"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_bad_row_is_reported_alone_and_the_good_rows_land(cli, client, index, opensearch_url, tmp_path, case):
    row, reason = BAD_ROWS[case]
    first = {"id": "g0", "text": "primero", "year": 2020}  # fixes metadata.year as a number
    code, out, _ = ingest(
        cli, jsonl(tmp_path / "d.jsonl", first, GOOD[0], row, GOOD[1]), index, opensearch_url, tmp_path
    )
    assert code == 3 and "NOT every row landed: 1 failed (exit code 3)" in out and reason in out
    assert ids(client, index) == {"g0", "g1", "g2"}
    (failure,) = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert failure["line"] == 3 and reason in failure["reason"]


def test_an_id_of_exactly_512_bytes_lands(cli, client, index, opensearch_url, tmp_path):
    code, out, _ = ingest(
        cli,
        jsonl(tmp_path / "d.jsonl", {"id": "ñ" * 256, "text": "justo 512 bytes"}, *GOOD),
        index,
        opensearch_url,
        tmp_path,
    )
    assert code == 0 and "every row landed" in out and "ñ" * 256 in ids(client, index)


def test_a_byte_order_mark_is_not_part_of_the_first_row(cli, client, index, opensearch_url, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(json.dumps(r).encode() + b"\n" for r in GOOD))
    assert ingest(cli, path, index, opensearch_url, tmp_path)[0] == 0 and ids(client, index) == {"g1", "g2"}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"id,text\ng1,bien\nc2,uno,dos\ng2,otro\n", "1 more cells than the header has columns"),
        (b"id,text\ng1,bien\nc2,caf\xe9\ng2,otro\n", "not UTF-8: byte 0xe9"),
        (b"\xef\xbb\xbfid,text\ng1,bien\nc3,\ng2,otro\n", "no text in field 'text'"),
    ],
    ids=["too many cells", "non-UTF-8 cell", "BOM header, empty cell"],
)
def test_csv_rows(cli, client, index, opensearch_url, tmp_path, content, reason):
    path = tmp_path / "d.csv"
    path.write_bytes(content)
    code, out, _ = ingest(cli, path, index, opensearch_url, tmp_path)
    assert code == 3 and reason in out and ids(client, index) == {"g1", "g2"}


def test_folder_with_a_non_utf8_file_and_an_empty_file(cli, client, index, opensearch_url, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Nota\n\nbien", encoding="utf-8")
    (folder / "b.txt").write_bytes(b"caf\xe9")
    (folder / "c.txt").write_text("  ")
    code, out, _ = ingest(cli, folder, index, opensearch_url, tmp_path)
    assert (
        code == 3 and "b.txt: not UTF-8" in out and "c.txt: the file is empty" in out and ids(client, index) == {"a.md"}
    )


# -- arguments and settings: a clear error (exit 2) before anything is written ------------------------
@pytest.mark.parametrize(
    "extra, message",
    [
        (("--text-field", "contenido"), "names 'contenido' for text"),
        (("--chunk-size", "10", "--chunk-overlap", "10"), "chunk overlap must be >= 0 and smaller than the size"),
        (("--batch-size", "0"), "batch_size must be at least 1"),
        (("--strict",), "1 bad rows and --strict is set, so nothing was written"),
    ],
    ids=["unknown field", "overlap >= size", "batch size 0", "strict"],
)
def test_bad_ingest_options_are_clear_errors_and_write_nothing(
    cli, client, index, opensearch_url, tmp_path, extra, message
):
    src = jsonl(tmp_path / "d.jsonl", *GOOD, b"{broken")
    code, _, err = ingest(cli, src, index, opensearch_url, tmp_path, *extra)
    assert code == 2 and err.startswith("error: ") and message in err and "Traceback" not in err
    assert ids(client, index) == set()


def test_missing_path_unknown_format_and_missing_index(cli, index, opensearch_url, tmp_path):
    assert "does not exist" in ingest(cli, tmp_path / "nope.jsonl", index, opensearch_url, tmp_path)[2]
    (tmp_path / "d.xml").write_text("<a/>")
    assert "cannot tell the format" in ingest(cli, tmp_path / "d.xml", index, opensearch_url, tmp_path)[2]
    code, _, err = ingest(cli, jsonl(tmp_path / "d.jsonl", *GOOD), "t-no-such-index", opensearch_url, tmp_path)
    assert code == 2 and "no hybrid index 't-no-such-index'" in err


def test_a_cache_file_that_is_not_sqlite_is_named(cli, index, opensearch_url, tmp_path):
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"not a database " * 200)
    code, _, err = cli(
        "ingest",
        jsonl(tmp_path / "d.jsonl", *GOOD),
        "--index",
        index,
        "--url",
        opensearch_url,
        "--embedder",
        "test:hashing",
        "--quiet",
        "--cache",
        cache,
    )
    assert code == 2 and f"the embedding cache {cache} is not a readable SQLite database" in err and "--no-cache" in err


def test_swapped_cache_entries_are_re_embedded_and_the_index_holds_the_right_vectors(client, index, tmp_path):
    cache_path = tmp_path / "cache.sqlite"
    src = jsonl(tmp_path / "d.jsonl", *GOOD)
    Ingestor.open(client, index, TEST_EMBEDDER, cache=EmbeddingCache(cache_path), progress=False).ingest(
        read_source(src)
    )
    with sqlite3.connect(cache_path) as db:
        (h1, v1), (h2, v2) = db.execute("SELECT h, v FROM vectors").fetchall()
        db.execute("UPDATE vectors SET v = ? WHERE h = ?", (v2, h1))
        db.execute("UPDATE vectors SET v = ? WHERE h = ?", (v1, h2))
    report = Ingestor.open(client, index, TEST_EMBEDDER, cache=EmbeddingCache(cache_path), progress=False).ingest(
        read_source(src)
    )
    assert (report.cache_rejected, report.cache_hits, report.failures) == (2, 0, ())
    stored = client.get(index=index, id="g1")["_source"]["embedding"]
    # float32 precision: OpenSearch 3.x rebuilds a knn_vector's _source from the index (derived source).
    assert stored == pytest.approx(
        [float(x) for x in TEST_EMBEDDER.embed_documents(["Primero\nreembolso del pedido"])[0]], rel=1e-6
    )


# -- search ----------------------------------------------------------------------------------------
@pytest.fixture
def filled(cli, index, opensearch_url, tmp_path):
    rows = [{"id": f"d{i}", "text": f"reembolso pedido número {i}", "lang": "es"} for i in range(30)]
    assert ingest(cli, jsonl(tmp_path / "d.jsonl", *rows), index, opensearch_url, tmp_path)[0] == 0
    return index


def search(cli, index, url, *args):
    return cli("search", *args, "--index", index, "--url", url, "--embedder", "test:hashing")


@pytest.mark.parametrize(
    "args, message",
    [
        (("  ",), "the query is empty"),
        (("x", "-k", "0"), "k must be a positive integer"),
        (("x", "-t", "fuzzy"), "technique"),
        (("x", "--filter", "lang"), "filters look like field=value"),
        (("x", "--weights", "nan,nan"), "weights must be finite numbers"),
        (
            ("x", "--rank-constant", "0", "--fusion", "rrf"),
            "rank_constant must be an integer between 1 and 10000, got 0",
        ),
        ((" ".join(f"w{i}" for i in range(600)),), "max_clause_count = 1024"),
        (("x", "--from", "9995"), "exceeds the cluster's limit"),
    ],
    ids=["empty", "k=0", "technique", "filter syntax", "nan weights", "rank constant 0", "clause limit", "window"],
)
def test_bad_searches_are_clear_errors(cli, filled, opensearch_url, args, message):
    code, _, err = search(cli, filled, opensearch_url, *args)
    assert code == 2 and err.startswith("error: ") and message in err and "Traceback" not in err


def test_a_page_past_the_end_agrees_between_hybrid_and_client_rrf(cli, filled, opensearch_url):
    for technique in ("hybrid", "client-rrf"):
        code, out, _ = search(
            cli, filled, opensearch_url, "reembolso", "-t", technique, "--from", "100", "--depth", "20", "--json"
        )
        data = json.loads(out)
        assert code == 0 and data["hits"] == [] and "past the end of the fused results" in data["notices"][-1]


def test_a_filter_on_a_field_the_index_lacks_says_so(cli, filled, opensearch_url):
    code, out, _ = search(cli, filled, opensearch_url, "reembolso", "--filter", "lnag=es")
    assert (
        code == 0
        and "0 hits" in out
        and "filter field 'lnag' (metadata.lnag) is not in the mapping" in out
        and "lang" in out
    )


def test_the_index_cannot_choose_the_model_the_client_loads(cli, filled, opensearch_url):
    # no --embedder: the index names test:hashing
    code, _, err = cli("search", "reembolso", "--index", filled, "--url", opensearch_url)
    assert code == 2 and "names the embedding model 'test:hashing', which is not on the allow-list" in err
    code, out, _ = cli(
        "search", "reembolso", "--index", filled, "--url", opensearch_url, "--allow-model", "test:hashing", "-k", "1"
    )
    assert code == 0 and "1 hits" in out


def test_a_password_in_a_bad_url_is_not_printed(cli):
    code, _, err = cli("search", "x", "--index", "i", "--url", "ftp://admin:s3cret@localhost:9200")
    assert code == 2 and "s3cret" not in err and "admin:***@" in err


# -- init and eval ---------------------------------------------------------------------------------
def test_init_after_the_alias_was_deleted_offers_and_does_the_reattach(cli, client, index, opensearch_url):
    client.indices.delete_alias(index=f"{index}-v1", name=index)
    args = ("init", "--index", index, "--url", opensearch_url, "--embedder", "test:hashing", "--analyzer", "spanish")
    code, _, err = cli(*args, "--dry-run")
    assert (
        code == 2
        and f"index {index}-v1 exists but no alias '{index}' points to it" in err
        and "--reattach-alias" in err
    )
    code, out, _ = cli(*args, "--reattach-alias")
    assert code == 0 and "created  alias" in out and client.indices.exists_alias(name=index)
    assert "(a hybrid query sent without one is fused by it)" in cli(*args)[1] and "nothing to change" in cli(*args)[1]


def test_eval_skips_empty_corpus_documents_with_a_notice_and_leaves_no_file_behind(
    client, index_name, tmp_path, monkeypatch
):
    from adapter.evaluation import run_eval
    from adapter.evaluation.metrics import load_beir

    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"c{i}", "title": "", "text": f"reembolso pedido {i}"} for i in range(6)] + [
        {"_id": "empty1", "title": "", "text": ""},
        {"_id": "empty2", "title": "", "text": " "},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "reembolso 3"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tc3\t1\n")
    monkeypatch.chdir(tmp_path)
    report = run_eval(
        cluster_for(client),
        load_beir(root, "test"),
        TEST_EMBEDDER,
        alias=index_name,
        analyzer="spanish",
        techniques=["bm25"],
        progress=False,
    )
    assert report.settings["skipped_empty_documents"] == ["empty1", "empty2"]
    assert list(tmp_path.glob("*failures*")) == []
