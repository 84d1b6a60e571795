"""The Haystack store's asyncio client is its engine's: the registry opens it, the store names no library."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.extras import requires_extra, skip_module_without

skip_module_without("haystack")
pytestmark = requires_extra("async")


@pytest.mark.parametrize(
    ("engine", "library", "cls"),
    [("opensearch", "opensearchpy", "AsyncOpenSearch"), ("elasticsearch", "elasticsearch", "AsyncElasticsearch")],
)
def test_the_stores_asyncio_client_is_its_engines(engine: str, library: str, cls: str) -> None:
    from adapter.engines import engine_name
    from adapter.integrations.haystack import _async_client

    expected = getattr(pytest.importorskip(library), cls)
    client = _async_client(engine, "http://localhost:9", {"username": "u", "password": "p"})
    assert isinstance(client, expected) and engine_name(client) == engine
    asyncio.run(client.close())
