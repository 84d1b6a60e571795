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
    client.server.answers.update(
        {
            "HEAD */_alias*": False,
            "HEAD /[!_]*": False,  # no plain index named "docs"
            "GET */_alias*": lambda call: (
                {"docs-v1": {"aliases": {}}, "docs-v1-copy": {"aliases": {}}} if call.index == "docs-v*" else {}
            ),
            "PUT */_alias/*": {"acknowledged": True},
            "PUT /hybrid-empty-shard": {"acknowledged": True},  # the empty shard, not there yet either
        }
    )
    return client


def test_init_detects_an_index_whose_alias_was_deleted_and_offers_to_reattach_it():
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.engines.opensearch import OPENSEARCH

    SPEC = IndexSpec(FP, default_fusion="min_max-arithmetic_mean")  # the index _init_client models

    for dry_run in (True, False):
        with pytest.raises(
            ConfigurationError, match=r"docs-v1 exists but no alias 'docs' points to it.*--reattach-alias"
        ):
            init_index(orphaned_init_client(), "docs", SPEC, engine=OPENSEARCH, dry_run=dry_run)
    client = orphaned_init_client()
    planned = init_index(client, "docs", SPEC, engine=OPENSEARCH, dry_run=True, reattach=True)
    assert ("alias", "docs", "would create") in [(c.kind, c.name, c.action) for c in planned.changes]
    assert not [
        c for c in planned.changes if c.kind == "index" and "create" in c.action and c.name != "hybrid-empty-shard"
    ]
    assert not client.calls_to("PUT */_alias/*")
    done = init_index(client, "docs", SPEC, engine=OPENSEARCH, reattach=True)
    assert done.index == "docs-v1" and [c.key for c in client.calls_to("PUT */_alias/*")] == [
        "PUT /docs-v1/_alias/docs"
    ]
    created = [c.path for c in client.calls if c.method == "PUT" and c.path.count("/") == 1]
    assert created == ["/hybrid-empty-shard"]  # no new docs version
