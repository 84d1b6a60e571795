"""What the commands share: the cluster connection, index-spec options, the embedder to use."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import InputError


def with_url(parser):
    parser.add_argument("--url", help="OpenSearch or Elasticsearch URL (env OPENSEARCH_URL; default: the running local node); "
                                      "the engine is asked (env HYBRID_ENGINE=opensearch|elasticsearch skips that)")
    return parser


def client(args):
    """``--url`` / OPENSEARCH_URL, else the running local node (OpenSearch's default release, else
    Elasticsearch's), else localhost:9200; a client for whichever engine answers there
    (:func:`adapter.client.connect_cluster`)."""
    from ..client import connect_cluster

    url = getattr(args, "url", None) or os.environ.get("OPENSEARCH_URL")
    if not url:
        from ..local import LocalNode, NodeConfig

        quiet = lambda m: None  # noqa: E731
        url = LocalNode(log=quiet).url or LocalNode(NodeConfig(engine="elasticsearch"), log=quiet).url
    return connect_cluster(url)


def add_index_spec_options(p) -> None:
    p.add_argument("--embedder", default="minilm", help="minilm, multilingual-e5-small, or st:<hub name or path> (default %(default)s)")
    p.add_argument("--analyzer", default="folding", help="text analyzer: folding (lowercase + accent folding) or a language analyzer such as english, spanish")
    p.add_argument("--space-type", default="cosinesimil", choices=["cosinesimil", "innerproduct", "l2"])
    p.add_argument("--engine", default="lucene", choices=["lucene", "faiss", "nmslib"])
    p.add_argument("--m", type=int, default=16, help="HNSW m")
    p.add_argument("--ef-construction", type=int, default=128, help="HNSW ef_construction")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--title-boost", type=float, default=1.0, help="BM25 weight of title matches relative to text (default 1)")
    p.add_argument("--weights", help="hybrid weights bm25,dense for the normalization pipelines (default 0.5,0.5)")
    p.add_argument("--default-fusion", default=None,
                   help="the fusion of the index's default search pipeline, e.g. min_max-arithmetic_mean or rrf "
                        "(default: the product's default)")


def index_spec(args):
    from ..assets import IndexSpec
    from ..embedders import load_embedder

    embedder = load_embedder(args.embedder)
    from ..fusions import DEFAULT_FUSION, parse_fusion

    default = parse_fusion(args.default_fusion) if args.default_fusion else DEFAULT_FUSION
    return IndexSpec(
        fingerprint=embedder.fingerprint, analyzer=args.analyzer, space_type=args.space_type, engine=args.engine,
        m=args.m, ef_construction=args.ef_construction, shards=args.shards, title_boost=args.title_boost,
        default_fusion=default.name,
    )


def with_allow_model(parser):
    parser.add_argument("--allow-model", action="append", default=[], metavar="SPEC",
                        help="also load this model when the index names it (repeatable; env HYBRID_ALLOWED_MODELS; "
                             "the built-in minilm and multilingual-e5-small are always allowed)")
    return parser


def allowed(args) -> tuple[str, ...]:
    from ..embedders import allowed_models

    return allowed_models(getattr(args, "allow_model", None) or ())


def embedder_for(args, client):
    """``--embedder``, else the one the index records (when it is on the allow-list)."""
    from ..catalog import read_index_info
    from ..embedders import load_embedder, load_index_embedder

    if args.embedder:
        return load_embedder(args.embedder)
    return load_index_embedder(read_index_info(client, args.index).fingerprint.spec, allowed=allowed(args), index=args.index)


def read_queries(path: str) -> list[str]:
    """One query per line, or BEIR ``queries.jsonl`` (a ``text`` field per line)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p} does not exist")
    lines = [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    if p.suffix.lower() in (".jsonl", ".json"):
        try:
            return [json.loads(line)["text"] for line in lines]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{p}: expected one JSON object with a 'text' field per line ({exc})") from exc
    return lines
