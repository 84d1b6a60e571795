"""The asyncio OpenSearch client the adapter builds (AsyncOpenSearch): signed so Serverless accepts it,
with the same request log, X-Opaque-Id and User-Agent as the sync client, on a real node."""

from __future__ import annotations

import asyncio
import logging

import pytest

from adapter.observability import telemetry
from adapter.engines.opensearch.async_client import connect_async
from tests.integration.test_aws import aws_credentials  # noqa: F401  (fixture)
from tests.sigv4_endpoint import REGION, SigV4Endpoint
from tests.support.faults import FaultProxy

BODY = {"query": {"match_all": {}}}


def test_the_async_client_signs_what_the_sync_one_signs_and_serverless_accepts_it(opensearch_url, aws_credentials):  # noqa: F811
    """The stock async signer signs the headers the connection hands it, as far as botocore lets it (content-type
    here; connection too with a botocore before boto/botocore#3643); the adapter's signs host, x-amz-content-sha256
    and x-amz-date, as the sync client does, whatever botocore."""

    async def run(aoss: SigV4Endpoint) -> dict:
        ours = connect_async(aoss.url, aws_region=REGION, aws_service="aoss")
        try:
            return await ours.search(index="t-none-*", body=BODY, params={"ignore_unavailable": "true"})
        finally:
            await ours.close()

    with SigV4Endpoint(opensearch_url, "aoss") as aoss:
        answer = asyncio.run(run(aoss))
    assert (
        answer["hits"]["hits"] == [] and aoss.signed == ["host;x-amz-content-sha256;x-amz-date"] and aoss.rejected == []
    )


@pytest.mark.engine("opensearch", "elasticsearch")
def test_the_async_client_logs_each_request_and_sends_the_request_id(opensearch_url, target, caplog):
    """On either engine: the request id and the User-Agent sent, the request logged, the answer a plain dict."""
    from adapter import __version__
    from adapter.engines.elasticsearch.async_client import connect_elasticsearch_async

    caplog.set_level(logging.DEBUG, logger="adapter")
    es = target.engine == "elasticsearch"

    async def run(url: str) -> dict:
        client = connect_elasticsearch_async(url) if es else connect_async(url)
        try:
            with telemetry.request_id("t-async-1"):
                if es:
                    return await client.search(index="t-none-*", body=BODY, ignore_unavailable=True)
                return await client.search(index="t-none-*", body=BODY, params={"ignore_unavailable": "true"})
        finally:
            await client.close()

    with FaultProxy(opensearch_url) as proxy:
        answer = asyncio.run(run(proxy.url))
    assert isinstance(answer, dict) and answer["hits"]["hits"] == []  # a plain dict, as the sync client's
    (headers,) = [{k.lower(): v for k, v in h.items()} for h in proxy.headers]
    assert headers["x-opaque-id"] == "t-async-1"
    library = "elasticsearch-py" if es else "opensearch-py"
    assert headers["user-agent"].startswith(f"opensearch-hybrid-adapter/{__version__} ({library}/")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "adapter.requests"]
    assert line.startswith("POST /t-none-*/_search") and " 200 took=" in line and line.endswith("id=t-async-1"), line
