"""Test targets: which engine and version the integration tier runs against.

A target is named like a local release, ``opensearch-3.6.0``, ``opensearch-2.19.1``,
``elasticsearch-9.5.4`` (a major such as ``opensearch-2`` means the newest pinned 2.x). With
``OPENSEARCH_URL`` set the target is that cluster, whatever it runs: its engine and version are
read from it, and tests that need the local node itself are deselected.
"""

from __future__ import annotations

import os
import re
import urllib.error
from dataclasses import dataclass
from typing import Mapping

from adapter.errors import ConfigurationError
from adapter.local import procs
from adapter.local.releases import DEFAULT_DISTRIBUTION, RELEASES, release_by_name, resolve_release

# One target per distribution and major, its newest pinned release (what `--version 9` starts): an older pin of the
# same major stays startable by name, but `make test` does not run the tiers on it again.
DEFAULT_TARGETS = tuple(r.name for r in RELEASES if resolve_release(r.distribution.name, str(r.major)) == r)


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


@dataclass(frozen=True)
class Target:
    engine: str
    version: str
    url: str | None = None  # set for a cluster the tests did not start (OPENSEARCH_URL)

    @property
    def name(self) -> str:
        return f"{self.engine}-{self.version}"

    @property
    def local(self) -> bool:
        return self.url is None

    def at_least(self, version: str) -> bool:
        return version_tuple(self.version) >= version_tuple(version)

    def at_most(self, version: str) -> bool:
        """``at_most("2")`` holds for every 2.x: only as many parts as given are compared."""
        bound = version_tuple(version)
        return version_tuple(self.version)[: len(bound)] <= bound


def parse_target(name: str) -> Target:
    """``opensearch-3.6.0`` / ``opensearch-3`` / ``elasticsearch`` -> a pinned local Target."""
    release = release_by_name(name.strip())
    return Target(release.distribution.name, release.version)


def probe(url: str, timeout: float = 10.0) -> Target:
    """Ask a running cluster which engine and version it is."""
    try:
        try:
            info = procs.get_json(url.rstrip("/"), timeout=timeout)["version"]
            engine = "opensearch" if info.get("distribution") == "opensearch" else "elasticsearch"
            return Target(engine, info["number"], url)
        except urllib.error.HTTPError:  # Elasticsearch's integ-test node answers 405 to GET / (OpenSearch never does)
            node = next(iter(procs.get_json(f"{url.rstrip('/')}/_nodes/_local", timeout=timeout)["nodes"].values()))
            return Target("elasticsearch", node["version"], url)
    except (urllib.error.URLError, OSError, ValueError, KeyError, StopIteration) as exc:
        raise ConfigurationError(f"cannot read the engine and version of {url}: {exc}") from exc


def current_target(environ: Mapping[str, str] = os.environ) -> Target:
    """``OPENSEARCH_URL`` (probed) when set, else ``HYBRID_TEST_TARGET``, else the default local release."""
    url = environ.get("OPENSEARCH_URL")
    named = environ.get("HYBRID_TEST_TARGET")
    if url:
        target = probe(url)
        if named and parse_target(named).engine != target.engine:
            raise ConfigurationError(f"HYBRID_TEST_TARGET={named} but OPENSEARCH_URL={url} runs {target.name}")
        return target
    return parse_target(named or DEFAULT_DISTRIBUTION)
