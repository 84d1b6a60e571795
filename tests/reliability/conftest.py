"""The reliability tier (``make reliability``): our own node, killed, starved and loaded.

One node per session, with a tiny write queue (``thread_pool.write.queue_size``) so that bulk
requests meet 429s; the same node is put behind a fault-injecting proxy, loaded with concurrent
searchers, and finally killed with SIGKILL mid-ingest and restarted.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import HashingEmbedder
from tests.support.nodes import own_node

OUT = Path(__file__).resolve().parents[2] / "out" / "reliability"  # figures for docs/RELIABILITY.md
WRITE_QUEUE = {"thread_pool.write.size": "1", "thread_pool.write.queue_size": "1"}


@pytest.fixture(scope="session")
def node():
    node = own_node("faults", settings=WRITE_QUEUE)
    node.up()
    yield node
    node.down()


@pytest.fixture(scope="session")
def embedder():
    return HashingEmbedder(32)


@pytest.fixture
def cli_embedder(monkeypatch, embedder):
    """`hybrid ingest --embedder test:hashing` loads the test embedder (the subject is the node, not the model)."""
    import adapter.models.embedders as embedders

    real = embedders.load_embedder
    monkeypatch.setattr(
        embedders, "load_embedder", lambda spec, **o: embedder if spec == "test:hashing" else real(spec, **o)
    )


def connect_to(node, **options):
    from adapter.engines import connect

    return connect(node.url, **options)


def make_index(client, alias, embedder, *, shards=1):
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec

    client.indices.delete(index=f"{alias}-v*", ignore=[404])
    init_index(client, alias, IndexSpec(embedder.fingerprint, shards=shards))
    return alias


def corpus(path: Path, n: int, *, prefix: str = "doc") -> Path:
    words = ("reembolso", "pedido", "factura", "error", "envío", "cuenta", "tarjeta", "devolución", "pago", "clave")
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            text = " ".join(words[(i * 7 + j) % len(words)] for j in range(8 + i % 5)) + f" E-{i:05d}"
            fh.write(
                json.dumps(
                    {
                        "id": f"{prefix}-{i:05d}",
                        "title": f"Documento {i}",
                        "text": text,
                        "lang": "es" if i % 2 else "pl",
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    return path


def expected_checksums(path: Path, embedder) -> dict[str, str]:
    """id -> checksum of the document the index should hold for each row (vector included)."""
    from adapter.index.documents import DocumentLayout, build_document, embedding_text

    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        vector = embedder.embed_documents([embedding_text(row["title"], row["text"])])[0]
        # embedded_by: the ingest stamps each entry with its model's fingerprint key (the index contract, issue 22).
        doc = build_document(
            DocumentLayout(),
            text=row["text"],
            vector=vector,
            parent_id=row["id"],
            title=row["title"],
            metadata={"lang": row["lang"]},
            embedded_by=embedder.fingerprint.key,
        )
        out[row["id"]] = checksum(doc)
    return out


def checksum(source) -> str:
    # Vectors at float32: OpenSearch 3.x rebuilds a knn_vector's _source from the index (derived
    # source), so it answers 0.5345223 for the 0.534522294998169 that was sent.
    source = {k: [float(np.float32(x)) for x in v] if k == "embedding" else v for k, v in source.items()}
    return hashlib.sha256(json.dumps(source, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def indexed_checksums(client, alias: str) -> dict[str, str]:
    """id -> checksum of every document in the index (paged by search_after)."""
    client.indices.refresh(index=alias)
    out: dict[str, str] = {}
    body = {"size": 1000, "query": {"match_all": {}}, "sort": [{"parent_id": "asc"}, {"chunk_index": "asc"}]}
    while True:
        page = client.search(index=alias, body=body)["hits"]["hits"]
        for h in page:
            out[h["_id"]] = checksum(h["_source"])
        if len(page) < 1000:
            return out
        body["search_after"] = page[-1]["sort"]


def write_figures(name: str, figures: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\n{name}: {json.dumps(figures)}")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:30]
