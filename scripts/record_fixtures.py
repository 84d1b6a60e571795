"""Record a real node's answers to the searcher's requests, for the replay unit tests.

    .venv/bin/python scripts/record_fixtures.py [--url URL]    # OpenSearch or Elasticsearch (asked)

Builds the seed's Spanish support index (multilingual-e5-small), then records ``Searcher.open``
and one search per technique (hybrid with explanations, client-rrf, bm25 with a filter, dense)
into tests/unit/recordings/searcher-<engine>-<version>.json, with the query vectors used, so
the unit tests replay exactly these requests without a cluster or a model. Each exchange is one
HTTP request and its answer (method, path, params, body, status, response: adapter.testing).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.admin.init import init_index  # noqa: E402
from adapter.index.assets import IndexSpec  # noqa: E402
from adapter.index.catalog import alias_indices  # noqa: E402
from adapter.engines import connect_cluster  # noqa: E402
from adapter.models.embedders import E5Embedder  # noqa: E402
from adapter.engines import cluster_for, engine_for  # noqa: E402
from adapter.fusion import parse_fusion  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.ingest.sources import FieldMap, read_source  # noqa: E402
from adapter.testing import RecordingClient  # noqa: E402

ALIAS = "recorded-support"
SEARCHES = [
    {"query": "¿cómo devuelvo un pedido?", "technique": "hybrid", "explain": True, "k": 5},
    {"query": "error E-4012", "technique": "hybrid", "fusion": {"name": "rrf"}, "explain": True, "k": 5},
    {"query": "error E-4012 tarjeta", "technique": "client-rrf", "k": 5},
    {"query": "envío del paquete", "technique": "bm25", "filters": {"category": "envios"}, "k": 3},
    {"query": "cambiar la contraseña", "technique": "dense", "k": 3},
    {
        "query": "devoluciones",
        "technique": "hybrid",
        "fusion": {"name": "l2-harmonic_mean", "weights": [0.3, 0.7]},
        "k": 3,
        "from_": 3,
    },
]


def fusion_of(spec: dict | None):
    return parse_fusion(spec["name"], weights=tuple(spec["weights"]) if spec.get("weights") else None) if spec else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.url:
        url = args.url
    else:
        from adapter.local import LocalNode

        url = LocalNode(log=lambda m: print(m, file=sys.stderr)).up().url
    client = connect_cluster(url)
    e5 = E5Embedder()
    old = alias_indices(cluster_for(client), ALIAS)
    if old:  # by name: Elasticsearch refuses wildcard deletes
        client.indices.delete(index=",".join(old))
    init_index(client, ALIAS, IndexSpec(e5.fingerprint, analyzer="spanish"))
    Ingestor.open(client, ALIAS, e5, progress=False).ingest(
        read_source(ROOT / "adapter" / "data" / "support_es.jsonl", FieldMap(metadata=("category", "lang")))
    )
    recorder = RecordingClient(client)  # a copy of the client whose HTTP requests and answers are kept
    searcher = Searcher.open(recorder, ALIAS, engine=type(engine_for(client))())  # a fresh probe, recorded too
    vectors = {}
    for spec in SEARCHES:
        vector = e5.embed_query(spec["query"])
        vectors[spec["query"]] = [float(x) for x in vector]
        options = {k: v for k, v in spec.items() if k not in ("query", "fusion")}
        searcher.search(spec["query"], fusion=fusion_of(spec.get("fusion")), query_vector=vector, **options)
    version = searcher.caps.version
    out = ROOT / "tests" / "unit" / "recordings" / f"searcher-{searcher.caps.engine}-{version}.json"
    out.write_text(
        json.dumps(
            {
                "alias": ALIAS,
                "version": version,
                "searches": SEARCHES,
                "vectors": vectors,
                "exchanges": recorder.exchanges,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"recorded {len(recorder.exchanges)} exchanges to {out}")


if __name__ == "__main__":
    main()
