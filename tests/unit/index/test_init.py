"""`init` on an index whose alias was deleted by hand (issue 10 item 7)."""

from __future__ import annotations

import pytest

from adapter.errors import ConfigurationError
from adapter.models.fingerprint import EmbeddingFingerprint

FP = EmbeddingFingerprint("test/unit", "test:unit", "abc", 4, True)


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
