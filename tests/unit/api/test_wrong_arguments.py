"""Wrong arguments at the public entrances are named, never a raw AttributeError (issue 38, low items), and a token
file others can read is said out loud. No cluster."""

from __future__ import annotations

import os

import pytest

from adapter.errors import InputError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("entrance", ["Searcher", "Ingestor", "Documents"])
def test_a_url_where_a_client_belongs_is_named(entrance):
    from adapter import Ingestor, Searcher
    from adapter.ingest.by_id import Documents

    opener = {"Searcher": Searcher.open, "Ingestor": Ingestor.open, "Documents": Documents.open}[entrance]
    with pytest.raises(
        InputError, match=r"takes a client, not the address 'http://localhost:9200': open one with adapter\.connect"
    ):
        opener("http://localhost:9200", "docs")


# searcher.search(q, fusion="min_max") raised AttributeError ('str' object has no attribute 'kind') from
# adapter/search/request.py. The fix belongs in Searcher.search (adapter/search/searcher.py, the lead's this round):
# parse a string with adapter.fusion.parse_fusion, as the framework components do (integrations._common.resolve_fusion),
# or refuse it with an InputError naming parse_fusion.
def test_a_fusion_given_by_its_name_is_taken_or_named():
    from adapter.index.assets import IndexSpec
    from adapter.admin.init import init_index
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import SourceDoc
    from adapter.search import Searcher
    from tests.conftest import HashingEmbedder
    from tests.support.fake_engine import FakeCluster

    embedder, cluster = HashingEmbedder(8), FakeCluster()
    init_index(cluster, "docs", IndexSpec(embedder.fingerprint))
    Ingestor.open(cluster, "docs", embedder, progress=False).ingest([SourceDoc("a", "texto uno")])
    try:
        result = Searcher.open(cluster, "docs", embedder).search("texto", technique="client-rrf", fusion="min_max")
    except InputError:
        return
    assert result.hits


def test_a_token_file_others_can_read_is_said_out_loud(tmp_path, capsys):
    import argparse

    from adapter.cli.serve import token

    path = tmp_path / "token"
    path.write_text("s3cret\n", encoding="utf-8")
    os.chmod(path, 0o644)
    assert token(argparse.Namespace(token_file=str(path))) == "s3cret"
    assert f"--token-file {path} is readable by anyone on this machine (mode 0644)" in capsys.readouterr().err
    os.chmod(path, 0o600)
    assert token(argparse.Namespace(token_file=str(path))) == "s3cret" and capsys.readouterr().err == ""
