"""Learned fusion offline: chosen and trained on a set's train queries only, its test nDCG@10 once.

    .venv/bin/python scripts/learned_offline.py out/legs/scifact-combined.json [more legs files] [--model-out FILE]

Each file is a legs file of ``scripts/fetch_legs.py`` (both legs of every judged query, fetched once).
:func:`adapter.fusion.choice.learned.select` chooses the feature set and C by cross-validation on the train
queries' legs and trains on all of them; :meth:`LearnedFusion.fuse` then ranks the test queries'
legs, as the ``client-learned`` row of ``hybrid eval --tune`` does. Prints the selection, the test
nDCG@10 and, beside it, fixed min_max 0.5 / 0.5 on the same legs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapter.fusion import LEGS, Normalization, ScoreNormalization, fuse  # noqa: E402
from adapter.fusion.choice.learned import Run, select  # noqa: E402
from adapter.evaluation.metrics import per_query  # noqa: E402


def _legs(data: dict[str, Any], qid: str) -> list[Run]:
    q = data["queries"][qid]
    return [[(d, float(s)) for d, s in q["bm25"]], [(d, float(s)) for d, s in q["dense"]]]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("legs", nargs="+", help="legs files of scripts/fetch_legs.py")
    p.add_argument("--model-out", help="write the (last) model here")
    args = p.parse_args(argv)
    for path in args.legs:
        data = json.loads(Path(path).read_text())
        train, test = data["qrels"]["train"], data["qrels"]["test"]
        chosen = select(
            {q: _legs(data, q) for q in train},
            train,
            score=per_query,
            trained_on={"dataset": data["dataset"], "split": "train", "queries": len(train), "depth": data["depth"]},
        )
        learned = {q: [f.id for f in chosen.model.fuse(_legs(data, q))[:100]] for q in test}
        fixed = ScoreNormalization(Normalization.MIN_MAX, weights=(0.5, 0.5))
        baseline = {q: [f.id for f in fuse(_legs(data, q), fixed, leg_names=LEGS)[:100]] for q in test}
        print(
            f"{data['dataset']} ({data['embedder']}, {data['text_layout']} layout, depth {data['depth']}): "
            f"selection {json.dumps(chosen.as_json())}"
        )
        print(
            f"  test nDCG@10 ({len(test)} queries): learned {statistics.fmean(per_query(test, learned).values()):.4f}, "
            f"min_max 0.5/0.5 {statistics.fmean(per_query(test, baseline).values()):.4f}",
            flush=True,
        )
        if args.model_out:
            Path(args.model_out).write_text(chosen.model.dumps())


if __name__ == "__main__":
    main()
