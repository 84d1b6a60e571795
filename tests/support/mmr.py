"""OpenSearch's server-side MMR (3.3+) switched for a test: its system-generated factories are a cluster setting, so
a test that changes it puts the value before back (other tests on the node see the cluster as it was)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from adapter.engines.opensearch import OpenSearchEngine
from adapter.engines.opensearch.capabilities import MMR_SETTING


@contextlib.contextmanager
def mmr_factories(client: Any, factories: list[str] | None) -> Iterator[None]:
    """The cluster's MMR factories set to ``factories`` (None: unset) inside the block; after it, the value before
    is put back and the probe refreshed (the capabilities it caches per cluster read the setting)."""
    before = client.cluster.get_settings(filter_path=f"persistent.{MMR_SETTING}")
    persistent = (before or {}).get("persistent") or {}
    old = persistent.get("cluster", {}).get("search", {}).get("enabled_system_generated_factories")
    client.cluster.put_settings(body={"persistent": {MMR_SETTING: factories}})
    try:
        yield
    finally:
        client.cluster.put_settings(body={"persistent": {MMR_SETTING: old}})
        OpenSearchEngine().probe(client, refresh=True)
