"""What the default hybrid (min_max 0.5/0.5) gives on an Elasticsearch basic licence, where it is
fused in the client (issue 19), beside the server sum it fell back to before, client-rrf and DBSF.

    .venv/bin/python scripts/measure_es_fallback.py $(hybrid local up --engine elasticsearch)

SciFact test (../shared/data/scifact), MiniLM, the standard analyzer, title boost 0.5, 100 candidates
per leg, k = 100: the settings of docs/EVALUATION.md's Elasticsearch section. Prints JSON.
"""

from __future__ import annotations

import json
import sys

from adapter.engines import connect_cluster
from adapter.models.embedders import load_embedder
from adapter.evaluation.run import prepare_index, evaluate_techniques
from adapter.evaluation.report import TechniqueSpec
from adapter.fusion import RRF, ScoreNormalization, ScoreSum
from adapter.fusion.dbsf import DBSF
from adapter.evaluation.metrics import load_beir
from adapter.search import Searcher
from adapter.search.results import Technique
from adapter.engines import cluster_for

url = sys.argv[1]
client = connect_cluster(url)
dataset = load_beir("/work/shared/data/scifact", split="test")
embedder = load_embedder("minilm")
alias = "eval-scifact-issue19"
prepare_index(cluster_for(client), dataset, embedder, alias, analyzer="standard", title_boost=0.5, progress=False)
searcher = Searcher.open(client, alias, embedder, depth=100)
specs = [
    TechniqueSpec("hybrid min_max 0.5/0.5 (now: client)", Technique.HYBRID, ScoreNormalization()),
    TechniqueSpec("hybrid-sum 0.5/0.5 (the old fallback)", Technique.HYBRID, ScoreSum((0.5, 0.5))),
    TechniqueSpec("client-rrf", Technique.CLIENT_RRF, RRF()),
    TechniqueSpec("client-dbsf", Technique.CLIENT, DBSF()),
]
results, _ = evaluate_techniques(searcher, dataset, specs, k=100, depth=100, progress=False)
out = {
    name: {
        "metrics": {m: round(v, 4) for m, v in r.metrics.items()},
        "p50_ms": round(r.latency_ms_p50, 1),
        "notices": list(r.notices)[:1],
    }
    for name, r in results.items()
}
print(
    json.dumps({"caps": [searcher.caps.engine, searcher.caps.version, searcher.caps.license], "results": out}, indent=1)
)
