"""Running techniques over a labelled dataset: build the index, search every query, score.

The corpus goes into a fresh index through the normal ingest path (the embedding cache makes a
second run cheap). Query vectors are computed once per query and passed to every technique, so
the latencies here are retrieval only; query embedding is measured in the benchmarks.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from adapter.engines import Cluster
from adapter.engines.capabilities import Capabilities
from adapter.engines.engine import measured_kind
from adapter.engines.registry import engine_named
from adapter.engines.render import client_only
from adapter.errors import AssetError, InputError
from adapter.evaluation.adaptive import learn_policy
from adapter.evaluation.metrics import Dataset, evaluate, per_query
from adapter.evaluation.noise import standard_error
from adapter.evaluation.perquery import TOP, FusionUsed, QueryRun
from adapter.evaluation.report import MMR_TOP, EvalReport, TechniqueResult, TechniqueSpec, Tuning
from adapter.evaluation.tune import fetch_legs, tune_fusion
from adapter.fusion import (
    DEFAULT_WEIGHTS,
    LEGS,
    RRF,
    Normalization,
    ScoreNormalization,
    fuse,
    same_ranking_up_to_ties,
)
from adapter.fusion.choice.advise import classify
from adapter.admin.calibrate import measure_calibration, store_adaptive
from adapter.fusion.choice.defaults import default_technique
from adapter.fusion.choice.learned import LearnedFusion
from adapter.fusion.choice.learned import select as select_model
from adapter.fusion.choice.policy import DEFAULT_POLICY, AdaptivePolicy, Calibration
from adapter.fusion.choice.values import ADAPTIVE
from adapter.index.assets import TEXT_LAYOUTS, IndexSpec
from adapter.index.catalog import alias_indices
from adapter.index.documents import PARENT_FIELD
from adapter.index.language import DEFAULT_ANALYZER, AnalysisChoice
from adapter.admin.init import init_index
from adapter.ingest.sources import Chunking, FieldMap, RowError, SourceDoc, read_jsonl
from adapter.models.cache import EmbeddingCache
from adapter.models.embedders import Embedder
from adapter.search import Searcher
from adapter.search.page import Collapse, MMRPlace, SearchOptions
from adapter.search.rerank import Reranker
from adapter.search.results import Hit, SearchResult, Technique

LEARNED = "learned"
LEARNED_FUSION_ROW = "client-learned"  # the learned fusion model (adapter.fusion.choice.learned), fused in the client

Ranking = dict[str, list[tuple[str, float]]]


def standard_techniques(
    caps: Capabilities,
    *,
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    rerank: bool = False,
    mmr: float | None = None,
    mmr_candidates: int = 30,
    policy: AdaptivePolicy | None = DEFAULT_POLICY,
    collapse: bool = False,
) -> list[TechniqueSpec]:
    """bm25, dense, every server fusion the cluster has, client-rrf, each fusion only the client runs
    (``client-dbsf``), hybrid-adaptive (the product's default, :func:`product_default`, is one of these rows on
    every cluster); then +rerank /
    +mmr (MMR in the client; ``dense+server-mmr``: the k-NN plugin's, where the cluster runs it) /
    +collapse (one hit per document) variants."""
    base = [TechniqueSpec("bm25", Technique.BM25), TechniqueSpec("dense", Technique.DENSE)]
    base += [TechniqueSpec(f"hybrid-{f.name}", Technique.HYBRID, f) for f in caps.fusions(tuple(weights))]
    base.append(TechniqueSpec("client-rrf", Technique.CLIENT_RRF, RRF()))
    base += [TechniqueSpec(f"client-{f.name}", Technique.CLIENT, f) for f in client_only()]  # DBSF: no server runs it
    # The adaptive rows on every cluster: a search runs the policy's weights on the server where it can fuse them,
    # else in the client with the server's formula (Elasticsearch without the linear retriever), and so does its row.
    if policy is not None:
        if caps.z_score and policy.normalization == "auto":
            # Both forms of the policy, each explicit (the selection chooses between them from these rows,
            # adapter.fusion.choice.defaults): on z_score (hybrid-adaptive), and on min_max, what 2.19 runs.
            base.append(
                TechniqueSpec(
                    f"hybrid-{ADAPTIVE}", Technique.HYBRID, replace(policy, normalization=Normalization.Z_SCORE.value)
                )
            )
            variant = replace(policy, normalization=Normalization.MIN_MAX.value, name=f"{policy.name}-min_max")
            base.append(TechniqueSpec(f"hybrid-{ADAPTIVE}-min_max", Technique.HYBRID, variant))
        else:
            base.append(TechniqueSpec(f"hybrid-{ADAPTIVE}", Technique.HYBRID, policy))
    out = list(base)
    if rerank:
        out += [TechniqueSpec(f"{s.name}+rerank", s.technique, s.fusion, rerank=True) for s in base]
    if mmr is not None:
        out += [
            TechniqueSpec(f"{s.name}+mmr", s.technique, s.fusion, mmr=mmr, mmr_candidates=mmr_candidates) for s in base
        ]
        if caps.server_mmr_enabled:
            out.append(
                TechniqueSpec(
                    "dense+server-mmr",
                    Technique.DENSE,
                    mmr=mmr,
                    mmr_candidates=mmr_candidates,
                    mmr_place=MMRPlace.SERVER,
                )
            )
    if collapse:
        out += [TechniqueSpec(f"{s.name}+collapse", s.technique, s.fusion, collapse=True) for s in base]
    return out


def eval_alias(dataset: Dataset, embedder: Embedder) -> str:
    """The default name of a dataset's eval index: eval-<dataset>-<embedder spec>."""
    return (
        f"eval-{dataset.name}-{embedder.fingerprint.spec}".lower().replace(":", "-").replace("/", "-").replace("_", "-")
    )


def eval_analysis(
    cluster: Cluster, dataset: Dataset, alias: str | None = None, *, use_titles: bool = True
) -> AnalysisChoice:
    """The analyzer and embedder of an evaluation's index when none is named: the existing index's
    (``alias``, when given and it exists), else the one rule's for the corpus's documents, as ``hybrid init``
    and the first ingest choose them (:mod:`adapter.index.language`)."""
    from adapter.index.choose import choose_analysis
    from adapter.index.live import live_spec

    live = live_spec(cluster, alias) if alias else None
    if live is not None:
        return AnalysisChoice(live.analyzer, live.embedder, f"the existing index {alias}'s")
    rows = read_jsonl(dataset.corpus, FieldMap(title="title" if use_titles else None, metadata=()))
    texts = (f"{r.title}\n{r.text}" for r in rows if isinstance(r, SourceDoc))
    return choose_analysis(cluster, texts, source=f"{dataset.name}'s corpus")


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


@dataclass(frozen=True)
class PreparedIndex:
    alias: str
    skipped: tuple[str, ...] = ()  # ids of corpus documents with neither title nor text, left out


def prepare_index(
    cluster: Cluster,
    dataset: Dataset,
    embedder: Embedder,
    alias: str,
    *,
    analyzer: str,
    title_boost: float = 1.0,
    use_titles: bool = True,
    fresh: bool = True,
    progress: bool = True,
    cache: EmbeddingCache | None = None,
    text_layout: str = "fields",
    shards: int = 1,
    chunk_words: int | None = None,
) -> PreparedIndex:
    """A fresh hybrid index of the dataset's corpus, filled through the normal ingest path.

    Documents with neither title nor text are left out with a notice (classic collections have a few; they can
    never be retrieved by text anyway); any other bad row is an error naming its failures file,
    which goes to the temporary folder, not the working directory.
    """
    from adapter.ingest.ingestor import Ingestor

    old = alias_indices(cluster, alias) if fresh else []
    if old:  # by name: Elasticsearch refuses wildcard deletes (action.destructive_requires_name)
        cluster.delete_indices(old, action=f"deleting the old {alias}")
    init_index(
        cluster,
        alias,
        IndexSpec(
            embedder.fingerprint, analyzer=analyzer, title_boost=title_boost, text_layout=text_layout, shards=shards
        ),
    )
    have = cluster.count(alias)
    rows = list(read_jsonl(dataset.corpus, FieldMap(title="title" if use_titles else None, metadata=())))
    skipped = tuple(str(r.id) for r in rows if isinstance(r, RowError) and r.empty)
    rows = [r for r in rows if not (isinstance(r, RowError) and r.empty)]
    chunking = Chunking(chunk_words, chunk_words // 5) if chunk_words else None
    expected = sum(max(1, len(chunking.split(r.text))) if chunking else 1 for r in rows if isinstance(r, SourceDoc))
    if have != expected:
        failures = Path(tempfile.gettempdir()) / f"hybrid-eval-failures-{alias}.jsonl"
        report = Ingestor.open(
            cluster, alias, embedder, cache=cache, progress=progress, failures_path=failures, chunking=chunking
        ).ingest(rows, total=len(rows))
        if report.failures:
            raise InputError(f"{report.failed} corpus documents failed to index (see {report.failures_file})")
    return PreparedIndex(alias, skipped)


def run_technique(
    searcher: Searcher,
    queries: dict[str, str],
    vectors: dict[str, np.ndarray],
    spec: TechniqueSpec,
    *,
    k: int = 100,
    depth: int = 100,
    rerank_top: int = 50,
    progress: bool = True,
) -> tuple[Ranking, list[float], list[float], set[str], dict[str, QueryRun]]:
    """Every query through one technique: the rankings, client and server milliseconds (in query
    order), the notices, and each query's run as the report keeps it (:mod:`.perquery`)."""
    from adapter._progress import track

    rankings: Ranking = {}
    client_ms: list[float] = []
    server_ms: list[float] = []
    notices: set[str] = set()
    kept: dict[str, QueryRun] = {}
    # Whole texts, as in every earlier report: the rankings are measured, and excerpting 100 hits a
    # query would move the latencies the reports compare.
    options = SearchOptions(collapse=Collapse() if spec.collapse else None, mmr=spec.mmr_place, full_text=True)
    for qid, text in track(queries.items(), spec.name, total=len(queries), enabled=progress):
        result = searcher.search(
            text,
            technique=spec.technique,
            k=k,
            depth=depth,
            fusion=spec.fusion,
            query_vector=vectors[qid],
            rerank_top=max(rerank_top, k) if spec.rerank else None,
            options=options,
        )
        ranked = documents(result.hits)
        named = _titles(result.hits)
        if spec.mmr is not None:
            result, ranked = _mmr_first(searcher, text, vectors[qid], spec, depth, options, ranked)
            named.update(_titles(result.hits))
        rankings[qid] = ranked
        client_ms.append(result.total_ms or 0.0)
        server_ms.append(result.took_ms or 0.0)
        notices.update(result.notices)
        kept[qid] = QueryRun(
            tuple(ranked),
            client_ms[-1],
            server_ms[-1],
            FusionUsed.of(result.fusion) if result.fusion else None,
            tuple(named.get(d, "") for d, _ in ranked[:TOP]),
        )
    return rankings, client_ms, server_ms, notices, kept


def _mmr_first(
    searcher: Searcher,
    text: str,
    vector: np.ndarray,
    spec: TechniqueSpec,
    depth: int,
    options: SearchOptions,
    ranked: list[tuple[str, float]],
) -> tuple[SearchResult, list[tuple[str, float]]]:
    """The MMR search and the ranking as used: MMR picks the final MMR_TOP from the top mmr_candidates; the rest of
    the first-stage list (``ranked``) follows unchanged, so Recall@100 stays comparable."""
    result = searcher.search(
        text,
        technique=spec.technique,
        k=MMR_TOP,
        depth=depth,
        fusion=spec.fusion,
        query_vector=vector,
        mmr_lambda=spec.mmr,
        mmr_candidates=spec.mmr_candidates,
        options=options,
    )
    picked = documents(result.hits)
    chosen = {d for d, _ in picked}
    return result, picked + [(d, sc) for d, sc in ranked if d not in chosen]


def _titles(hits: Sequence[Hit]) -> dict[str, str]:
    return {str(h.source.get(PARENT_FIELD, h.id)): h.title for h in hits if h.title}


def by_class(dataset: Dataset, ranked: Ranking) -> dict[str, dict[str, float]]:
    """The metrics per query class (adapter.fusion.choice.advise: exact-term vs natural language), with counts."""
    kinds = {qid: classify(text).kind for qid, text in dataset.queries.items()}
    out = {}
    for kind in ("exact", "natural"):
        qids = [q for q in dataset.qrels if kinds.get(q) == kind]
        if qids:
            metrics = evaluate(
                {q: dataset.qrels[q] for q in qids}, {q: [d for d, _ in ranked.get(q, [])] for q in qids}
            )
            out[kind] = {**{m: round(v, 4) for m, v in metrics.items()}, "queries": len(qids)}
    return out


def documents(hits: Sequence[Hit]) -> list[tuple[str, float]]:
    """The documents of ranked hits, each at its best chunk's place (qrels judge documents; an
    index of whole documents has one chunk each, its id the document's)."""
    seen: dict[str, float] = {}
    for h in hits:
        seen.setdefault(str(h.source.get(PARENT_FIELD, h.id)), h.score)
    return list(seen.items())


def evaluate_techniques(
    searcher: Searcher,
    dataset: Dataset,
    specs: Sequence[TechniqueSpec],
    *,
    k: int = 100,
    depth: int = 100,
    progress: bool = True,
) -> tuple[dict[str, TechniqueResult], dict[str, Ranking]]:
    vectors = {qid: searcher.embedder.embed_query(text) for qid, text in dataset.queries.items()}
    results, runs = {}, {}
    for spec in specs:
        ranked, client_ms, server_ms, notices, kept = run_technique(
            searcher, dataset.queries, vectors, spec, k=k, depth=depth, progress=progress
        )
        runs[spec.name] = ranked
        by_query = per_query(dataset.qrels, {q: [d for d, _ in hits] for q, hits in ranked.items()})
        ndcg = tuple(by_query[q] for q in sorted(by_query))
        results[spec.name] = TechniqueResult(
            metrics=evaluate(dataset.qrels, {q: [d for d, _ in hits] for q, hits in ranked.items()}),
            latency_ms_p50=_percentile(client_ms, 50),
            latency_ms_p95=_percentile(client_ms, 95),
            server_ms_p50=_percentile(server_ms, 50),
            server_ms_p95=_percentile(server_ms, 95),
            queries=len(ranked),
            notices=tuple(sorted(notices)),
            spec=spec,
            by_class=by_class(dataset, ranked),
            per_query=kept,
            ndcg_by_query=ndcg,
            standard_error=standard_error(f"{dataset.name} {dataset.split}", ndcg),
        )
    return results, runs


def rrf_parity(server: Ranking, client: Ranking) -> dict[str, int]:
    """How many queries the server's RRF and the client fallback rank identically (and up to ties)."""
    return {
        "queries": len(server),
        "identical_order": sum(1 for q in server if [d for d, _ in server[q]] == [d for d, _ in client.get(q, [])]),
        "identical_up_to_ties": sum(1 for q in server if same_ranking_up_to_ties(server[q], client.get(q, []))),
    }


@dataclass(frozen=True)
class EvalSettings:
    """What one evaluation runs, every option of :func:`run_eval` but the objects it is handed."""

    alias: str
    analyzer: str = DEFAULT_ANALYZER
    techniques: tuple[str, ...] | None = None
    available_only: bool = False
    mmr: float | None = None
    mmr_candidates: int = 30
    weights: tuple[float, float] = DEFAULT_WEIGHTS
    text_layout: str = "fields"
    compare_layouts: bool = False
    adaptive: bool = True
    collapse: bool = False
    chunk_words: int | None = None
    title_boost: float = 1.0
    use_titles: bool = True
    k: int = 100
    depth: int = 100
    shards: int = 1
    fresh: bool = True
    progress: bool = True

    @property
    def boost(self) -> float:
        """The title boost the index gets: fields only (the combined layout scores one copy)."""
        return self.title_boost if self.text_layout == "fields" else 1.0


@dataclass(frozen=True)
class Opened:
    """The evaluation's index, ready to search: how it was made and the searcher on it."""

    settings: EvalSettings  # with the text layout chosen
    prepared: PreparedIndex
    searcher: Searcher
    layout_trials: dict[str, Any] | None = None
    calibration: Calibration | None = None


@dataclass(frozen=True)
class Tuned:
    """What the tuning split adds: rows fitted on it, and what they were fitted to."""

    specs: tuple[TechniqueSpec, ...] = ()
    tuning: Tuning | None = None
    learned: dict[str, Any] | None = None
    model: LearnedFusion | None = None


def run_eval(
    cluster: Cluster,
    dataset: Dataset,
    embedder: Embedder,
    *,
    alias: str,
    analyzer: str | None = None,
    techniques: Sequence[str] | None = None,
    available_only: bool = False,
    reranker: Reranker | None = None,
    mmr: float | None = None,
    mmr_candidates: int = 30,
    weights: tuple[float, float] = DEFAULT_WEIGHTS,
    tune_split: Dataset | None = None,
    text_layout: str = "fields",
    compare_layouts: bool = False,
    adaptive: bool = True,
    collapse: bool = False,
    chunk_words: int | None = None,
    title_boost: float = 1.0,
    use_titles: bool = True,
    k: int = 100,
    depth: int = 100,
    shards: int = 1,
    fresh: bool = True,
    progress: bool = True,
    cache: EmbeddingCache | None = None,
) -> EvalReport:
    """Every technique over ``dataset``: index it, calibrate, tune on ``tune_split`` (another split),
    search and score; one step each below. ``analyzer`` None: the one rule's (:func:`eval_analysis`: the
    existing index's when ``fresh`` is False, else chosen from the corpus as ``hybrid init`` would)."""
    settings = EvalSettings(
        alias,
        analyzer or DEFAULT_ANALYZER,
        tuple(techniques) if techniques else None,
        available_only,
        mmr,
        mmr_candidates,
        weights,
        text_layout,
        compare_layouts,
        adaptive,
        collapse,
        chunk_words,
        title_boost,
        use_titles,
        k,
        depth,
        shards,
        fresh,
        progress,
    )
    check(cluster, settings, dataset, tune_split, reranked=reranker is not None)
    if analyzer is None:
        live = None if fresh else layout_alias(alias, text_layout)
        settings = replace(settings, analyzer=eval_analysis(cluster, dataset, live, use_titles=use_titles).analyzer)
    started = time.perf_counter()
    opened = open_index(cluster, dataset, embedder, settings, tune_split=tune_split, reranker=reranker, cache=cache)
    return _measured(opened, dataset, embedder, tune_split, reranked=reranker is not None, started=started)


def _measured(
    opened: Opened, dataset: Dataset, embedder: Embedder, tune_split: Dataset | None, *, reranked: bool, started: float
) -> EvalReport:
    """The run itself, on the index made for it: tune, search every technique and score it (``started``: when the
    index began to be made, which the report's seconds count from)."""
    settings = opened.settings
    specs = chosen_specs(opened.searcher.caps, settings, reranker=reranked, tune_split=tune_split)
    tuned = tune(opened.searcher, settings, tune_split) if tune_split is not None else Tuned()
    specs = [*specs, *tuned.specs]
    results, runs = evaluate_techniques(
        opened.searcher, dataset, specs, k=settings.k, depth=settings.depth, progress=settings.progress
    )
    parity = rrf_parity(runs["hybrid-rrf"], runs["client-rrf"]) if {"hybrid-rrf", "client-rrf"} <= set(runs) else None
    return EvalReport(
        dataset=dataset.name,
        split=dataset.split,
        embedder=embedder.fingerprint.model,
        index=opened.prepared.alias,
        results=results,
        settings=settings_json(opened, parity=parity, seconds=time.perf_counter() - started),
        tuning=tuned.tuning,
        learned=tuned.learned,
        model=tuned.model,
    )


def check(
    cluster: Cluster, settings: EvalSettings, dataset: Dataset, tune_split: Dataset | None, *, reranked: bool
) -> None:
    """Refuse, before anything is indexed, a run whose report would not mean what it says, or with a row no cluster
    of this kind runs (before the index is made and the corpus embedded: minutes)."""
    if tune_split is not None and tune_split.split == dataset.split:
        raise InputError(
            f"tuning and reporting on the same split ({dataset.split!r}) would overstate the result; tune on another "
            "split"
        )
    if settings.depth < settings.k:
        # The searcher would fetch k candidates per leg anyway: the report would name a depth it never ran.
        raise InputError(
            f"depth {settings.depth} is below k {settings.k}: each leg must give at least k candidates; lower k with "
            "it (--k)"
        )
    if settings.compare_layouts and tune_split is None:
        raise InputError("comparing text layouts chooses one on a train split: give --tune (and --tune-split)")
    ScoreNormalization(weights=settings.weights)
    if tune_split is not None and settings.chunk_words:
        raise InputError(
            "tuning scores each leg's chunks against document judgements; tune on an index of whole documents"
        )
    chosen_specs(cluster.probe(), settings, reranker=reranked, tune_split=tune_split)


def open_index(
    cluster: Cluster,
    dataset: Dataset,
    embedder: Embedder,
    settings: EvalSettings,
    *,
    tune_split: Dataset | None,
    reranker: Reranker | None,
    cache: EmbeddingCache | None,
) -> Opened:
    """The layout chosen (on the tuning split, with ``compare_layouts``), the index filled, and the
    adaptive policy's calibration stored in it (query texts only: the tuning split's when there is one)."""
    trials = None
    if settings.compare_layouts and tune_split is not None:
        layout, trials = choose_layout(
            cluster,
            tune_split,
            embedder,
            settings.alias,
            analyzer=settings.analyzer,
            title_boost=settings.title_boost,
            use_titles=settings.use_titles,
            depth=settings.depth,
            fresh=settings.fresh,
            progress=settings.progress,
            cache=cache,
        )
        settings = replace(settings, text_layout=layout)
    if settings.text_layout not in TEXT_LAYOUTS:
        raise InputError(f"unknown text layout {settings.text_layout!r}; expected one of {', '.join(TEXT_LAYOUTS)}")
    alias = layout_alias(settings.alias, settings.text_layout)
    prepared = prepare_index(
        cluster,
        dataset,
        embedder,
        alias,
        analyzer=settings.analyzer,
        title_boost=settings.boost,
        use_titles=settings.use_titles,
        fresh=settings.fresh and not settings.compare_layouts,
        progress=settings.progress,
        cache=cache,
        text_layout=settings.text_layout,
        shards=settings.shards,
        chunk_words=settings.chunk_words,
    )
    searcher = Searcher.open(cluster, alias, embedder, reranker=reranker, depth=settings.depth)
    if not settings.adaptive:
        return Opened(settings, prepared, searcher, trials)
    sample = tune_split or dataset
    calibration = measure_calibration(
        searcher, sample.queries.values(), source=f"{sample.name} {sample.split} query texts"
    )
    store_adaptive(cluster, alias, calibration=calibration)
    # reads the calibration back
    searcher = Searcher.open(cluster, alias, embedder, reranker=reranker, depth=settings.depth)
    return Opened(settings, prepared, searcher, trials, calibration)


def chosen_specs(
    caps: Capabilities, settings: EvalSettings, *, reranker: bool, tune_split: Dataset | None
) -> list[TechniqueSpec]:
    """The rows this cluster runs, or the ones asked for (those fitted on the tuning split come from :func:`tune`)."""
    specs = standard_techniques(
        caps,
        weights=settings.weights,
        rerank=reranker,
        mmr=settings.mmr,
        mmr_candidates=settings.mmr_candidates,
        policy=DEFAULT_POLICY if settings.adaptive else None,
        collapse=settings.collapse,
    )
    if not settings.techniques:
        return specs
    wanted = list(settings.techniques)
    extra = tuned_rows(settings, tune_split)
    known = {s.name: s for s in specs}
    unknown = [t for t in wanted if t not in known and t not in extra]
    if settings.available_only:  # the subset this cluster runs (hybrid-rrf, say, is not on every cluster)
        wanted, unknown = [t for t in wanted if t in known or t in extra], []
    if unknown or not wanted:
        what = f"unknown techniques: {', '.join(map(repr, unknown))}" if unknown else "none of the techniques runs here"
        raise InputError(f"{what}; {caps.engine} {caps.version} runs {', '.join([*known, *sorted(extra)])}")
    return [known[t] for t in wanted if t in known]


def tuned_rows(settings: EvalSettings, tune_split: Dataset | None) -> set[str]:
    """The rows only a tuning split gives (beside ``hybrid-tuned-<fusion>``)."""
    if tune_split is None:
        return set()
    return {LEARNED_FUSION_ROW} | ({f"hybrid-{LEARNED}"} if settings.adaptive else set())


def _asked(settings: EvalSettings, row: str) -> bool:
    return not settings.techniques or row in settings.techniques


def tune(searcher: Searcher, settings: EvalSettings, tune_split: Dataset) -> Tuned:
    """The best fixed fusion on the tuning split (offline, from its legs fetched once), and the
    learned fusion and learned policy where asked for; each becomes a row scored on the report's split."""
    legs = fetch_legs(searcher, tune_split, depth=settings.depth, progress=settings.progress)
    best, trials = tune_fusion(searcher, tune_split, depth=settings.depth, progress=settings.progress, legs=legs)
    specs = [TechniqueSpec(f"hybrid-tuned-{best.name}", Technique.HYBRID, best, tuned=True)]
    model = (
        learned_model(legs, tune_split, settings.depth, index=searcher.alias, embedder=searcher.info.fingerprint.key)
        if _asked(settings, LEARNED_FUSION_ROW)
        else None
    )
    if model is not None:
        specs.append(TechniqueSpec(LEARNED_FUSION_ROW, Technique.CLIENT, model, tuned=True))
    if settings.mmr is not None:
        specs.append(
            TechniqueSpec(
                f"hybrid-tuned-{best.name}+mmr",
                Technique.HYBRID,
                best,
                mmr=settings.mmr,
                mmr_candidates=settings.mmr_candidates,
                tuned=True,
            )
        )
    caps = searcher.caps
    asset = searcher.engine.placement.asset(best, caps)
    tuning = Tuning(tune_split.split, len(tune_split.queries), best, asset, tuple(trials))
    learned = None
    if settings.adaptive and _asked(settings, f"hybrid-{LEARNED}"):
        fit, _ = learn_policy(
            searcher, tune_split, base=DEFAULT_POLICY, depth=settings.depth, progress=settings.progress
        )
        specs.append(TechniqueSpec(f"hybrid-{LEARNED}", Technique.HYBRID, fit.policy, tuned=True))
        learned = {
            "policy": fit.policy.to_json(),
            "family": fit.family,
            "train_ndcg@10": round(fit.train_score, 4),
            "cross_validated_ndcg@10": {k: round(v, 4) for k, v in fit.cross_validated.items()},
        }
    return Tuned(tuple(specs), tuning, learned, model)


def learned_model(
    legs: dict[str, list[list[tuple[str, float]]]],
    tune_split: Dataset,
    depth: int,
    *,
    index: str | None = None,
    embedder: str | None = None,
) -> LearnedFusion:
    """Learned fusion (adapter.fusion.choice.learned): features and C chosen by cross-validation on the tuning
    split, trained on all of it, fused in the client; the model says how it was chosen (trained_on.selection)
    and what a search checks it against (trained_on.index, .embedder: the fingerprint key, .depth)."""
    about = {
        "dataset": tune_split.name,
        "split": tune_split.split,
        "queries": len(tune_split.queries),
        "depth": depth,
        **({"index": index} if index else {}),
        **({"embedder": embedder} if embedder else {}),
    }
    chosen = select_model(legs, tune_split.qrels, score=per_query, trained_on=about)
    return replace(chosen.model, trained_on={**about, "selection": chosen.as_json()})


def settings_json(opened: Opened, *, parity: dict[str, int] | None, seconds: float) -> dict[str, Any]:
    """The report's ``settings``: how the index and the run were set up (the eval contract)."""
    s, searcher = opened.settings, opened.searcher
    caps = searcher.caps
    return {
        "analyzer": s.analyzer,
        "title_boost": s.boost,
        "titles": s.use_titles,
        "k": s.k,
        "depth_per_leg": s.depth,
        "shards": s.shards,
        "weights": list(s.weights),
        "mmr_lambda": s.mmr,
        "mmr": f"picks the top {MMR_TOP} of {s.mmr_candidates} first-stage hits" if s.mmr is not None else None,
        "text_fields": list(searcher.text_leg.fields),
        "text_layout": s.text_layout,
        "layouts": opened.layout_trials,
        "calibration": opened.calibration.to_meta() if opened.calibration else None,
        "default_technique": product_default(caps),
        "engine": caps.engine,
        "version": caps.version,
        "opensearch": caps.version,
        "seconds": round(seconds, 1),
        "rrf_parity": parity,
        "skipped_empty_documents": list(opened.prepared.skipped),
        "chunk_words": s.chunk_words,
        "server_mmr": caps.server_mmr_enabled,
    }


def product_default(caps: Capabilities) -> str | None:
    """The product's default row on this kind of cluster, as measured (None before the first
    measurement is packaged, or where nothing was measured for this kind): the name of the
    :func:`standard_techniques` row that runs it as a search on this cluster does."""
    try:
        row = default_technique(measured_kind(engine_named(caps.engine), caps))
    except AssetError:
        return None
    if row == f"hybrid-{ADAPTIVE}-min_max" and not caps.z_score:
        # without z_score the one adaptive row runs the policy's min_max form (techniques())
        return f"hybrid-{ADAPTIVE}"
    return row


def layout_alias(alias: str, layout: str) -> str:
    """The eval index of a text layout: ``alias`` for the default layout, ``alias-<layout>`` otherwise."""
    return alias if layout == "fields" else f"{alias}-{layout}"


def choose_layout(
    cluster: Cluster,
    train: Dataset,
    embedder: Embedder,
    alias: str,
    *,
    analyzer: str,
    title_boost: float,
    use_titles: bool,
    depth: int,
    fresh: bool,
    progress: bool,
    cache: EmbeddingCache | None,
) -> tuple[str, dict[str, Any]]:
    """The text layout whose fixed default fusion (min_max, 0.5 / 0.5) scores best on ``train``
    (nDCG@10 from the fetched legs, with the server's formula); one index per layout."""
    trials: dict[str, dict[str, float]] = {}
    for layout in TEXT_LAYOUTS:
        name = layout_alias(alias, layout)
        prepare_index(
            cluster,
            train,
            embedder,
            name,
            analyzer=analyzer,
            title_boost=title_boost if layout == "fields" else 1.0,
            use_titles=use_titles,
            fresh=fresh,
            progress=progress,
            cache=cache,
            text_layout=layout,
        )
        searcher = Searcher.open(cluster, name, embedder, depth=depth)
        legs = {q: searcher.legs(text, depth=depth) for q, text in train.queries.items()}
        fixed = ScoreNormalization(Normalization.MIN_MAX, weights=DEFAULT_WEIGHTS)
        trials[layout] = {
            "bm25": round(
                evaluate(train.qrels, {q: [d for d, _ in runs[0]] for q, runs in legs.items()})["ndcg@10"], 4
            ),
            f"hybrid-{fixed.name}": round(
                evaluate(
                    train.qrels,
                    {q: [f.id for f in fuse(runs, fixed, leg_names=LEGS)[:100]] for q, runs in legs.items()},
                )["ndcg@10"],
                4,
            ),
        }
    key = f"hybrid-{ScoreNormalization().name}"
    best = max(TEXT_LAYOUTS, key=lambda layout: (trials[layout][key], -TEXT_LAYOUTS.index(layout)))
    return best, {"split": train.split, "chosen": best, "ndcg@10": trials}
