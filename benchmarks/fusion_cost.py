"""What fusing in the client costs: learned fusion against client RRF (what ``client-rrf`` runs) and
the server-exact z_score mirror, on the same legs, interleaved per query so they share the noise.

    .venv/bin/python -m benchmarks.fusion_cost --legs out/legs/scifact-combined.json --model
out/evals/model-scifact.json

``--legs``: a file of ``scripts/fetch_legs.py`` (real legs, 100 per leg); without it, synthetic legs
of 100 hits each that overlap by half. ``--model``: a learned fusion model (``hybrid eval --tune``);
without it, one with every weight 1. Prints p50 / p95 per query in milliseconds and the ratios. The
requests are the same for every client fusion (one ``_msearch`` for both legs, one ``_mget`` for the
page's sources), so this is the whole of the difference the client makes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.fusion import LEGS, ScoreNormalization, fuse, rrf  # noqa: E402
from adapter.fusion.choice.learned import FEATURES, LearnedFusion  # noqa: E402


def synthetic(n: int, depth: int = 100, seed: int = 7) -> list[list[list[tuple[str, float]]]]:
    rng = random.Random(seed)
    out = []
    for q in range(n):
        ids = [f"{q}-{i}" for i in range(int(depth * 1.5))]
        bm25 = sorted(((d, rng.uniform(5, 30)) for d in ids[:depth]), key=lambda x: -x[1])
        dense = sorted(((d, rng.uniform(0.5, 0.9)) for d in ids[depth // 2 :]), key=lambda x: -x[1])
        out.append([bm25, dense])
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--legs")
    p.add_argument("--model")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    if args.legs:
        data = json.loads(Path(args.legs).read_text())
        legs = [
            [[tuple(x) for x in q["bm25"]], [tuple(x) for x in q["dense"]]]
            for q in list(data["queries"].values())[: args.queries]
        ]
        source = f"{args.legs} ({len(legs)} queries, up to {data['depth']} hits per leg)"
    else:
        legs = synthetic(args.queries)
        source = f"synthetic legs ({len(legs)} queries, 100 hits per leg, half shared)"
    model = LearnedFusion.loads(Path(args.model).read_text()) if args.model else LearnedFusion((1.0,) * len(FEATURES))
    z = ScoreNormalization("z_score", weights=(0.5, 0.5))
    runs = {
        "client-rrf (adapter.fusion.rrf)": lambda r: rrf(r, leg_names=LEGS),
        "z_score mirror (adapter.fusion.fuse)": lambda r: fuse(r, z, leg_names=LEGS),
        "learned (LearnedFusion.fuse)": lambda r: model.fuse(r, leg_names=LEGS),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeat):
        for r in legs:
            for name, fn in runs.items():  # interleaved: the same moment's noise for each
                t = time.perf_counter()
                fn(r)
                times[name].append((time.perf_counter() - t) * 1000.0)
    base = float(np.percentile(times["client-rrf (adapter.fusion.rrf)"], 50))
    print(f"client-side fusion cost per query, {source}, {args.repeat} passes")
    print("| fusion | p50 ms | p95 ms | p50 vs client-rrf |")
    print("|---|---|---|---|")
    for name, values in times.items():
        p50, p95 = float(np.percentile(values, 50)), float(np.percentile(values, 95))
        print(f"| {name} | {p50:.3f} | {p95:.3f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    main()
