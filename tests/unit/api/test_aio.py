"""The asyncio bridge (adapter.aio) knows no client library by name: what an asyncio client is, which of its
attributes are namespaces and which engine it speaks for are read off the client."""

from __future__ import annotations

import asyncio

from adapter import aio
from adapter.engines import registry
from tests.support.extras import requires_extra


class Indices:  # a namespace: its methods are coroutines
    async def exists(self, index: str) -> bool:
        await asyncio.sleep(0)
        return index == "docs"


class Transport:
    async def perform_request(self, method: str, path: str) -> dict[str, str]:
        return {"method": method, "path": path}


class AnyAsyncClient:
    """An asyncio client of no library the adapter knows."""

    engine_name = "elasticsearch"

    def __init__(self) -> None:
        self.indices = Indices()
        self.transport = Transport()
        self.hosts = ["http://localhost:9200"]

    def options(self, **kwargs: object) -> AnyAsyncClient:
        return AnyAsyncClient()

    async def info(self) -> dict[str, str]:
        return {"version": "9"}

    async def close(self) -> None: ...

    async def __aenter__(self) -> AnyAsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None: ...


class SyncClient:
    def close(self) -> None: ...


def test_an_asyncio_client_is_recognised_by_its_shape_not_its_library():
    assert aio.is_async_client(AnyAsyncClient())
    assert not aio.is_async_client(SyncClient())
    assert not aio.is_async_client(aio.Blocking(AnyAsyncClient()))


def test_a_bridged_client_speaks_for_the_engine_of_the_client_it_wraps():
    assert registry.name_of_client(aio.Blocking(AnyAsyncClient())) == "elasticsearch"
    plain = SyncClient()
    assert registry.name_of_client(aio.Blocking(plain)) == registry.name_of_client(plain) == registry.DEFAULT


@requires_extra("async")
def test_namespaces_and_copies_of_any_librarys_client_are_bridged_alike():
    def use(client: aio.Blocking) -> tuple[object, ...]:
        copy = client.options(request_timeout=5)
        return (
            client.info(),
            client.indices.exists("docs"),
            client.transport.perform_request("GET", "/"),
            copy.info(),
            type(copy),
            client.hosts,
        )

    info, exists, answer, copied, copy_type, hosts = asyncio.run(aio.run(use, aio.Blocking(AnyAsyncClient())))
    assert info == copied == {"version": "9"} and exists is True and answer == {"method": "GET", "path": "/"}
    assert copy_type is aio.Blocking and hosts == ["http://localhost:9200"]
