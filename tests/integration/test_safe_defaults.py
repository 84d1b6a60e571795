"""Safe by default (issue 38): nothing deleted, refused or held that the user did not ask for. On a real node,
through the CLI and each framework (LangChain, Haystack, LlamaIndex):

1. one rule for deletes: a filter that is empty, selects everything by its form or matches every entry needs
   ``all=True`` / ``--all``; a filter on a field the mapping lacks is an error (LlamaIndex's
   ``delete_nodes(filters=MetadataFilters(filters=[]))`` took 893 documents to 0, Haystack's AND of nothing 600);
2. a new metadata key whose first value is ``None``, ``[]`` or ``{}`` lands and reads back exactly on every write path;
3. the framework components write no ``ingest-failures-*.jsonl`` (nine in one small app's folder before);
5. a partitioned round is tied to its input: another file's partition is refused, naming both.

The test embedder (hashing) stands in for a model: the subject is the rule, the mapping and the files."""

from __future__ import annotations

import json

import pytest

from adapter.errors import InputError
from adapter.index.assets import IndexSpec
from adapter.admin.init import init_index
from adapter.ingest.by_id import Documents
from adapter.ingest.ingestor import Ingestor
from adapter.ingest.sources import SourceDoc
from adapter.search.searcher import Searcher
from tests.support.cli import TEST_EMBEDDER, cli  # noqa: F401  (the fixture)

pytestmark = pytest.mark.engine("opensearch", "elasticsearch")
EMPTY_FIRST = [{"author": None, "tags": [], "extra": {}}, {"author": "Ana", "tags": ["x"], "extra": {"k": 1}}]


@pytest.fixture(autouse=True)
def _allow_the_test_model(monkeypatch):
    monkeypatch.setenv("HYBRID_ALLOWED_MODELS", "test:hashing")


@pytest.fixture
def filled(client, index_name):
    """An index of 6 entries, all with cat=a, n=0..5."""
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint))
    rows = [SourceDoc(f"d{i}", f"texto numero {i}", metadata={"cat": "a", "n": i}) for i in range(6)]
    assert Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False).ingest(rows).complete
    return index_name


# -- 1. one rule for deletes -------------------------------------------------------------------------------------------
def test_llamaindex_delete_nodes_never_empties_the_index_unasked(client, filled):
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    from adapter.integrations.llamaindex import HybridVectorStore

    store = HybridVectorStore.open(client, filled, embedder=TEST_EMBEDDER)
    documents = store.ingestor.documents()
    for filters in (MetadataFilters(filters=[]), MetadataFilters(filters=[MetadataFilter(key="cat", value="a")])):
        with pytest.raises(InputError, match=r"all=True"):
            store.delete_nodes(filters=filters)
        assert documents.count() == 6
    with pytest.raises(InputError, match=r"'metadata\.color', which the mapping of .* does not have"):
        store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="color", value="red")]))
    store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="n", value=0)]))
    assert documents.count() == 5
    store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="cat", value="a")]), all=True)
    assert documents.count() == 0


def test_haystack_delete_by_filter_never_empties_the_index_unasked(opensearch_url, filled):
    from adapter.integrations.haystack import HybridDocumentStore

    store = HybridDocumentStore(opensearch_url, filled, embedder=TEST_EMBEDDER)
    for filters in ({"operator": "AND", "conditions": []}, {"field": "meta.cat", "operator": "==", "value": "a"}):
        with pytest.raises(InputError, match=r"all=True"):
            store.delete_by_filter(filters)
        assert store.count_documents() == 6
    assert store.delete_by_filter({"operator": "OR", "conditions": []}) == 0  # Haystack: any([]) selects nothing
    with pytest.raises(InputError, match=r"'metadata\.color'"):
        store.delete_by_filter({"field": "meta.color", "operator": "!=", "value": "red"})
    assert (
        store.delete_by_filter({"field": "meta.n", "operator": "<", "value": 2}) == 2 and store.count_documents() == 4
    )
    assert store.delete_by_filter({"field": "meta.cat", "operator": "==", "value": "a"}, all=True) == 4
    store.write_documents([__import__("haystack").Document(id="x", content="otra vez")])
    store.delete_all_documents()
    assert store.count_documents() == 0


def test_langchain_delete_never_empties_the_index_unasked(client, filled):
    from adapter.integrations.langchain import HybridVectorStore

    store = HybridVectorStore(
        Searcher.open(client, filled, TEST_EMBEDDER), Ingestor.open(client, filled, TEST_EMBEDDER, progress=False)
    )
    documents = Documents.open(client, filled)
    for bad in ({}, {"operator": "AND", "conditions": []}, {"cat": "a"}):
        with pytest.raises(InputError, match=r"all=True"):
            store.delete(filter=bad)
        assert documents.count() == 6
    with pytest.raises(InputError, match=r"'metadata\.color'"):
        store.delete(filter={"color": "red"})
    store.delete(all=True)
    assert documents.count() == 0


def test_hybrid_delete_needs_all_for_a_filter_that_matches_every_entry(cli, opensearch_url, filled, client):
    url = ("--url", opensearch_url)
    documents = Documents.open(client, filled)
    code, out, err = cli("delete", "--index", filled, "--filter", "cat=a", *url)
    assert code == 2 and "matches all 6 entries" in err and "--all" in err and documents.count() == 6, out + err
    code, out, err = cli("delete", "--index", filled, "--filter", "cat=a", "--dry-run", *url)
    assert code == 0 and "6 entries" in out and "that is every entry: deleting them needs --all" in out
    code, out, err = cli("delete", "--index", filled, "--filter", "color=red", *url)
    assert code == 2 and "'metadata.color'" in err and "metadata fields: cat, n" in err and documents.count() == 6, (
        out + err
    )
    code, out, err = cli("delete", "--index", filled, *url)
    assert code == 2 and "--all" in err and documents.count() == 6
    code, out, err = cli("delete", "--index", filled, "--filter", "cat=a", "--all", *url)
    assert code == 0 and "deleted 6 of 6" in out and documents.count() == 0, out + err


# -- 2. metadata keys whose first value is empty -----------------------------------------------------------------------
def _stored(client, alias, ids):
    return [d.metadata for d in Documents.open(client, alias).get(ids)]


def test_empty_first_metadata_lands_and_reads_back_through_the_cli(cli, client, opensearch_url, index_name, tmp_path):
    url = ("--url", opensearch_url)
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", *url)[0] == 0
    for i, meta in enumerate(EMPTY_FIRST):  # one file each: in the first, nothing says more than the empty values
        path = tmp_path / f"rows{i}.jsonl"
        path.write_text(json.dumps({"id": f"c{i}", "text": f"texto {i}", "metadata": meta}) + "\n", encoding="utf-8")
        code, out, err = cli("ingest", path, "--index", index_name, "--quiet", *url)
        assert code == 0 and "every row landed" in out, out + err
    assert _stored(client, index_name, ["c0", "c1"]) == EMPTY_FIRST


def test_empty_first_metadata_lands_and_reads_back_through_each_framework(client, opensearch_url, index_name):
    from haystack import Document as HaystackDocument
    from llama_index.core.schema import TextNode

    from adapter.integrations.haystack import HybridDocumentStore
    from adapter.integrations.langchain import HybridVectorStore as LangChainStore
    from adapter.integrations.llamaindex import HybridVectorStore as LlamaStore

    writers = {
        "lc": lambda i, m: LangChainStore(
            Searcher.open(client, index_name, TEST_EMBEDDER),
            Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False),
        ).add_texts([f"texto {i}"], [m], ids=[f"lc{i}"]),
        "hs": lambda i, m: HybridDocumentStore(opensearch_url, index_name, embedder=TEST_EMBEDDER).write_documents(
            [HaystackDocument(id=f"hs{i}", content=f"texto {i}", meta=m)]
        ),
        "li": lambda i, m: LlamaStore.open(client, index_name, embedder=TEST_EMBEDDER).add(
            [TextNode(id_=f"li{i}", text=f"texto {i}", metadata=m)]
        ),
    }
    for prefix, write in writers.items():
        init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint))
        for i, meta in enumerate(EMPTY_FIRST):
            write(i, {f"{prefix}_{k}": v for k, v in meta.items()})  # keys new to the mapping each time
        got = _stored(client, index_name, [f"{prefix}0", f"{prefix}1"])
        assert got == [{f"{prefix}_{k}": v for k, v in m.items()} for m in EMPTY_FIRST], prefix


# -- 3. the framework components write no failures file ----------------------------------------------------------------
def _refused_by_the_mapping(reason: str) -> bool:
    """The server's word for a value its mapping cannot take: OpenSearch's, or Elasticsearch 8.x+/9.x's."""
    return "mapper_parsing_exception" in reason or "document_parsing_exception" in reason


def test_failed_framework_writes_leave_no_failures_file(client, opensearch_url, index_name, tmp_path, monkeypatch):
    from haystack import Document as HaystackDocument
    from llama_index.core.schema import TextNode

    from adapter.integrations.haystack import HybridDocumentStore
    from adapter.integrations.langchain import HybridVectorStore as LangChainStore
    from adapter.integrations.llamaindex import HybridVectorStore as LlamaStore

    monkeypatch.chdir(tmp_path)
    init_index(client, index_name, IndexSpec(TEST_EMBEDDER.fingerprint))
    ingestor = Ingestor.open(client, index_name, TEST_EMBEDDER, progress=False)
    assert ingestor.ingest([SourceDoc("n", "numero", metadata={"n": 1})]).complete
    bad = {"n": {"nested": "an object under a long"}}  # the server refuses the row (a mapping conflict)
    with pytest.raises(InputError, match=r"1 of 2 documents did not land"):
        LangChainStore(Searcher.open(client, index_name, TEST_EMBEDDER), ingestor).add_texts(["bien", "mal"], [{}, bad])
    with pytest.raises(InputError, match=r"did not land"):
        HybridDocumentStore(opensearch_url, index_name, embedder=TEST_EMBEDDER).write_documents(
            [HaystackDocument(id="h", content="mal", meta=bad)]
        )
    with pytest.raises(InputError, match=r"did not land"):
        LlamaStore.open(client, index_name, embedder=TEST_EMBEDDER).add([TextNode(id_="l", text="mal", metadata=bad)])
    report = ingestor.ingest([SourceDoc("m", "mal", metadata=bad)])
    assert report.failed == 1 and _refused_by_the_mapping(report.failures[0].reason) and report.failures_file is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- 5. a partitioned round is tied to its input
# -------------------------------------------------------------------------
def test_a_partition_of_another_input_is_refused_naming_both(cli, client, opensearch_url, index_name, tmp_path):
    url = ("--url", opensearch_url)
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", *url)[0] == 0
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text("".join(json.dumps({"id": f"a{i}", "text": f"uno {i}"}) + "\n" for i in range(20)), encoding="utf-8")
    two.write_text("".join(json.dumps({"id": f"b{i}", "text": f"dos {i}"}) + "\n" for i in range(20)), encoding="utf-8")
    code, out, err = cli("ingest", one, "--index", index_name, "--partition", "1/2", "--quiet", *url)
    assert code == 0 and "still to run before the input is complete: 2/2" in out, out + err
    landed = Documents.open(client, index_name).count()
    code, out, err = cli("ingest", two, "--index", index_name, "--partition", "2/2", "--quiet", *url)
    assert code == 2 and "2 partitions of one.jsonl (blake2b" in err and "not of two.jsonl (blake2b" in err, out + err
    assert Documents.open(client, index_name).count() == landed  # nothing of two.jsonl written
    code, out, err = cli("ingest", one, "--index", index_name, "--partition", "2/2", "--quiet", *url)
    assert (
        code == 0
        and "all 2 partitions have run to their end" in out
        and Documents.open(client, index_name).count() == 20
    )


# -- 7. an empty input said "every row landed"
# -----------------------------------------------------------------------------
@pytest.mark.parametrize("content", ["", "\n\n", "id,text\n"], ids=["empty", "blank lines", "csv header only"])
def test_an_input_without_rows_is_an_error_not_every_row_landed(cli, opensearch_url, index_name, tmp_path, content):
    url = ("--url", opensearch_url)
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", *url)[0] == 0
    path = tmp_path / ("rows.csv" if content.startswith("id,") else "rows.jsonl")
    path.write_text(content, encoding="utf-8")
    code, out, err = cli("ingest", path, "--index", index_name, "--quiet", *url)
    assert code == 2 and "holds no rows: nothing was written" in err and "every row landed" not in out, out + err
