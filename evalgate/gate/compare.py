"""Compare a run with its baseline: pure, deterministic functions and the types they return.

`compare()` pairs cases by (suite, eval_set_id, eval_id), sets aside changed / added /
removed cases, tests each suite's criteria for a drop that is not judge noise, finds broken
stable cases from the flake ledger, and reaches a verdict per suite and overall.
`update_ledger()` appends a default-branch run's outcomes to the flake ledger.

Judge samples (the contract with judge criteria)
    A judge criterion asks its judge `num_samples` times per invocation and puts the
    per-sample scores in that invocation's `details["samples"]`: a list of numbers in
    [0, 1] in sample order (1.0 / 0.0 for a yes / no verdict; for rubric criteria the
    sample's share of rubrics judged "yes"), with None for a sample that failed (no
    parsable reply). The invocation's own `score` stays the majority vote. Sample j of a
    *case* is the mean over its invocations of their j-th sample scores (an invocation
    without `samples` takes part with its own score in every sample; a failed sample is
    left out); it passes when it reaches the criterion's threshold. A case without
    samples anywhere has one sample: its score.

Statistics (regression mode; also computed, for information, in absolute mode)
    Per suite and criterion, over the cases both runs scored (neither NOT_EVALUATED) and
    whose expected data did not change. Every choice and its reason is in the docstring
    of `evalgate.stats`; in short:

    - The compared per-case value is the criterion's score, or, for a judge criterion
      whose cases all carry samples in both runs, the case's mean sample score
      (`basis = "samples"`): it estimates the same quality as the majority vote with a
      fraction of its noise, because a vote turns one doubtful sample into a whole point.
      With `judge.early_stop` a case's samples are those drawn until its majority was
      decided (the criterion's `sampling` says so); a baseline and a run that drew them by
      different rules are compared on scores (the majority votes, which both rules decide
      alike), and the reasons say so.
    - delta = mean(current - baseline) over the pairs. The drop test asks whether the
      drop is bigger than the margin, against two kinds of variation: the cases' own
      (the paired differences) and the run-to-run variation of the criterion's mean (a
      judge's mood, a serving change: every case at once). The latter is measured on the
      ledger's values of these cases over the last runs (`run_sd`, `history` runs), or,
      with fewer than 3 runs, assumed: `run_sd_judge` / `run_sd_deterministic`. Student's
      t with Welch-Satterthwaite degrees of freedom; closed form, no randomness.
    - The 95% interval of delta inverts the same test; its one-sided 95% lower bound
      (`lower_bound`) is what a PASS needs above -resolution when there is no history.
    - With history (the run-to-run variation measured, and at least PARTIAL_MIN_CASES
      cases with MIN_HISTORY runs before the baseline's), PASS and INCONCLUSIVE go by the
      drop against the default branch's *level*: each case's current value less the mean
      of its baseline value and its values in those earlier runs (`level_delta`,
      `level_lower_bound`, over `level_runs` runs and `level_cases` cases). One run's mood
      then weighs 1/L in the reference instead of all of it. When the run means show the
      branch moved within the window (`level_shift`), only the runs since count (the
      baseline run alone when it moved at the last run). Not for a judge compared on
      scores (the ledger holds sample means). The
      FAIL test stays against the baseline run alone: a regression merged earlier within
      the window must not be blamed on this pull request.
    - Holm correction across all the gate's tests (every criterion's drop test, every
      criterion's pooled breakage test and every partial-drop test, weight 1 each) of all
      suites, and with `gate.pairwise` each suite's side-by-side sign test (PairwiseComparison),
      and with `gate.efficiency` each gated efficiency metric's increase test (evalgate.cost).

Partial drops (continuous criteria that are not judged, with a ledger)
    Some cases falling while the rest hold: the ledger's values give each case its own
    run-to-run spread (from the runs before the baseline's). Two tests, one entry in Holm
    (`partial_p`): how many cases fell beyond SHIFT_Z of their spread against how many
    rose, the run's common shift set aside (`fell`, `rose`, `lopsided_p`; it sees through
    a drift), and the drop in units of each case's spread with outliers capped
    (`steady_p`; it sees past the flaky cases' outliers). At least PARTIAL_MIN_CASES cases
    with MIN_HISTORY runs before the baseline's.

Agent runs (num_runs)
    A case the agent ran several times has each run's score in `runs`, and its score is the
    mean over all runs' invocations. A criterion without judge samples then takes the runs
    as its samples: the ledger records the share of runs that passed, and broken-stable
    testing applies to it as to a judge criterion, so an agent's nondeterminism is measured
    from its runs rather than assumed.

Broken stable cases (any criterion, with a ledger)
    A case is stable for a criterion when the ledger has at least `stable_min_runs`
    recorded outcomes for it (the last `history_runs`), all above 0.5 (a majority of its
    samples, or its one run, passed in every run). It has broken when its outcome now is
    0: every sample (or run) failed. The stable cases of a criterion are tested together:
    each has a chance of breaking by chance, from the population of failure rates fitted
    to every case's history of that criterion (a nonparametric mixture; lower the longer
    its clean streak) times the share of failed runs that failed every sample; the number
    breaking by chance is then Poisson-binomial, and p = P(X >= broken). One stable case
    breaking decides nothing (nondeterministic agents do that); several at once, when
    history says breaks are rare, fail the criterion. With confirmation runs in the
    results (`gate.confirm`, evalgate.confirm: `CaseResult.reruns`) and every stable case
    that broke re-run, a break counts only when it failed every re-run too, and its chance
    is multiplied by how often the ledger's failures repeated in the next run (stats).

Verdicts
    - absolute (ADK semantics): a suite fails when its status is FAILED (which includes
      NOT_EVALUATED cases under `not_evaluated: fail`).
    - regression: a criterion FAILs when its drop test (drop bigger than margin_judge or
      margin_deterministic), its pooled breakage test or its partial-drop test has
      p_adjusted < alpha; with
      `deterministic_flips: fail`, a deterministic criterion also FAILs when any case
      went from PASSED to FAILED (right when the agent's outputs are replayed). It is
      INCONCLUSIVE when it dropped by more than its margin, not significantly, and the
      run cannot rule out a drop bigger than `resolution` (the one-sided 95% lower bound
      of delta is below -max(resolution, margin); with history, of the drop against the
      default branch's level): the reasons say what would settle it.
      Otherwise it PASSes, with the drop and the variation it allowed for in its
      reasons. An INCONCLUSIVE criterion always warns, and fails the suite when
      `inconclusive: fail`. NOT_EVALUATED cases fail the suite under `not_evaluated: fail`.
      With `gate.efficiency`, a suite FAILs when a gated efficiency value (tokens, calls,
      seconds per turn) rose significantly beyond its tolerance (evalgate.cost; ungated ones
      and absolute mode: reported only).
      What has no baseline (a new suite, a new criterion, a suite with no case in common)
      is judged on absolute thresholds. Added and changed cases are listed, not gated.
    - A suite with no cases is an ERROR, and so is one whose agent failed on every case
      run (`agent_error`: nothing it does was scored, typically a fork's run without the
      model's key). Overall: FAIL if any suite FAILs or is an ERROR,
      else INCONCLUSIVE if any is, else PASS.
    - alpha defaults to 0.01: Holm keeps the chance that an unchanged agent fails on noise
      below alpha, and the goal is at most 1% (bench/bench_gate.py measures it in several
      worlds).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from evalgate.gate import efficiency as cost
from evalgate.gate.efficiency import CostComparison, EfficiencyPolicy
from evalgate.gate import confirm as confirmation
from evalgate.gate.confirm import ConfirmPolicy
from evalgate.gate.pairwise import PairwisePolicy, SuitePairs
from evalgate.results import (
    CaseResult,
    CriterionResult,
    RunResults,
    Status,
    SuiteResult,
)
from evalgate.gate.stats import (
    EPSILON,
    MIN_HISTORY,
    ROUND,
    SHIFT_Z,
    binomial_upper,
    break_hazards,
    break_share,
    break_test,
    broke,
    case_scales,
    dip_hazards,
    drop_interval,
    drop_test,
    fail_hazards,
    failed,
    holm,
    level_differences,
    lopsided_test,
    repeat_factors,
    repeat_share,
    run_variance,
    satterthwaite,
    share_break_test,
    sign_test,
    steady_drop_test,
    steady_run_variance,
)

PARTIAL_MIN_CASES = 10  # cases with a history needed for the partial-drop test


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
    alpha: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description="Significance level after Holm correction: the chance that an unchanged agent fails the gate on noise.",
    )
    margin_deterministic: float = Field(default=0.0, ge=0, le=1, description="Drop in mean score tolerated for deterministic criteria.")
    deterministic_flips: Literal["test", "fail"] = Field(
        default="test",
        description="A case of a deterministic criterion that went from PASSED to FAILED: 'test' weighs it in the "
        "significance test like any drop (the agent's own outputs vary from run to run); 'fail' fails the gate on "
        "any such flip (for replayed, deterministic agent outputs).",
    )
    margin_judge: float = Field(default=0.02, ge=0, le=1, description="Drop in mean score tolerated for judge criteria.")
    resolution: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="A criterion PASSes when its 95% interval rules out a drop bigger than this; when the run cannot "
        "(too few cases, too much noise) it is INCONCLUSIVE, and the comment says what would settle it.",
    )
    run_sd_judge: float = Field(
        default=0.02,
        ge=0,
        le=1,
        description="Run-to-run standard deviation of a judge criterion's mean (the judge's mood moves every case at "
        "once) assumed while the ledger holds fewer than 3 runs of it; with history it is measured.",
    )
    run_sd_deterministic: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="The same for deterministic criteria (a model or serving change moves the agent's outputs in "
        "every case at once); with history it is measured.",
    )
    inconclusive: Literal["pass", "fail"] = Field(default="pass", description="What an inconclusive drop does (it always warns).")
    removed_cases: Literal["list", "fail"] = Field(
        default="list",
        description="Baseline cases (or suites) missing from this run: 'list' names them; 'fail' fails the gate, so a "
        "pull request cannot pass by deleting the cases it breaks.",
    )
    confirm: ConfirmPolicy = Field(
        default_factory=ConfirmPolicy,
        description="Re-run suspected breaks before deciding (2 runs, at most 20 cases, by default); docs/gate.md: gate.confirm.",
    )
    pairwise: PairwisePolicy = Field(
        default_factory=PairwisePolicy,
        description="Judge each changed answer side by side with the baseline's (off by default); docs/gate.md: gate.pairwise.",
    )
    efficiency: EfficiencyPolicy = Field(
        default_factory=EfficiencyPolicy,
        description="Tolerated increase per turn of ADK's efficiency metrics against the baseline (e.g. token_usage_v1: 0.15); "
        "unnamed ones are reported, not gated. docs/gate.md: gate.efficiency.",
    )
    history_runs: int = Field(default=10, ge=1, le=100, description="K: outcomes kept per case and criterion in the flake ledger.")
    stable_min_runs: int = Field(default=5, ge=5, description="Runs a case must have passed, all of them, to count as stable.")
    permutations: int = Field(default=10000, ge=100, description="Unused: the tests are closed form now (kept so that configs that set it stay valid).")
    seed: int = Field(default=20240601, description="Unused: the tests are closed form and deterministic (kept so that configs that set it stay valid).")

    def margin(self, judge: bool) -> float:
        """The drop a criterion tolerates: margin_judge or margin_deterministic."""
        return self.margin_judge if judge else self.margin_deterministic


@dataclass(frozen=True, order=True)
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
    n_pairs: int  # 0: not compared (new criterion, or no case evaluated in both runs); see reasons
    baseline_mean: Optional[float]
    current_mean: Optional[float]
    delta: Optional[float]  # current - baseline, paired
    ci_low: Optional[float]  # 95% interval of the paired mean difference
    ci_high: Optional[float]
    p_value: Optional[float]  # one-sided (current < baseline), paired sign-flip permutation test
    p_adjusted: Optional[float]  # Holm, across all criteria of all suites
    status: Verdict
    reasons: list[str] = field(default_factory=list)
    # What the means, delta and test are over: "scores" (the criterion's case scores) or
    # "samples" (per case, the mean of its judge samples; see the module docstring).
    basis: Literal["scores", "samples"] = "scores"
    # What the gate allowed for and found (regression mode; evalgate.stats says why):
    run_sd: Optional[float] = None  # run-to-run standard deviation of the criterion's mean
    history: int = 0  # runs of history run_sd was measured on; 0: assumed (the policy's run_sd_*)
    run_moved: int = 0  # the branch moved this many runs back (beyond stats.MOVE_ALPHA): run_sd measured around each level
    se: Optional[float] = None  # standard error of the drop test: within-run and run-to-run parts together
    lower_bound: Optional[float] = None  # one-sided 95% lower bound of delta: PASS needs it above -resolution
    # Against the default branch's level (the mean of the last level_runs runs, baseline
    # included, of the level_cases cases with that history; evalgate.stats): what PASS and
    # INCONCLUSIVE are decided on when measured (with history), else delta and lower_bound.
    level_runs: int = 0
    level_cases: int = 0
    level_delta: Optional[float] = None
    level_se: Optional[float] = None
    level_lower_bound: Optional[float] = None
    level_shift: bool = False  # the branch moved within the window: the level spans only the runs since
    stable: int = 0  # stable cases tested together for breakage (with a ledger)
    broken: list[CaseKey] = field(default_factory=list)  # of them, the ones that broke now
    expected_breaks: Optional[float] = None  # of the stable cases, how many break by chance (history's hazards)
    # Confirmation runs (gate.confirm, evalgate.confirm): when every stable case that broke
    # was re-run, `broken` holds those that failed every re-run, `flaky` those that passed
    # one, and the test and expected_breaks count confirmed breaks; confirm_runs 0: the first run's.
    flaky: list[CaseKey] = field(default_factory=list)
    confirm_runs: int = 0
    repeat: Optional[float] = None  # the chance a chance failure repeats in the next run, from the ledger (mean)
    # What each stable case's chance of breaking came from: "outcomes" (the criterion's
    # pass/fail histories; alike for equal streaks) or "values" (a continuous criterion:
    # each case's own level, spread and dips; evalgate.stats.dip_hazards).
    hazards_from: Literal["outcomes", "values"] = "outcomes"
    breakage_p: Optional[float] = None  # pooled breakage test
    breakage_p_adjusted: Optional[float] = None
    # Partial drop (continuous criteria that are not judged, with a ledger; evalgate.stats):
    partial_cases: int = 0  # cases with a history of their own spread, tested
    partial_runs: int = 0  # ... over this many runs before the baseline's
    fell: int = 0  # of them, the ones that fell beyond SHIFT_Z of their own spread, the run's shift taken out
    rose: int = 0  # ... and rose
    lopsided_p: Optional[float] = None  # fell against rose
    steady_p: Optional[float] = None  # the drop, each case in units of its own spread
    steady_run_sd: Optional[float] = None  # ... allowing runs to move the cases by this sd, in units of their spreads
    partial_p: Optional[float] = None  # the two together (Bonferroni): one test in the Holm family
    partial_p_adjusted: Optional[float] = None


@dataclass
class CaseChange:
    """A case whose outcome moved between baseline and current."""

    key: CaseKey
    kind: Literal["regressed", "fixed", "broken_stable", "score_drop", "score_rise"]
    criteria: dict[str, tuple[Optional[float], Optional[float]]]  # name -> (baseline score, current score)
    p_value: Optional[float] = None  # for broken_stable: its criterion's pooled breakage test
    p_adjusted: Optional[float] = None  # for broken_stable: that test after Holm, as the verdict used it
    # For regressed: (runs passed, runs recorded) in the flake ledger when the case also
    # failed on the default branch there (a flaky case, which the breakage test leaves out).
    flaky_history: Optional[tuple[int, int]] = None


@dataclass
class PairwiseComparison:
    """A suite's changed answers judged side by side with the baseline's (`gate.pairwise`,
    evalgate.pairwise): losses against wins, ties set aside, one-sided exact sign test.

    The pull request's preference score of a case is 1 for a win, 1/2 for a tie (unchanged
    answers included) and 0 for a loss; `delta` is its mean over the compared cases less 1/2,
    (wins - losses) / (2 * compared), on the scale of a criterion's score, so `resolution`
    means what it means for a criterion; the margin is `gate.pairwise.margin` (default 0:
    one request sees both answers, so no judge mood moves one side alone, and the two
    orders cancel a position bias). The test: H0, the expected drop is at most the margin;
    given the n decided cases, each is lost with probability at most 1/2 + margin * compared
    / n, so p = P(Binomial(n, that) >= losses). One entry in the
    gate's Holm family. INCONCLUSIVE by the gate's rule: the drop is beyond the margin, not
    significant, and its one-sided 95% upper bound (Clopper-Pearson on the share of losses)
    is beyond max(resolution, margin).
    """

    suite: str
    pairs: SuitePairs
    compared: int  # cases compared: judged or unchanged (NOT_EVALUATED and left-out ones not)
    changed: int  # of them, with a changed answer (judged)
    losses: int
    wins: int
    ties: int  # unchanged answers included
    not_evaluated: int
    delta: Optional[float] = None  # (wins - losses) / (2 * compared)
    drop_upper: Optional[float] = None  # one-sided 95% upper bound of -delta
    p_value: Optional[float] = None
    p_adjusted: Optional[float] = None
    status: Verdict = Verdict.PASS
    reasons: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """`judged side by side: 14 of 20 changed answers worse than the baseline's, 3 better, 3 equal`."""
        equal = self.changed - self.losses - self.wins
        text = (
            f"judged side by side: {self.losses} of {_plural(self.changed, 'changed answer')} worse than the baseline's, "
            f"{self.wins} better, {equal} equal"
        )
        unchanged = self.compared - self.changed
        if unchanged:
            text += f", {unchanged} unchanged"
        extra = []
        if self.not_evaluated:
            extra.append(f"{_plural(self.not_evaluated, 'case')} not evaluated")
        if self.pairs.left_out:
            extra.append(f"{len(self.pairs.left_out)} left out by max_cases")
        if extra:
            text += " (" + ", ".join(extra) + ")"
        if self.p_adjusted is not None:
            text += f"; p = {_fmt_p(self.p_adjusted)} after Holm"
        return text


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
    costs: list[CostComparison] = field(default_factory=list)  # efficiency per turn against the baseline (evalgate.cost)


@dataclass
class BaselineInfo:
    commit: str  # "" when the caller did not say (e.g. a baseline file given by path)
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
    # PR mode: how the pull request's own gate policy differs from its base's, as a unified
    # diff (evalgate.policy); the gate ran under the base's. None: no change, or not known.
    gate_change: Optional[str] = None


# The flake ledger: per (suite, eval_set_id, eval_id, criterion), the last K outcomes of
# default-branch runs, oldest first. An outcome is the fraction of the criterion's samples
# that passed in that run (1.0 / 0.0 for a deterministic criterion), or None when the
# criterion was NOT_EVALUATED. Beside each outcome history, under `value_key`, the case's
# compared values in the same runs (its score, or a judge case's mean sample score): the
# gate measures from them how much a criterion's mean moves between runs. Both are
# appended together, so the two histories of a case line up from their ends (a ledger
# written before values were kept has outcomes only, and values start with the next run).
Ledger = dict[str, list[Optional[float]]]

_SEP = "\x1f"
_VALUE = "value"


def ledger_key(key: CaseKey, criterion: str) -> str:
    return _SEP.join((key.suite, key.eval_set_id, key.eval_id, criterion))


def value_key(key: CaseKey, criterion: str) -> str:
    return _SEP.join((key.suite, key.eval_set_id, key.eval_id, criterion, _VALUE))


def _ledger_histories(ledger: Ledger) -> dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]]:
    """(suite, criterion) -> (every case's recorded outcomes, every case's recorded values),
    None left out: the populations the breakage test fits its break rates to."""
    out: dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]] = {}
    for key, history in ledger.items():
        parts = key.split(_SEP)
        if len(parts) in (4, 5):  # ledger_key (an outcome) or value_key (a value)
            outcomes, values = out.setdefault((parts[0], parts[3]), ([], []))
            (outcomes if len(parts) == 4 else values).append([float(o) for o in history if o is not None])
    return out


# --- judge samples ------------------------------------------------------------------



def _number(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    return None


def _invocation_samples(details: Any) -> Optional[list[Optional[float]]]:
    samples = details.get("samples") if isinstance(details, dict) else None
    if isinstance(samples, list) and samples:
        return [_number(s) for s in samples]
    return None


def has_samples(result: CriterionResult) -> bool:
    """Whether a judge criterion recorded per-sample scores for any invocation."""
    return any(_invocation_samples(inv.details) is not None for inv in result.per_invocation)


def _run_scores(result: CriterionResult) -> Optional[list[float]]:
    """The scores of a case's agent runs (num_runs >= 2), leaving out runs not evaluated."""
    if result.runs and len(result.runs) > 1:
        return [float(r) for r in result.runs if r is not None]
    return None


def case_samples(result: CriterionResult) -> list[float]:
    """A case's sample scores for one criterion, per the contract in the module docstring.
    A criterion without judge samples whose case ran several times (num_runs) has one
    sample per evaluated run: its run score."""
    runs = _run_scores(result)
    if runs is not None and not has_samples(result):
        return runs
    per: list[tuple[Optional[float], Optional[list[Optional[float]]]]] = [
        (inv.score, _invocation_samples(inv.details)) for inv in result.per_invocation
    ]
    m = max((len(s) for _, s in per if s is not None), default=0)
    if m == 0:
        return [result.score] if result.score is not None else []
    out = []
    for j in range(m):
        total, count = 0.0, 0
        for score, samples in per:
            value = score if samples is None else (samples[j] if j < len(samples) else None)
            if value is not None:
                total += value
                count += 1
        if count:
            out.append(total / count)
    return out


def outcome(result: CriterionResult, judge: bool) -> Optional[float]:
    """What the ledger records for one case and criterion in one run."""
    if result.status in (Status.NOT_EVALUATED, Status.INFORMATIONAL):
        return None
    if not judge and _run_scores(result) is None:
        return 1.0 if result.status is Status.PASSED else 0.0
    samples = case_samples(result)
    if not samples:
        return None
    return sum(s >= result.threshold for s in samples) / len(samples)


def _value(result: CriterionResult, basis: str) -> float:
    if basis == "samples":
        samples = case_samples(result)
        if samples:
            return sum(samples) / len(samples)
    assert result.score is not None
    return result.score


# --- stable cases -----------------------------------------------------------------------


def stable_history(history: Iterable[Optional[float]], policy: GatePolicy) -> Optional[list[float]]:
    """The recorded outcomes that make a case stable, or None when it is not."""
    recorded = [float(o) for o in history if o is not None][-policy.history_runs :]
    if len(recorded) < policy.stable_min_runs or any(failed(o) for o in recorded):
        return None
    return recorded


# --- the ledger -------------------------------------------------------------------------


def update_ledger(ledger: Optional[Ledger], results: RunResults, k: int) -> Ledger:
    """A new ledger: this run's outcomes appended, each history trimmed to its last k.

    Cases and criteria absent from this run are dropped, so the ledger follows the
    default branch's current cases. The ledger does not know expected-data digests: a case
    whose expected data changes keeps its history. Pure: `ledger` is not modified.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    old = ledger or {}
    new: Ledger = {}
    for suite in results.suites:
        for case in suite.cases:
            key = CaseKey(suite.name, case.eval_set_id, case.eval_id)
            for name, result in case.criteria.items():
                spec = suite.criteria.get(name)
                judge = bool(spec and spec.judge)
                lk, vk = ledger_key(key, name), value_key(key, name)
                new[lk] = (list(old.get(lk, [])) + [outcome(result, judge)])[-k:]
                value = _value(result, "samples") if _evaluated(result) else None
                new[vk] = (list(old.get(vk, [])) + [value])[-k:]
            for name, result in case.efficiency.items():  # evalgate.cost measures their run-to-run spread
                vk = value_key(key, name)
                new[vk] = (list(old.get(vk, [])) + [result.value])[-k:]
    return dict(sorted(new.items()))


# --- comparison -------------------------------------------------------------------------


def _flaky_history(change: CaseChange, ledger: Ledger) -> Optional[tuple[int, int]]:
    """(runs passed, runs recorded) of a regressed case's least reliable criterion in the
    ledger, when that history holds a failure among at least MIN_HISTORY runs; else None."""
    worst: Optional[tuple[int, int]] = None
    for name in change.criteria:
        history = [v for v in ledger.get(ledger_key(change.key, name)) or [] if v is not None]
        if len(history) < MIN_HISTORY:
            continue
        passed = sum(1 for v in history if v > 0.5)
        if passed < len(history) and (worst is None or passed / len(history) < worst[0] / worst[1]):
            worst = (passed, len(history))
    return worst


def _fmt(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _fmt_p(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _name(key: CaseKey) -> str:
    return f"{key.eval_set_id}/{key.eval_id}"


def _names(keys: list[CaseKey], limit: int = 5) -> str:
    shown = ", ".join(_name(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _cases_by_key(suite: SuiteResult) -> dict[CaseKey, CaseResult]:
    # The engine keeps keys unique; should a file repeat one, the last occurrence wins.
    return {CaseKey(suite.name, c.eval_set_id, c.eval_id): c for c in suite.cases}


def _evaluated(result: Optional[CriterionResult]) -> bool:
    """Scored with a verdict: an INFORMATIONAL value (a custom metric may return one) is
    shown, never compared, as ADK never lets one decide a case."""
    return result is not None and result.status not in (Status.NOT_EVALUATED, Status.INFORMATIONAL) and result.score is not None


_INVOCATION_PREFIX = re.compile(r"^(\d+ of \d+ invocations not evaluated: )?(invocation \d+: )?")


def _reason(error: Optional[str]) -> str:
    """A NOT_EVALUATED record's reason without per-invocation numbering, to group cases."""
    if not error:
        return "not evaluated"
    parts = [_INVOCATION_PREFIX.sub("", p.strip()) for p in error.split("; ")]
    return "; ".join(dict.fromkeys(p for p in parts if p)) or "not evaluated"


def _skipped(suite: SuiteResult) -> list[str]:
    reasons: dict[str, Counter[str]] = {}
    for case in suite.cases:
        for name, result in case.criteria.items():
            if result.status is Status.NOT_EVALUATED:
                reasons.setdefault(name, Counter())[_reason(result.error)] += 1
    out = []
    for name in sorted(reasons):
        counts = reasons[name]
        n = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if len(ranked) == 1:
            out.append(f"{name}: {ranked[0][0]} ({_plural(n, 'case')} NOT_EVALUATED)")
        else:
            shown = "; ".join(f"{r} ({c})" for r, c in ranked[:3])
            more = f"; {len(ranked) - 3} other reasons" if len(ranked) > 3 else ""
            out.append(f"{name}: {_plural(n, 'case')} NOT_EVALUATED: {shown}{more}")
    return out


def _criteria_of(suite: SuiteResult) -> dict[str, tuple[float, bool, str]]:
    """name -> (threshold, judge, version), from the suite's specs and, failing that, its cases."""
    out = {name: (spec.threshold, spec.judge, spec.version) for name, spec in suite.criteria.items()}
    for case in suite.cases:
        for name, result in case.criteria.items():
            out.setdefault(name, (result.threshold, False, ""))
    return out


def _sampling(suite: Optional[SuiteResult], name: str) -> Optional[str]:
    """How a judge criterion's samples were drawn in this run ("early_stop"; None: every sample)."""
    spec = suite.criteria.get(name) if suite is not None else None
    return spec.sampling if spec is not None else None


def _not_evaluated_reasons(suite: SuiteResult) -> tuple[bool, list[str]]:
    """(fails the suite, reasons) for cases with a NOT_EVALUATED criterion, under the suite's policy."""
    n = suite.counts.incomplete
    if not n:
        return False, []
    what = f"{n} of {_plural(suite.counts.cases, 'case')} with criteria NOT_EVALUATED"
    if suite.not_evaluated_policy == "fail":
        return True, [f"{what}, and the suite's not_evaluated policy is `fail`"]
    if suite.not_evaluated_policy == "warn":
        return False, [f"{what} (not_evaluated: warn)"]
    return False, []


def _failing(suite: SuiteResult, name: str) -> tuple[int, int]:
    """(cases that FAILED the criterion, cases that have it)."""
    results = [c.criteria[name] for c in suite.cases if name in c.criteria]
    return sum(r.status is Status.FAILED for r in results), len(results)


def _below(failed: int, total: int, threshold: float) -> str:
    return f"{failed} of {_plural(total, 'case')} below the threshold {threshold:g}"


def _absolute_criterion(suite: SuiteResult, name: str, threshold: float, judge: bool) -> CriterionComparison:
    scores = [r.score for c in suite.cases if _evaluated(r := c.criteria.get(name))]
    failed, total = _failing(suite, name)
    return CriterionComparison(
        suite=suite.name,
        criterion=name,
        threshold=threshold,
        judge=judge,
        n_pairs=0,
        baseline_mean=None,
        current_mean=sum(scores) / len(scores) if scores else None,  # type: ignore[arg-type]
        delta=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        p_adjusted=None,
        status=Verdict.FAIL if failed else Verdict.PASS,
        reasons=[_below(failed, total, threshold)] if failed else [],
    )


def _absolute_verdict(suite: SuiteResult) -> tuple[Verdict, list[str]]:
    """ADK semantics: the suite's own status decides."""
    if not suite.cases:
        return Verdict.ERROR, ["the suite has no cases"]
    if suite.agent_error:
        return Verdict.ERROR, [suite.agent_error]
    fails_ne, ne_reasons = _not_evaluated_reasons(suite)
    if suite.status is Status.FAILED:
        reasons = []
        for name, (threshold, _, _) in sorted(_criteria_of(suite).items()):
            failed, total = _failing(suite, name)
            if failed:
                reasons.append(f"{name}: {_below(failed, total, threshold)}")
        return Verdict.FAIL, reasons + (ne_reasons if fails_ne else [])
    # Under `warn`, what was not evaluated makes the verdict INCONCLUSIVE: it passes, and says so.
    unheard = Verdict.INCONCLUSIVE if ne_reasons else Verdict.PASS
    if suite.status is Status.NOT_EVALUATED:
        return unheard, ["no case was evaluated"] + ne_reasons
    evaluated = suite.counts.cases - suite.counts.not_evaluated
    return unheard, [f"all {_plural(evaluated, 'evaluated case')} pass their thresholds"] + ne_reasons


@dataclass
class _Draft:
    """A suite's comparison before the Holm correction and the verdict."""

    current: SuiteResult
    baseline: Optional[SuiteResult]
    absolute: bool  # judged on absolute thresholds (no baseline for it)
    absolute_reason: Optional[str]
    criteria: list[CriterionComparison]
    new_criteria: set[str]
    flips: dict[str, list[CaseKey]]  # deterministic criterion -> cases PASSED -> FAILED
    changes: list[CaseChange]
    added: list[CaseKey]
    removed: list[CaseKey]
    changed: list[CaseKey]
    notes: list[str]  # warnings that do not decide the verdict


_KIND_ORDER = {"broken_stable": 0, "regressed": 1, "fixed": 2, "score_drop": 3, "score_rise": 4}


def _case_change(key: CaseKey, base: CaseResult, cur: CaseResult, names: list[str]) -> Optional[CaseChange]:
    moved: dict[str, tuple[Optional[float], Optional[float]]] = {}
    kinds = set()
    for name in names:
        b, c = base.criteria.get(name), cur.criteria.get(name)
        if b is None or c is None:
            continue
        if b.status is Status.PASSED and c.status is Status.FAILED:
            kinds.add("regressed")
        elif b.status is Status.FAILED and c.status is Status.PASSED:
            kinds.add("fixed")
        elif b.score is not None and c.score is not None and abs(c.score - b.score) > EPSILON:
            kinds.add("score_drop" if c.score < b.score else "score_rise")
        else:
            continue
        moved[name] = (b.score, c.score)
    if not kinds:
        return None
    kind = min(kinds, key=_KIND_ORDER.__getitem__)
    return CaseChange(key=key, kind=kind, criteria=moved)  # type: ignore[arg-type]


def _run_spread(keys: list[CaseKey], criterion: str, ledger: Optional[Ledger]) -> Optional[tuple[float, int, int]]:
    """(sigma_r^2, runs, runs back the branch moved or 0) measured on the ledger's value
    histories of these cases (evalgate.stats.run_variance), or None when fewer than
    MIN_HISTORY runs are complete for at least half of them (and 2)."""
    if not ledger:
        return None
    histories = [ledger.get(value_key(k, criterion)) or [] for k in keys]
    longest = max((len(h) for h in histories), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        rows = [[float(v) for v in h[-runs:]] for h in histories if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(rows) >= max(2, len(keys) / 2):
            variance, _, start = run_variance(rows)
            return variance, runs, runs - start if start else 0
    return None


def _test_drop(comp: CriterionComparison, diffs: list[float], keys: list[CaseKey], policy: GatePolicy, ledger: Optional[Ledger]) -> None:
    """The drop test of one criterion, with the run-to-run variation it allows for (evalgate.stats)."""
    measured = _run_spread(keys, comp.criterion, ledger)
    if measured is not None:
        sigma2, comp.history, comp.run_moved = measured
    else:
        sigma2 = (policy.run_sd_judge if comp.judge else policy.run_sd_deterministic) ** 2
        comp.history = 0
    comp.run_sd = math.sqrt(sigma2)
    run_df = _run_df(comp)
    if len(diffs) < 2:
        comp.reasons.append("one case compared: too few to test")
        return
    comp.p_value, comp.se, df = drop_test(diffs, policy.margin(comp.judge), 2 * sigma2, run_df)
    comp.ci_low, comp.ci_high = drop_interval(diffs, 2 * sigma2, df)
    comp.lower_bound, _ = drop_interval(diffs, 2 * sigma2, df, level=0.90)


def _run_df(comp: CriterionComparison) -> float:
    """Degrees of freedom of the run-to-run variance: runs less the levels it was measured
    around; infinite when assumed (no history)."""
    return comp.history - (2 if comp.run_moved else 1) if comp.history else math.inf


def _test_level(comp: CriterionComparison, base_values: list[float], cur_values: list[float], own: tuple[list[int], list[list[float]]]) -> None:
    """The drop against the default branch's level: the current run less the mean of the
    baseline's and the ledger's earlier runs (`own`: _own_histories), case by case
    (evalgate.stats: level_differences). The caller checks that the run-to-run variance
    was measured (comp.history) and that the values mean what the ledger's mean (a
    judge's sample means: basis "samples")."""
    chosen, rows = own
    if not chosen:
        return
    sigma2 = (comp.run_sd or 0.0) ** 2
    diffs, run_var, comp.level_runs = level_differences([cur_values[i] for i in chosen], [base_values[i] for i in chosen], rows, sigma2)
    comp.level_shift = comp.level_runs <= len(rows[0])  # runs before a move of the branch were left out
    n = len(diffs)
    mean = sum(diffs) / n
    within = sum((d - mean) ** 2 for d in diffs) / (n * n)
    df = satterthwaite(within, n, run_var, _run_df(comp))
    comp.level_cases = n
    comp.level_delta = mean
    comp.level_se = math.sqrt(within + run_var)
    comp.level_lower_bound, _ = drop_interval(diffs, run_var, df, level=0.90)


def _continuous(values: Iterable[float]) -> bool:
    """Whether a criterion's case values are scores, not pass/fail (some strictly between 0 and 1)."""
    return any(EPSILON < v < 1.0 - EPSILON for v in values)


def _own_histories(keys: list[CaseKey], criterion: str, ledger: Ledger, base_values: list[float]) -> tuple[list[int], list[list[float]]]:
    """(positions in keys, rows): the ledger's values of the cases with a complete history
    over the most recent runs that at least half of the cases (and PARTIAL_MIN_CASES) have,
    at least MIN_HISTORY of them, without the baseline's own run. The baseline must not
    measure a case's spread: a case whose baseline was an outlier would then look steady
    when the pull request's run comes back, and ordinary when it is the pull request's run
    that is the outlier. The ledger holds the baseline's run when, at one position from
    the end, every case's recorded value is its baseline value."""
    histories = [list(ledger.get(value_key(k, criterion)) or []) for k in keys]
    longest = max((len(h) for h in histories), default=0)
    for back in range(1, longest + 1):
        pairs = [(h[-back], b) for h, b in zip(histories, base_values) if len(h) >= back]
        if all(v is not None and abs(v - b) <= EPSILON for v, b in pairs):
            histories = [h[: len(h) - back] + h[len(h) - back + 1 :] if len(h) >= back else h for h in histories]
            break
    longest = max((len(h) for h in histories), default=0)
    for runs in range(longest, MIN_HISTORY - 1, -1):
        chosen = [i for i, h in enumerate(histories) if len(h) >= runs and all(v is not None for v in h[-runs:])]
        if len(chosen) >= max(PARTIAL_MIN_CASES, len(keys) / 2):
            return chosen, [[float(v) for v in histories[i][-runs:]] for i in chosen]
    return [], []


def _test_partial(comp: CriterionComparison, diffs: list[float], own: tuple[list[int], list[list[float]]], policy: GatePolicy) -> None:
    """The partial-drop test of a continuous criterion (evalgate.stats: case_scales,
    lopsided_test, steady_drop_test) on the cases' own histories (`own`: _own_histories):
    some cases falling while the run's common shift and the flaky cases' outliers are set aside."""
    chosen, rows = own
    if not chosen:
        return
    scales = case_scales(rows)
    moved = [diffs[i] for i in chosen]
    margin = policy.margin(comp.judge)
    comp.partial_cases, comp.partial_runs = len(chosen), len(rows[0])
    comp.lopsided_p, comp.fell, comp.rose = lopsided_test(moved, scales, margin)
    run_var, run_df = steady_run_variance(rows, scales)
    comp.steady_run_sd = math.sqrt(run_var)
    comp.steady_p = steady_drop_test(moved, scales, margin, run_var, run_df)
    comp.partial_p = min(1.0, 2 * min(comp.lopsided_p, comp.steady_p))


def _test_breakage(
    comp: CriterionComparison,
    pairs: list[tuple[CaseKey, CriterionResult, CriterionResult]],
    policy: GatePolicy,
    ledger: Ledger,
    outcomes: list[list[float]],
    values: Optional[list[list[float]]],
    reruns: Optional[dict] = None,
) -> None:
    """The pooled test of this criterion's stable cases (evalgate.stats: break_hazards,
    dip_hazards, break_test). `values`: every case's recorded values when the criterion is
    continuous (a stable case's chance of falling under the threshold is then its own), else None."""
    streaks, own, broken, keys = [], [], [], []
    for k, _, c in pairs:
        recorded = stable_history(ledger.get(ledger_key(k, comp.criterion), []), policy)
        if recorded is None:
            continue
        comp.stable += 1
        keys.append(k)
        streaks.append(len(recorded))
        own.append([float(v) for v in ledger.get(value_key(k, comp.criterion)) or [] if v is not None][-policy.history_runs :])
        now = outcome(c, comp.judge)
        broken.append(now is not None and broke(now))  # every sample (or run) failed
        if broken[-1]:
            comp.broken.append(k)
    if not comp.stable:
        return
    recent = [h[-policy.history_runs :] for h in outcomes]
    # Confirmation runs: a break counts when every re-run failed too, and its chance shrinks
    # by how often a chance failure repeats (evalgate.stats: repeat_share).
    confirmed = confirmation.verdicts(broken, keys, reruns or {}, comp.criterion, comp.judge, policy.confirm.runs)
    factors = [1.0]
    if confirmed is not None:
        repeat = repeat_share(recent)
        factors = repeat_factors(repeat, policy.confirm.runs)
        comp.flaky = [k for k, b, c in zip(keys, broken, confirmed) if b and not c]
        comp.broken = [k for k, c in zip(keys, confirmed) if c]
        comp.confirm_runs, comp.repeat, broken = policy.confirm.runs, repeat[0] / (repeat[0] + repeat[1]), confirmed
    scale = sum(factors) / len(factors)
    population = [v[-policy.history_runs :] for v in values or [] if len(v) >= MIN_HISTORY]
    if values is not None and len(population) >= 2 and all(len(v) >= MIN_HISTORY for v in own):
        hazards = dip_hazards(population, own, comp.threshold)
        comp.hazards_from = "values"
        comp.expected_breaks = sum(hazards) * scale
        comp.breakage_p = sum(break_test(broken, [h * x for h in hazards]) for x in factors) / len(factors)
        return
    fails, share = fail_hazards(recent, streaks), break_share(recent)
    comp.expected_breaks = sum(break_hazards(fails, share)) * scale
    comp.breakage_p = sum(share_break_test(broken, [f * x for f in fails], share) for x in factors) / len(factors)


def _draft(
    current: SuiteResult,
    baseline: Optional[SuiteResult],
    policy: GatePolicy,
    ledger: Optional[Ledger],
    histories: dict[tuple[str, str], tuple[list[list[float]], list[list[float]]]],
) -> _Draft:
    cur_cases = _cases_by_key(current)
    base_cases = _cases_by_key(baseline) if baseline is not None else {}
    added = sorted(k for k in cur_cases if k not in base_cases)
    removed = sorted(k for k in base_cases if k not in cur_cases)
    changed = sorted(k for k in cur_cases if k in base_cases and cur_cases[k].expected_digest != base_cases[k].expected_digest)
    paired = sorted(k for k in cur_cases if k in base_cases and cur_cases[k].expected_digest == base_cases[k].expected_digest)
    cur_specs = _criteria_of(current)
    base_specs = _criteria_of(baseline) if baseline is not None else {}
    notes: list[str] = []

    # No baseline for the suite (compare() says why), or nothing in common with it.
    absolute = baseline is None or not paired
    absolute_reason = "no case in common with the baseline: judged on absolute thresholds" if baseline is not None and not paired else None

    criteria: list[CriterionComparison] = []
    new_criteria: set[str] = set()
    flips: dict[str, list[CaseKey]] = {}
    for name in sorted(cur_specs):
        threshold, judge, version = cur_specs[name]
        if absolute or name not in base_specs:
            comp = _absolute_criterion(current, name, threshold, judge)
            if not absolute:
                new_criteria.add(name)
                comp.reasons.insert(0, "new criterion (not in the baseline): judged on its threshold")
            criteria.append(comp)
            continue
        b_threshold, _, b_version = base_specs[name]
        pairs = [
            (k, base_cases[k].criteria[name], cur_cases[k].criteria[name])
            for k in paired
            if _evaluated(base_cases[k].criteria.get(name)) and _evaluated(cur_cases[k].criteria.get(name))
        ]
        # Early stopping (judge.early_stop) changes what a sample mean is over, not what the
        # majority decides: two runs that drew samples by different rules compare on scores.
        sampling = (_sampling(baseline, name), _sampling(current, name))
        mixed = sampling[0] != sampling[1]
        basis = ("samples" if judge and not mixed and pairs and all(has_samples(b) and has_samples(c) for _, b, c in pairs)
                 else "scores")
        reasons = []
        if mixed:
            reasons.append(
                f"judge samples were drawn differently (baseline: {sampling[0] or 'every sample'}, current: "
                f"{sampling[1] or 'every sample'}): compared on majority-vote scores, which both rules decide alike, "
                "not on sample means; set judge.early_stop the same for both runs to compare sample means"
            )
        if b_threshold != threshold:
            reasons.append(f"threshold changed from {b_threshold:g} to {threshold:g}")
        if b_version != version:
            reasons.append(f"criterion version changed from {b_version or '?'} to {version or '?'}")
        comp = CriterionComparison(
            suite=current.name,
            criterion=name,
            threshold=threshold,
            judge=judge,
            n_pairs=len(pairs),
            baseline_mean=None,
            current_mean=None,
            delta=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            p_adjusted=None,
            status=Verdict.PASS,
            reasons=reasons,
            basis=basis,  # type: ignore[arg-type]
        )
        continuous = False  # the values are scores (some strictly between 0 and 1), not judged
        if pairs:
            base_values = [_value(b, basis) for _, b, _ in pairs]
            cur_values = [_value(c, basis) for _, _, c in pairs]
            continuous = not judge and _continuous(base_values + cur_values)
            diffs = [round(c - b, ROUND) for b, c in zip(base_values, cur_values)]
            comp.baseline_mean = sum(base_values) / len(pairs)
            comp.current_mean = sum(cur_values) / len(pairs)
            comp.delta = sum(diffs) / len(pairs)
            keys = [k for k, _, _ in pairs]
            _test_drop(comp, diffs, keys, policy, ledger)
            level = bool(comp.history) and (not judge or basis == "samples")
            if ledger and (level or continuous):  # the cases' own histories, read once for both tests
                own = _own_histories(keys, name, ledger, base_values)  # asks for PARTIAL_MIN_CASES cases
                if level:
                    _test_level(comp, base_values, cur_values, own)
                if continuous:
                    _test_partial(comp, diffs, own, policy)
        else:
            comp.reasons.append("not compared: no case was evaluated in both runs")
        if not judge:
            flipped = [k for k, b, c in pairs if b.status is Status.PASSED and c.status is Status.FAILED
                       and not confirmation.passed_again(cur_cases[k].reruns, name)]  # a re-run that passed: flaky
            if flipped:
                flips[name] = flipped
        if ledger and pairs:
            outcomes, values = histories.get((current.name, name), ([], []))
            reruns = {k: cur_cases[k].reruns for k, _, _ in pairs if cur_cases[k].reruns}
            _test_breakage(comp, pairs, policy, ledger, outcomes, values if continuous else None, reruns)
        criteria.append(comp)

    gone = sorted(set(base_specs) - set(cur_specs))
    if gone and not absolute:
        notes.append(f"not in this run, not compared: {', '.join(gone)}")

    changes = []
    if not absolute:
        shared = sorted(set(cur_specs) & set(base_specs))
        for k in paired:
            change = _case_change(k, base_cases[k], cur_cases[k], shared)
            if change is not None:
                changes.append(change)
        not_compared = sorted(k for k in added + changed if cur_cases[k].status is Status.FAILED)
        if not_compared:
            notes.append(
                f"{_plural(len(not_compared), 'added or changed case')} fail, not gated (no baseline to compare with): "
                + _names(not_compared)
            )
    return _Draft(
        current=current,
        baseline=baseline,
        absolute=absolute,
        absolute_reason=absolute_reason,
        criteria=criteria,
        new_criteria=new_criteria,
        flips=flips,
        changes=changes,
        added=added,
        removed=removed,
        changed=changed,
        notes=notes,
    )


def _variation_words(comp: CriterionComparison) -> str:
    """The run-to-run variation a criterion's test allowed for, and where it came from."""
    sd = comp.run_sd or 0.0
    if comp.history:
        moved = f", around the default branch's level before and after it moved {comp.run_moved} runs back" if comp.run_moved else ""
        return f"run-to-run sd {sd:.3f} from {_plural(comp.history, 'run')} of history{moved}"
    return f"run-to-run sd {sd:.3f} assumed (no history yet)" if sd else "no run-to-run variation assumed (no history yet)"


def _drop_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.delta is not None
    margin = policy.margin(comp.judge)
    interval = f", 95% CI [{_fmt(comp.ci_low)}, {_fmt(comp.ci_high)}]" if comp.ci_low is not None else ""
    moved = f"dropped by {-comp.delta:.3f}" if comp.delta < 0 else f"rose by {comp.delta:.3f}" if comp.delta > 0 else "did not move"
    return (
        f"mean {'sample score' if comp.basis == 'samples' else 'score'} {moved} "
        f"({_fmt(comp.baseline_mean)} to {_fmt(comp.current_mean)}{interval}; margin {margin:g}; {_variation_words(comp)})"
    )


def _by_level(comp: CriterionComparison) -> bool:
    """Whether PASS and INCONCLUSIVE go by the default branch's level rather than by the
    baseline run alone."""
    return comp.level_delta is not None


def _lower(comp: CriterionComparison) -> Optional[float]:
    return comp.level_lower_bound if _by_level(comp) else comp.lower_bound


def _unsure(comp: CriterionComparison, policy: GatePolicy) -> bool:
    """The drop is beyond the margin and the run cannot rule out one beyond the resolution."""
    margin = policy.margin(comp.judge)
    drop = comp.level_delta if _by_level(comp) else comp.delta
    lower = _lower(comp)
    return drop is not None and drop < -margin and (lower is None or lower < -max(policy.resolution, margin))


def _level_words(comp: CriterionComparison) -> str:
    if comp.level_delta is None:
        return ""
    moved = f"{-comp.level_delta:.3f} below" if comp.level_delta < 0 else f"{comp.level_delta:.3f} above"
    if comp.level_runs == 1:
        return f"; the default branch moved at its last run, so the baseline run alone is its level ({moved} it)"
    since = f", since it moved {comp.level_runs} runs back" if comp.level_shift else ""
    return (
        f"; {moved} the default branch's level (its last {comp.level_runs} runs, baseline included{since}, "
        f"over the {_plural(comp.level_cases, 'case')} they share)"
    )


def _what_would_settle(comp: CriterionComparison) -> str:
    """What would narrow an interval too wide to call: the larger part of its variance names it."""
    by_level = _by_level(comp)
    se = comp.level_se if by_level else comp.se
    run_var = (comp.run_sd or 0.0) ** 2 * ((1 + 1 / comp.level_runs) if by_level else 2)
    if _lower(comp) is None or not se:
        return f"{comp.n_pairs} cases are too few for an interval: add cases"
    if run_var >= se**2 / 2:  # run-to-run variation is at least half of it
        if comp.history:
            return (
                "most of the width is run-to-run variation, which more cases cannot average away: "
                "it narrows as the ledger holds more runs, or with a steadier judge (temperature 0, a fixed model version)"
            )
        return "most of the width is the run-to-run variation assumed without history: it is measured once the ledger holds 3 runs"
    return "more cases, num_samples (judge criteria) or num_runs would narrow it"


def _breakage_words(comp: CriterionComparison, policy: GatePolicy) -> str:
    assert comp.expected_breaks is not None and comp.breakage_p is not None and comp.breakage_p_adjusted is not None
    return (
        f"{len(comp.broken)} of {_plural(comp.stable, 'stable case')} broke (each passed all of its last "
        f"{policy.stable_min_runs}+ runs): {_names(sorted(comp.broken))}; by chance, history expects {comp.expected_breaks:.2f}; "
        f"p = {_fmt_p(comp.breakage_p)}, {_fmt_p(comp.breakage_p_adjusted)} after Holm"
        + ("; each case's chance its own, from its level and dips in history" if comp.hazards_from == "values" else "")
        + _confirm_words(comp)
    )


def _confirm_words(comp: CriterionComparison) -> str:
    """What confirmation runs changed in the breakage test (evalgate.confirm), or ""."""
    if not comp.confirm_runs:
        return ""
    flaky = f"; {len(comp.flaky)} passed on re-run, flaky, not counted: {_names(sorted(comp.flaky))}" if comp.flaky else ""
    return (f"; each failed all {comp.confirm_runs} re-runs, and history says a chance failure repeats in the next run "
            f"with chance {comp.repeat:.2f}{flaky}")


def _partial_words(comp: CriterionComparison) -> str:
    assert comp.lopsided_p is not None and comp.steady_p is not None and comp.partial_p_adjusted is not None
    return (
        f"some cases fell: {comp.fell} of {comp.partial_cases} cases fell by more than {SHIFT_Z:g} times their own "
        f"run-to-run spread and {comp.rose} rose, the run's common shift set aside (p = {_fmt_p(comp.lopsided_p)}); "
        f"in units of each case's spread, outliers capped, allowing runs to move them by {comp.steady_run_sd or 0.0:.2f} "
        f"of a spread (sd, from {_plural(comp.partial_runs, 'run')}), the scores fell with p = {_fmt_p(comp.steady_p)}; "
        f"together p = {_fmt_p(comp.partial_p_adjusted)} after Holm"
    )


def _regression_verdict(draft: _Draft, policy: GatePolicy) -> tuple[Verdict, list[str]]:
    suite = draft.current
    if not suite.cases:
        return Verdict.ERROR, ["the suite has no cases"]
    if suite.agent_error:
        return Verdict.ERROR, [suite.agent_error]
    fail: list[str] = []
    unsure: list[str] = []
    for comp in draft.criteria:
        name = comp.criterion
        if name in draft.new_criteria:
            if comp.status is Verdict.FAIL:
                fail.append(f"{name}: new criterion, {_below(*_failing(suite, name), comp.threshold)}")
            continue
        status = Verdict.PASS
        flipped = draft.flips.get(name, []) if policy.deterministic_flips == "fail" else []
        if flipped:
            status = Verdict.FAIL
            text = f"{_plural(len(flipped), 'case')} went from PASSED to FAILED (a deterministic criterion: no noise to allow for): {_names(flipped)}"
            comp.reasons.append(text)
            fail.append(f"{name}: {text}")
        margin = policy.margin(comp.judge)
        if comp.delta is not None and comp.p_adjusted is not None:
            what = _drop_words(comp, policy)
            if comp.p_adjusted < policy.alpha:
                status = Verdict.FAIL
                text = f"{what}: a significant drop, p = {_fmt_p(comp.p_adjusted)} after Holm"
                comp.reasons.append(text)
                fail.append(f"{name}: {text}")
            elif _unsure(comp, policy):
                text = f"{what}{_level_words(comp)}: this run cannot rule out a drop bigger than {max(policy.resolution, margin):g} " + (
                    f"(95% lower bound {_fmt(_lower(comp))}); {_what_would_settle(comp)}"
                )
                comp.reasons.append(text)
                unsure.append(f"{name}: {text}")
                if status is Verdict.PASS:
                    status = Verdict.INCONCLUSIVE
            elif comp.delta < -margin or (comp.level_delta is not None and comp.level_delta < -margin):
                comp.reasons.append(f"{what}{_level_words(comp)}: within what an unchanged agent does (p = {_fmt_p(comp.p_adjusted)} after Holm)")
        elif comp.delta is not None and comp.n_pairs < 2 and comp.delta < 0:
            text = "one case compared, and it dropped: too few to tell"
            comp.reasons.append(text)
            unsure.append(f"{name}: {text}")
            if status is Verdict.PASS:
                status = Verdict.INCONCLUSIVE
        if comp.partial_p_adjusted is not None and comp.partial_p_adjusted < policy.alpha:
            status = Verdict.FAIL
            text = _partial_words(comp)
            comp.reasons.append(text)
            fail.append(f"{name}: {text}")
        if comp.broken and comp.breakage_p_adjusted is not None:
            text = _breakage_words(comp, policy)
            if comp.breakage_p_adjusted < policy.alpha:
                status = Verdict.FAIL
                comp.reasons.append(text)
                fail.append(f"{name}: {text}")
            else:
                # Listed, but no warning: nondeterministic agents break a stable case now and then.
                comp.reasons.append(f"{text}, not significant at alpha {policy.alpha:g}")
        elif comp.flaky:
            comp.reasons.append(f"{_plural(len(comp.flaky), 'stable case')} broke and passed on re-run: flaky, not counted: {_names(sorted(comp.flaky))}")
        comp.status = status

    fails_ne, ne_reasons = _not_evaluated_reasons(suite)
    if fails_ne:
        fail += ne_reasons
    if fail:
        return Verdict.FAIL, fail + unsure + ([] if fails_ne else ne_reasons) + draft.notes
    if unsure:
        if policy.inconclusive == "fail":
            return Verdict.FAIL, unsure + ["inconclusive, and the gate's `inconclusive` policy is `fail`"] + ne_reasons + draft.notes
        return Verdict.INCONCLUSIVE, unsure + ne_reasons + draft.notes
    if ne_reasons:  # `warn`: criteria that were not heard cannot be called a pass
        return Verdict.INCONCLUSIVE, ne_reasons + draft.notes
    compared = [c for c in draft.criteria if c.n_pairs]
    n_pairs = max((c.n_pairs for c in compared), default=0)
    summary = (
        f"no drop beyond the margin in {_plural(len(compared), 'criterion', 'criteria')} over {_plural(n_pairs, 'case')} compared"
        if compared
        else "nothing to compare: no case was evaluated in both runs"
    )
    return Verdict.PASS, [summary] + ne_reasons + draft.notes


def _history_of(suite: str, ledger: Optional[Ledger]) -> Optional[cost.HistoryOf]:
    """The ledger's values of an efficiency metric for a suite's case (evalgate.cost)."""
    if not ledger:
        return None
    return lambda set_id, case_id, metric: ledger.get(value_key(CaseKey(suite, set_id, case_id), metric))


def _pairwise_draft(pairs: SuitePairs, policy: GatePolicy) -> PairwiseComparison:
    """Counts, drop and sign test of a suite's pairs (see PairwiseComparison)."""
    counted = [c for c in pairs.cases if c.outcome != "not_evaluated"]
    losses = sum(c.outcome == "loss" for c in counted)
    wins = sum(c.outcome == "win" for c in counted)
    comp = PairwiseComparison(
        suite=pairs.suite,
        pairs=pairs,
        compared=len(counted),
        changed=sum(c.changed for c in counted),
        losses=losses,
        wins=wins,
        ties=len(counted) - losses - wins,
        not_evaluated=len(pairs.cases) - len(counted),
    )
    if not counted:
        return comp
    n, total = losses + wins, len(counted)
    comp.delta = (wins - losses) / (2 * total)
    if n:
        margin = policy.pairwise.margin
        comp.p_value = sign_test(losses, wins, 0.5 + margin * total / n)
        upper = binomial_upper(losses, n)
        comp.drop_upper = None if upper is None else (2 * upper - 1) * n / (2 * total)
    return comp


def _pairwise_verdict(comp: PairwiseComparison, policy: GatePolicy) -> tuple[Optional[str], Optional[str]]:
    """(why it FAILs, why it is INCONCLUSIVE), each None when not; sets comp.status and reasons."""
    margin = policy.pairwise.margin
    what = comp.summary()
    if comp.not_evaluated:
        failed_cases = [c for c in comp.pairs.cases if c.outcome == "not_evaluated"]
        comp.reasons.append(
            f"{_plural(len(failed_cases), 'case')} not evaluated side by side: "
            + ", ".join(f"{c.eval_set_id}/{c.eval_id}" for c in failed_cases[:3])
            + (f" and {len(failed_cases) - 3} more" if len(failed_cases) > 3 else "")
            + f" ({failed_cases[0].error})"
        )
    if comp.pairs.left_out:
        names = [f"{a}/{b}" for a, b in comp.pairs.left_out]
        comp.reasons.append(
            f"{_plural(len(names), 'changed case')} not judged side by side (beyond gate.pairwise.max_cases): " + ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        )
    drop = None if comp.delta is None else -comp.delta
    if comp.p_adjusted is not None and comp.p_adjusted < policy.alpha:
        comp.status = Verdict.FAIL
        text = f"{what}: the pull request's answers lose significantly more often than they win (drop {drop:.3f}, beyond the margin {margin:g})"
        comp.reasons.insert(0, text)
        return text, None
    if drop is not None and drop > margin and (comp.drop_upper is None or comp.drop_upper > max(policy.resolution, margin)):
        comp.status = Verdict.INCONCLUSIVE
        bound = "" if comp.drop_upper is None else f" (95% upper bound {comp.drop_upper:.3f})"
        text = (
            f"{what}: losing more often than winning (drop {drop:.3f}, margin {margin:g}), not significantly; this run cannot "
            f"rule out a drop bigger than {max(policy.resolution, margin):g}{bound}; more changed cases would settle it"
        )
        comp.reasons.insert(0, text)
        return None, text
    comp.status = Verdict.PASS
    comp.reasons.insert(0, what)
    return None, None


def _apply_pairwise(verdict: Verdict, reasons: list[str], comp: PairwiseComparison, policy: GatePolicy, not_evaluated: str) -> Verdict:
    """A regression-mode suite's verdict with its pairwise test folded in. Cases the judge could
    not decide are never losses; they follow the suite's `not_evaluated` policy as any case not
    evaluated does: `fail` fails the suite, `warn` makes a pass INCONCLUSIVE, `ignore` nothing."""
    fail, unsure = _pairwise_verdict(comp, policy)
    if verdict is Verdict.ERROR:
        return verdict
    unheard = next((r for r in comp.reasons if "not evaluated side by side" in r), None)
    if fail:
        reasons.insert(0, fail)
        return Verdict.FAIL
    if unheard is not None and not_evaluated != "ignore":
        reasons.append(unheard)
        if not_evaluated == "fail":
            return Verdict.FAIL
        if verdict is Verdict.PASS and not unsure:  # `warn`: answers the judge did not hear cannot be called a pass
            verdict = Verdict.INCONCLUSIVE
    if unsure:
        reasons.append(unsure)
        if verdict is Verdict.PASS:
            if policy.inconclusive == "fail":
                reasons.append("inconclusive, and the gate's `inconclusive` policy is `fail`")
                return Verdict.FAIL
            return Verdict.INCONCLUSIVE
    return verdict


def compare(
    baseline: Optional[RunResults],
    current: RunResults,
    policy: GatePolicy,
    ledger: Optional[Ledger] = None,
    baseline_info: Optional[BaselineInfo] = None,
    pairwise: Optional[dict[str, SuitePairs]] = None,
) -> Comparison:
    """The gate's decision. Pure: the same inputs always give the same Comparison.
    `pairwise`: each suite's changed answers judged side by side (evalgate.pairwise), tested here."""
    if baseline is None:
        mode: Literal["absolute", "regression"] = "absolute"
    else:
        mode = "absolute" if policy.mode == "absolute" else "regression"
    base_suites = {s.name: s for s in baseline.suites} if baseline is not None else {}
    histories = _ledger_histories(ledger) if ledger else {}  # read once, for every suite's breakage tests
    drafts = [_draft(s, base_suites.get(s.name), policy, ledger, histories) for s in current.suites]

    tests: dict[tuple, tuple[float, float]] = {}
    for d in drafts:
        for comp in d.criteria:
            if comp.p_value is not None:
                tests[("drop", d.current.name, comp.criterion)] = (comp.p_value, 1.0)
            if comp.breakage_p is not None:
                tests[("breakage", d.current.name, comp.criterion)] = (comp.breakage_p, 1.0)
            if comp.partial_p is not None:
                tests[("partial", d.current.name, comp.criterion)] = (comp.partial_p, 1.0)
    side_by_side = {}
    if baseline is not None and pairwise:
        side_by_side = {name: _pairwise_draft(p, policy) for name, p in pairwise.items()}
        for name, pw in side_by_side.items():
            if pw.p_value is not None:
                tests[("pairwise", name, "")] = (pw.p_value, 1.0)
    costs = {
        d.current.name: cost.compare_suite(d.current, d.baseline, policy.efficiency, _history_of(d.current.name, ledger))
        for d in drafts
        if d.baseline is not None
    }
    for name, rows in costs.items():
        for row in rows:
            if row.p_value is not None:
                tests[("efficiency", name, row.metric)] = (row.p_value, 1.0)
    adjusted = holm(tests)
    for name, rows in costs.items():
        for row in rows:
            row.p_adjusted = adjusted.get(("efficiency", name, row.metric))
    for name, pw in side_by_side.items():
        pw.p_adjusted = adjusted.get(("pairwise", name, ""))
    for d in drafts:
        for comp in d.criteria:
            comp.p_adjusted = adjusted.get(("drop", d.current.name, comp.criterion))
            comp.breakage_p_adjusted = adjusted.get(("breakage", d.current.name, comp.criterion))
            comp.partial_p_adjusted = adjusted.get(("partial", d.current.name, comp.criterion))

    suites: list[SuiteComparison] = []
    for d in drafts:
        name = d.current.name
        if mode == "absolute" or d.absolute:
            verdict, reasons = _absolute_verdict(d.current)
            if verdict is Verdict.ERROR:
                pass
            elif d.absolute_reason:
                reasons.insert(0, d.absolute_reason)
            elif baseline is not None and d.baseline is None:
                reasons.insert(0, "new suite (not in the baseline): judged on absolute thresholds")
            else:
                reasons += d.notes
            for comp in d.criteria:  # absolute statuses per criterion too; the statistics stay for information
                if comp.n_pairs:
                    failed, total = _failing(d.current, comp.criterion)
                    comp.status = Verdict.FAIL if failed else Verdict.PASS
                    if failed:
                        comp.reasons.append(_below(failed, total, comp.threshold))
        else:
            verdict, reasons = _regression_verdict(d, policy)
        pw = side_by_side.get(name)
        if pw is not None:
            if mode == "absolute" or d.absolute:
                _pairwise_verdict(pw, policy)  # for information, as the statistics above
            else:
                verdict = _apply_pairwise(verdict, reasons, pw, policy, d.current.not_evaluated_policy)
        for row in costs.get(name, []):
            fail = cost.decide(row, policy.alpha, gating=mode == "regression" and not d.absolute)
            if fail and verdict is not Verdict.ERROR:
                verdict = Verdict.FAIL
                reasons.insert(0, fail)
        if policy.removed_cases == "fail" and d.removed and verdict is not Verdict.ERROR:
            verdict = Verdict.FAIL
            reasons.insert(0, f"{_plural(len(d.removed), 'baseline case')} removed (gate.removed_cases: fail)")
        changes = list(d.changes)
        by_key = {c.key: c for c in changes}
        cur_cases = _cases_by_key(d.current)
        base_cases = _cases_by_key(d.baseline) if d.baseline is not None else {}
        for comp in d.criteria:
            for key in comp.broken:
                change = by_key.get(key)
                if change is None:
                    change = by_key[key] = CaseChange(key=key, kind="broken_stable", criteria={})
                    changes.append(change)
                change.criteria[comp.criterion] = (
                    base_cases[key].criteria[comp.criterion].score,
                    cur_cases[key].criteria[comp.criterion].score,
                )
                if change.kind != "broken_stable" or change.p_value is None or (comp.breakage_p or 1.0) < change.p_value:
                    change.kind = "broken_stable"
                    change.p_value = comp.breakage_p
                    change.p_adjusted = comp.breakage_p_adjusted
        if ledger:
            for change in changes:
                if change.kind == "regressed":
                    change.flaky_history = _flaky_history(change, ledger)
        changes.sort(key=lambda c: (_KIND_ORDER[c.kind], c.key))
        suites.append(
            SuiteComparison(
                name=name,
                verdict=verdict,
                reasons=reasons,
                criteria=d.criteria,
                changes=changes,
                added=d.added,
                removed=d.removed,
                changed=d.changed,
                skipped_criteria=_skipped(d.current),
                pairwise=pw,
                costs=costs.get(name, []),
            )
        )
    for name in sorted(set(base_suites) - {s.name for s in current.suites}):
        old = base_suites[name]
        removed_fails = policy.removed_cases == "fail" and bool(old.cases)
        suites.append(
            SuiteComparison(
                name=name,
                verdict=Verdict.FAIL if removed_fails else Verdict.PASS,
                reasons=[f"not in this run (removed from the config): {_plural(len(old.cases), 'baseline case')} not compared"
                         + (" (gate.removed_cases: fail)" if removed_fails else "")],
                criteria=[],
                changes=[],
                added=[],
                removed=sorted(_cases_by_key(old)),
                changed=[],
                skipped_criteria=[],
            )
        )

    config_changed = baseline is not None and baseline.config_digest != current.config_digest
    reasons = []
    if baseline is None:
        reasons.append("no baseline found: absolute thresholds only")
    elif mode == "absolute":
        reasons.append("mode absolute: every case must pass every threshold; changes from the baseline are listed for information")
    if config_changed:
        reasons.append("the config changed since the baseline: compared on the criteria both share")
    verdicts = [s.verdict for s in suites]
    if Verdict.FAIL in verdicts or Verdict.ERROR in verdicts:
        overall = Verdict.FAIL
    elif Verdict.INCONCLUSIVE in verdicts:
        overall = Verdict.INCONCLUSIVE
    else:
        overall = Verdict.PASS
    for s in suites:
        if s.verdict is not Verdict.PASS:
            reasons.append(f"{s.name}: {s.verdict.value}: {s.reasons[0] if s.reasons else 'see the suite'}")
    if overall is Verdict.PASS and not suites:
        reasons.append("no suites")
    if baseline is not None and baseline_info is None:
        baseline_info = BaselineInfo(commit="", requested_commit="", distance=0, created_at=None)
    return Comparison(
        verdict=overall,
        reasons=reasons,
        suites=suites,
        baseline=baseline_info if baseline is not None else None,
        config_changed=config_changed,
        mode=mode,
    )
