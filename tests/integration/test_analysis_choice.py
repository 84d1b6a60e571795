"""One source of defaults on a real node (issue 39): a new index's analyzer chosen from its documents' language (at
init from --sample, else by the first ingest, which rebuilds the still-empty index), an existing index keeping its
own (init, plan, eval), and `plan --index X --write-spec FILE` writing what the live index has so that `diff` is
clean."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.cli import cli  # noqa: F401  (fixture)
from tests.support.extras import requires_extra

pytestmark = [pytest.mark.engine("opensearch", "elasticsearch")]


@pytest.fixture(autouse=True)
def target_url(monkeypatch, opensearch_url):
    monkeypatch.setenv("OPENSEARCH_URL", opensearch_url)


def _analyzer(client, alias: str) -> str:
    index = next(iter(client.indices.get_alias(name=alias)))
    return client.indices.get_mapping(index=index)[index]["mappings"]["properties"]["text"]["analyzer"]


def _not_the_default(target) -> str:
    """An analyzer other than init's default that the target has: `english` lives in analysis-common, which
    Elasticsearch's test distribution lacks (its `stop` is built in)."""
    return "english" if target.engine == "opensearch" else "stop"


def test_write_spec_of_an_english_index_is_in_sync(cli, client, index_name, tmp_path, target):
    """Before: `plan --index docs --write-spec` on an `english` index wrote init's default (folding) and `diff` on
    it reported drift at once (exit 2)."""
    analyzer = _not_the_default(target)
    code, out, err = cli(
        "init",
        "--index",
        index_name,
        "--embedder",
        "test:hashing",
        "--analyzer",
        analyzer,
        "--title-boost",
        "0.5",
        "--m",
        "24",
        "--weights",
        "0.4,0.6",
        "--shards",
        "2",
    )
    assert code == 0, err
    written = tmp_path / "spec.yaml"
    code, out, err = cli("plan", "--index", index_name, "--write-spec", written)
    assert code == 0, err
    assert f"analyzer: {analyzer}, embedder: test:hashing (the live index's" in out
    doc = yaml.safe_load(written.read_text())
    assert (
        doc["index"]["analyzer"] == analyzer
        and doc["index"]["title_boost"] == 0.5
        and doc["index"]["text_layout"] == "fields"
    )
    assert doc["index"]["hnsw"] == {"m": 24, "ef_construction": 128} and doc["index"]["shards"] == 2
    assert doc["embedder"]["spec"] == "test:hashing" and doc["embedder"]["fingerprint"]["dimension"] == 32
    # ES stores no pipeline weights
    assert doc["pipelines"]["weights"] == [0.4, 0.6] or target.engine == "elasticsearch"
    code, out, err = cli("diff", written)
    assert code == 0 and "in sync" in out, out + err


def test_init_again_without_flags_keeps_the_index_as_it_is(cli, client, index_name, target):
    """Before: `hybrid init --index docs` on an `english` index asked for folding and was refused (a rebuild)."""
    analyzer = _not_the_default(target)
    assert cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", analyzer)[0] == 0
    code, out, err = cli("init", "--index", index_name)
    assert code == 0, err
    assert "nothing to change" in out and f"analyzer: {analyzer}, embedder: test:hashing (the existing index's" in out


@requires_extra("language")
def _spanish_choice(target) -> tuple[str, str]:
    """What Spanish documents get (docs/EVALUATION.md, candidate E) and what the line says why: the words as written
    beside their stems where analysis-common has keyword_repeat / remove_duplicates, else folding."""
    if target.engine == "opensearch":
        return "spanish_stems", "are Spanish; spanish_stems keeps the words as written (folded) beside their spanish"
    return "folding", "are Spanish; spanish_stems needs the analysis-common module"


def test_init_with_a_sample_chooses_from_its_language(cli, client, index_name, support_docs_path, target):
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--sample", support_docs_path)
    assert code == 0, err
    analyzer, why = _spanish_choice(target)
    assert f"analyzer: {analyzer}, embedder: test:hashing (" in out and why in out, out
    assert _analyzer(client, index_name) == analyzer


@requires_extra("language")
def test_the_first_ingest_chooses_when_init_had_no_documents(cli, client, index_name, support_docs_path, target):
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing")
    assert code == 0, err
    assert "for now: the first `hybrid ingest` reads its documents' language" in out
    assert _analyzer(client, index_name) == "folding"
    code, out, err = cli(
        "ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache"
    )
    assert code == 0, err
    analyzer, _ = _spanish_choice(target)
    assert f"analyzer: {analyzer}, embedder: test:hashing (" in out and "are Spanish" in out
    assert _analyzer(client, index_name) == analyzer  # OpenSearch: the empty folding index rebuilt before any row
    client.indices.refresh(index=index_name)
    lines = sum(1 for line in open(support_docs_path, encoding="utf-8") if line.strip())
    assert client.count(index=index_name)["count"] == lines  # every row landed in the rebuilt index
    # chosen once: a second ingest neither chooses nor rebuilds
    code, out, _ = cli(
        "ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache"
    )
    assert code == 0 and "analyzer:" not in out
    live = next(iter(client.indices.get_alias(name=index_name)))  # -v1, or the rebuilt one
    meta = client.indices.get_mapping(index=live)[live]["mappings"]["_meta"]
    assert meta["analysis"]["analyzer"] == analyzer and meta["analysis"]["pending"] is False
    assert "es" in meta["analysis"]["languages"]


@pytest.mark.engine("opensearch")  # cjk lives in analysis-common, which Elasticsearch's test distribution lacks
@requires_extra("language")
def test_the_first_ingest_rebuilds_the_empty_index_when_its_choice_differs(cli, client, index_name, tmp_path):
    """Chinese keeps its analyzer (cjk: folding's standard tokenizer cannot split it into words), so the pending
    folding index is rebuilt before the first row is written."""
    texts = [
        "如何重置我的密码？在登录页面点击忘记密码，然后按照邮件中的说明操作。",
        "退货政策：收到商品后三十天内可以申请退货和退款。",
        "配送时间：订单通常在两到三个工作日内送达，偏远地区可能需要更长时间。",
        "发票下载：在我的订单页面可以下载每个订单的电子发票。",
        "账户注销：如果您想删除账户和所有个人数据，请联系客服。",
    ]
    docs = tmp_path / "zh.jsonl"
    docs.write_text(
        "".join(json.dumps({"id": f"zh-{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
        encoding="utf-8",
    )
    assert cli("init", "--index", index_name, "--embedder", "test:hashing")[0] == 0
    assert _analyzer(client, index_name) == "folding"
    code, out, err = cli("ingest", str(docs), "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache")
    assert code == 0, err
    assert "analyzer: cjk, embedder: test:hashing (" in out and "Chinese" in out, out
    assert _analyzer(client, index_name) == "cjk"
    client.indices.refresh(index=index_name)
    assert client.count(index=index_name)["count"] == len(texts)  # every row landed in the rebuilt index


def test_an_index_written_before_the_first_ingest_keeps_its_analyzer(
    cli, client, index_name, support_docs_path, tmp_path
):
    """A document that lands by another way (here a partitioned ingest, which never chooses) ends the wait."""
    assert cli("init", "--index", index_name, "--embedder", "test:hashing")[0] == 0
    code, out, err = cli(
        "ingest",
        support_docs_path,
        "--index",
        index_name,
        "--embedder",
        "test:hashing",
        "-q",
        "--no-cache",
        "--partition",
        "1/1",
    )
    assert code == 0, err
    assert "a partitioned ingest does not choose it" in out
    code, out, err = cli(
        "ingest", support_docs_path, "--index", index_name, "--embedder", "test:hashing", "-q", "--no-cache"
    )
    assert code == 0, err
    assert "documents were written before the first ingest chose" in out and _analyzer(client, index_name) == "folding"


def _tokens(client, index: str, text: str) -> set[str]:
    return {t["token"] for t in client.indices.analyze(index=index, body={"field": "text", "text": text})["tokens"]}


def test_polish_stems_keeps_the_word_as_written_beside_its_stem(cli, client, index_name, target):
    """`--analyzer polish_stems` (docs/EVALUATION.md, candidate E): `haslo` typed without accents meets `hasło`
    folded, and `hasła` meets both by its stem; a cluster without analysis-common refuses it, naming why."""
    code, out, err = cli("init", "--index", index_name, "--embedder", "test:hashing", "--analyzer", "polish_stems")
    if target.engine == "elasticsearch":  # the integ-test distribution: no keyword_repeat / remove_duplicates
        assert code != 0 and "keyword_repeat and remove_duplicates from the analysis-common" in out + err
        return
    assert code == 0, err
    assert _analyzer(client, index_name) == "polish_stems"
    index = next(iter(client.indices.get_alias(name=index_name)))
    assert _tokens(client, index, "haslo") == {"haslo"}  # not in the dictionary: the word as written, once
    assert _tokens(client, index, "hasło") == {"haslo"}  # its own stem: one token after folding
    assert _tokens(client, index, "hasła") == {"hasla", "haslo"}  # as written, and the stem hasło folded
