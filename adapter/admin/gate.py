"""The migration's optional gate: nDCG@10 of the default hybrid search on the live index and on the
new one, over a labelled set; the swap is refused when the new one drops by more than the margin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from adapter.admin.index_state import index_info
from adapter.engines import Cluster, Engine
from adapter.engines.capabilities import Capabilities
from adapter.errors import MigrationError
from adapter.models.embedders import Embedder


@dataclass(frozen=True)
class Gate:
    """Refuse the swap when nDCG@10 on ``dataset`` (a labelled set of this index's documents)
    drops by more than ``max_drop`` (absolute) from the live index to the new one."""

    dataset: Any  # adapter.evaluation.metrics.Dataset
    max_drop: float = 0.02


@dataclass(frozen=True)
class GateResult:
    old: float
    new: float
    queries: int
    max_drop: float

    @property
    def passed(self) -> bool:
        return self.new >= self.old - self.max_drop - 1e-12


def _ndcg(
    cluster: Cluster,
    index: str,
    embedder: Embedder,
    dataset: Any,
    caps: Capabilities,
    engine: Engine,
    vectors: dict[str, Any],
) -> float:
    from adapter.evaluation.metrics import evaluate
    from adapter.evaluation.report import TechniqueSpec
    from adapter.evaluation.run import run_technique
    from adapter.search import Searcher
    from adapter.search.results import Technique

    searcher = Searcher(cluster, index_info(cluster, index, index), caps, embedder, engine=engine)
    ranked, *_ = run_technique(
        searcher, dataset.queries, vectors, TechniqueSpec("hybrid", Technique.HYBRID), k=10, depth=100, progress=False
    )
    return evaluate(dataset.qrels, {q: [d for d, _ in hits] for q, hits in ranked.items()})["ndcg@10"]


def run_gate(
    cluster: Cluster, gate: Gate, *, old: tuple[str, Embedder], new: tuple[str, Embedder], engine: Engine
) -> GateResult:
    """nDCG@10 of the default hybrid search on both indices (query vectors computed once per model)."""
    caps = cluster.probe()
    vectors: dict[str, dict[str, Any]] = {}
    scores = []
    for index, embedder in (old, new):
        key = embedder.fingerprint.key
        if key not in vectors:
            vectors[key] = {qid: embedder.embed_query(text) for qid, text in gate.dataset.queries.items()}
        scores.append(_ndcg(cluster, index, embedder, gate.dataset, caps, engine, vectors[key]))
    return GateResult(scores[0], scores[1], len(gate.dataset.queries), gate.max_drop)


def passed_gate(
    cluster: Cluster,
    gate: Gate,
    alias: str,
    *,
    old: tuple[str, Embedder],
    new: tuple[str, Embedder],
    log: Callable[[str], None],
) -> GateResult:
    """4. The gate's verdict, said; MigrationError when it refuses the swap (the alias stays)."""
    (source, _), (target, _) = old, new
    result = run_gate(cluster, gate, old=old, new=new, engine=cluster.engine)
    log(
        f"gate: nDCG@10 {result.old:.4f} on {source}, {result.new:.4f} on {target} ({result.queries} queries, "
        f"allowed drop {result.max_drop})"
    )
    if not result.passed:
        raise MigrationError(
            f"the gate refused the swap: nDCG@10 drops from {result.old:.4f} ({source}) to {result.new:.4f} "
            f"({target}), more than {result.max_drop}. The alias still points to {source}; {target} stays for "
            f"inspection (`hybrid prune {alias} --unfinished` removes it)"
        )
    return result
