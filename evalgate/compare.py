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
    whose expected data did not change:

    - The compared per-case value is the criterion's score, or, for a judge criterion
      whose cases all carry samples in both runs, the case's mean sample score
      (`basis = "samples"`): it estimates the same quality as the majority vote with a
      fraction of its noise, because a vote turns one doubtful sample into a whole point.
    - delta = mean(current - baseline) over the pairs; its 95% interval inverts the
      sign-flip test of the mean in its normal approximation: the shifts s for which
      |sum(d - s)| <= 1.96 * sqrt(sum((d - s)^2)), which is
      delta +- 1.96 * sqrt(v / (n - 1.96^2)) with v the differences' population variance
      (None for n < 4, where no shift can be excluded). Closed form, no randomness.
    - p-value: one-sided (current worse), paired sign-flip permutation test of the
      statistic sum(d * |d|). The signed square weighs a case that moved by a whole point
      25 times a case that moved by one sample in five: it looks for cases that broke
      rather than for a uniform shift, which is how agents regress, and keeps judge noise
      (many small moves both ways) from drowning them. Exact when the distinct |d| values
      with their counts allow at most 2^16 sign patterns up to symmetry (always when at
      most 16 differences are non-zero); then p = P(stat <= observed), the observed
      included. Otherwise `permutations` random sign flips from a generator seeded by
      sha256(seed, suite, criterion), p = (1 + #(stat <= observed)) / (1 + B).
    - Holm correction across all criteria of all suites, weighted: every criterion's test
      has weight 1, and the broken-stable tests of one suite's judge criterion share a
      weight of 1 (so 190 stable cases do not dilute the criterion tests 190-fold).

Agent runs (num_runs)
    A case the agent ran several times has each run's score in `runs`, and its score is the
    mean over all runs' invocations. A criterion without judge samples then takes the runs
    as its samples: the ledger records the share of runs that passed, and broken-stable
    testing applies to it as to a judge criterion, so an agent's nondeterminism is measured
    from its runs rather than assumed.

Broken stable cases (judge criteria, and any criterion with agent runs, with a ledger)
    A case is stable for a criterion when the ledger has at least `stable_min_runs`
    recorded outcomes for it (the last `history_runs`), all above 0.5 (a majority of its
    samples passed in every run). Every stable case is tested. It has broken when all of
    its m current samples fail; its p-value is the chance of that for an unchanged case:
    with the per-sample failure rate r given a uniform (Laplace) prior and its history
    (N past samples, F failed, each past run taken to have had m samples), r follows
    Beta(F + 1, N - F + 1) and p = E[r^m] = prod_{i<m} (F + 1 + i) / (N + 2 + i). (The
    plug-in ((F + 1) / (N + 2))^m ignores that r is estimated from a few runs, and would
    call a flaky case that happened to pass five times broken.) p = 1 when it did not fail
    every sample. It assumes samples fail independently given the agent's output.

Verdicts
    - absolute (ADK semantics): a suite fails when its status is FAILED (which includes
      NOT_EVALUATED cases under `not_evaluated: fail`).
    - regression: a criterion FAILs on a drop with p_adjusted < alpha and -delta > margin
      (margin_judge or margin_deterministic); with `deterministic_flips: fail`, a
      deterministic criterion also FAILs when any case went from PASSED to FAILED (right when
      the agent's outputs are replayed; by default they are taken to vary, and a flip is
      weighed by the test like any other drop, as the issue asks: a significant drop); a
      broken stable case with p_adjusted < alpha FAILs its criterion (one that is not
      significant is listed, and decides nothing). A drop beyond the margin that is not
      significant is INCONCLUSIVE: it always warns, and fails the suite when
      `inconclusive: fail`. NOT_EVALUATED cases fail the suite under `not_evaluated: fail`.
      What has no baseline (a new suite, a new criterion, a suite with no case in common)
      is judged on absolute thresholds. Added and changed cases are listed, not gated.
    - A suite with no cases is an ERROR, and so is one whose agent failed on every case
      run (`agent_error`: nothing it does was scored, typically a fork's run without the
      model's key). Overall: FAIL if any suite FAILs or is an ERROR,
      else INCONCLUSIVE if any is, else PASS.
    - alpha defaults to 0.01: Holm keeps the chance that an unchanged agent fails on judge
      noise below alpha, whatever the suite's noise, and the goal is at most 1%. At 0.05
      the simulation in bench/bench_gate.py fails 1.5% of unchanged PRs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from evalgate.results import (
    CaseResult,
    CriterionResult,
    RunResults,
    Status,
    SuiteResult,
)
from evalgate.stats import ROUND, broken_p, holm, mean_interval, seed_for, sign_flip_p


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
    inconclusive: Literal["pass", "fail"] = Field(default="pass", description="What an inconclusive drop does (it always warns).")
    history_runs: int = Field(default=10, ge=1, le=100, description="K: outcomes kept per case and criterion in the flake ledger.")
    stable_min_runs: int = Field(default=5, ge=5, description="Runs a case must have passed, all of them, to count as stable.")
    permutations: int = Field(default=10000, ge=100, description="Random sign flips when exact enumeration is too large.")
    seed: int = Field(default=20240601, description="Seed of the permutation test and intervals: same inputs, same answer.")


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


@dataclass
class CaseChange:
    """A case whose outcome moved between baseline and current."""

    key: CaseKey
    kind: Literal["regressed", "fixed", "broken_stable", "score_drop", "score_rise"]
    criteria: dict[str, tuple[Optional[float], Optional[float]]]  # name -> (baseline score, current score)
    p_value: Optional[float] = None  # for broken_stable: from the case's own history
    p_adjusted: Optional[float] = None  # for broken_stable: after Holm, as the verdict used it


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


# The flake ledger: per (suite, eval_set_id, eval_id, criterion), the last K outcomes of
# default-branch runs, oldest first. An outcome is the fraction of the criterion's samples
# that passed in that run (1.0 / 0.0 for a deterministic criterion), or None when the
# criterion was NOT_EVALUATED.
Ledger = dict[str, list[Optional[float]]]


def ledger_key(key: CaseKey, criterion: str) -> str:
    return "\x1f".join((key.suite, key.eval_set_id, key.eval_id, criterion))


# --- judge samples ------------------------------------------------------------------

EPSILON = 1e-6  # score moves smaller than this are rounding, not change


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
    if result.status is Status.NOT_EVALUATED:
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
    if len(recorded) < policy.stable_min_runs or any(o <= 0.5 for o in recorded):
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
                lk = ledger_key(key, name)
                history = list(old.get(lk, [])) + [outcome(result, bool(spec and spec.judge))]
                new[lk] = history[-k:]
    return dict(sorted(new.items()))


# --- comparison -------------------------------------------------------------------------


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
    return result is not None and result.status is not Status.NOT_EVALUATED and result.score is not None


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
class _Candidate:
    """A stable case of a judge criterion (or of one with agent runs), tested for breakage."""

    key: CaseKey
    criterion: str
    recorded: list[float]
    samples: list[float]
    p: float


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
    candidates: list[_Candidate]
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


def _draft(current: SuiteResult, baseline: Optional[SuiteResult], policy: GatePolicy, ledger: Optional[Ledger]) -> _Draft:
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
    candidates: list[_Candidate] = []
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
        basis = "samples" if judge and pairs and all(has_samples(b) and has_samples(c) for _, b, c in pairs) else "scores"
        reasons = []
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
        if pairs:
            base_values = [_value(b, basis) for _, b, _ in pairs]
            cur_values = [_value(c, basis) for _, _, c in pairs]
            diffs = [round(c - b, ROUND) for b, c in zip(base_values, cur_values)]
            comp.baseline_mean = sum(base_values) / len(pairs)
            comp.current_mean = sum(cur_values) / len(pairs)
            comp.delta = sum(diffs) / len(pairs)
            comp.ci_low, comp.ci_high = mean_interval(diffs)
            comp.p_value = sign_flip_p(diffs, policy.permutations, seed_for(policy.seed, current.name, name))
        else:
            comp.reasons.append("not compared: no case was evaluated in both runs")
        if not judge:
            flipped = [k for k, b, c in pairs if b.status is Status.PASSED and c.status is Status.FAILED]
            if flipped:
                flips[name] = flipped
        if ledger:
            for k, _, c in pairs:
                if not judge and _run_scores(c) is None:
                    continue  # one run of a deterministic criterion: its flips are tested above
                recorded = stable_history(ledger.get(ledger_key(k, name), []), policy)
                if recorded is None:
                    continue
                samples = case_samples(c)
                candidates.append(_Candidate(k, name, recorded, samples, broken_p(recorded, samples, c.threshold)))
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
        candidates=candidates,
        changes=changes,
        added=added,
        removed=removed,
        changed=changed,
        notes=notes,
    )


def _regression_verdict(draft: _Draft, policy: GatePolicy, case_adjusted: dict[tuple[str, str, CaseKey], float]) -> tuple[Verdict, list[str]]:
    suite = draft.current
    if not suite.cases:
        return Verdict.ERROR, ["the suite has no cases"]
    if suite.agent_error:
        return Verdict.ERROR, [suite.agent_error]
    fail: list[str] = []
    unsure: list[str] = []
    broken_by_criterion: dict[str, list[_Candidate]] = {}
    for cand in draft.candidates:
        if cand.p < 1.0:
            broken_by_criterion.setdefault(cand.criterion, []).append(cand)
    for comp in draft.criteria:
        name = comp.criterion
        if name in draft.new_criteria:
            if comp.status is Verdict.FAIL:
                fail.append(f"{name}: new criterion, {_below(*_failing(suite, name), comp.threshold)}")
            continue
        margin = policy.margin_judge if comp.judge else policy.margin_deterministic
        status = Verdict.PASS
        flipped = draft.flips.get(name, []) if policy.deterministic_flips == "fail" else []
        if flipped:
            status = Verdict.FAIL
            text = f"{_plural(len(flipped), 'case')} went from PASSED to FAILED (a deterministic criterion: no noise to allow for): {_names(flipped)}"
            comp.reasons.append(text)
            fail.append(f"{name}: {text}")
        dropped = comp.delta is not None and -comp.delta > margin
        if dropped:
            assert comp.p_adjusted is not None and comp.delta is not None
            interval = f", 95% CI [{_fmt(comp.ci_low)}, {_fmt(comp.ci_high)}]" if comp.ci_low is not None else ""
            what = (
                f"mean {'sample score' if comp.basis == 'samples' else 'score'} dropped by {-comp.delta:.3f} "
                f"({_fmt(comp.baseline_mean)} to {_fmt(comp.current_mean)}{interval}; margin {margin:g}), "
                f"p = {_fmt_p(comp.p_adjusted)} after Holm"
            )
            if comp.p_adjusted < policy.alpha:
                status = Verdict.FAIL
                comp.reasons.append(what)
                fail.append(f"{name}: {what}")
            else:
                text = what + f", not significant at alpha {policy.alpha:g}"
                comp.reasons.append(text)
                unsure.append(f"{name}: {text}")
                if status is Verdict.PASS:
                    status = Verdict.INCONCLUSIVE
        for cand in sorted(broken_by_criterion.get(name, []), key=lambda c: c.key):
            p_adj = case_adjusted[(suite.name, name, cand.key)]
            text = (
                f"{_name(cand.key)} passed its last {_plural(len(cand.recorded), 'run')} and now fails "
                f"all {_plural(len(cand.samples), 'sample')}: p = {_fmt_p(cand.p)}, {_fmt_p(p_adj)} after Holm"
            )
            if p_adj < policy.alpha:
                status = Verdict.FAIL
                comp.reasons.append("broken stable case: " + text)
                fail.append(f"{name}: broken stable case {text}")
            else:
                # Listed (in changes, and here), but no warning: flaky cases that happened to
                # pass their last runs do this on every few PRs.
                comp.reasons.append(f"possibly broken stable case: {text}, not significant at alpha {policy.alpha:g}")
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


def compare(
    baseline: Optional[RunResults],
    current: RunResults,
    policy: GatePolicy,
    ledger: Optional[Ledger] = None,
    baseline_info: Optional[BaselineInfo] = None,
) -> Comparison:
    """The gate's decision. Pure: the same inputs always give the same Comparison."""
    if baseline is None:
        mode: Literal["absolute", "regression"] = "absolute"
    else:
        mode = "absolute" if policy.mode == "absolute" else "regression"
    base_suites = {s.name: s for s in baseline.suites} if baseline is not None else {}
    drafts = [_draft(s, base_suites.get(s.name), policy, ledger) for s in current.suites]

    tests: dict[tuple, tuple[float, float]] = {}
    for d in drafts:
        for comp in d.criteria:
            if comp.p_value is not None:
                tests[("criterion", d.current.name, comp.criterion)] = (comp.p_value, 1.0)
        per_criterion = Counter(c.criterion for c in d.candidates)
        for cand in d.candidates:
            tests[("case", d.current.name, cand.criterion, cand.key)] = (cand.p, 1.0 / per_criterion[cand.criterion])
    adjusted = holm(tests)
    for d in drafts:
        for comp in d.criteria:
            if comp.p_value is not None:
                comp.p_adjusted = adjusted[("criterion", d.current.name, comp.criterion)]
    case_adjusted = {(k[1], k[2], k[3]): v for k, v in adjusted.items() if k[0] == "case"}

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
            verdict, reasons = _regression_verdict(d, policy, case_adjusted)
        changes = list(d.changes)
        by_key = {c.key: c for c in changes}
        cur_cases = _cases_by_key(d.current)
        base_cases = _cases_by_key(d.baseline) if d.baseline is not None else {}
        for cand in d.candidates:
            if cand.p >= 1.0:
                continue
            change = by_key.get(cand.key)
            if change is None:
                change = by_key[cand.key] = CaseChange(key=cand.key, kind="broken_stable", criteria={})
                changes.append(change)
            change.criteria[cand.criterion] = (
                base_cases[cand.key].criteria[cand.criterion].score,
                cur_cases[cand.key].criteria[cand.criterion].score,
            )
            if change.kind != "broken_stable" or change.p_value is None or cand.p < change.p_value:
                change.kind = "broken_stable"
                change.p_value = cand.p
                change.p_adjusted = case_adjusted[(name, cand.criterion, cand.key)]
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
            )
        )
    for name in sorted(set(base_suites) - {s.name for s in current.suites}):
        old = base_suites[name]
        suites.append(
            SuiteComparison(
                name=name,
                verdict=Verdict.PASS,
                reasons=[f"not in this run (removed from the config): {_plural(len(old.cases), 'baseline case')} not compared"],
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
