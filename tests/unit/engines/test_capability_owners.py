"""Capabilities owned per engine (issue 42): the shared flags the shell reads, and each engine's own beside them."""

from __future__ import annotations

from dataclasses import fields

import pytest

from adapter.engines.capabilities import Capabilities
from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.opensearch.capabilities import opensearch_capabilities, serverless_capabilities
from adapter.evaluation.tune import candidates
from adapter.fusion import ScoreSum
from tests.support.fake_engine.engine import fake_capabilities

pytestmark = pytest.mark.unit

OPENSEARCH_OWN = ("explanation", "native_engines", "rrf_global_ranks")
ELASTICSEARCH_OWN = ("score_sum", "license")


def test_each_engine_reads_the_same_flags_as_before():
    # Pinned on the code before the split (one flag set): the values each engine's probe gives.
    os219, os36, es = opensearch_capabilities("2.19.1"), opensearch_capabilities("3.6.0"), elasticsearch_capabilities
    assert (os219.explanation, os219.native_engines, os219.rrf_global_ranks) == (True, True, False)
    assert (os36.explanation, os36.rrf_global_ranks) == (True, True)
    assert opensearch_capabilities("2.19.1", native_engines=False).native_engines is False
    assert (serverless_capabilities().explanation, serverless_capabilities().native_engines) == (False, True)
    assert (es("9.2.4").score_sum, es("8.3.0").score_sum, es("9.2.4", license="basic").license) == (
        True,
        False,
        "basic",
    )
    assert not (es("9.2.4").z_score or es("9.2.4").pagination_depth)


def test_the_tuning_grid_has_the_score_sum_where_the_engine_runs_it():
    # Pinned on the code before the split: the grid asked caps.score_sum; it now asks the engine's renderer.
    sums = lambda caps: [f for f in candidates(caps) if isinstance(f, ScoreSum)]  # noqa: E731
    assert len(sums(elasticsearch_capabilities("9.2.4"))) > 1
    assert sums(elasticsearch_capabilities("8.3.0")) == sums(opensearch_capabilities("3.6.0")) == []


def test_the_shared_flags_name_no_engine_and_a_new_engine_names_only_what_it_has():
    shared = {f.name for f in fields(Capabilities)}
    assert not shared & {*OPENSEARCH_OWN, *ELASTICSEARCH_OWN}
    assert {f.name for f in fields(opensearch_capabilities("3.6.0"))} == shared | set(OPENSEARCH_OWN)
    assert {f.name for f in fields(elasticsearch_capabilities("9.2.4"))} == shared | set(ELASTICSEARCH_OWN)
    fake = fake_capabilities()
    assert {f.name for f in fields(fake)} == shared  # nothing of OpenSearch's or Elasticsearch's to fill
    assert fake.hybrid and not (fake.rrf or fake.normalization or fake.z_score)
    assert fake.fusions() == []  # no renderer: every fusion runs in the client


def test_an_engine_reads_its_own_flags_only_from_its_own_capabilities():
    # Another engine's capabilities have none of them: nothing raises, the feature is absent.
    es, fake = elasticsearch_capabilities("9.2.4"), fake_capabilities()
    assert es.supports(ScoreSum())[0] and not fake.supports(ScoreSum())[0]
    assert fake.without(ScoreSum()) == fake
    assert es.without(ScoreSum()).supports(ScoreSum()) == (
        False,
        "the query + knn score sum needs Elasticsearch 8.4+, the cluster runs 9.2.4",
    )
