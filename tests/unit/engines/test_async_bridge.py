"""A user's asyncio client under the sync port: each shipped engine bridges its own library's client, and the
bridged client's namespaces (``indices``, ``cluster``, ``transport``) and copies (``options()``) wait alike, while
its plain values read through. No request is sent: the clients are only built."""

from __future__ import annotations

import asyncio

import pytest

from adapter import aio
from adapter.engines import bridge, registry
from tests.support.extras import requires_extra

pytestmark = requires_extra("async")


def _opensearch() -> object:
    from opensearchpy import AsyncOpenSearch

    return AsyncOpenSearch(hosts=["http://localhost:9"])


def _elasticsearch() -> object:
    pytest.importorskip("elasticsearch")
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch("http://localhost:9")


CLIENTS = {"opensearch": _opensearch, "elasticsearch": _elasticsearch}


@pytest.mark.parametrize("engine", sorted(CLIENTS))
def test_a_shipped_engines_asyncio_client_is_bridged_namespaces_and_all(engine: str) -> None:
    client = CLIENTS[engine]()
    bridged = bridge(client)
    assert isinstance(bridged, aio.Blocking) and bridged.async_client is client
    assert registry.name_of_client(bridged) == engine
    for namespace in ("indices", "cluster", "transport"):
        part = getattr(bridged, namespace)
        assert isinstance(part, aio.Blocking) and part.async_client is getattr(client, namespace), namespace
    asyncio.run(client.close())  # type: ignore[attr-defined]


def test_elasticsearchs_client_copies_are_bridged_alike() -> None:
    client = _elasticsearch()

    def copy() -> object:
        return bridge(client).options(request_timeout=5)

    copied = asyncio.run(aio.run(copy))
    assert isinstance(copied, aio.Blocking) and registry.name_of_client(copied) == "elasticsearch"
    assert isinstance(copied.indices, aio.Blocking)
    asyncio.run(client.close())  # type: ignore[attr-defined]


def test_plain_values_read_through_the_bridge() -> None:
    client = _opensearch()
    hosts = bridge(client).transport.hosts
    assert hosts == client.transport.hosts and not isinstance(hosts, aio.Blocking)  # type: ignore[attr-defined]
    asyncio.run(client.close())  # type: ignore[attr-defined]
