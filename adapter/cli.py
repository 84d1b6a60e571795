"""The ``hybrid`` command line. Heavy modules (torch, models, the client) load inside commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import HybridError, InputError


def _client(args):
    """OPENSEARCH_URL / --url, else the running local node, else localhost:9200."""
    from .client import connect

    url = getattr(args, "url", None) or os.environ.get("OPENSEARCH_URL")
    if not url:
        from .local import LocalNode

        url = LocalNode(log=lambda m: None).url
    return connect(url)


def _weights(text: str | None) -> tuple[float, ...] | None:
    if not text:
        return None
    try:
        return tuple(float(w) for w in text.split(","))
    except ValueError:
        raise InputError(f"weights must be comma-separated numbers, e.g. 0.3,0.7; got {text!r}") from None


def _index_spec(args):
    from .assets import IndexSpec
    from .embedders import load_embedder

    embedder = load_embedder(args.embedder)
    spec = IndexSpec(
        fingerprint=embedder.fingerprint, analyzer=args.analyzer, space_type=args.space_type, engine=args.engine,
        m=args.m, ef_construction=args.ef_construction, shards=args.shards, title_boost=args.title_boost,
    )
    return spec


def cmd_render(args) -> int:
    from .assets import IndexNames, render_components, render_index_template, render_pipeline
    from .types import Combination, Fusion, Normalization

    names = IndexNames(args.index)
    out = {}
    if args.what in ("templates", "all"):
        spec = _index_spec(args)
        out["component_templates"] = render_components(names, spec)
        out["index_template"] = {names.index_template: render_index_template(names, spec)}
    if args.what in ("pipelines", "all"):
        weights = _weights(args.weights) or (0.5, 0.5)
        fusions = [Fusion(normalization=n, combination=c, weights=weights) for n in (Normalization.MIN_MAX, Normalization.L2) for c in Combination]
        fusions.append(Fusion.rrf())
        out["pipelines"] = {names.pipeline(f): render_pipeline(f, explanation=True) for f in fusions}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def _print_init(report) -> None:
    for change in report.changes:
        print(f"{change.action:>12}  {change.kind:<18} {change.name}")
        if change.diff:
            print("\n".join("              " + line for line in change.diff.splitlines()))
    print("nothing to change: the cluster already matches the assets" if not report.changed else f"index {report.alias} -> {report.index}")


def cmd_init(args) -> int:
    from .admin import init_index

    extra = {}
    for path in args.pipeline_file or []:
        p = Path(path)
        try:
            extra[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read pipeline asset {p}: {exc}") from exc
    report = init_index(_client(args), args.index, _index_spec(args), weights=_weights(args.weights) or (0.5, 0.5),
                        extra_pipelines=extra, dry_run=args.dry_run)
    _print_init(report)
    return 0


def _embedder_for(args, client):
    from .admin import index_fingerprint, read_index_meta
    from .embedders import load_embedder

    if args.embedder:
        return load_embedder(args.embedder)
    index, mapping = read_index_meta(client, args.index)
    return load_embedder(index_fingerprint(mapping, index).spec)


def cmd_ingest(args) -> int:
    from .cache import CachedEmbedder, EmbeddingCache
    from .ingest import Ingestor
    from .sources import Chunking, FieldMap, count_rows, read_source

    client = _client(args)
    embedder = _embedder_for(args, client)
    if not args.no_cache:
        embedder = CachedEmbedder(embedder, EmbeddingCache(args.cache))
    fields = FieldMap(
        id=args.id_field, title=args.title_field or None, text=args.text_field,
        metadata=tuple(args.metadata_fields.split(",")) if args.metadata_fields else None,
    )
    chunking = Chunking(args.chunk_size, args.chunk_overlap) if args.chunk_size else None
    ingestor = Ingestor(client, args.index, embedder, batch_size=args.batch_size, chunking=chunking, strict=args.strict,
                        failures_path=args.failures, progress=not args.quiet)
    report = ingestor.ingest(read_source(args.path, fields, format=args.format), total=count_rows(args.path))
    print(f"documents: {report.documents}  chunks: {report.chunks}  failures: {len(report.failures)}")
    print(f"embedded: {report.embedded}  from cache: {report.cache_hits}")
    print(f"time: {report.seconds_total:.1f}s ({report.docs_per_second:.1f} docs/s); embedding {report.seconds_embedding:.1f}s, "
          f"indexing {report.seconds_indexing:.1f}s (overlapping)")
    if report.failures:
        for f in report.failures[:10]:
            print(f"  line {f.line}: {f.id}: {f.reason}")
        print(f"all failures written to {report.failures_file}")
    return 1 if report.failures and args.strict else 0


def _parse_filters(items) -> dict:
    filters: dict = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"filters look like field=value, got {item!r}")
        key, value = item.split("=", 1)
        filters[key.strip()] = value.split("|") if "|" in value else value
    return filters


def _fusion(args):
    from .types import Fusion

    if args.fusion is None and args.weights is None and args.rank_constant is None:
        return None
    name = args.fusion or ("rrf" if args.rank_constant else "min_max-arithmetic_mean")
    if name == "rrf":
        return Fusion.rrf(args.rank_constant or 60, _weights(args.weights))
    if "-" not in name:
        raise InputError(f"--fusion is 'rrf' or <normalization>-<combination>, e.g. min_max-arithmetic_mean; got {name!r}")
    norm, comb = name.split("-", 1)
    return Fusion(normalization=norm, combination=comb, weights=_weights(args.weights))


def print_result(result, *, explain: bool) -> None:
    for notice in result.notices:
        print(f"note: {notice}")
    print(f"{result.technique.value} | fused by {result.fused_by} | {len(result.hits)} hits | took {result.took_ms:.0f} ms (server), "
          f"{result.total_ms:.0f} ms (total)")
    header = f"{'#':>3}  {'score':>9}  {'id':<24} title"
    if explain:
        header += "   | bm25 rank/raw/norm/contrib | dense rank/raw/norm/contrib"
    print(header)
    for h in result.hits:
        line = f"{h.rank:>3}  {h.score:>9.4f}  {h.id[:24]:<24} {(h.title or h.text)[:48]}"
        if explain and h.legs:
            cells = []
            for leg in h.legs:
                if leg.rank is None and leg.normalized_score is None:
                    cells.append("-")
                else:
                    cells.append(f"{leg.rank or '-'}/{leg.raw_score if leg.raw_score is not None else float('nan'):.3f}/"
                                 f"{leg.normalized_score if leg.normalized_score is not None else float('nan'):.4f}/{leg.contribution:.4f}")
            line += "   | " + " | ".join(cells)
        if h.rerank_score is not None or h.mmr_score is not None:
            line += f"   (first stage {h.first_stage_score:.4f})"
        print(line)


def cmd_search(args) -> int:
    from dataclasses import asdict

    from .queries import clean_query
    from .search import Searcher

    clean_query(args.query)  # before connecting: an empty query needs no cluster to be refused
    client = _client(args)
    reranker = None
    if args.rerank:
        from .rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker(args.reranker)
    embedder = _embedder_for(args, client) if args.embedder else None
    searcher = Searcher(client, args.index, embedder, reranker=reranker, depth=args.depth, allow_fallback=not args.no_fallback)
    result = searcher.search(
        args.query, technique=args.technique, k=args.k, from_=args.from_, filters=_parse_filters(args.filter),
        fusion=_fusion(args), pipeline=args.pipeline, rerank_top=args.rerank, mmr_lambda=args.mmr, explain=args.explain,
    )
    if args.json:
        data = asdict(result)
        data["technique"] = result.technique.value
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        print_result(result, explain=args.explain)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(url=args.url or os.environ.get("OPENSEARCH_URL"), index=args.index)


def cmd_eval(args) -> int:
    from .embedders import load_embedder
    from .evaluation import eval_alias, format_table, plot, run_eval, write_json
    from .metrics import load_beir
    from .cache import CachedEmbedder, EmbeddingCache

    dataset = load_beir(args.dataset, args.split).limited(args.limit_queries)
    tune = load_beir(args.dataset, args.tune_split).limited(args.limit_queries) if args.tune else None
    inner = load_embedder(args.embedder)
    embedder = CachedEmbedder(inner, EmbeddingCache(args.cache)) if not args.no_cache else inner
    reranker = None
    if args.rerank:
        from .rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker(args.rerank)
    alias = args.index or eval_alias(dataset, inner)
    techniques = [t.strip() for t in args.techniques.split(",")] if args.techniques else None
    report = run_eval(
        _client(args), dataset, embedder, alias=alias, analyzer=args.analyzer, techniques=techniques, reranker=reranker,
        mmr=args.mmr, mmr_candidates=args.mmr_candidates, weights=_weights(args.weights) or (0.5, 0.5), tune_split=tune, depth=args.depth, fresh=not args.keep_index,
        title_boost=args.title_boost, use_titles=not args.no_titles,
        progress=not args.quiet,
    )
    print(format_table(report))
    for name, result in report.results.items():
        for notice in result.notices:
            print(f"note ({name}): {notice}")
    parity = report.settings.get("rrf_parity")
    if parity:
        print(f"server RRF vs client-rrf: {parity['identical_up_to_ties']}/{parity['queries']} queries ranked identically up to the "
              f"order of tied scores ({parity['identical_order']} in exactly the same order)")
    if report.tuning:
        chosen = report.tuning["chosen"]
        print(f"tuned on {report.tuning['split']} ({report.tuning['queries']} queries): {chosen}")
        out = Path(args.tune_output or f"tuned-{dataset.name}.json")
        out.write_text(json.dumps(report.tuning["pipeline"], indent=2) + "\n")
        print(f"winning search pipeline written to {out}; apply it with: hybrid init --index <name> ... --pipeline-file {out}")
    if args.json:
        write_json(report, args.json)
        print(f"results written to {args.json}")
    if args.plot:
        plot(report, args.plot)
        print(f"chart written to {args.plot}")
    return 0


def _read_queries(path: str) -> list[str]:
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


def cmd_advise(args) -> int:
    from .advisor import advise

    advice = advise(_read_queries(args.queries))
    for c in advice.queries:
        print(f"{c.kind:>7}  {c.text[:70]:<70}  {'; '.join(c.reasons)}")
    print(f"\n{len(advice.queries)} queries: {advice.natural_share:.0%} natural language, {advice.exact_share:.0%} exact terms")
    print(f"recommendation: {advice.recommendation} ({advice.reason})")
    data = None
    if args.results:
        data = json.loads(Path(args.results).read_text())
    elif args.dataset:  # judged queries given: measure the candidates now
        from .embedders import load_embedder
        from .evaluation import eval_alias, run_eval
        from .metrics import load_beir

        dataset = load_beir(args.dataset, args.split)
        embedder = load_embedder(args.embedder)
        report = run_eval(_client(args), dataset, embedder, alias=eval_alias(dataset, embedder), analyzer=args.analyzer, fresh=False,
                          techniques=["bm25", "dense", "hybrid-min_max-arithmetic_mean", "hybrid-rrf"], progress=False)
        data = report.as_json()
    if data:
        results = data["results"]
        best = max(results, key=lambda n: results[n]["ndcg@10"])
        base = max((n for n in results if "+" not in n), key=lambda n: results[n]["ndcg@10"])
        verdict = "matches" if advice.matches(base) else "does not match"
        print(f"measured on {data['dataset']} {data['split']}: best technique {base} (nDCG@10 {results[base]['ndcg@10']:.4f}); "
              f"the recommendation {verdict} it" + (f" (best with post-processing: {best})" if best != base else ""))
    return 0


def _add_index_spec_options(p) -> None:
    p.add_argument("--embedder", default="minilm", help="minilm, multilingual-e5-small, or st:<hub name or path> (default %(default)s)")
    p.add_argument("--analyzer", default="folding", help="text analyzer: folding (lowercase + accent folding) or a language analyzer such as english, spanish")
    p.add_argument("--space-type", default="cosinesimil", choices=["cosinesimil", "innerproduct", "l2"])
    p.add_argument("--engine", default="lucene", choices=["lucene", "faiss", "nmslib"])
    p.add_argument("--m", type=int, default=16, help="HNSW m")
    p.add_argument("--ef-construction", type=int, default=128, help="HNSW ef_construction")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--title-boost", type=float, default=1.0, help="BM25 weight of title matches relative to text (default 1)")
    p.add_argument("--weights", help="hybrid weights bm25,dense for the normalization pipelines (default 0.5,0.5)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hybrid", description="OpenSearch-native hybrid search (BM25 + k-NN).")
    sub = parser.add_subparsers(dest="command", required=True)

    from .local.command import add_parser as add_local_parser

    add_local_parser(sub)

    def with_url(p):
        p.add_argument("--url", help="OpenSearch URL (env OPENSEARCH_URL; default: the running local node)")
        return p

    render = sub.add_parser("render", help="print the index templates and search pipelines the assets render to (no cluster)")
    render.add_argument("--index", required=True)
    render.add_argument("--what", choices=["templates", "pipelines", "all"], default="all")
    _add_index_spec_options(render)
    render.set_defaults(func=cmd_render)

    init = with_url(sub.add_parser("init", help="apply templates, create <index>-v1 behind the alias <index>, put search pipelines"))
    init.add_argument("--index", required=True, help="alias name; the index is <index>-v1")
    _add_index_spec_options(init)
    init.add_argument("--pipeline-file", action="append", help="extra search pipeline asset (JSON), applied as <index>-<file stem>")
    init.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    init.set_defaults(func=cmd_init)

    ingest = with_url(sub.add_parser("ingest", help="embed and index JSONL, CSV or a folder of .txt/.md files"))
    ingest.add_argument("path")
    ingest.add_argument("--index", required=True)
    ingest.add_argument("--embedder", help="default: the embedder recorded in the index")
    ingest.add_argument("--format", choices=["jsonl", "csv", "folder"])
    ingest.add_argument("--id-field", help="default: the first of id, _id, doc_id")
    ingest.add_argument("--title-field", default="title")
    ingest.add_argument("--text-field", default="text")
    ingest.add_argument("--metadata-fields", help="comma-separated fields kept as metadata (default: every other field)")
    ingest.add_argument("--chunk-size", type=int, help="split texts into chunks of this many words")
    ingest.add_argument("--chunk-overlap", type=int, default=40, help="words shared by consecutive chunks (default %(default)s)")
    ingest.add_argument("--batch-size", type=int, default=64, help="documents embedded per batch (default %(default)s)")
    ingest.add_argument("--strict", action="store_true", help="any bad row is fatal, before anything is written")
    ingest.add_argument("--failures", help="where to write failed rows (JSONL); default ingest-failures-<index>-<time>.jsonl")
    ingest.add_argument("--cache", help="embedding cache file (default ~/.cache/opensearch-hybrid/embeddings.sqlite)")
    ingest.add_argument("--no-cache", action="store_true", help="always call the model")
    ingest.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(func=cmd_ingest)

    search = with_url(sub.add_parser("search", help="search with bm25, dense, hybrid or client-rrf (+ rerank, MMR)"))
    search.add_argument("query")
    search.add_argument("--index", required=True)
    search.add_argument("-t", "--technique", default="hybrid", help="bm25, dense, hybrid or client-rrf (default %(default)s)")
    search.add_argument("-k", type=int, default=10, help="hits to return (default %(default)s)")
    search.add_argument("--from", dest="from_", type=int, default=0, help="offset for pagination")
    search.add_argument("--filter", action="append", help="field=value (value1|value2 for any of); applied to both legs")
    search.add_argument("--fusion", help="hybrid fusion: min_max-arithmetic_mean, l2-harmonic_mean, ..., or rrf")
    search.add_argument("--weights", help="per-leg weights bm25,dense")
    search.add_argument("--rank-constant", type=int, help="RRF rank constant (default 60)")
    search.add_argument("--pipeline", help="a named search pipeline to fuse with")
    search.add_argument("--depth", type=int, default=100, help="candidates per leg (default %(default)s)")
    search.add_argument("--rerank", type=int, nargs="?", const=50, metavar="N", help="rerank the top N (default 50) with a cross-encoder")
    search.add_argument("--reranker", default="cross-encoder/ms-marco-MiniLM-L-6-v2", help="cross-encoder name or path")
    search.add_argument("--mmr", type=float, nargs="?", const=0.5, metavar="LAMBDA",
                        help="diversify with MMR (default lambda 0.5; 1 = relevance only, 0 = diversity only)")
    search.add_argument("--embedder", help="default: the embedder recorded in the index")
    search.add_argument("--explain", action="store_true", help="per-leg rank, raw score, normalised score, weight, contribution")
    search.add_argument("--no-fallback", action="store_true", help="fail instead of falling back to client-rrf")
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=cmd_search)

    ev = with_url(sub.add_parser("eval", help="score every technique on a BEIR dataset (nDCG@10, Recall@10/100, MRR@10, latency)"))
    ev.add_argument("--dataset", required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    ev.add_argument("--split", default="test")
    ev.add_argument("--embedder", default="minilm")
    ev.add_argument("--analyzer", default="english", help="text analyzer of the eval index (default %(default)s)")
    ev.add_argument("--index", help="alias of the eval index (default eval-<dataset>-<embedder>)")
    ev.add_argument("--title-boost", type=float, default=1.0, help="BM25 weight of title matches (default 1)")
    ev.add_argument("--no-titles", action="store_true", help="ignore the corpus titles (e.g. xquad-es, whose titles are English slugs)")
    ev.add_argument("--techniques", help="comma-separated subset, e.g. bm25,dense,hybrid-rrf")
    ev.add_argument("--weights", help="bm25,dense weights for the normalization techniques (default 0.5,0.5)")
    ev.add_argument("--depth", type=int, default=100, help="candidates per leg (default %(default)s)")
    ev.add_argument("--rerank", metavar="MODEL", help="also run each technique followed by this cross-encoder (top 100)")
    ev.add_argument("--mmr", type=float, metavar="LAMBDA", help="also run each technique followed by MMR (top 10 picked by MMR)")
    ev.add_argument("--mmr-candidates", type=int, default=30, help="first-stage hits MMR picks the top 10 from (default %(default)s)")
    ev.add_argument("--tune", action="store_true", help="tune hybrid weights / RRF rank constant on --tune-split")
    ev.add_argument("--tune-split", default="train")
    ev.add_argument("--tune-output", help="where the winning pipeline asset goes (default tuned-<dataset>.json)")
    ev.add_argument("--limit-queries", type=int, help="only the first N queries (quick runs)")
    ev.add_argument("--json", help="write results as JSON (schema in docs/EVALUATION.md)")
    ev.add_argument("--plot", help="write a PNG chart of quality and latency")
    ev.add_argument("--keep-index", action="store_true", help="reuse a complete eval index instead of rebuilding it")
    ev.add_argument("--cache", help="embedding cache file")
    ev.add_argument("--no-cache", action="store_true")
    ev.add_argument("-q", "--quiet", action="store_true")
    ev.set_defaults(func=cmd_eval)

    adv = sub.add_parser("advise", help="classify queries (natural language vs exact terms) and recommend a technique")
    adv.add_argument("queries", help="one query per line, or BEIR queries.jsonl")
    adv.add_argument("--results", help="a `hybrid eval --json` file: say whether the recommendation matches the best technique")
    adv.add_argument("--dataset", help="or a BEIR folder with qrels: measure bm25, dense and hybrid on it now, then compare")
    adv.add_argument("--split", default="test")
    adv.add_argument("--embedder", default="minilm", help="with --dataset (default %(default)s)")
    adv.add_argument("--analyzer", default="english", help="with --dataset (default %(default)s)")
    adv.add_argument("--url", help="with --dataset: OpenSearch URL")
    adv.set_defaults(func=cmd_advise)

    demo = with_url(sub.add_parser("demo", help="start a local node, index the seed's Spanish support documents, run hybrid searches"))
    demo.add_argument("--index", default="demo-support")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except HybridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
