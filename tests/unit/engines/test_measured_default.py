"""Which measured default fusion a cluster gets is its engine's to declare (issue 42): each shipped engine names
the vocabulary it was measured on; an engine that declares none (the fake, a new one) gets the default measured
for fusion in the client, not another engine's."""

from __future__ import annotations

import pytest

from adapter.engines.elasticsearch.capabilities import elasticsearch_capabilities
from adapter.engines.engine import MeasuredDefault, measured_kind
from adapter.engines.opensearch.capabilities import opensearch_capabilities
from adapter.engines.registry import engine_named
from adapter.evaluation.run import product_default
from adapter.fusion.choice import defaults, selection
from adapter.fusion.choice.selection import ClusterKind
from tests.support.fake_engine import ENGINE as FAKE_ENGINE
from tests.support.fake_engine.engine import fake_capabilities

pytestmark = pytest.mark.unit

SHIPPED = (
    (opensearch_capabilities("3.6.0"), ClusterKind.OPENSEARCH_3),
    (opensearch_capabilities("2.19.1"), ClusterKind.OPENSEARCH_2),
    (elasticsearch_capabilities("9.2.4"), ClusterKind.ELASTICSEARCH),
)


@pytest.mark.parametrize(("caps", "kind"), SHIPPED, ids=lambda v: getattr(v, "value", None) or v.version)
def test_each_shipped_engine_takes_the_default_measured_on_its_clusters(caps, kind):
    # Pinned on the code before the move (where each engine's placement said its kind): the same kinds and lines.
    assert measured_kind(engine_named(caps.engine), caps) is kind
    shipped = defaults.measured()["defaults"][kind.value]
    assert defaults.default_fusion_name(kind) == defaults.fusion_name(shipped) == "adaptive"
    assert f"over 10 labelled sets on {kind.value} clusters (worst" in defaults.why(kind)
    # what `hybrid eval` records as the product's default: the adaptive row that runs on this cluster
    assert product_default(caps) == ("hybrid-adaptive-min_max" if caps.z_score else "hybrid-adaptive")


def test_an_engine_that_declares_no_measured_default_gets_the_client_one_not_elasticsearchs():
    # The fake fuses in the request as Elasticsearch does (its placement is the in-request one); before the
    # move it took Elasticsearch's measured vocabulary, server-side score sum included.
    caps = fake_capabilities()
    assert not isinstance(FAKE_ENGINE, MeasuredDefault)
    assert measured_kind(FAKE_ENGINE, caps) is ClusterKind.CLIENT
    table = defaults.measured()["selection"]["client"]
    assert "hybrid-sum" not in table["candidates"]  # a sum of one engine's raw scores says nothing of another's
    assert defaults.default_fusion_name(ClusterKind.CLIENT) == defaults.fusion_name(table["chosen"])
    line = defaults.why(ClusterKind.CLIENT)
    assert f"({table['chosen']})" in line and "labelled sets on clusters that fuse in the client (worst" in line
    assert product_default(caps) == "hybrid-adaptive"  # no z_score: the policy's one adaptive row


def test_the_client_vocabulary_is_every_client_fusion_but_the_sum_and_the_z_score_policy():
    rows = ("hybrid-min_max-arithmetic_mean", "hybrid-z_score-arithmetic_mean", "hybrid-rrf", "client-rrf")
    for row in (*rows, "client-dbsf", "hybrid-adaptive-min_max"):
        assert selection.runs_on(row, ClusterKind.CLIENT), row
    for row in ("hybrid-sum", "hybrid-adaptive", "hybrid-adaptive-guard"):
        assert not selection.runs_on(row, ClusterKind.CLIENT), row
        assert selection.runs_on(row, ClusterKind.ELASTICSEARCH) == (row == "hybrid-sum"), row
