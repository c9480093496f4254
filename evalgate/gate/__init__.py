"""The gate: compare a run with its baseline and decide (`compare`), and keep the default branch's ledger.

Here are the names the rest of evalgate uses; trends, confirmation, the side-by-side
judge's verdicts and the base commit's policy are imported from their own modules
(`.trends`, `.confirm`, `.pairwise`, `.base_policy`). The gate is the decision only: it
imports nothing above it (no config loader, engine, criteria, judge runtime, store, GitHub
client or CLI; tests/test_layers.py). What it needs is handed in by the pipeline
(evalgate.pipeline), which runs, asks the judges and reads the stores (evalgate.baselines). `evalgate.gate.compare` is the function
(its module, evalgate/gate/compare.py, is imported by name: `from evalgate.gate.compare import ...`).
"""

from evalgate.gate.compare import compare
from evalgate.gate.ledger import Ledger, ledger_key, stable_history, update_ledger, value_key
from evalgate.gate.comparison import Comparison, SuiteComparison
from evalgate.gate.model import (
    BaselineInfo,
    CaseChange,
    CaseKey,
    CriterionComparison,
    GatePolicy,
    Verdict,
)
from evalgate.gate.side_by_side import PairwiseComparison
from evalgate.gate.values import case_samples, has_samples, outcome

__all__ = [
    "BaselineInfo",
    "CaseChange",
    "CaseKey",
    "Comparison",
    "CriterionComparison",
    "GatePolicy",
    "Ledger",
    "PairwiseComparison",
    "SuiteComparison",
    "Verdict",
    "case_samples",
    "compare",
    "has_samples",
    "ledger_key",
    "outcome",
    "stable_history",
    "update_ledger",
    "value_key",
]
