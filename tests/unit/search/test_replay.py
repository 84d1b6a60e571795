"""The searcher against a real node's recorded answers (scripts/record_fixtures.py made them), one
recording per engine (OpenSearch 2.19.1; Elasticsearch 9.2.4, whose hybrid runs as query + knn summed
and whose RRF falls back to the client: the integ-test node has no rank-rrf).

The same calls must send the same HTTP requests (nothing drifted in how bodies are built) and read the
real answers right (explanations, sources, paging), without a cluster or a model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from adapter.engines import engine_for
from adapter.search import Searcher
from adapter.fusion import parse_fusion
from adapter.testing import FakeClient

from tests.support.extras import requires_extra

RECORDINGS = sorted((Path(__file__).parents[1] / "recordings").glob("searcher-*.json"))
# Elasticsearch's recording replays under elasticsearch-py's own client: it needs that extra.
PARAMS = [
    pytest.param(p, id=p.stem, marks=[requires_extra("elasticsearch")] if "-elasticsearch-" in p.name else [])
    for p in RECORDINGS
]


def fusion_of(spec):
    return parse_fusion(spec["name"], weights=tuple(spec["weights"]) if spec.get("weights") else None) if spec else None


@pytest.fixture(params=PARAMS)
def replayed(request):
    data = json.loads(request.param.read_text(encoding="utf-8"))
    engine = request.param.stem.split("-")[1]  # searcher-<engine>-<version>
    client = FakeClient(recording=data["exchanges"], engine_name=engine)
    searcher = Searcher.open(client, data["alias"], engine=type(engine_for(client))())
    results = []
    for spec in data["searches"]:
        options = {k: v for k, v in spec.items() if k not in ("query", "fusion")}
        results.append(
            searcher.search(
                spec["query"],
                fusion=fusion_of(spec.get("fusion")),
                query_vector=data["vectors"][spec["query"]],
                **options,
            )
        )
    return data, client, results


VECTOR_KEYS = ("vector", "query_vector")


def as_float32(body):
    """``body`` with its query vectors as the float32 values the server reads: they were recorded at
    float64's 17 digits and are sent in float32's shortest form (adapter.index.floats), the same values."""
    if isinstance(body, dict):
        return {
            k: [float(np.float32(x)) for x in v] if k in VECTOR_KEYS and isinstance(v, list) else as_float32(v)
            for k, v in body.items()
        }
    if isinstance(body, list):
        return [as_float32(v) for v in body]
    return body


def test_the_same_calls_send_the_same_requests(replayed):
    data, client, _ = replayed
    assert len(client.calls) == len(data["exchanges"])
    for call, exchange in zip(client.calls, data["exchanges"]):
        assert (call.method, call.path, call.params) == (exchange["method"], exchange["path"], exchange["params"])
        assert as_float32(call.body) == as_float32(exchange["body"]), call.key
    sent = [
        json.dumps(c.body)
        for c in client.calls
        if '"vector"' in json.dumps(c.body) or '"query_vector"' in json.dumps(c.body)
    ]
    recorded = [
        json.dumps(e["body"])
        for e in data["exchanges"]
        if '"vector"' in json.dumps(e["body"]) or '"query_vector"' in json.dumps(e["body"])
    ]
    assert sent and sum(map(len, sent)) < 0.8 * sum(map(len, recorded))  # the shorter form went out


def test_real_answers_are_read_right(replayed):
    _, _, results = replayed
    paraphrase, code, client_rrf, bm25, dense, paged = results
    assert {"devoluciones", "reembolso", "etiqueta-devolucion", "devoluciones-copia"} & set(paraphrase.ids[:2])
    assert code.ids[0] == "e-4012" and client_rrf.ids[0] == "e-4012"
    for result in (paraphrase, code):
        for hit in result.hits:
            assert sum(leg.contribution for leg in hit.legs) == pytest.approx(hit.score, rel=1e-3, abs=1e-6)
            for leg in hit.legs:  # a leg that returned the hit has its rank, raw and normalised score
                assert (leg.rank is None) == (leg.raw_score is None) == (leg.normalized_score is None)
    assert bm25.hits and all(h.source["metadata"]["category"] == "envios" for h in bm25.hits)
    assert dense.hits and all(h.title and h.text and "embedding" not in h.source for h in dense.hits)
    assert [h.rank for h in paged.hits] == [4, 5, 6]
