"""Compare a run with its baseline: pure, deterministic functions and the types they return.

`compare()` pairs cases by (suite, eval_set_id, eval_id), sets aside changed / added /
removed cases, tests each suite's criteria for a drop that is not judge noise, finds broken
stable cases from the flake ledger, and reaches a verdict per suite and overall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from evalgate.results import RunResults


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"


class GatePolicy(BaseModel):
    """How the gate decides; the `gate:` section of the config."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "absolute", "regression"] = Field(
        default="auto",
        description="absolute: every case passes every threshold (ADK semantics); regression: fail on a "
        "significant drop; auto: regression when a baseline exists, else absolute.",
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Significance level after Holm correction.")
    margin_deterministic: float = Field(default=0.0, ge=0, le=1, description="Drop in mean score tolerated for deterministic criteria.")
    margin_judge: float = Field(default=0.02, ge=0, le=1, description="Drop in mean score tolerated for judge criteria.")
    inconclusive: Literal["pass", "fail"] = Field(default="pass", description="What an inconclusive drop does (it always warns).")
    history_runs: int = Field(default=10, ge=1, le=100, description="K: outcomes kept per case and criterion in the flake ledger.")
    stable_min_runs: int = Field(default=5, ge=5, description="Runs a case must have passed, all of them, to count as stable.")
    permutations: int = Field(default=10000, ge=100, description="Random sign flips when exact enumeration is too large.")
    seed: int = Field(default=20240601, description="Seed of the permutation test and intervals: same inputs, same answer.")


@dataclass(frozen=True)
class CaseKey:
    suite: str
    eval_set_id: str
    eval_id: str


@dataclass
class CriterionComparison:
    """One criterion of one suite, over the cases both runs share unchanged."""

    suite: str
    criterion: str
    threshold: float
    judge: bool  # a noisy (LLM-judged) criterion, as opposed to a deterministic one
    n_pairs: int
    baseline_mean: Optional[float]
    current_mean: Optional[float]
    delta: Optional[float]  # current - baseline, paired
    ci_low: Optional[float]  # 95% interval of the paired mean difference
    ci_high: Optional[float]
    p_value: Optional[float]  # one-sided (current < baseline), paired sign-flip permutation test
    p_adjusted: Optional[float]  # Holm, across all criteria of all suites
    status: Verdict
    reasons: list[str] = field(default_factory=list)


@dataclass
class CaseChange:
    """A case whose outcome moved between baseline and current."""

    key: CaseKey
    kind: Literal["regressed", "fixed", "broken_stable", "score_drop", "score_rise"]
    criteria: dict[str, tuple[Optional[float], Optional[float]]]  # name -> (baseline score, current score)
    p_value: Optional[float] = None  # for broken_stable: from the case's own history


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


@dataclass
class BaselineInfo:
    commit: str
    requested_commit: str  # the PR's base commit; differs when an ancestor's baseline was used
    distance: int  # first-parent steps from requested_commit to commit
    created_at: Optional[str]  # ISO 8601, from the baseline's provenance


@dataclass
class Comparison:
    verdict: Verdict
    reasons: list[str]
    suites: list[SuiteComparison]
    baseline: Optional[BaselineInfo]  # None: no baseline found, absolute thresholds only
    config_changed: bool
    mode: Literal["absolute", "regression"]


# The flake ledger: per (suite, eval_set_id, eval_id, criterion), the last K outcomes of
# default-branch runs, oldest first. An outcome is the fraction of the criterion's samples
# that passed in that run (1.0 / 0.0 for a deterministic criterion), or None when the
# criterion was NOT_EVALUATED.
Ledger = dict[str, list[Optional[float]]]


def ledger_key(key: CaseKey, criterion: str) -> str:
    return "\x1f".join((key.suite, key.eval_set_id, key.eval_id, criterion))


def compare(
    baseline: Optional[RunResults],
    current: RunResults,
    policy: GatePolicy,
    ledger: Optional[Ledger] = None,
    baseline_info: Optional[BaselineInfo] = None,
) -> Comparison:
    """The gate's decision. Pure: the same inputs always give the same Comparison."""
    raise NotImplementedError
