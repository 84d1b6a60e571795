"""What Elasticsearch on a basic licence answers that a test checks in more than one tier (a recorded reply and a
real node alike)."""

from __future__ import annotations

from adapter.fusion import ScoreNormalization
from adapter.fusion.base import FusedBy
from adapter.search.results import Technique


def assert_min_max_fused_in_the_client(result) -> None:
    """``result`` is the index's default min_max fused in the client, and its first notice says why: the licence
    has no linear retriever."""
    assert (
        result.technique is Technique.CLIENT
        and result.fused_by is FusedBy.CLIENT
        and result.fusion == ScoreNormalization()
    )
    assert (
        "linear retriever" in result.notices[0]
        and "fell back to client-side min_max-arithmetic_mean" in result.notices[0]
    )
