"""Fetch both legs of every judged query of a labelled set once, for offline fusion studies.

    .venv/bin/python scripts/fetch_legs.py --dataset ../shared/data/lisa --embedder minilm --analyzer english \
        --text-layout combined --out out/legs/lisa-combined.json

Builds (or, with ``--keep-index``, reuses) the index ``hybrid eval`` would build (same alias, the
normal ingest path, the embedding cache), then, for every query of every split with judgments:
each leg's top ``--depth`` ids with raw scores (one ``_msearch``, :meth:`Searcher.legs`) and the
query's analysed terms with their document frequencies (``_termvectors``), from which every
label-free signal in :mod:`adapter.fusion.choice.signals` is computed offline. The judgments are copied along
so one file holds a set's whole run. Nothing here chooses anything: the choice is
``scripts/select_default.py``'s, from ``hybrid eval`` JSONs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--analyzer", default="english")
    p.add_argument("--text-layout", choices=["fields", "combined"], default="fields")
    p.add_argument("--title-boost", type=float, default=1.0)
    p.add_argument("--no-titles", action="store_true")
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--keep-index", action="store_true")
    p.add_argument("--url")
    p.add_argument("--index", help="the index's name (default: hybrid eval's, eval-<dataset>-<embedder>)")
    p.add_argument("--cache", help="the embedding cache file (default: the adapter's)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    from adapter.engines import responses
    from adapter.models.cache import EmbeddingCache
    from adapter.engines import cluster_for, connect_cluster
    from adapter.models.embedders import load_embedder
    from adapter.evaluation.run import eval_alias, layout_alias, prepare_index
    from adapter.local import LocalNode
    from adapter.evaluation.metrics import load_beir
    from adapter.engines.dsl import field_boosts, termvectors_body
    from adapter.search import Searcher

    root = Path(args.dataset)
    splits = sorted(f.stem for f in (root / "qrels").glob("*.tsv"))
    sets = {s: load_beir(root, s) for s in splits}
    first = sets["test"] if "test" in sets else next(iter(sets.values()))
    embedder = load_embedder(args.embedder)
    client = connect_cluster(args.url or LocalNode(log=lambda m: None).url)
    alias = layout_alias(args.index or eval_alias(first, embedder), args.text_layout)
    started = time.perf_counter()
    boost = args.title_boost if args.text_layout == "fields" else 1.0
    prepare_index(
        cluster_for(client),
        first,
        embedder,
        alias,
        analyzer=args.analyzer,
        title_boost=boost,
        use_titles=not args.no_titles,
        fresh=not args.keep_index,
        progress=True,
        cache=EmbeddingCache(args.cache),
        text_layout=args.text_layout,
    )
    indexed = time.perf_counter() - started
    searcher = Searcher.open(client, alias, embedder, depth=args.depth)
    fields = field_boosts(searcher.text_leg.fields)
    queries = {}
    for split, ds in sets.items():
        for qid, text in ds.queries.items():
            if qid in queries:
                queries[qid]["splits"].append(split)
                continue
            legs = searcher.legs(text, depth=args.depth)
            tv = cluster_for(client).termvectors(
                searcher.info.index, termvectors_body(text, searcher.text_leg), action="termvectors"
            )
            terms = responses.term_statistics(tv, fields)
            queries[qid] = {
                "text": text,
                "splits": [split],
                "bm25": [[d, round(float(s), 6)] for d, s in legs[0]],
                "dense": [[d, round(float(s), 6)] for d, s in legs[1]],
                "fields": [
                    {"field": f.field, "boost": f.boost, "doc_count": f.doc_count, "terms": [list(t) for t in f.terms]}
                    for f in terms
                ],
            }
    out = {
        "dataset": first.name,
        "embedder": embedder.fingerprint.model,
        "analyzer": args.analyzer,
        "text_layout": args.text_layout,
        "title_boost": boost,
        "titles": not args.no_titles,
        "depth": args.depth,
        "index": alias,
        "engine": searcher.caps.engine,
        "version": searcher.caps.version,
        "legacy_bm25": searcher.caps.legacy_bm25,
        "qrels": {s: ds.qrels for s, ds in sets.items()},
        "queries": queries,
        "seconds": {"index": round(indexed, 1), "total": round(time.perf_counter() - started, 1)},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(queries)} queries, index {indexed:.0f} s, total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
