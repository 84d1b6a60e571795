"""What each way of guarding the metadata mapping does to foreign writers and to the features that
use metadata (filters, facets, collapse by parent), measured on a real node (docs/INTEROP.md).

    HYBRID_CACHE_DIR=... python scripts/measure_metadata_mapping.py [--url URL] [--json out/metadata-mapping.json]

Four variants of one index of the sample documents (12, metadata category and lang), each then
written into by the stock LlamaIndex store (``add``, one node) and the stock LangChain store
(``add_texts``, metadata ``{"source": "langchain"}``), and by the adapter's ingest with a key it
has not written before (``region``):

- ``dynamic: true`` (before 0.2: strings mapped as keyword by a dynamic template);
- ``dynamic: false`` (nothing undeclared is mapped; the adapter declares nothing);
- ``strict``, keys declared up front (a metadata schema fixed before the ingest, as a spec would);
- ``strict``, keys declared by the adapter's ingest (what ``hybrid init`` makes now).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERY = "¿cómo devuelvo un pedido?"
VARIANTS = ("dynamic: true", "dynamic: false", "strict, declared up front", "strict, declared by the ingest")


def metadata_keys(client, alias: str) -> list[str]:
    (mapping,) = client.indices.get_mapping(index=alias).values()
    return sorted(mapping["mappings"]["properties"]["metadata"].get("properties", {}))


def variant_index(client, name: str, variant: str, e5) -> None:
    from adapter.admin.init import init_index
    from adapter.index.assets import IndexSpec
    from adapter.index.catalog import read_index_info

    init_index(client, name, IndexSpec(e5.fingerprint, analyzer="spanish"))
    index = read_index_info(client, name).index
    if variant == "dynamic: true":
        client.indices.put_mapping(
            index=index,
            body={
                "dynamic_templates": [
                    {
                        "metadata_strings": {
                            "path_match": "metadata.*",
                            "match_mapping_type": "string",
                            "mapping": {"type": "keyword"},
                        }
                    }
                ],
                "properties": {"metadata": {"type": "object", "dynamic": True}},
            },
        )
    elif variant == "dynamic: false":
        client.indices.put_mapping(index=index, body={"properties": {"metadata": {"type": "object", "dynamic": False}}})
    elif variant == "strict, declared up front":
        client.indices.put_mapping(
            index=index,
            body={
                "properties": {
                    "metadata": {"properties": {"category": {"type": "keyword"}, "lang": {"type": "keyword"}}}
                }
            },
        )


def ingest(client, name: str, variant: str, e5, rows) -> int:
    """Rows written by the adapter's ingest (declaring nothing unless the variant is the adapter's)."""
    from adapter.index.catalog import read_index_info
    from adapter.ingest.ingestor import Ingestor

    info = read_index_info(client, name)
    if variant != "strict, declared by the ingest":
        info = replace(info, metadata_strict=False)  # the ingest maps nothing itself
    report = Ingestor(
        client, info, e5, progress=False, failures_path=ROOT / "out" / f"metadata-{name}-failures.jsonl"
    ).ingest(rows)
    return report.chunks


def foreign_writes(client, name: str, e5) -> dict[str, str]:
    from langchain_community.vectorstores import OpenSearchVectorSearch
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.opensearch import OpensearchVectorClient, OpensearchVectorStore

    from adapter.engines import describe_url
    from adapter.integrations.langchain import EmbedderEmbeddings

    url, out = describe_url(client), {}
    try:
        store = OpensearchVectorStore(
            OpensearchVectorClient(url, name, 384, embedding_field="embedding", text_field="text")
        )
        store.add(
            [
                TextNode(
                    id_="from-llamaindex",
                    text="Texto de LlamaIndex",
                    metadata={"lang": "es"},
                    embedding=e5.embed_documents(["Texto de LlamaIndex"])[0].tolist(),
                )
            ]
        )
        out["llamaindex add"] = "landed"
    except Exception as exc:  # noqa: BLE001 - what the store raises is the measurement
        out["llamaindex add"] = "refused" if "strict" in str(exc) else f"failed: {type(exc).__name__}"
    try:
        lc = OpenSearchVectorSearch(opensearch_url=url, index_name=name, embedding_function=EmbedderEmbeddings(e5))
        lc.add_texts(
            ["Texto de LangChain"],
            metadatas=[{"source": "langchain"}],
            ids=["from-langchain"],
            vector_field="embedding",
            text_field="text",
        )
        out["langchain add_texts"] = "landed"
    except Exception as exc:  # noqa: BLE001
        out["langchain add_texts"] = "refused" if "strict" in str(exc) else f"failed: {type(exc).__name__}"
    client.indices.refresh(index=name)
    return out


def features(client, name: str, e5) -> dict[str, object]:
    from adapter.index.check import check_index
    from adapter.search.page import Collapse, SearchOptions
    from adapter.search import Searcher

    searcher = Searcher.open(client, name, e5)
    filtered = searcher.search(QUERY, technique="bm25", k=50, filters={"category": "devoluciones"})
    region = searcher.search("pedido", technique="bm25", k=50, filters={"region": "norte"})
    faceted = searcher.search(QUERY, k=10, options=SearchOptions(facets=("category",)))
    collapsed = searcher.search(QUERY, k=10, options=SearchOptions(collapse=Collapse()))
    report = check_index(client, name, e5, sample=5)
    return {
        "filter category=devoluciones (bm25 hits)": len(filtered.hits),
        "filter region=norte (the new key)": len(region.hits),
        "facet category (buckets)": len(faceted.aggregations["category"].buckets),
        "collapse by parent_id (hits, distinct parents)": f"{len(collapsed.hits)}, "
        f"{len({h.source.get('parent_id') for h in collapsed.hits})}",
        "hybrid check: written without the adapter": report.foreign_total,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", help="default: the running local node")
    parser.add_argument("--json", default="out/metadata-mapping.json")
    args = parser.parse_args(argv)
    from importlib import resources

    from adapter import connect
    from adapter.models.embedders import load_embedder
    from adapter.local import LocalNode
    from adapter.ingest.sources import FieldMap, SourceDoc, read_jsonl

    client = connect(args.url or LocalNode(log=lambda m: None).url)
    e5 = load_embedder("multilingual-e5-small")
    with resources.as_file(resources.files("adapter") / "data" / "support_es.jsonl") as path:
        rows = list(read_jsonl(path, FieldMap(metadata=("category", "lang"))))
    extra = [
        SourceDoc("region-1", "Pedido enviado a la zona norte", "Zona norte", {"category": "envios", "region": "norte"})
    ]
    results = {}
    for i, variant in enumerate(VARIANTS):
        name = f"measure-metadata-{i}"
        _drop(client, name)
        try:
            variant_index(client, name, variant, e5)
            written = ingest(client, name, variant, e5, rows)
            written_extra = ingest(client, name, variant, e5, extra)
            before = metadata_keys(client, name)
            writes = foreign_writes(client, name, e5)
            after = metadata_keys(client, name)
            results[variant] = {
                "adapter rows written": written,
                "adapter row with a new key": "landed" if written_extra else "refused",
                **writes,
                "metadata keys mapped (after the adapter)": before,
                "keys the foreign writers added": sorted(set(after) - set(before)),
                **features(client, name, e5),
            }
        finally:
            _drop(client, name)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    keys = list(next(iter(results.values())))
    print("| | " + " | ".join(VARIANTS) + " |")
    print("|---" * (len(VARIANTS) + 1) + "|")
    for key in keys:
        cells = [
            ", ".join(v) or "none" if isinstance(v, list) else str(v)
            for v in (results[variant][key] for variant in VARIANTS)
        ]
        print(f"| {key} | " + " | ".join(cells) + " |")
    return 0


def _drop(client, name: str) -> None:
    from tests.conftest import drop_hybrid_index

    drop_hybrid_index(client, name)


if __name__ == "__main__":
    sys.exit(main())
