"""``hybrid serve --ubi``'s cost on a search: POST /search p50 on one served app with UBI logging
against the same service served without it, in interleaved pairs (the order alternating), against
a real node. ``--aa`` serves both without logging (the noise floor of the pairing).

    .venv/bin/python scripts/serve_ubi_overhead.py --url http://127.0.0.1:9200 --pairs 400 [--aa]

Indexes adapter/data/support_es.jsonl with the tests' hashing embedder (the model is not what is
measured) into h40-ab-* indices, and removes them after. docs/OPERATIONS.md section 6 has the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapter.engines import connect  # noqa: E402
from adapter.index.assets import IndexSpec  # noqa: E402
from adapter.admin.init import init_index  # noqa: E402
from adapter.ingest.ingestor import Ingestor  # noqa: E402
from adapter.ingest.sources import read_source  # noqa: E402
from adapter.search import Searcher  # noqa: E402
from adapter.serve import SearchService, create_app  # noqa: E402
from adapter.serve.traffic import Traffic, TrafficSettings  # noqa: E402
from tests.conftest import HashingEmbedder, drop_hybrid_index  # noqa: E402
from tests.support.serving import post_json, served  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:9200")
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--aa", action="store_true", help="both apps without logging")
    args = parser.parse_args()
    client = connect(args.url)
    name = f"h40-ab-{uuid.uuid4().hex[:6]}"
    embedder = HashingEmbedder(32)
    init_index(client, name, IndexSpec(embedder.fingerprint))
    Ingestor.open(client, name, embedder, progress=False).ingest(
        read_source(ROOT / "adapter" / "data" / "support_es.jsonl")
    )
    service = SearchService(Searcher.open(client, name, embedder), cluster="ab")
    traffic = Traffic.open(service.searcher, TrafficSettings(queries_index=f"{name}-q", events_index=f"{name}-e"))
    body = {"q": "¿cómo devuelvo un pedido?", "explain": False, "client_id": "ab"}
    off: list[float] = []
    on: list[float] = []
    try:
        with served(create_app(service)) as a, served(create_app(service, traffic=None if args.aa else traffic)) as b:
            for _ in range(30):  # warm both
                post_json(f"{a}/search", body)
                post_json(f"{b}/search", body)
            for i in range(args.pairs):
                for url, sink in [(a, off), (b, on)] if i % 2 else [(b, on), (a, off)]:
                    status, _, _, seconds = post_json(f"{url}/search", body)
                    assert status == 200, status
                    sink.append(seconds * 1000)
        diffs = [y - x for x, y in zip(off, on)]
        print(
            f"pairs {len(off)}: p50 without {statistics.median(off):.2f} ms, with {statistics.median(on):.2f} ms; "
            f"median paired difference {statistics.median(diffs):+.3f} ms; logger {traffic.stats}"
        )
    finally:
        traffic.close()
        client.indices.delete(index=f"{name}-q,{name}-e", ignore_unavailable=True)
        drop_hybrid_index(client, name)


if __name__ == "__main__":
    main()
