"""The port is a small core and named facets: together they are the whole port, no method in two of them, and
every shipped port (and the test fake) is each part; only OpenSearch's has search pipelines."""

from __future__ import annotations

import itertools

import pytest

from adapter.engines import port
from adapter.engines.elasticsearch.cluster import ElasticsearchCluster
from adapter.engines.opensearch.cluster import OpenSearchCluster
from tests.support.fake_engine.cluster import FakeCluster

FACETS = (port.PointInTime, port.IndexAdmin, port.Templates, port.ClusterAdmin)


def test_the_core_and_facets_split_the_port_with_no_method_in_two():
    parts = (port.ClusterCore, *FACETS)
    for one, other in itertools.combinations(parts, 2):
        assert not one.__abstractmethods__ & other.__abstractmethods__, (one.__name__, other.__name__)
    assert frozenset().union(*(p.__abstractmethods__ for p in parts)) == port.Cluster.__abstractmethods__
    assert len(port.ClusterCore.__abstractmethods__) < len(port.Cluster.__abstractmethods__) / 2
    assert not port.SearchPipelines.__abstractmethods__ & port.Cluster.__abstractmethods__


@pytest.mark.parametrize("cls", [OpenSearchCluster, ElasticsearchCluster, FakeCluster])
def test_every_port_is_the_core_and_each_facet(cls: type) -> None:
    assert not cls.__abstractmethods__  # type: ignore[attr-defined]
    assert all(issubclass(cls, part) for part in (port.ClusterCore, *FACETS))
    assert issubclass(cls, port.SearchPipelines) is (cls is OpenSearchCluster)
