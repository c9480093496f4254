"""The gate: compare a run with its baseline and decide (`compare`), and keep the default branch's ledger.

Here are the names the rest of evalgate uses; the stores, trends, confirmation runs, the
side-by-side judge and the base commit's policy are imported from their own modules
(`evalgate.gate.baselines`, `.trends`, `.confirm`, `.pairwise`, `.base_policy`), so that
reading a config does not import the GitHub client. `evalgate.gate.compare` is the function
(its module, evalgate/gate/compare.py, is imported by name: `from evalgate.gate.compare import ...`).
"""

from evalgate.gate.compare import compare
from evalgate.gate.ledger import Ledger, ledger_key, stable_history, update_ledger, value_key
from evalgate.gate.model import (
    BaselineInfo,
    CaseChange,
    CaseKey,
    Comparison,
    CriterionComparison,
    GatePolicy,
    SuiteComparison,
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
