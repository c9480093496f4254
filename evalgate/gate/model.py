"""The gate's types: its policy (the config's `gate:` section), the verdicts and the parts of what a
comparison returns (the whole, a suite's and the run's, is evalgate.gate.comparison's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalgate.efficiency import METRICS
from evalgate.gate.pairwise import PairwisePolicy


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"


class ConfirmPolicy(BaseModel):
    """`gate.confirm`: re-run suspected breaks before deciding."""

    model_config = ConfigDict(extra="forbid")

    runs: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Confirmation runs per suspect: a stable case that broke counts as broken only when it fails again in "
        "every one. 0 turns confirmation off.",
    )
    max_cases: int = Field(default=20, ge=1, le=1000, description="At most this many suspects are re-run, stable cases that broke first.")


class EfficiencyPolicy(BaseModel):
    """`gate.efficiency`: the increase per turn tolerated for each efficiency metric (a share:
    0.15 is +15%). A metric not named is compared and reported, never gated."""

    model_config = ConfigDict(extra="forbid")

    tool_call_count_v1: Optional[float] = Field(default=None, ge=0, description="Tolerated increase of tool calls per turn (0.15: +15%).")
    inference_call_count_v1: Optional[float] = Field(default=None, ge=0, description="Tolerated increase of model calls per turn.")
    token_usage_v1: Optional[float] = Field(default=None, ge=0, description="Tolerated increase of tokens per turn (total tokens).")
    invocation_duration_v1: Optional[float] = Field(
        default=None, ge=0, description="Tolerated increase of the agent's seconds per turn (wall clock; noisy on a shared machine)."
    )

    @field_validator(*METRICS, mode="before")
    @classmethod
    def _share(cls, value: object) -> object:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"a tolerated increase is a share of at least 0, not {value}: 0.15 tolerates +15%, 0 fails on any significant increase")
        return value

    def tolerance(self, metric: str) -> Optional[float]:
        return getattr(self, metric)


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

    def margin(self, judge: bool, span: float = 1.0) -> float:
        """The drop a criterion tolerates: margin_judge or margin_deterministic, as a fraction
        of its score range `span` (1 for scores in [0, 1]; evalgate.gate.values.score_range)."""
        return (self.margin_judge if judge else self.margin_deterministic) * span

    def resolution_of(self, span: float = 1.0) -> float:
        """`resolution` on a criterion's scale, `span` its score range."""
        return self.resolution * span

    def run_sd(self, judge: bool, span: float = 1.0) -> float:
        """The run-to-run sd assumed without history, `span` the criterion's score range."""
        return (self.run_sd_judge if judge else self.run_sd_deterministic) * span


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
    # Its scores' range, highest - lowest (4 for response_evaluation_score's 1 to 5): the
    # numbers here are on its own scale, the margins and resolution fractions of the range.
    span: float = 1.0
    # False for a scale without a highest or lowest score (a count): differences are not bounded by `span`.
    bounded: bool = True
    # A criterion without a threshold (agents-cli's metrics): only the comparison judges it; reports show no threshold.
    no_threshold: bool = False
    # What the means, delta and test are over: "scores" (the criterion's case scores) or
    # "samples" (per case, the mean of its judge samples; see the module docstring).
    basis: Literal["scores", "samples"] = "scores"
    evaluated: int = 0  # cases with a score in this run (absolute mode's "cases": there is nothing to pair)
    # What the gate allowed for and found (regression mode; evalgate.gate.stats says why):
    run_sd: Optional[float] = None  # run-to-run standard deviation of the criterion's mean
    history: int = 0  # runs of history run_sd was measured on; 0: assumed (the policy's run_sd_*)
    run_moved: int = 0  # the branch moved this many runs back (beyond stats.MOVE_ALPHA): run_sd measured around each level
    mean_sd: Optional[float] = None  # sd of the compared cases' mean over those history runs (run_sd is its shared part)
    se: Optional[float] = None  # standard error of the drop test: within-run and run-to-run parts together
    lower_bound: Optional[float] = None  # one-sided 95% lower bound of delta: PASS needs it above -resolution
    # Against the default branch's level (the mean of the last level_runs runs, baseline
    # included, of the level_cases cases with that history; evalgate.gate.stats): what PASS and
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
    # Confirmation runs (gate.confirm, evalgate.gate.confirm): when every stable case that broke
    # was re-run, `broken` holds those that failed every re-run, `flaky` those that passed
    # one, and the test and expected_breaks count confirmed breaks; confirm_runs 0: the first run's.
    flaky: list[CaseKey] = field(default_factory=list)
    confirm_runs: int = 0
    repeat: Optional[float] = None  # (no longer set) the pooled chance a failure repeats in the next run
    # Of the stable cases that broke and were re-run: those that failed some, not all, re-runs
    # (newly flaky: weighed, evalgate.gate.flakiness.graded_test), and those whose base commit
    # failed its own re-runs too (the environment, evalgate.gate.control: said, not counted).
    newly_flaky: list[CaseKey] = field(default_factory=list)
    environment: list[CaseKey] = field(default_factory=list)
    # Of the stable cases that broke in the run, those whose clean streak fills the ledger's
    # window (history_runs): where a further round of re-runs can tell a newly flaky case from
    # a flaky one that was lucky (evalgate.gate.control.extension).
    full_streak: list[CaseKey] = field(default_factory=list)
    chance_each: Optional[float] = None  # a counted case's own chance of what it did (median), under an unchanged agent
    streak_each: int = 0  # ... for a case with this many clean runs (median)
    rerun_span: tuple[int, int] = (0, 0)  # the fewest and most re-runs a case that broke had (more where the pipeline re-ran again)
    newly_fails: list[int] = field(default_factory=list)  # how many re-runs the newly flaky ones failed
    # The first day (no case stable yet, evalgate.gate.firstday): the cases the baseline passed
    # that broke now (suspects), and of them those that failed every re-run (and, with the
    # base commit's re-runs, passed those).
    first_day: list[CaseKey] = field(default_factory=list)
    first_day_broken: list[CaseKey] = field(default_factory=list)
    first_day_control: bool = False  # the base commit's re-runs were the control
    # Suspects not re-run because even all of them failing every re-run could not FAIL the
    # criterion (firstday.could_decide), said in the reasons: how many would be needed (None:
    # no number of the cases the baseline passed), and the baseline run's (failed, cases).
    first_day_skipped: list[CaseKey] = field(default_factory=list)
    first_day_needed: Optional[int] = None
    first_day_share: tuple[int, int] = (0, 0)
    # What each stable case's chance of breaking came from: "outcomes" (the criterion's
    # pass/fail histories; alike for equal streaks) or "values" (a continuous criterion:
    # each case's own level, spread and dips; evalgate.gate.stats.dip_hazards).
    hazards_from: Literal["outcomes", "values"] = "outcomes"
    breakage_p: Optional[float] = None  # pooled breakage test
    breakage_p_adjusted: Optional[float] = None
    # Partial drop (continuous criteria that are not judged, with a ledger; evalgate.gate.stats):
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
class Crash:
    """A case the baseline passed whose agent run failed now (evalgate.gate.crash): its criteria
    are NOT_EVALUATED, which alone the `not_evaluated` policy would let pass."""

    key: CaseKey
    criteria: list[str]  # the criteria the baseline PASSED that the failed run left NOT_EVALUATED
    error: str  # why the agent's run failed (the case's agent_error)
    reruns: int = 0  # confirmation runs evaluated for it (gate.confirm)
    failed: int = 0  # ... of them, the ones where the agent failed again or failed one of `criteria`
    # broken: it failed in the run and in every re-run, and fails the gate; flaky: a re-run
    # passed, not counted; unconfirmed: a re-run could not be evaluated (a judge outage);
    # not_rerun: nothing re-ran it (gate.confirm.runs 0, recorded outputs, max_cases, an
    # agent that cannot start here): a warning.
    verdict: Literal["broken", "flaky", "unconfirmed", "not_rerun"] = "not_rerun"


@dataclass
class Refused:
    """A criterion of a case both runs have that the baseline evaluated and this run did not
    (evalgate.gate.refused): it counts against the run unless its service was down."""

    key: CaseKey
    criterion: str
    error: str  # why it was not evaluated now (the criterion's error)
    service: Optional[str] = None  # "judge" or "vertex" when that service was down: not counted


@dataclass
class BaselineInfo:
    commit: str  # "" when the caller did not say (e.g. a baseline file given by path)
    requested_commit: str  # the PR's base commit; differs when an ancestor's baseline was used
    distance: int  # first-parent steps from requested_commit to commit
    created_at: Optional[str]  # ISO 8601, from the baseline's provenance
