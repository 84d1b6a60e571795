"""Tuning the fusion offline on a labelled split: fetch both legs once per query, then score every
fusion the cluster runs (normalisation x combination x BM25 weight 0.0-1.0 by 0.1, RRF rank
constants, and on Elasticsearch the score sum with the dense boost up to 1000x BM25's: the legs'
raw scores differ in scale) with the server's own formulas (:func:`adapter.fusion.fuse`), and keep
the best by nDCG@10. The winner is then confirmed through the server on a *different* split."""

from __future__ import annotations

from adapter.engines.capabilities import Capabilities
from adapter.evaluation.metrics import Dataset, evaluate
from adapter.evaluation.report import Trial
from adapter.fusion import Fusion, ScoreSum, fuse
from adapter.search import Searcher

TUNE_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
TUNE_RANK_CONSTANTS = (5, 10, 20, 40, 60, 80, 100)
TUNE_SUM_DENSE_BOOSTS = (
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1000,
)  # x a BM25 boost of 1: vector scores ~0.65-0.9, BM25 ~10-60 (SciFact)


def candidates(caps: Capabilities) -> list[Fusion]:
    """Every fusion the tuning grid tries on this cluster, without duplicates."""
    out: dict[tuple[str, tuple[float, ...] | None], Fusion] = {}
    for w in TUNE_WEIGHTS:
        for fusion in caps.fusions((w, round(1 - w, 1)), rank_constants=TUNE_RANK_CONSTANTS):
            out.setdefault((fusion.name, fusion.weights), fusion)
    if caps.supports(ScoreSum())[0]:  # the engine's renderer says whether its server sums the legs' scores
        for boost in TUNE_SUM_DENSE_BOOSTS:
            fusion = ScoreSum((1.0, float(boost)))
            out.setdefault((fusion.name, fusion.weights), fusion)
    return list(out.values())


def fetch_legs(
    searcher: Searcher, dataset: Dataset, *, depth: int = 100, progress: bool = True
) -> dict[str, list[list[tuple[str, float]]]]:
    """Both legs of every query of ``dataset`` (one ``_msearch`` each): what tuning fuses offline."""
    from adapter._progress import track

    return {
        qid: searcher.legs(text, depth=depth)
        for qid, text in track(
            dataset.queries.items(), f"legs ({dataset.split})", total=len(dataset.queries), enabled=progress
        )
    }


def tune_fusion(
    searcher: Searcher,
    dataset: Dataset,
    *,
    depth: int = 100,
    progress: bool = True,
    legs: dict[str, list[list[tuple[str, float]]]] | None = None,
) -> tuple[Fusion, list[Trial]]:
    """Best fusion on ``dataset`` (the tuning split) by nDCG@10 (then Recall@100), from fetched legs
    (``legs``, else fetched here)."""
    from adapter._progress import track

    legs = legs if legs is not None else fetch_legs(searcher, dataset, depth=depth, progress=progress)
    trials = []
    for fusion in track(candidates(searcher.caps), "tuning", enabled=progress):
        rankings = {qid: [f.id for f in fuse(runs, fusion)[:100]] for qid, runs in legs.items()}
        trials.append(Trial(fusion, evaluate(dataset.qrels, rankings)))
    best = max(trials, key=lambda t: (t.metrics["ndcg@10"], t.metrics["recall@100"]))
    return best.fusion, trials
