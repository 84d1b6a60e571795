"""``hybrid eval``: score every technique on a labelled BEIR dataset, and tune the fusion.

- :mod:`.run`: build the index, run each technique over the queries, score (:func:`run_eval`).
- :mod:`.tune`: learn the fusion offline on another split (:func:`tune_fusion`).
- :mod:`.report`: the typed results, their JSON schema, table and chart.
"""

from adapter.evaluation.report import (
    MMR_TOP,
    SCHEMA_VERSION,
    EvalReport,
    Family,
    TechniqueResult,
    TechniqueSpec,
    Trial,
    Tuning,
    format_table,
    plot,
    write_json,
)
from adapter.evaluation.run import (
    eval_alias,
    eval_analysis,
    evaluate_techniques,
    prepare_index,
    rrf_parity,
    run_eval,
    run_technique,
    standard_techniques,
)
from adapter.evaluation.tune import TUNE_RANK_CONSTANTS, TUNE_WEIGHTS, candidates, tune_fusion

__all__ = [
    "MMR_TOP",
    "SCHEMA_VERSION",
    "EvalReport",
    "Family",
    "TechniqueResult",
    "TechniqueSpec",
    "Trial",
    "Tuning",
    "format_table",
    "plot",
    "write_json",
    "eval_alias",
    "eval_analysis",
    "evaluate_techniques",
    "prepare_index",
    "rrf_parity",
    "run_eval",
    "run_technique",
    "standard_techniques",
    "TUNE_RANK_CONSTANTS",
    "TUNE_WEIGHTS",
    "candidates",
    "tune_fusion",
]
