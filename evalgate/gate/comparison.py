"""What `compare` returns: each suite's comparison, its tests' results beside it (the
criteria's, the side-by-side judge's, the efficiency metrics'), and the run's verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from evalgate.gate.efficiency import CostComparison
from evalgate.gate.model import BaselineInfo, CaseChange, CaseKey, Crash, CriterionComparison, Refused, Verdict
from evalgate.gate.side_by_side import PairwiseComparison


@dataclass
class SuiteComparison:
    name: str
    verdict: Verdict
    reasons: list[str]
    criteria: list[CriterionComparison]
    changes: list[CaseChange]  # regressed / broken_stable first, then fixed, then score moves
    added: list[CaseKey]
    removed: list[CaseKey]
    changed: list[CaseKey]  # expected data changed (digest differs): not compared
    skipped_criteria: list[str]  # e.g. "hallucinations_v1: no judge credentials (12 cases NOT_EVALUATED)"
    pairwise: Optional[PairwiseComparison] = None  # gate.pairwise: the changed answers judged side by side
    costs: list[CostComparison] = field(default_factory=list)  # efficiency per turn against the baseline (evalgate.gate.efficiency)
    crashes: list[Crash] = field(default_factory=list)  # cases the baseline passed whose agent failed now (evalgate.gate.crash)
    refused: list[Refused] = field(default_factory=list)  # criteria the baseline evaluated, not evaluated now (evalgate.gate.refused)



@dataclass
class Comparison:
    verdict: Verdict
    reasons: list[str]
    suites: list[SuiteComparison]
    baseline: Optional[BaselineInfo]  # None: no baseline found, absolute thresholds only
    config_changed: bool
    mode: Literal["absolute", "regression"]
    # PR mode: how the pull request's own gate policy differs from its base's, as a unified
    # diff (evalgate.gate.base_policy); the gate ran under the base's. None: no change, or not known.
    gate_change: Optional[str] = None
