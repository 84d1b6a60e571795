"""SigV4 and Serverless against the real node, through a local endpoint that verifies signatures
with botocore and answers like Amazon OpenSearch Service (``es``) or Serverless (``aoss``)."""

import json

import pytest

from adapter.cli import main
from adapter.engines import connect
from adapter.engines.opensearch import OpenSearchEngine
from adapter.search import Searcher
from tests.sigv4_endpoint import ACCESS_KEY, REGION, SECRET_KEY, SigV4Endpoint
from tests.support.cli import init_args

QUERY = "¿cómo devuelvo un pedido?"


@pytest.fixture
def aws_credentials(monkeypatch, tmp_path):
    """Fixed test credentials from the environment, and no other source of credentials."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return code, out.out


def test_serverless_init_ingest_and_search_from_the_cli(
    opensearch_url, index_name, support_docs_path, aws_credentials, monkeypatch, capsys
):
    """Before: the probe's GET / got Serverless's 404 and every command exited 2."""
    monkeypatch.setenv("OPENSEARCH_AWS_REGION", REGION)
    monkeypatch.setenv("OPENSEARCH_AWS_SERVICE", "aoss")
    with SigV4Endpoint(opensearch_url, "aoss") as aoss:
        _cli(capsys, *init_args(index_name, aoss.url, "--analyzer", "spanish", embedder="multilingual-e5-small"))
        _cli(capsys, "ingest", str(support_docs_path), "--index", index_name, "--url", aoss.url, "-q", "--no-cache")
        _, out = _cli(capsys, "search", QUERY, "--index", index_name, "--url", aoss.url, "-k", "3", "--json")
    result = json.loads(out)
    assert len(result["hits"]) == 3 and result["fused_by"] == "server-pipeline"
    assert result["pipeline"] == f"{index_name}-min_max-arithmetic_mean"
    assert aoss.missing == [] and aoss.rejected == []  # nothing asked that Serverless lacks; every request signed
    # Only what AWS documents for Serverless was created: normalisation pipelines, no RRF or z_score.
    assert not [s for s in aoss.seen if s.method == "PUT" and s.path.endswith(("-rrf", "-z_score-arithmetic_mean"))]


def test_serverless_sends_the_managed_service_request_and_gets_its_ranking(
    opensearch_url, client, index_name, e5, support_docs_path, aws_credentials
):
    """Before: the Serverless branch dropped pagination_depth, changing scores and order."""
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import read_source

    # One fixed fusion both run: the adaptive default's baseline is z_score where the cluster has it, which Serverless
    # has not.
    init_index(
        client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish", default_fusion="min_max-arithmetic_mean")
    )
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    results, bodies = {}, {}
    for service in ("es", "aoss"):
        with SigV4Endpoint(opensearch_url, service) as endpoint:
            signed = connect(endpoint.url, aws_region=REGION, aws_service=service)
            searcher = Searcher.open(signed, index_name, e5, engine=OpenSearchEngine())
            results[service] = searcher.search(QUERY, k=5)
            # the hybrid requests (the managed service's goes beside the empty shard:
            # /<index>,hybrid-empty-shard/_search)
            bodies[service] = [
                s.body
                for s in endpoint.seen
                if s.path.split("?")[0].split("/")[1].split(",")[0] == index_name
                and s.path.split("?")[0].endswith("/_search")
                and "hybrid" in (s.body or {}).get("query", {})
            ]
        assert endpoint.rejected == [] and endpoint.missing == []
    assert len(bodies["es"]) == len(bodies["aoss"]) == 1
    es, aoss = bodies["es"][0]["query"]["hybrid"], bodies["aoss"][0]["query"]["hybrid"]
    assert aoss["pagination_depth"] == es["pagination_depth"] == 100 and aoss["queries"][0] == es["queries"][0]
    assert results["aoss"].ids == results["es"].ids
    assert [h.score for h in results["aoss"].hits] == [h.score for h in results["es"].hits]
    assert results["aoss"].notices == ()


def test_a_collection_rejecting_pagination_depth_gets_the_query_without_it_and_a_notice(
    opensearch_url, client, index_name, e5, support_docs_path, aws_credentials
):
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.ingest.ingestor import Ingestor
    from adapter.ingest.sources import read_source

    init_index(client, index_name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, index_name, e5, progress=False).ingest(read_source(support_docs_path))
    reason = "[hybrid] query does not support [pagination_depth]"

    def older_hybrid(method, body):  # what a neural-search without pagination_depth answers
        if isinstance(body, dict) and "pagination_depth" in json.dumps(body.get("query", {})):
            return 400, {
                "error": {
                    "root_cause": [{"type": "parsing_exception", "reason": reason}],
                    "type": "parsing_exception",
                    "reason": reason,
                },
                "status": 400,
            }
        return None

    with SigV4Endpoint(opensearch_url, "aoss", overrides={r"/_search$": older_hybrid}) as aoss:
        searcher = Searcher.open(connect(aoss.url, aws_region=REGION, aws_service="aoss"), index_name, e5)
        first, second = searcher.search(QUERY, k=3), searcher.search(QUERY, k=3)
        searches = [s for s in aoss.seen if s.path.startswith(f"/{index_name}/_search") and "hybrid" in s.body["query"]]
    assert len(first.hits) == 3 and first.ids == second.ids
    assert "pagination_depth" in first.notices[0] and second.notices == first.notices
    assert len(searches) == 2  # the rejected form is not sent again
    assert all("pagination_depth" not in s.body["query"]["hybrid"] for s in searches)
    # the hybrid, its excerpts
    assert [len(r.sent) for r in (first, second)] == [2, 2] and first.request_body == searches[0].body


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_unsigned_and_wrongly_signed_requests_are_refused(opensearch_url, aws_credentials, monkeypatch, service):
    from opensearchpy.exceptions import AuthorizationException

    with SigV4Endpoint(opensearch_url, service) as endpoint:
        with pytest.raises(AuthorizationException):
            connect(endpoint.url).indices.get_alias(name="*")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        with pytest.raises(AuthorizationException):
            connect(endpoint.url, aws_region=REGION, aws_service=service).indices.get_alias(name="*")
        other = "aoss" if service == "es" else "es"
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        with pytest.raises(AuthorizationException):
            connect(endpoint.url, aws_region=REGION, aws_service=other).indices.get_alias(name="*")
        assert len(endpoint.rejected) == 3
        # the right signature passes
        connect(endpoint.url, aws_region=REGION, aws_service=service).indices.get_alias(name="*")


def test_serverless_refuses_a_signed_content_length_and_the_adapter_signs_only_what_it_accepts(
    opensearch_url, aws_credentials
):
    """opensearch-py 3.2.0's RequestsAWSV4SignerAuth, which the adapter used, signs content-length and connection:
    Serverless answers 403 (opensearch-py #1047). The adapter's signer signs host, x-amz-content-sha256 and
    x-amz-date."""
    import boto3
    from opensearchpy import OpenSearch, RequestsAWSV4SignerAuth, RequestsHttpConnection
    from opensearchpy.exceptions import AuthorizationException

    with SigV4Endpoint(opensearch_url, "aoss") as aoss:
        stock = OpenSearch(
            hosts=[aoss.url],
            http_auth=RequestsAWSV4SignerAuth(boto3.Session().get_credentials(), REGION, "aoss"),
            connection_class=RequestsHttpConnection,
        )
        with pytest.raises(AuthorizationException):
            stock.search(index="t-none-*", body={"query": {"match_all": {}}}, params={"ignore_unavailable": "true"})
        assert "content-length" in aoss.signed[-1].split(";") and "content-length" in aoss.rejected[-1]
        ours = connect(aoss.url, aws_region=REGION, aws_service="aoss")
        ours.search(index="t-none-*", body={"query": {"match_all": {}}}, params={"ignore_unavailable": "true"})
        assert aoss.signed[-1] == "host;x-amz-content-sha256;x-amz-date" and len(aoss.rejected) == 1


def test_the_region_comes_from_aws_region_or_the_profile_and_a_half_set_configuration_is_refused(
    opensearch_url, aws_credentials, monkeypatch, tmp_path, capsys
):
    """Before: OPENSEARCH_AWS_SERVICE=aoss without OPENSEARCH_AWS_REGION sent unsigned requests (403 from AWS)."""
    from adapter.errors import ConfigurationError

    monkeypatch.delenv("OPENSEARCH_AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("OPENSEARCH_AWS_SERVICE", "aoss")
    with SigV4Endpoint(opensearch_url, "aoss") as aoss:
        monkeypatch.delenv("AWS_REGION", raising=False)
        with pytest.raises(ConfigurationError, match="needs a region"):
            connect(aoss.url)
        assert main(["search", "x", "--index", "t-none", "--url", aoss.url]) == 2
        assert "OPENSEARCH_AWS_SERVICE" in capsys.readouterr().err and aoss.seen == []  # nothing was sent unsigned
        monkeypatch.setenv("AWS_REGION", REGION)
        connect(aoss.url).indices.exists(index="t-none")  # signed with AWS_REGION's region: accepted
        monkeypatch.delenv("AWS_REGION")
        (tmp_path / "profile").write_text(f"[default]\nregion = {REGION}\n")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "profile"))
        connect(aoss.url).indices.exists(index="t-none")  # the profile's region: accepted
    assert aoss.rejected == [] and len(aoss.seen) == 2
